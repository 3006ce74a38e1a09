"""Curator-side jobs as the API sees them: submit (charged at once, or at commit), watch, list, cancel.

Who may submit and see a kind is set by the kind (:class:`~curator_service.jobs.JobKind`, listed in
:data:`~curator_service.services.job_kinds.KINDS`); a modeler sees only
its own key's jobs, and may run them only on the datasets behind its releases. The jobs run on the Dask cluster
(:mod:`curator_service.jobs.runner`).
"""

from __future__ import annotations

import math
import time
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from curator_service.errors import api_error_from_validation
from curator_service.jobs import DatasetInfo, JobKind, P, charged_at_submission
from curator_service.jobs.state import budget_note, dataset_info, unfinished_jobs
from curator_service.persistence.db import Database, get_or_404
from curator_service.persistence.models import Dataset, Job, utcnow
from curator_service.services.audit import record
from curator_service.services.job_kinds import KINDS
from curator_service.services.job_kinds.inputs import UnknownColumn
from curator_service.services.key_policy import check_may_run
from curator_service.services.ledger import Spend, budget_status, charge, check_affordable, check_key_cap
from curator_service.services.ledger_events import job_event
from curator_service.services.policy import Principal, refuse_seed, visible, visible_or_404
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import (
    FINISHED_JOB_STATUSES,
    SEEDED_JOB_WARNING,
    UNCHARGED_JOB_WARNING,
    UNFINISHED_JOB_STATUSES,
    JobCreate,
    JobOut,
)


def job_out(job: Job) -> JobOut:
    """A job as its submitter sees it; ``certified`` only when its result is a charged, unseeded DP release (and its
    kind does not call it uncertified)."""
    seeded = job.params.get("seed") is not None
    charged = job.epsilon > 0 or job.delta > 0
    kind = KINDS.get(job.kind)
    uncertified = kind.uncertified(job.params) if kind is not None and kind.uncertified is not None else None
    warnings = ([SEEDED_JOB_WARNING] if seeded else []) + ([] if charged else [UNCHARGED_JOB_WARNING])
    warnings += [uncertified] if uncertified else []
    return JobOut(
        id=job.id, kind=job.kind, dataset_id=job.dataset_id, status=job.status, progress=job.progress,
        message=job.message, epsilon=job.epsilon, delta=job.delta, seeded=seeded,
        certified=charged and not seeded and not uncertified,
        warnings=warnings, result=job.result, request_id=job.request_id, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at,
    )


def kind_for(principal: Principal, name: str) -> JobKind:
    kind = KINDS.get(name)
    if kind is None:
        raise ApiError(422, "validation_error", f"'kind' {name!r} is not a job kind on this server; "
                       f"the kinds are {sorted(KINDS)}")
    if principal.role not in kind.roles:
        raise ApiError(403, "forbidden", f"job kind {name!r} is for the {' or '.join(sorted(kind.roles))} role only")
    return kind


class ColumnRefused(ApiError):
    """A job's parameter names a column it may not read (:class:`~.job_kinds.inputs.UnknownColumn`), priced
    without the dataset's columns: its submission checks the key's job limit, the dataset's budget and the key's cap
    for ``cost`` before refusing, so a missing column and a column it may read answer alike (409) when any of them
    refuses."""

    def __init__(self, detail: str, cost: tuple[float, float]) -> None:
        super().__init__(422, "validation_error", detail)
        self.cost = cost


def parse_params(kind: JobKind[P], params: dict[str, Any]) -> P:
    """The request's parameters as the kind's model (:meth:`JobKind.parse`); a 422 naming the parameter when the model
    refuses them."""
    try:
        return kind.parse(params)
    except ValidationError as exc:
        raise api_error_from_validation(exc, prefix="params.") from None


def job_cost(kind: JobKind[P], params: P, info: DatasetInfo | None, principal: Principal) -> tuple[float, float]:
    """The kind's (ε, δ) for its parsed ``params``: a 422 naming the parameter when they do not fit the dataset
    (:class:`ColumnRefused` for a column, listing the dataset's numeric columns to a curator only); a kind that returns
    an impossible cost is a bug of the kind (500)."""
    try:
        epsilon, delta = kind.cost(params, info)
    except UnknownColumn as exc:
        known = (f"the numeric columns are {list(exc.columns)}" if principal.is_curator
                 else "ask the curator for the column's name")
        raise ColumnRefused(f"bad params for job kind {kind.name!r}: {exc}; {known}",
                            job_cost(kind, params, None, principal)) from None
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
    if (epsilon > 0 or delta > 0) and info is None and not kind.needs_dataset:
        raise RuntimeError(f"job kind {kind.name!r} costs privacy budget but has no dataset to charge")
    return epsilon, delta


