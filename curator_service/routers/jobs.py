"""``/v1/jobs``: submit (charged at once), watch, list, cancel. Who may do what is set by the kind."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from curator_service.routers.auth import AnyRole
from curator_service.routers.params import JobId
from curator_service.services import jobs
from shared.api.schemas import JobCreate, JobOut, JobStatus

router = APIRouter(tags=["jobs"])


@router.post("/v1/jobs", status_code=202, response_model=JobOut,
             summary="Submit a curator-side job (its privacy cost is charged now)")
def submit_job(request: Request, principal: AnyRole, body: JobCreate) -> JobOut:
    """Submits a curator-side job (Kusner et al.'s dp-bo, Ding et al.'s dp-tune, dp-mean, DPareto fronts). Its (ε, δ),
    computed from the parameters alone, is charged to the dataset's ledger now and stays charged if the job fails or
    is cancelled. Who may submit depends on the kind: dpareto is for the curator only; a modeler only on a dataset
    behind a release its key is scoped to."""
    state = request.app.state
    out = jobs.submit_job(state.db, state.settings, principal, body)
    state.jobs.submit(out.id)
    return out


@router.get("/v1/jobs", response_model=list[JobOut], summary="Jobs this caller may see")
def list_jobs(
    request: Request,
    principal: AnyRole,
    status: Annotated[JobStatus | None, Query(description="Only jobs in this status.")] = None,
) -> list[JobOut]:
    """Jobs this caller may see: every job for the curator, its own key's jobs for a modeler."""
    with request.app.state.db.read() as session:
        return jobs.list_jobs(session, principal, status)


@router.get("/v1/jobs/{job_id}", response_model=JobOut, summary="A job's status, progress and result")
def get_job(request: Request, principal: AnyRole, job_id: JobId) -> JobOut:
    """A job's status, progress, message and released result. A job this caller may not see answers 404, like one that
    does not exist."""
    with request.app.state.db.read() as session:
        return jobs.get_job(session, principal, job_id)


@router.post("/v1/jobs/{job_id}/cancel", response_model=JobOut,
             summary="Cancel a job (queued: at once; running: at its next check); the charge stays")
def cancel_job(request: Request, principal: AnyRole, job_id: JobId) -> JobOut:
    """Cancels a job: a queued one at once, a running one at its next check. Its charge stays on the ledger."""
    with request.app.state.db.write() as session:
        return jobs.cancel_job(session, principal, job_id)
