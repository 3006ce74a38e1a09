"""Modeler sessions and index-only queries (DESIGN §3 steps 4–5).

A query names rows of the released inputs by index; the curator measures the preimage row (or, on a release
with private measurements, reads the ỹ drawn for it at release time) and stores the answer in the same
transaction that charges the key's query budget, so an answer is durable before the modeler sees it. A
repeated ``request_id`` returns the stored results without a new charge.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeVar, cast

import numpy as np
from sqlalchemy import Connection, Row, Table, bindparam, select, update
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import LruCache, RawTable, TableCache, cached_table, decode_matrix
from curator_service.persistence.db import Prepared, get_or_404, not_found
from curator_service.persistence.models import ApiKey, Dataset, ModelingSession, Query, QueryBatch, Release, utcnow
from curator_service.services.audit import record
from curator_service.services.evaluators import EvaluatorError, measure
from curator_service.services.policy import Principal, visible, visible_or_404
from curator_service.services.releases import check_served
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import (
    MeasurementSpec,
    PendingQuery,
    PendingQueryList,
    QueryList,
    QueryRequest,
    QueryResponse,
    QueryResult,
    SessionOut,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

Answer = tuple[Literal["done", "pending", "unmeasurable"], float | None]
"""A query's status and value as it is stored."""


def session_out(session: Session, modeling: ModelingSession) -> SessionOut:
    """Budget figures are the key's: ``used`` counts every query charged to it, over all its sessions."""
    key = session.get_one(ApiKey, modeling.key_id)
    return SessionOut(
        id=modeling.id, release_id=modeling.release_id, max_queries=key.max_queries, used=key.used_queries,
        status=modeling.status, created_at=modeling.created_at,
    )


def query_result(query: Query | Row) -> QueryResult:
    return QueryResult(query_id=query.id, index=query.row_index, status=query.status, value=query.value)


# --- sessions --------------------------------------------------------------------------------------------------


def open_session(session: Session, settings: Settings, principal: Principal, release_id: int) -> SessionOut:
    release = visible_or_404(session, principal, Release, release_id)
    check_served(settings, release)
    modeling = ModelingSession(release_id=release_id, key_id=principal.key_id, status="open")
    session.add(modeling)
    session.flush()
    record(session, principal, "session.open", f"session:{modeling.id}")
    return session_out(session, modeling)


def get_session(session: Session, principal: Principal, session_id: int) -> SessionOut:
    return session_out(session, visible_or_404(session, principal, ModelingSession, session_id))


def list_sessions(session: Session, principal: Principal, release_id: int | None = None) -> list[SessionOut]:
    """The sessions this caller may see (a modeler: its key's), oldest first."""
    statement = select(ModelingSession).where(visible(principal, ModelingSession)).order_by(ModelingSession.id)
    if release_id is not None:
        statement = statement.where(ModelingSession.release_id == release_id)
    return [session_out(session, modeling) for modeling in session.scalars(statement)]


def _set_session_status(session: Session, principal: Principal, session_id: int, status: str,
                        action: str) -> SessionOut:
    """Moves a visible session to ``status``, audited as ``action`` when it changes (a repeat changes nothing)."""
    modeling = visible_or_404(session, principal, ModelingSession, session_id)
    if modeling.status != status:
        modeling.status = status
        record(session, principal, action, f"session:{session_id}")
    return session_out(session, modeling)


def close_session(session: Session, principal: Principal, session_id: int) -> SessionOut:
    return _set_session_status(session, principal, session_id, "closed", "session.close")


def reopen_session(session: Session, principal: Principal, session_id: int) -> SessionOut:
    """Opens a closed session again, for its run to continue (its key's query budget still bounds it)."""
    return _set_session_status(session, principal, session_id, "open", "session.reopen")


def list_session_queries(session: Session, principal: Principal, session_id: int) -> QueryList:
    modeling = visible_or_404(session, principal, ModelingSession, session_id)
    queries = session.scalars(select(Query).where(Query.session_id == modeling.id).order_by(Query.id))
    return QueryList(queries=[query_result(q) for q in queries])


