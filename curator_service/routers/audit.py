"""``/v1/audit``: the audit log (who did what, when; never data values)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from curator_service.routers.auth import Curator
from curator_service.routers.params import Offset
from curator_service.services import audit
from shared.api.schemas import AuditEvent, PlainText

router = APIRouter(tags=["ledger and audit"])

TOTAL_HEADER = "X-Total-Count"


@router.get("/v1/audit", response_model=list[AuditEvent], summary="Audit events, paged and filtered")
def list_audit_events(
    request: Request,
    response: Response,
    principal: Curator,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    actor: Annotated[PlainText | None, Query(max_length=240, description="Only this actor's events ('admin' or "
                                             "'key:<id>:<name>').")] = None,
    action: Annotated[PlainText | None, Query(max_length=64, description="Only actions starting with this ('key.' or "
                                              "'key.revoke').")] = None,
    target: Annotated[PlainText | None, Query(max_length=240, description="Only targets containing this "
                                              "('dataset:1', 'query:12').")] = None,
    changes_only: Annotated[bool, Query(description="Hide reads (browsing datasets and the ledger, planning, "
                                        "released inputs fetched): only what changed something, and "
                                        "refusals.")] = False,
    order: Annotated[audit.Order, Query(description="'oldest' first (stable pages while events arrive) or 'newest' "
                                        "first.")] = "oldest",
    grouped: Annotated[bool, Query(description="List each run of identical consecutive events (same actor, action "
                                   "and target) as one row with its count.")] = False,
) -> list[AuditEvent]:
    """Who did what, when, to which object: registrations, releases, keys, sessions, queries, jobs, reads of datasets,
    the ledger and released inputs, and refused callers. Never a data value, a row index or a token. Filter by actor,
    action prefix, target text or changes only; page with offset and limit; the `X-Total-Count` header says how many
    rows all pages hold."""
    which = audit.EventFilter(actor=actor, action=action, target=target, changes_only=changes_only)
    with request.app.state.db.read() as session:
        total, events = audit.list_events(session, which, order=order, offset=offset, limit=limit, grouped=grouped)
    response.headers[TOTAL_HEADER] = str(total)
    return events
