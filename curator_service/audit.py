"""The audit trail: who did what, when, to which object. Never a data value, an index or a token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.auth import Curator, Principal
from curator_service.models import AuditEvent as AuditRow
from shared.api.schemas import AuditEvent

router = APIRouter(tags=["ledger and audit"])


def record(session: Session, principal: Principal | str, action: str, target: str | None = None) -> None:
    """Adds an event to the caller's transaction, so it commits (or not) with what it describes."""
    actor = principal if isinstance(principal, str) else principal.actor
    session.add(AuditRow(actor=actor, action=action, target=target))


@router.get("/v1/audit", response_model=list[AuditEvent], summary="Audit events, oldest first")
def list_audit_events(
    request: Request,
    principal: Curator,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> list[AuditEvent]:
    with request.app.state.db.read() as session:
        rows = session.scalars(select(AuditRow).order_by(AuditRow.id).offset(offset).limit(limit)).all()
        return [AuditEvent.model_validate(row, from_attributes=True) for row in rows]