# --- queries: create_queries and its steps ---------------------------------------------------------------------
# The hot path: SQLAlchemy Core statements built once and prepared (:class:`Prepared`), run on the
# caller's one write transaction's connection, no ORM objects (the ORM's identity map and unit-of-work flush cost
# more than the statements).

# Declarative typing says FromClause; a mapped class's __table__ is its Table (insert() and update() need one).
_sessions, _keys, _releases, _datasets = (cast(Table, ModelingSession.__table__), cast(Table, ApiKey.__table__),
                                          cast(Table, Release.__table__), cast(Table, Dataset.__table__))
_batches, _queries = cast(Table, QueryBatch.__table__), cast(Table, Query.__table__)

QUERY_CONTEXT = Prepared(
    select(_sessions.c.key_id, _sessions.c.status, _keys.c.max_queries, _keys.c.used_queries, _releases.c.id,
           _releases.c.n, _releases.c.mechanism, _releases.c.seeded,
           _releases.c.measurements.is_not(None).label("private"), _releases.c.created_at, _releases.c.dataset_id,
           _datasets.c.evaluator, _datasets.c.simulation_key)
    .select_from(_sessions.join(_keys, _keys.c.id == _sessions.c.key_id)
                 .join(_releases, _releases.c.id == _sessions.c.release_id)
                 .join(_datasets, _datasets.c.id == _releases.c.dataset_id))
    .where(_sessions.c.id == bindparam("session_id"))
)
"""What a query needs of its session, key, release and dataset, in one statement. Its ``id``, ``n``, ``mechanism``
and ``seeded`` are the release's, so the row serves :func:`check_served` and :func:`check_indices` as a release."""
STORED_BATCH = Prepared(
    select(_queries.c.id, _queries.c.row_index, _queries.c.status, _queries.c.value)
    .select_from(_queries.join(_batches, _batches.c.id == _queries.c.batch_id))
    .where(_batches.c.session_id == bindparam("session_id"), _batches.c.request_id == bindparam("request_id"))
    .order_by(_queries.c.id)
)
PRIVATE_MEASUREMENTS = select(_releases.c.measurements).where(_releases.c.id == bindparam("release_id"))
DECODED_PRIVATE_MEASUREMENTS: LruCache[tuple[int, datetime, int], np.ndarray] = LruCache(capacity=4)
"""Decoded ỹ of recently queried releases (decoding is O(n) per query otherwise: 8 MB at n = 10⁶). A release never
changes; the key is its identity (id, creation time, n), not its id alone, so a database replaced behind the same
URL never serves another release's ỹ. The tables' bounded, thread-safe LRU, here keyed by that tuple."""
INSERT_BATCH = Prepared(_batches.insert(), ("session_id", "request_id", "created_at"))
INSERT_QUERY = Prepared(_queries.insert(), ("session_id", "batch_id", "row_index", "value", "status", "answered_at",
                                            "created_at"))
CHARGE_KEY = Prepared(update(_keys).where(_keys.c.id == bindparam("key_id"))
                      .values(used_queries=_keys.c.used_queries + bindparam("count")))


class NeedsThread(Exception):
    """A step that may take long (decoding a table or a release's ỹ that is not cached, a python evaluator) was
    reached on the event loop: the caller rolls its transaction back and runs the request in a worker thread."""


def create_queries(session: Session, tables: TableCache, settings: Settings, principal: Principal, session_id: int,
                   body: QueryRequest, *, on_event_loop: bool = False) -> QueryResponse:
    """Measures rows by index in the caller's write transaction, which looked up and locked the caller's key
    (:func:`~curator_service.services.policy.principal_for_token` with ``lock``): the answers, the key's charge and
    the audit event commit together. ``on_event_loop``: :class:`NeedsThread` instead of any step that may take long
    (raised before anything is written)."""
    connection = session.connection()
    context = query_context(connection, principal, session_id)
    if (stored := replayed(connection, session_id, body)) is not None:
        return stored
    check_queryable(settings, session_id, context)
    check_indices(context, body.indices)
    check_query_budget(context, len(body.indices))
    results = store_answers(connection, session_id, body, answers(session, tables, context, body.indices,
                                                                         on_event_loop))
    CHARGE_KEY.run(connection, {"key_id": principal.key_id, "count": len(results)})
    record(session, principal, "query.create", f"session:{session_id} ({len(results)} queries)")
    return QueryResponse(results=results)


