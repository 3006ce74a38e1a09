"""The audit log: who did what, when, to which object. Never a data value, an index or a token.

(Not the reconstruction attack, which is :mod:`.reconstruction`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Select, and_, case, func, literal, select
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


READ_ACTIONS = ("dataset.list", "dataset.read", "dataset.plan", "ledger.read", "release.inputs")
"""Routine reads that change nothing (browsing datasets and the ledger, planning, a modeler fetching its released
inputs): what "changes only" hides. Refusals and reads that reveal a secret (the file's row order) stay listed."""

Order = Literal["newest", "oldest"]


@dataclass(frozen=True)
class EventFilter:
    """Which events a listing shows: one actor's, actions starting with a prefix (``key.`` matches every key event),
    targets containing a text, and with ``changes_only`` no reads (:data:`READ_ACTIONS`)."""

    actor: str | None = None
    action: str | None = None
    target: str | None = None
    changes_only: bool = False

    def select(self) -> Select:
        statement = select(AuditRow.id, AuditRow.actor, AuditRow.action, AuditRow.target, AuditRow.created_at)
        if self.actor is not None:
            statement = statement.where(AuditRow.actor == self.actor)
        if self.action is not None:
            statement = statement.where(AuditRow.action.startswith(self.action, autoescape=True))
        if self.target is not None:
            statement = statement.where(AuditRow.target.contains(self.target, autoescape=True))
        if self.changes_only:
            statement = statement.where(AuditRow.action.not_in(READ_ACTIONS))
        return statement


def _runs(matching: Select) -> Select:
    """Runs of consecutive identical events (same actor, action and target, next to each other in id order among the
    matching ones) as one row each, with their count and their last id and time: the gaps-and-islands query, a run
    starting wherever an event differs from the one before it (window functions: SQLite ≥ 3.25 and PostgreSQL)."""
    events = matching.subquery()
    before = {name: func.lag(events.c[name]).over(order_by=events.c.id) for name in ("actor", "action", "target")}
    same = and_(events.c.actor == before["actor"], events.c.action == before["action"],
                events.c.target.is_not_distinct_from(before["target"]))
    marked = select(events, case((same, 0), else_=1).label("starts")).subquery()
    numbered = select(marked, func.sum(marked.c.starts).over(order_by=marked.c.id).label("run")).subquery()
    return (select(func.min(numbered.c.id).label("id"), numbered.c.actor, numbered.c.action, numbered.c.target,
                   func.min(numbered.c.created_at).label("created_at"), func.count().label("count"),
                   func.max(numbered.c.id).label("last_id"), func.max(numbered.c.created_at).label("last_at"))
            .group_by(numbered.c.run, numbered.c.actor, numbered.c.action, numbered.c.target))


def _listed(which: EventFilter, grouped: bool) -> Select:
    matching = which.select()
    if grouped:
        return _runs(matching)
    return matching.add_columns(literal(1).label("count"), AuditRow.id.label("last_id"),
                                AuditRow.created_at.label("last_at"))


def list_events(session: Session, which: EventFilter = EventFilter(), *, order: Order = "oldest", offset: int = 0,
                limit: int = 1000, grouped: bool = False) -> list[AuditEvent]:
    """One page of the matching events, oldest or newest first; ``grouped``: each run of identical consecutive events
    as one (its first id and time, ``count``, ``last_id`` and ``last_at``), so a thousand page views read as one row."""
    listed = _listed(which, grouped).subquery()
    key = listed.c.id.desc() if order == "newest" else listed.c.id
    rows = session.execute(select(listed).order_by(key).offset(offset).limit(limit)).mappings().all()
    return [AuditEvent.model_validate(dict(row)) for row in rows]


def count_events(session: Session, which: EventFilter = EventFilter(), *, grouped: bool = False) -> int:
    """How many rows :func:`list_events` lists over all its pages (runs, when grouped)."""
    return session.scalar(select(func.count()).select_from(_listed(which, grouped).subquery()))
