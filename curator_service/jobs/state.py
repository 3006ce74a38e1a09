"""A job's state in the database, the one place it lives: every transition is a conditional UPDATE, so several
API replicas and workers over one PostgreSQL never run a job twice or overwrite each other's verdict.

queued → running: :func:`claim` (``WHERE status = 'queued'``: one claimant wins). running → anything: only by its
claimant (:func:`finish`, ``WHERE claimed_by = me``), or by :func:`reap` when the claimant stopped beating
(:data:`STALE_SECONDS`) or ran past its deadline. A claimant that lost the job finds out at its next heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, cast

from sqlalchemy import CursorResult, Update, and_, func, or_, select, text, update
from sqlalchemy.orm import Session

from curator_service.jobs import DatasetInfo
from curator_service.persistence.models import Dataset, Job, utcnow
from shared.api.schemas import ScalingSpec

HEARTBEAT_SECONDS = 1.0  # a running job's worker writes its heartbeat and reads the cancel flag this often
# A running job whose heartbeat is older than this lost its worker. Generous: on SQLite a heartbeat waits for the
# write lock behind any long transaction (storing a 10⁶ × 20 release), and a live job must never be reaped.
STALE_SECONDS = 30.0

INTERRUPTED = "the service or its worker stopped while this job was running; submit it again"
CANCELLED = "cancelled"


def budget_note(charged_at_submission: bool) -> str:
    """What a stopped job's message says about its charge: kinds with a ``commit`` are charged only by it."""
    return "the budget stays charged" if charged_at_submission else "nothing was charged"


def dataset_info(dataset: Dataset) -> DatasetInfo:
    """The public facts a kind's ``cost`` and ``run`` see."""
    return DatasetInfo(
        id=dataset.id, n=dataset.n, d=dataset.d, columns=tuple(dataset.columns),
        numeric_columns=tuple(dataset.numeric_columns),
        feature_columns=tuple(dataset.feature_columns), evaluator=dict(dataset.evaluator),
        scaling=ScalingSpec.model_validate(dataset.scaling), label_columns=tuple(dataset.label_columns or ()),
    )


class Claim(Enum):
    CLAIMED = "claimed"  # queued → running: the claimant runs it
    GONE = "gone"  # another claimant (or a cancel) was first
    WAITING = "waiting"  # its key already runs its share of the workers: still queued, try again later


def claim(session: Session, job_id: int, claimant: str, time_limit_seconds: float, share: int) -> Claim:
    """queued → running for ``claimant``, with its deadline, unless the job's API key already has ``share`` jobs
    running (the admin's jobs have no key and no share): then the job stays queued, its ``heartbeat_at`` saying a
    task is waiting for it (:func:`waiting_for_turn`). On PostgreSQL the key's lock (:func:`unfinished_jobs`)
    serialises the count and the claim, so two workers cannot both take a key's last place."""
    now = utcnow()
    queued = session.execute(select(Job.key_id).where(Job.id == job_id, Job.status == "queued")).one_or_none()
    if queued is None:
        return Claim.GONE
    if queued.key_id is not None and unfinished_jobs(session, queued.key_id, ("running",)) >= share:
        waiting = updated(session, update(Job).where(Job.id == job_id, Job.status == "queued")
                          .values(heartbeat_at=now).execution_options(synchronize_session=False))
        return Claim.WAITING if waiting == 1 else Claim.GONE
    return _claim(session, job_id, claimant, now, time_limit_seconds)


def updated(session: Session, statement: Update) -> int:
    """How many rows the UPDATE changed. The session types every result as a Result; an UPDATE's is a
    CursorResult, which has the count."""
    return cast(CursorResult, session.execute(statement)).rowcount


def _claim(session: Session, job_id: int, claimant: str, now, time_limit_seconds: float) -> Claim:
    claimed = updated(
        session,
        update(Job).where(Job.id == job_id, Job.status == "queued")
        .values(status="running", claimed_by=claimant, started_at=now, heartbeat_at=now,
                deadline_at=now + timedelta(seconds=time_limit_seconds))
        .execution_options(synchronize_session=False)
    )
    return Claim.CLAIMED if claimed == 1 else Claim.GONE


def waiting_for_turn(stale_seconds: float = STALE_SECONDS):
    """The condition on queued jobs whose task is alive and waiting for its key's turn (it beat recently): sending
    such a job again would only add a second waiting task."""
    return and_(Job.status == "queued", Job.heartbeat_at.is_not(None),
                Job.heartbeat_at >= utcnow() - timedelta(seconds=stale_seconds))