def charged_dataset(info: DatasetInfo | None) -> DatasetInfo:
    """The dataset a job with a positive cost is charged to: :func:`job_cost` refuses such a cost without one."""
    if info is None:
        raise RuntimeError("a job with a positive privacy cost has no dataset to charge")
    return info


def submit_job(db: Database, settings: Settings, principal: Principal, body: JobCreate, *,
               own_endpoint: bool = False) -> tuple[JobOut, bool]:
    """Creates a job and says whether it is new (False: a retry of ``body.request_id``, returned as it is).

    Checks the key may run the kind (before anything looks at the dataset or its budget), prices the job from its
    parameters, then, in one write transaction, checks the requester's limit of unfinished jobs, charges the ledger
    (a kind with a ``commit`` only checks the budget: it charges when it commits) and queues the job (the caller
    hands the id to the runner); the ledger's charge checks the key's own ε/δ cap (:func:`.ledger.charge`). The unique
    index on (requester, request_id) makes two racing retries create one job. A kind with its own ``endpoint`` is
    created only there (``own_endpoint``), which makes its own checks first."""
    kind = kind_for(principal, body.kind)
    if kind.endpoint is not None and not own_endpoint:
        raise ApiError(422, "validation_error", f"job kind {kind.name!r} is created by {kind.endpoint}, not by "
                       "POST /v1/jobs; use that endpoint")
    if principal.key_id is not None:
        with db.read() as session:
            check_may_run(session, principal.key_id, kind.name)
    if body.request_id is not None:  # before pricing: a retry must find its job, not a budget it already spent
        with db.read() as session:
            if (earlier := earlier_request(session, principal, body)) is not None:
                return earlier, False
    refuse_seed(settings, principal, body.params.get("seed"))
    if kind.needs_dataset and body.dataset_id is None:
        raise ApiError(422, "validation_error", f"job kind {kind.name!r} needs a 'dataset_id'")
    refused: ColumnRefused | None = None
    with db.read() as session:
        info = None
        if body.dataset_id is not None:
            info = dataset_info(visible_or_404(session, principal, Dataset, body.dataset_id))
        params = parse_params(kind, body.params)
        try:
            epsilon, delta = job_cost(kind, params, info, principal)
        except ColumnRefused as exc:
            refused, (epsilon, delta) = exc, exc.cost
    try:
        with db.write() as session:
            if refused is not None:  # the limits first: a missing column answers as one it may read would
                check_job_limit(session, settings, principal)
                if epsilon > 0 or delta > 0:
                    charged = charged_dataset(info)
                    check_affordable_with_reservations(session, charged.id, epsilon, delta, f"job {kind.name}")
                    check_key_cap(session, Spend(epsilon=epsilon, delta=delta, purpose=f"job {kind.name}",
                                                 mechanism=f"job:{kind.name}", event=job_event(kind.name),
                                                 actor=principal))
                raise refused
            check_job_limit(session, settings, principal)
            entry = None
            if kind.commit is not None and body.dataset_id is not None:
                check_affordable_with_reservations(session, body.dataset_id, epsilon, delta, f"job {kind.name}")
            elif epsilon > 0 or delta > 0:
                charged = charged_dataset(info)
                check_affordable_with_reservations(session, charged.id, epsilon, delta, f"job {kind.name}")
                event = kind.event(params, charged) if kind.event is not None else job_event(kind.name)
                entry = charge(session, charged.id, Spend(epsilon=epsilon, delta=delta,
                                                          purpose=f"job {kind.name}", mechanism=f"job:{kind.name}",
                                                          event=event, actor=principal))
            job = Job(kind=kind.name, dataset_id=body.dataset_id, key_id=principal.key_id, params=body.params,
                      status="queued", progress=0.0, epsilon=epsilon, delta=delta, request_id=body.request_id)
            session.add(job)
            session.flush()
            if entry is not None:
                entry.job_id, entry.purpose = job.id, f"job {kind.name} #{job.id}"
            record(session, principal, "job.submit", f"job:{job.id} ({kind.name})")
            return job_out(job), True
    except IntegrityError:
        if body.request_id is None:
            raise
    with db.read() as session:  # a concurrent retry created it first; this transaction charged nothing
        earlier = earlier_request(session, principal, body)
    if earlier is None:  # another integrity error (the dataset or the key went away meanwhile)
        raise ApiError(409, "conflict", "the job could not be created because something it refers to changed "
                       "meanwhile; list the datasets and submit again")
    return earlier, False


def earlier_request(session: Session, principal: Principal, body: JobCreate) -> JobOut | None:
    """The job this requester created with ``body.request_id``; a 409 when that job was made from another body."""
    job = session.scalars(select(Job).where(func.coalesce(Job.key_id, 0) == (principal.key_id or 0),
                                            Job.request_id == body.request_id)).one_or_none()
    if job is None:
        return None
    if (job.kind, job.dataset_id, job.params) != (body.kind, body.dataset_id, body.params):
        raise ApiError(409, "conflict", f"request_id {body.request_id!r} already created job {job.id} from a "
                       "different body; send a new request_id for a new job, or repeat the same body to get that job")
    return job_out(job)


