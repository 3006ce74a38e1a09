"""What answering a modeler's query reads and writes: the :class:`QueryStorage` contract and its SQLAlchemy
implementation, :class:`SqlAlchemyQueryStorage`, which serves SQLite and PostgreSQL alike.

:func:`curator_service.services.queries.create_queries` is written against the contract only; every statement of
the query path (besides the key's lookup, :func:`curator_service.services.policy.principal_for_token`, which every
route shares) is here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import CursorResult, Table, bindparam, select, update
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import RawTable
from curator_service.persistence.models import (
    ApiKey,
    AuditEvent,
    Dataset,
    ModelingSession,
    Query,
    QueryBatch,
    Release,
    utcnow,
)

Status = Literal["done", "pending", "unmeasurable"]


@dataclass(frozen=True)
class QueryContext:
    """What a query needs of its session, the session's key, its release and the release's dataset. ``id``, ``n``,
    ``mechanism`` and ``seeded`` are the release's, so a context serves where a release is asked for
    (:func:`~curator_service.services.releases.check_served`)."""

    key_id: int
    status: str
    max_queries: int
    used_queries: int
    id: int
    n: int
    mechanism: str
    seeded: bool | None
    private: bool
    created_at: datetime
    dataset_id: int
    evaluator: dict[str, Any]
    simulation_key: str | None


@dataclass(frozen=True)
class StoredQuery:
    """A stored query of a batch: its id, row index, status and value (None while pending or unmeasurable)."""

    id: int
    row_index: int
    status: Status
    value: float | None


@dataclass(frozen=True)
class NewQuery:
    """A query to store: the row asked, its answer's status and value."""

    row_index: int
    status: Status
    value: float | None


class QueryStorage(abc.ABC):
    """The reads and writes of one query request, inside one write transaction.

    An instance is bound to the caller's write transaction (:meth:`curator_service.persistence.db.Database.write`):
    every method runs in it, and nothing is durable until the caller commits it; a rollback undoes every write
    made here. Before any method is called, the caller's transaction has looked up and locked the calling key's
    row (:func:`~curator_service.services.policy.principal_for_token` with ``lock``: ``SELECT … FOR UPDATE`` on
    PostgreSQL; on SQLite the transaction began with ``BEGIN IMMEDIATE`` and holds the database's one write lock).

    Thread safety:
        An instance is not thread-safe: it is used by the one thread that runs its transaction, for that
        transaction only. Concurrent queries each use their own instance and transaction; the lock taken before
        the first call serialises those of one key, so a budget read by :meth:`query_context` cannot change before
        :meth:`charge_key`, and a ``request_id`` checked by :meth:`stored_batch` cannot be stored by another
        request in between.

    Every method may also raise :class:`sqlalchemy.exc.SQLAlchemyError` when the database fails; the caller's
    transaction is then rolled back.
    """

    @abc.abstractmethod
    def query_context(self, session_id: int) -> QueryContext | None:
        """The context of session ``session_id``, whoever's it is (the caller checks the key).

        Returns:
            The :class:`QueryContext`, or None when no session has that id.

        Raises:
            Nothing beyond the database's errors.
        """

    @abc.abstractmethod
    def stored_batch(self, session_id: int, request_id: str) -> list[StoredQuery]:
        """The queries stored for ``request_id`` in session ``session_id``, in the order they were stored.

        Returns:
            The batch's queries; an empty list when the request id was not used in that session (a stored batch
            holds at least one query).

        Raises:
            Nothing beyond the database's errors.
        """

    @abc.abstractmethod
    def private_measurements(self, release_id: int) -> bytes:
        """The encoded ỹ drawn for release ``release_id`` at release time (:func:`~.blobs.decode_matrix` reads it).

        Raises:
            KeyError: No release has that id, or it has no private measurements.
        """

    @abc.abstractmethod
    def load_table(self, dataset_id: int) -> RawTable:
        """Dataset ``dataset_id``'s raw table, decoded (the caller caches it: a table never changes).

        Raises:
            KeyError: No dataset has that id.
        """

    @abc.abstractmethod
    def store_batch(self, session_id: int, request_id: str | None, queries: Sequence[NewQuery],
                    now: datetime) -> list[int]:
        """Stores one batch (keyed by ``request_id`` when given) of ``queries`` in session ``session_id``, created
        and, unless pending, answered at ``now``.

        Returns:
            The new queries' ids, in the order of ``queries``.

        Raises:
            ValueError: ``queries`` is empty (a batch holds at least one query).
            sqlalchemy.exc.IntegrityError: ``request_id`` was already used in that session, or no session has
                that id.
        """

    @abc.abstractmethod
    def charge_key(self, key_id: int, count: int) -> None:
        """Adds ``count`` to key ``key_id``'s used queries.

        Raises:
            KeyError: No key has that id.
        """

    @abc.abstractmethod
    def record_event(self, actor: str, action: str, target: str | None) -> None:
        """Adds an audit event, which commits with the rest of the transaction. ``target`` is stored as given: the
        caller makes it safe and short enough (:func:`curator_service.services.audit.stored_target`).

        Raises:
            Nothing beyond the database's errors.
        """


