"""The audit log: who did what, when, to which object. Never a data value, an index or a token.

(Not the reconstruction attack, which is :mod:`.reconstruction`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Row, Select, String, Subquery, and_, case, func, insert, literal, select
from sqlalchemy.orm import Session

from curator_service.persistence.db import Prepared
from curator_service.persistence.models import AuditEvent as AuditRow
from curator_service.persistence.models import utcnow
from curator_service.services.policy import Principal
from shared.api.schemas import AuditEvent, escaped


def _declared_length(column: ColumnElement[Any]) -> int:
    """The length a string column is declared with."""
    kind = column.type
    if not isinstance(kind, String) or kind.length is None:
        raise TypeError(f"{column} is not a string column of a declared length")
    return kind.length


TARGET_LENGTH = _declared_length(AuditRow.__table__.c.target)


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


INSERT_EVENT = Prepared(insert(AuditRow), ("actor", "action", "target", "created_at"))


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


def _marked(matching: Select) -> Subquery:
    """The matching events in one pass of window functions over id order (SQLite ≥ 3.25 and PostgreSQL), no
    grouping: whether each starts a run (differs in actor, action or target from the matching event before it),
    its position, and the id and time of the matching event before it (where a start's previous run ends)."""
    events = matching.subquery()
    order = events.c.id
    before = {name: func.lag(events.c[name]).over(order_by=order) for name in ("actor", "action", "target")}
    same = and_(events.c.actor == before["actor"], events.c.action == before["action"],
                events.c.target.is_not_distinct_from(before["target"]))
    return select(events, case((same, 0), else_=1).label("starts"),
                  func.row_number().over(order_by=order).label("position"),
                  func.lag(events.c.id).over(order_by=order).label("previous_id"),
                  func.lag(events.c.created_at).over(order_by=order).label("previous_at")).subquery()


def _runs(marked: Subquery, matching: int, final: Row) -> Select:
    """Each run of identical consecutive events as one row: its first event, its length and its last event, which
    ends where the next run starts (the gaps-and-islands reading of :func:`_marked`); the last run ends at ``final``,
    the last of the ``matching`` events."""
    starts = select(marked).where(marked.c.starts == 1).subquery()

    def following(column):
        return func.lead(column).over(order_by=starts.c.id)

    return select(starts.c.id, starts.c.actor, starts.c.action, starts.c.target, starts.c.created_at,
                  (func.coalesce(following(starts.c.position), matching + 1) - starts.c.position).label("count"),
                  func.coalesce(following(starts.c.previous_id), final.id).label("last_id"),
                  func.coalesce(following(starts.c.previous_at),
                                literal(final.created_at, AuditRow.created_at.type)).label("last_at"))


def list_events(session: Session, which: EventFilter = EventFilter(), *, order: Order = "oldest", offset: int = 0,
                limit: int = 1000, grouped: bool = False) -> list[AuditEvent]:
    """One page of the matching events, oldest or newest first; ``grouped``: each run of identical consecutive events
    as one (its first id and time, ``count``, ``last_id`` and ``last_at``), so a thousand page views read as one row."""
    if grouped:
        events = which.select().subquery()
        matching, final_id = session.execute(select(func.count(), func.max(events.c.id))).one()
        if not matching:
            return []
        final = session.execute(select(AuditRow.id, AuditRow.created_at).where(AuditRow.id == final_id)).one()
        listed = _runs(_marked(which.select()), matching, final).subquery()
    else:
        listed = which.select().add_columns(literal(1).label("count"), AuditRow.id.label("last_id"),
                                            AuditRow.created_at.label("last_at")).subquery()
    key = listed.c.id.desc() if order == "newest" else listed.c.id
    rows = session.execute(select(listed).order_by(key).offset(offset).limit(limit)).mappings().all()
    return [AuditEvent.model_validate(dict(row)) for row in rows]


def count_events(session: Session, which: EventFilter = EventFilter(), *, grouped: bool = False) -> int:
    """How many rows :func:`list_events` lists over all its pages (runs, when grouped)."""
    if not grouped:
        return session.execute(select(func.count()).select_from(which.select().subquery())).scalar_one()
    marked = _marked(which.select())
    return session.execute(select(func.count()).select_from(marked).where(marked.c.starts == 1)).scalar_one()
