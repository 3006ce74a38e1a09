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

from curator_service.persistence.models import ModelingSession, Query, Release


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