# Declarative typing says FromClause; a mapped class's __table__ is its Table (insert() and update() need one).
_sessions, _keys, _releases, _datasets = (cast(Table, ModelingSession.__table__), cast(Table, ApiKey.__table__),
                                          cast(Table, Release.__table__), cast(Table, Dataset.__table__))
_batches, _queries = cast(Table, QueryBatch.__table__), cast(Table, Query.__table__)

_CONTEXT = (
    select(_sessions.c.key_id, _sessions.c.status, _keys.c.max_queries, _keys.c.used_queries, _releases.c.id,
           _releases.c.n, _releases.c.mechanism, _releases.c.seeded,
           _releases.c.measurements.is_not(None).label("private"), _releases.c.created_at, _releases.c.dataset_id,
           _datasets.c.evaluator, _datasets.c.simulation_key)
    .select_from(_sessions.join(_keys, _keys.c.id == _sessions.c.key_id)
                 .join(_releases, _releases.c.id == _sessions.c.release_id)
                 .join(_datasets, _datasets.c.id == _releases.c.dataset_id))
    .where(_sessions.c.id == bindparam("session_id"))
)
_STORED_BATCH = (
    select(_queries.c.id, _queries.c.row_index, _queries.c.status, _queries.c.value)
    .select_from(_queries.join(_batches, _batches.c.id == _queries.c.batch_id))
    .where(_batches.c.session_id == bindparam("session_id"), _batches.c.request_id == bindparam("request_id"))
    .order_by(_queries.c.id)
)
_PRIVATE_MEASUREMENTS = select(_releases.c.measurements).where(_releases.c.id == bindparam("release_id"))
_TABLE = (select(_datasets.c.table, _datasets.c.columns, _datasets.c.feature_columns, _datasets.c.source_rows)
          .where(_datasets.c.id == bindparam("dataset_id")))
_INSERT_BATCH = _batches.insert().returning(_batches.c.id)
_INSERT_QUERIES = _queries.insert().returning(_queries.c.id, sort_by_parameter_order=True)
_INSERT_EVENT = cast(Table, AuditEvent.__table__).insert()
_CHARGE_KEY = (update(_keys).where(_keys.c.id == bindparam("key_id"))
               .values(used_queries=_keys.c.used_queries + bindparam("count")))


class SqlAlchemyQueryStorage(QueryStorage):
    """:class:`QueryStorage` on an ORM :class:`~sqlalchemy.orm.Session`'s write transaction, in SQLAlchemy Core
    statements built once (no ORM objects: the same SQL on SQLite and PostgreSQL)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def query_context(self, session_id: int) -> QueryContext | None:
        row = self.session.execute(_CONTEXT, {"session_id": session_id}).one_or_none()
        return None if row is None else QueryContext(**row._asdict())

    def stored_batch(self, session_id: int, request_id: str) -> list[StoredQuery]:
        rows = self.session.execute(_STORED_BATCH, {"session_id": session_id, "request_id": request_id})
        return [StoredQuery(**row._asdict()) for row in rows]

    def private_measurements(self, release_id: int) -> bytes:
        blob = self.session.execute(_PRIVATE_MEASUREMENTS, {"release_id": release_id}).scalar_one_or_none()
        if blob is None:
            raise KeyError(f"release {release_id} does not exist or has no private measurements")
        return blob

    def load_table(self, dataset_id: int) -> RawTable:
        row = self.session.execute(_TABLE, {"dataset_id": dataset_id}).one_or_none()
        if row is None:
            raise KeyError(f"dataset {dataset_id} does not exist")
        return RawTable.decode(row.table, row.columns, row.feature_columns, row.source_rows)

    def store_batch(self, session_id: int, request_id: str | None, queries: Sequence[NewQuery],
                    now: datetime) -> list[int]:
        if not queries:
            raise ValueError("a batch holds at least one query")
        batch_id = self.session.execute(_INSERT_BATCH, {"session_id": session_id, "request_id": request_id,
                                                        "created_at": now}).scalar_one()
        rows = [{"session_id": session_id, "batch_id": batch_id, "row_index": query.row_index, "value": query.value,
                 "status": query.status, "answered_at": None if query.status == "pending" else now,
                 "created_at": now} for query in queries]
        return list(self.session.execute(_INSERT_QUERIES, rows).scalars())

    def charge_key(self, key_id: int, count: int) -> None:
        charged = cast(CursorResult, self.session.execute(_CHARGE_KEY, {"key_id": key_id, "count": count}))
        if charged.rowcount != 1:
            raise KeyError(f"key {key_id} does not exist")

    def record_event(self, actor: str, action: str, target: str | None) -> None:
        self.session.execute(_INSERT_EVENT, {"actor": actor, "action": action, "target": target,
                                             "created_at": utcnow()})
