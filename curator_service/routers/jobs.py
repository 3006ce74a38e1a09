"""``/v1/jobs``: submit (idempotent by ``request_id``), watch, list, cancel. Who may do what is set by the kind."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from curator_service.routers.auth import AnyRole
from curator_service.routers.params import JobId
from curator_service.services import jobs
from shared.api.schemas import JobCreate, JobOut, JobStatus

router = APIRouter(tags=["jobs"])


@router.post("/v1/jobs", status_code=202, response_model=JobOut,
             responses={200: {"model": JobOut, "description": "A retry: the job this request_id already created."}},
             summary="Submit a curator-side job (its privacy cost is charged now, or when it commits)")
def submit_job(request: Request, response: Response, principal: AnyRole, body: JobCreate) -> JobOut:
    """Submits a curator-side job (Kusner et al.'s dp-bo, Ding et al.'s dp-tune, dp-mean, DPareto fronts); it runs on
    the curator's Dask workers, never in this process. Its (ε, δ), computed from the parameters alone, is charged to
    the dataset's ledger now and stays charged if the job fails or is cancelled (a kind that charges when it commits
    is charged then, and not at all if cancelled first). With a `request_id`, a retry returns the same job with 200
    and is never charged twice. Each API key may have `POBO_JOB_LIMIT_PER_KEY` jobs queued or running
    (409 beyond; the admin token is not limited) and runs at most all the cluster's worker threads but one at once;
    the rest wait queued. Who may submit depends on the kind: dpareto is for the curator only; a modeler only on a
    dataset behind a release its key is scoped to."""
    state = request.app.state
    out, created = jobs.submit_job(state.db, state.settings, principal, body)
    if created:
        state.jobs.submit(out.id)
    else:
        response.status_code = 200
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
             summary="Cancel a job (queued: at once; running: within seconds)")
def cancel_job(request: Request, principal: AnyRole, job_id: JobId) -> JobOut:
    """Cancels a job: a queued one at once, a running one within seconds. A charge made at submission stays on the
    ledger; a kind that charges when it commits is charged nothing if the cancel comes first."""
    with request.app.state.db.write() as session:
        out = jobs.cancel_job(session, principal, job_id)
    request.app.state.jobs.cancel(job_id)
    return out
