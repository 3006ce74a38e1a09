"""Read-only views the API does not have yet: every modeling session with its query counts.

The curator may already read one session (``GET /v1/sessions/{id}``) and its queries; there is no listing.
This reads the same rows, metadata only (no values, no indices), for the curator's console. The caller must
have checked that the console's token is a curator's (the sessions page does, by reading ``GET /v1/keys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from curator_service.persistence.db import Database
from curator_service.persistence.models import Job, ModelingSession, Query, Release


@dataclass(frozen=True)
class SessionRow:
    id: int
    release_id: int
    dataset_id: int
    key_id: int
    status: str
    queries: int
    pending: int
    created_at: datetime


def list_sessions(session: Session) -> list[SessionRow]:
    """Every session, newest first, with how many queries it made and how many still wait for a measurement."""
    counts = (
        select(Query.session_id, func.count(Query.id).label("queries"),
               func.sum(case((Query.status == "pending", 1), else_=0)).label("pending"))
        .group_by(Query.session_id).subquery()
    )
    statement = (
        select(ModelingSession, Release.dataset_id, counts.c.queries, counts.c.pending)
        .join(Release, Release.id == ModelingSession.release_id)
        .outerjoin(counts, counts.c.session_id == ModelingSession.id)
        .order_by(ModelingSession.id.desc())
    )
    return [
        SessionRow(id=s.id, release_id=s.release_id, dataset_id=dataset_id, key_id=s.key_id, status=s.status,
                   queries=queries or 0, pending=pending or 0, created_at=s.created_at)
        for s, dataset_id, queries, pending in session.execute(statement)
    ]


def job_submitters(session: Session) -> dict[int, int | None]:
    """Who submitted each job: its key's id (None or 0: the admin token). ``GET /v1/jobs`` does not say."""
    return {job_id: key_id for job_id, key_id in session.execute(select(Job.id, Job.key_id))}


@dataclass(frozen=True)
class LiveState:
    """What the live pages watch: how many queries wait for a measurement, and a version that changes whenever a
    query is asked, answered, corrected or marked "cannot measure", or a session opens or closes."""

    waiting: int
    version: str


def live_state(db: Database) -> LiveState:
    with db.read() as session:
        queries = session.execute(
            select(func.count(Query.id), func.sum(case((Query.status == "pending", 1), else_=0)),
                   func.max(Query.answered_at))
        ).one()
        sessions = session.execute(
            select(func.count(ModelingSession.id), func.sum(case((ModelingSession.status == "open", 1), else_=0)))
        ).one()
    waiting = int(queries[1] or 0)
    answered = queries[2].isoformat() if queries[2] else "-"
    return LiveState(waiting, f"{queries[0]}.{waiting}.{answered}.{sessions[0]}.{sessions[1] or 0}")
