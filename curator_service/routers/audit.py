"""``/v1/audit``: the audit log (who did what, when; never data values)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from curator_service.routers.auth import Curator
from curator_service.routers.params import Offset
from curator_service.services import audit
from shared.api.schemas import AuditEvent, PlainText

router = APIRouter(tags=["ledger and audit"])


@router.get("/v1/audit", response_model=list[AuditEvent], summary="Audit events, oldest first")
def list_audit_events(
    request: Request,
    principal: Curator,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    actor: Annotated[PlainText | None,
                     Query(description="Only this actor's events ('admin' or 'key:<id>:<name>').")] = None,
    action: Annotated[PlainText | None,
                      Query(description="Only actions starting with this ('key.' or 'key.revoke').")] = None,
) -> list[AuditEvent]:
    """Who did what, when, to which object: registrations, releases, keys, sessions, queries, jobs, reads of datasets,
    the ledger and released inputs, and refused callers. Never a data value, a row index or a token. Filter by actor
    or by an action prefix (`key.`); page with offset and limit."""
    with request.app.state.db.read() as session:
        return audit.list_events(session, offset=offset, limit=limit, actor=actor, action=action)