def query_context(connection: Connection, principal: Principal, session_id: int) -> Row:
    """The session's context, or the same 404 whether it does not exist or is another key's (the caller is a modeler
    key: only modeler keys query, so :func:`~curator_service.services.policy.may_see` reduces to the key's id)."""
    found = QUERY_CONTEXT.run(connection, {"session_id": session_id})
    if not found or found[0].key_id != principal.key_id:
        raise not_found(ModelingSession, session_id)
    return found[0]


def replayed(connection: Connection, session_id: int, body: QueryRequest) -> QueryResponse | None:
    """The stored results of a repeated ``request_id`` (None: a new request); 409 if it named other indices."""
    if body.request_id is None:
        return None
    stored = STORED_BATCH.run(connection, {"session_id": session_id, "request_id": body.request_id})
    if not stored:  # a batch always holds at least one query
        return None
    if [q.row_index for q in stored] != body.indices:
        raise ApiError(409, "conflict", f"request_id {body.request_id!r} was already used for other indices; "
                       "use a new request_id for a new request")
    return QueryResponse(results=[query_result(q) for q in stored])


def check_queryable(settings: Settings, session_id: int, context: Row) -> None:
    """The session is open and this server still serves its release."""
    if context.status != "open":
        raise ApiError(409, "conflict", f"session {session_id} is closed; reopen it (POST /v1/sessions/"
                       f"{session_id}/reopen) or open a new session to query again")
    check_served(settings, context)


def check_indices(release: Release | Row, indices: list[int]) -> None:
    bad = next((i for i in indices if not 0 <= i < release.n), None)
    if bad is not None:
        raise ApiError(422, "validation_error",
                       f"index {bad} is out of range; valid indices are 0 to {release.n - 1} (the release has "
                       f"{release.n} rows)")


def check_query_budget(key: ApiKey | Row, count: int) -> None:
    remaining = key.max_queries - key.used_queries
    if count > remaining:
        raise ApiError(409, "query_budget_exhausted",
                       f"this key has {remaining} of {key.max_queries} queries left and the request asks for "
                       f"{count}; ask for fewer or ask the curator for a new key")


def answers(session: Session, tables: TableCache, context: Row, indices: list[int],
            on_event_loop: bool = False) -> list[Answer]:
    """The answers for rows ``indices``: with private measurements, the ỹ drawn once at release time (no evaluator
    runs, so no error, pending state or timing depends on y); otherwise the dataset's evaluator (:func:`answer_of`).
    A column evaluator's time does not depend on y (an array lookup); a python evaluator is the curator's code.
    ``on_event_loop``: :class:`NeedsThread` instead of decoding what is not cached or running a python evaluator."""

    def unless_on_event_loop(load: Callable[[], T]) -> Callable[[], T]:
        def checked() -> T:
            if on_event_loop:
                raise NeedsThread
            return load()
        return checked

    if context.private:
        private_y = DECODED_PRIVATE_MEASUREMENTS.get((context.id, context.created_at, context.n), unless_on_event_loop(
            lambda: decode_matrix(session.connection().execute(PRIVATE_MEASUREMENTS,
                                                               {"release_id": context.id}).scalar_one())))
        return [("done", float(private_y[i])) for i in indices]
    if on_event_loop and context.evaluator["kind"] not in ("column", "manual"):
        raise NeedsThread
    # The dataset's ORM row (and its table blob) is read only when the decoded table is not cached.
    table = tables.get(context.dataset_id, unless_on_event_loop(
        lambda: cached_table(tables, session.get_one(Dataset, context.dataset_id))))
    return [answer_of(context, table, i) for i in indices]


def answer_of(context: Row, table: RawTable, index: int) -> Answer:
    """Row ``index``'s answer: ``done`` with its value, ``pending`` (manual), or ``unmeasurable`` when the curator's
    python evaluator fails on it. Unmeasurable is an answer like any other, stored and charged: a refusal (an error,
    nothing charged) would tell the modeler for free on which rows the evaluator fails, a fact about their data."""
    try:
        value = measure(context.evaluator, table, index, context.simulation_key)
    except EvaluatorError:
        logger.error("a queried row is unmeasurable: the python evaluator %r failed on it",
                     context.evaluator["target"])  # never the row or its values
        return "unmeasurable", None
    return ("pending", None) if value is None else ("done", value)