KEY_LOCK_SPACE = 0x6A6F6273  # "jobs": the advisory-lock space of a key's job limit and running share


def unfinished_jobs(session: Session, key_id: int, statuses: tuple[str, ...]) -> int:
    """How many of this API key's jobs have one of ``statuses``, not counting those being cancelled. On PostgreSQL an
    advisory lock on the key, held until the transaction ends, makes the count and what the caller then adds or
    claims atomic (SQLite's write transactions are serial already)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": KEY_LOCK_SPACE, "key": key_id})
    return session.execute(select(func.count()).select_from(Job).where(
        Job.key_id == key_id, Job.status.in_(statuses), Job.cancel_requested.is_(False))).scalar_one()


def _mine(job_id: int, claimant: str):
    return (Job.id == job_id, Job.status == "running", Job.claimed_by == claimant)


@dataclass(frozen=True)
class Beat:
    """What a heartbeat learns: whether the job is still this claimant's, and whether it was asked to stop."""

    ours: bool
    cancel_requested: bool = False
    past_deadline: bool = False


def heartbeat(session: Session, job_id: int, claimant: str) -> Beat:
    now = utcnow()
    session.execute(update(Job).where(*_mine(job_id, claimant)).values(heartbeat_at=now)
                    .execution_options(synchronize_session=False))
    row = session.execute(select(Job.cancel_requested, Job.deadline_at).where(*_mine(job_id, claimant))).one_or_none()
    if row is None:
        return Beat(ours=False)
    return Beat(ours=True, cancel_requested=bool(row.cancel_requested), past_deadline=row.deadline_at < now)


def set_progress(session: Session, job_id: int, claimant: str, fraction: float, message: str | None) -> None:
    session.execute(update(Job).where(*_mine(job_id, claimant))
                    .values(progress=min(1.0, max(0.0, float(fraction))), message=message)
                    .execution_options(synchronize_session=False))


def finish(session: Session, job_id: int, claimant: str | None, status: str, message: str,
           result: dict[str, Any] | None = None) -> bool:
    """running (claimed by ``claimant``; None: a job that never started, still queued) → ``status``; False when the
    job is no longer the claimant's (reaped, or stopped by its heartbeat), whose verdict then stands."""
    values: dict[str, Any] = {"status": status, "message": message, "finished_at": utcnow(), "result": result}
    if status == "succeeded":
        values["progress"] = 1.0
    where = _mine(job_id, claimant) if claimant is not None else (Job.id == job_id, Job.status == "queued")
    return updated(session, update(Job).where(*where).values(**values)
                   .execution_options(synchronize_session=False)) == 1


def reap(session: Session, charged_at_submission, stale_seconds: float = STALE_SECONDS) -> list[int]:
    """Fails running jobs whose worker stopped beating for ``stale_seconds`` (or never beat: started before the
    engine had heartbeats) or that ran ``stale_seconds`` past their deadline without their worker stopping them.
    ``charged_at_submission(kind name)`` picks the budget note. Returns the jobs it failed.

    Each is a conditional UPDATE that repeats the staleness test: on PostgreSQL it waits for a commit holding the
    row (a release being stored) and then finds the job succeeded, so a verdict is never overwritten."""
    now = utcnow()
    cutoff = now - timedelta(seconds=stale_seconds)
    stale = (Job.status == "running",
             or_(Job.heartbeat_at.is_(None), Job.heartbeat_at < cutoff, Job.deadline_at < cutoff))
    reaped = []
    for job in session.execute(select(Job.id, Job.kind, Job.heartbeat_at, Job.started_at, Job.deadline_at)
                               .where(*stale)).all():
        late = job.deadline_at is not None and job.deadline_at < cutoff and (job.heartbeat_at or cutoff) >= cutoff
        reason = timed_out(job) if late else INTERRUPTED
        failed = updated(session, update(Job).where(Job.id == job.id, *stale).values(
            status="failed", finished_at=now, message=f"{reason}; {budget_note(charged_at_submission(job.kind))}")
            .execution_options(synchronize_session=False))
        if failed == 1:
            reaped.append(job.id)
    return reaped


def timed_out(job) -> str:
    """Why a job past its deadline stopped (``job``: a Job or a row with ``started_at`` and ``deadline_at``)."""
    limit = (job.deadline_at - job.started_at).total_seconds() if job.started_at and job.deadline_at else None
    return f"the job ran past its time limit{f' of {limit:g} s' if limit else ''} and was stopped"
