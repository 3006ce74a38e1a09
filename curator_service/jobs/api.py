"""The jobs endpoints: submit (charged at once), watch, list, cancel. Who may do what is set by the kind."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.audit import record
from curator_service.auth import AnyRole, Principal
from curator_service.db import get_or_404
from curator_service.errors import ApiError, api_error_from_validation
from curator_service.jobs import KINDS, JobKind
from curator_service.jobs.runner import dataset_info
from curator_service.ledger import charge
from curator_service.models import Dataset, Job, Release, utcnow
from curator_service.releases import refuse_seed
from shared.api.schemas import SEEDED_JOB_WARNING, UNCHARGED_JOB_WARNING, JobCreate, JobOut

router = APIRouter(tags=["jobs"])


def job_out(job: Job) -> JobOut:
    """A job as its submitter sees it; ``certified`` only when its result is a charged, unseeded DP release."""
    seeded = job.params.get("seed") is not None
    charged = job.epsilon > 0 or job.delta > 0
    warnings = ([SEEDED_JOB_WARNING] if seeded else []) + ([] if charged else [UNCHARGED_JOB_WARNING])
    return JobOut(
        id=job.id, kind=job.kind, dataset_id=job.dataset_id, status=job.status, progress=job.progress,
        message=job.message, epsilon=job.epsilon, delta=job.delta, seeded=seeded, certified=charged and not seeded,
        warnings=warnings, result=job.result, created_at=job.created_at, finished_at=job.finished_at,
    )


def _kind_for(principal: Principal, name: str) -> JobKind:
    kind = KINDS.get(name)
    if kind is None:
        raise ApiError(422, "validation_error", f"'kind' {name!r} is not a job kind on this server; "
                       f"the kinds are {sorted(KINDS)}")
    if principal.role not in kind.roles:
        raise ApiError(403, "forbidden", f"job kind {name!r} is for the {' or '.join(sorted(kind.roles))} role only")
    return kind


def _check_dataset_scope(session: Session, principal: Principal, dataset_id: int) -> None:
    """A modeler may run jobs only on the datasets behind the releases its key is scoped to."""
    if principal.is_curator:
        return
    in_scope = session.scalar(
        select(Release.id).where(Release.dataset_id == dataset_id, Release.id.in_(principal.release_ids)).limit(1)
    )
    if in_scope is None:
        raise ApiError(403, "forbidden", f"this key is not scoped to a release of dataset {dataset_id}; "
                       "ask the curator for a key that includes one")


def _visible_job(session: Session, principal: Principal, job_id: int) -> Job:
    job = get_or_404(session, Job, job_id)
    principal.require_owner(job.key_id, "job")
    return job


def _cost(kind: JobKind, body: JobCreate, session: Session) -> tuple[float, float]:
    info = dataset_info(session, session.get(Dataset, body.dataset_id)) if body.dataset_id is not None else None
    try:
        epsilon, delta = kind.cost(body.params, info)
    except ValidationError as exc:
        raise api_error_from_validation(exc, prefix="params.") from None
    except ValueError as exc:
        raise ApiError(422, "validation_error", f"bad params for job kind {kind.name!r}: {exc}") from None
    epsilon, delta = float(epsilon), float(delta)
    if math.isinf(epsilon):
        raise ApiError(422, "validation_error", f"bad params for job kind {kind.name!r}: they give an infinite "
                       "privacy cost; use finite epsilon values")
    if not (math.isfinite(epsilon) and epsilon >= 0 and 0 <= delta < 1):
        raise RuntimeError(f"job kind {kind.name!r} returned an invalid cost")
    if (epsilon > 0 or delta > 0) and body.dataset_id is None:
        raise RuntimeError(f"job kind {kind.name!r} costs privacy budget but has no dataset to charge")
    return epsilon, delta


@router.post("/v1/jobs", status_code=202, response_model=JobOut,
             summary="Submit a curator-side job (its privacy cost is charged now)")
def submit_job(request: Request, principal: AnyRole, body: JobCreate) -> JobOut:
    kind = _kind_for(principal, body.kind)
    refuse_seed(request.app.state.settings, principal, body.params.get("seed"))
    if kind.needs_dataset and body.dataset_id is None:
        raise ApiError(422, "validation_error", f"job kind {kind.name!r} needs a 'dataset_id'")
    with request.app.state.db.read() as session:
        if body.dataset_id is not None:
            get_or_404(session, Dataset, body.dataset_id)
            _check_dataset_scope(session, principal, body.dataset_id)
        epsilon, delta = _cost(kind, body, session)
    with request.app.state.db.write() as session:
        entry = None
        if epsilon > 0 or delta > 0:
            entry = charge(session, body.dataset_id, epsilon, delta, f"job {kind.name}")
        job = Job(kind=kind.name, dataset_id=body.dataset_id, key_id=principal.key_id, params=body.params,
                  status="queued", progress=0.0, epsilon=epsilon, delta=delta)
        session.add(job)
        session.flush()
        if entry is not None:
            entry.job_id, entry.purpose = job.id, f"job {kind.name} #{job.id}"
        record(session, principal, "job.submit", f"job:{job.id} ({kind.name})")
        out = job_out(job)
    request.app.state.jobs.submit(out.id)
    return out


@router.get("/v1/jobs", response_model=list[JobOut], summary="Jobs this caller may see")
def list_jobs(request: Request, principal: AnyRole) -> list[JobOut]:
    with request.app.state.db.read() as session:
        statement = select(Job).order_by(Job.id)
        if not principal.is_curator:
            statement = statement.where(Job.key_id == principal.key_id)
        return [job_out(job) for job in session.scalars(statement)]


@router.get("/v1/jobs/{job_id}", response_model=JobOut, summary="A job's status, progress and result")
def get_job(request: Request, principal: AnyRole, job_id: int) -> JobOut:
    with request.app.state.db.read() as session:
        return job_out(_visible_job(session, principal, job_id))


@router.post("/v1/jobs/{job_id}/cancel", response_model=JobOut,
             summary="Cancel a job (queued: at once; running: at its next check); the charge stays")
def cancel_job(request: Request, principal: AnyRole, job_id: int) -> JobOut:
    with request.app.state.db.write() as session:
        job = _visible_job(session, principal, job_id)
        if job.status in ("succeeded", "failed"):
            raise ApiError(409, "conflict", f"job {job_id} has already {job.status}; there is nothing to cancel")
        if job.status == "queued":
            job.status, job.message, job.finished_at = "cancelled", "cancelled before it started; the budget stays charged", utcnow()
        job.cancel_requested = True
        record(session, principal, "job.cancel", f"job:{job_id}")
        return job_out(job)