def check_affordable_with_reservations(session: Session, dataset_id: int, epsilon: float, delta: float,
                                       what: str) -> None:
    """A kind that charges at its commit reserves its cost until then: any job's (ε, δ) must fit beside what is spent
    and what the dataset's unfinished commit-kind jobs will charge, so twenty releases submitted at once against a
    budget for five admit five, and a job charged at submission cannot take a running release's share (the dataset
    row is locked, as by a charge). The commit's own check stays the final one."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    reserving = [name for name, kind in KINDS.items() if kind.commit is not None]
    totals = select(func.coalesce(func.sum(Job.epsilon), 0.0), func.coalesce(func.sum(Job.delta), 0.0))
    reserved_epsilon, reserved_delta = session.execute(totals.where(
        Job.dataset_id == dataset_id, Job.kind.in_(reserving), Job.status.in_(UNFINISHED_JOB_STATUSES),
        Job.cancel_requested.is_(False))).one()
    status = budget_status(session, dataset)
    if reserved_epsilon or reserved_delta:  # the 409 then names what the dataset shows and what is held
        what += (f" (the dataset shows (epsilon={status.remaining_epsilon:g}, delta={status.remaining_delta:g}) "
                 f"left, of which releases still running hold (epsilon={reserved_epsilon:g}, "
                 f"delta={reserved_delta:g}) until they are stored)")
    check_affordable(status.model_copy(update={
        "spent_epsilon": status.spent_epsilon + reserved_epsilon, "spent_delta": status.spent_delta + reserved_delta,
        "remaining_epsilon": max(0.0, status.remaining_epsilon - reserved_epsilon),
        "remaining_delta": max(0.0, status.remaining_delta - reserved_delta)}), epsilon, delta, what)


def check_job_limit(session: Session, settings: Settings, principal: Principal) -> None:
    """At most ``POBO_JOB_LIMIT_PER_KEY`` queued or running jobs (releases included) per API key, so no key can flood
    the queue (how many of them run at once is the key's share of the workers:
    :func:`curator_service.jobs.state.claim`); a job being cancelled no longer counts. The admin token, the operator's
    own, is not limited. The count and the insert are atomic (:func:`~curator_service.jobs.state.unfinished_jobs`)."""
    if principal.key_id is None:
        return
    unfinished = unfinished_jobs(session, principal.key_id, UNFINISHED_JOB_STATUSES)
    if unfinished >= settings.job_limit_per_key:
        raise ApiError(409, "conflict", f"this key already has {unfinished} jobs queued or running, the most it may "
                       f"have (POBO_JOB_LIMIT_PER_KEY = {settings.job_limit_per_key}); wait for one to finish or "
                       "cancel one, then submit again")


def list_jobs(session: Session, principal: Principal, status: str | None = None) -> list[JobOut]:
    """The jobs this caller may see (a modeler: its key's), oldest first, optionally of one status."""
    statement = select(Job).where(visible(principal, Job)).order_by(Job.id)
    if status is not None:
        statement = statement.where(Job.status == status)
    return [job_out(job) for job in session.scalars(statement)]


def get_job(session: Session, principal: Principal, job_id: int) -> JobOut:
    return job_out(visible_or_404(session, principal, Job, job_id))


def wait_for_job(db: Database, job_id: int, seconds: float, poll: float = 0.05) -> Job:
    """The job once it finished, or as it is after ``seconds`` (a request that answers a small job at once and
    a large one with 202). Polls the database: the job runs on another process, maybe another machine."""
    deadline = time.monotonic() + seconds
    while True:
        with db.read() as session:
            job = session.get_one(Job, job_id)
        if job.status in FINISHED_JOB_STATUSES or time.monotonic() >= deadline:
            return job
        time.sleep(poll)


def cancel_job(session: Session, principal: Principal, job_id: int) -> JobOut:
    """Queued: cancelled at once; running: at its next check (within seconds: the worker reads the flag every
    second). A job charged at submission stays charged (its randomness may already have touched the data); a kind
    that charges when it commits is charged nothing unless it committed first. The row is locked so a commit in
    progress finishes first (then this is a 409)."""
    job = visible_or_404(session, principal, Job, job_id, lock=True)
    if job.status in ("succeeded", "failed"):
        raise ApiError(409, "conflict", f"job {job_id} has already {job.status}; there is nothing to cancel")
    if job.status == "queued":
        note = budget_note(charged_at_submission(KINDS.get(job.kind)))
        job.status, job.message, job.finished_at = "cancelled", f"cancelled before it started; {note}", utcnow()
    job.cancel_requested = True
    record(session, principal, "job.cancel", f"job:{job_id}")
    return job_out(job)