def store_answers(connection: Connection, session_id: int, body: QueryRequest,
                  answered: list[Answer]) -> list[QueryResult]:
    """One batch (keyed by ``request_id``) holding a query per index: done, pending or unmeasurable."""
    now = utcnow()
    batch_id = INSERT_BATCH.run(connection, {"session_id": session_id, "request_id": body.request_id,
                                             "created_at": now})
    rows = [{"session_id": session_id, "batch_id": batch_id, "row_index": index, "value": value,
             "status": status, "answered_at": None if status == "pending" else now, "created_at": now}
            for index, (status, value) in zip(body.indices, answered, strict=True)]
    ids = INSERT_QUERY.run_many(connection, rows)
    return [QueryResult(query_id=query_id, index=row["row_index"], status=row["status"], value=row["value"])
            for query_id, row in zip(ids, rows, strict=True)]


# --- manual measurements ---------------------------------------------------------------------------------------


def pending_queries(session: Session, tables: TableCache, dataset_id: int | None = None) -> PendingQueryList:
    """Queries waiting for a manual measurement, each with the file row the curator measures."""
    statement = (
        select(Query, ModelingSession.release_id, Release.dataset_id)
        .join(ModelingSession, ModelingSession.id == Query.session_id)
        .join(Release, Release.id == ModelingSession.release_id)
        .where(Query.status == "pending")
        .order_by(Query.id)
    )
    if dataset_id is not None:
        statement = statement.where(Release.dataset_id == dataset_id)
    pending = session.execute(statement).all()
    tables_by_id = {ds_id: cached_table(tables, session.get_one(Dataset, ds_id)) for _, _, ds_id in pending}
    return PendingQueryList(queries=[
        PendingQuery(query_id=q.id, session_id=q.session_id, release_id=release_id, dataset_id=ds_id,
                     index=q.row_index, row=tables_by_id[ds_id].file_row(q.row_index), created_at=q.created_at)
        for q, release_id, ds_id in pending
    ])


def answer_query(session: Session, principal: Principal, query_id: int, value: float,
                 confirm_outside_range: bool = False) -> QueryResult:
    """Posts the measurement of a pending manual query (once: answers cannot be changed)."""
    if not math.isfinite(value):
        raise ApiError(422, "validation_error", "'value' must be a finite number; send the measured value")
    query = get_or_404(session, Query, query_id, lock=True)
    if query.status != "pending":
        raise ApiError(409, "conflict", f"query {query_id} is already answered or marked 'cannot measure' (status "
                       f"{query.status}); correct it with a reason instead (pobo-curator queries correct {query_id} "
                       f"VALUE --reason '…', or POST /v1/queries/{query_id}/correct)")
    check_plausible(session, query, value, confirm_outside_range)
    return post_answer(session, principal, query, value)


OUTSIDE_RANGE = "outside_plausible_range"


def check_plausible(session: Session, query: Query, value: float, confirmed: bool, where: str = "the value") -> None:
    """Refuses (422, ``outside_plausible_range``) a value outside the dataset's plausible range unless the person
    confirmed it. The sentence names the public range, never the value."""
    dataset = session.get_one(Dataset, session.get_one(Release, session.get_one(
        ModelingSession, query.session_id).release_id).dataset_id)
    if confirmed or dataset.measurement is None:
        return
    measurement = MeasurementSpec.model_validate(dataset.measurement)
    if measurement.outside(value):
        raise ApiError(422, OUTSIDE_RANGE, f"{where} lies outside the plausible range of {measurement.quantity} "
                       f"({measurement.range_text()}) stated for dataset {dataset.id}; check it, and if it is right "
                       "send it again with 'confirm_outside_range': true")


def post_answer(session: Session, principal: Principal, query: Query, value: float) -> QueryResult:
    """The measurement of a pending query (locked by the caller): stored, audited (never the value)."""
    query.status, query.value, query.answered_at = "done", value, utcnow()
    record(session, principal, "query.answer", f"query:{query.id}")
    return query_result(query)
