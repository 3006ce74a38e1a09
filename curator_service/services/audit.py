"""The audit log: who did what, when, to which object. Never a data value, an index or a token.

(Not the reconstruction attack, which is :mod:`.reconstruction`.)
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.db import Prepared
from curator_service.persistence.models import AuditEvent as AuditRow, utcnow
from curator_service.services.policy import Principal
from shared.api.schemas import AuditEvent, escaped


TARGET_LENGTH = AuditRow.__table__.c.target.type.length


def record(session: Session, principal: Principal | str, action: str, target: str | None = None) -> None:
    """Adds an event to the caller's transaction, so it commits (or not) with what it describes. The target is
    :func:`escaped`, and cut to its column's length, ending in "…", when longer: it may embed caller text (a refused
    request's path), and PostgreSQL would otherwise fail the write, so the refusal would be a 500 and never audited."""
    actor = principal if isinstance(principal, str) else principal.actor
    if target is not None:
        target = escaped(target)
        if len(target) > TARGET_LENGTH:
            target = target[:TARGET_LENGTH - 1] + "…"
    # Prepared and sent now: an ORM object would cost a unit-of-work flush at commit (the query path's hot spot).
    INSERT_EVENT.run(session.connection(), {"actor": actor, "action": action, "target": target,
                                            "created_at": utcnow()})


INSERT_EVENT = Prepared(AuditRow.__table__.insert(), ("actor", "action", "target", "created_at"))


def list_events(session: Session, *, offset: int = 0, limit: int = 1000, actor: str | None = None,
                action: str | None = None) -> list[AuditEvent]:
    """Events oldest first, optionally only one actor's or one action's (an action prefix: ``key.`` matches every
    key event)."""
    statement = select(AuditRow).order_by(AuditRow.id)
    if actor is not None:
        statement = statement.where(AuditRow.actor == actor)
    if action is not None:
        statement = statement.where(AuditRow.action.startswith(action, autoescape=True))
    rows = session.scalars(statement.offset(offset).limit(limit)).all()
    return [AuditEvent.model_validate(row, from_attributes=True) for row in rows]
