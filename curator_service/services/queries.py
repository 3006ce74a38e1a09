"""Modeler sessions and index-only queries (docs/design.md §3 steps 4–5).

A query names rows of the released inputs by index; the curator measures the preimage row (or, on a release
with private measurements, reads the ỹ drawn for it at release time) and stores the answer in the same
transaction that charges the key's query budget, so an answer is durable before the modeler sees it. A
repeated ``request_id`` returns the stored results without a new charge.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime
from typing import Literal

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import LruCache, RawTable, TableCache, cached_table, decode_matrix
from curator_service.persistence.db import get_or_404, not_found
from curator_service.persistence.models import ApiKey, Dataset, ModelingSession, Query, Release, utcnow
from curator_service.persistence.query_storage import NewQuery, QueryContext, QueryStorage, StoredQuery
from curator_service.services.audit import record, stored_target
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

Answer = tuple[Literal["done", "pending", "unmeasurable"], float | None]
"""A query's status and value as it is stored."""


def session_out(session: Session, modeling: ModelingSession) -> SessionOut:
    """Budget figures are the key's: ``used`` counts every query charged to it, over all its sessions."""
    key = session.get_one(ApiKey, modeling.key_id)
    return SessionOut(
        id=modeling.id, release_id=modeling.release_id, max_queries=key.max_queries, used=key.used_queries,
        status=modeling.status, created_at=modeling.created_at,
    )


def query_result(query: Query | StoredQuery) -> QueryResult:
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
# Written against the storage contract (:class:`~curator_service.persistence.query_storage.QueryStorage`): what a
# query reads and writes, in the caller's one write transaction.

DECODED_PRIVATE_MEASUREMENTS: LruCache[tuple[int, datetime, int], np.ndarray] = LruCache(capacity=4)
"""Decoded ỹ of recently queried releases (decoding is O(n) per query otherwise: 8 MB at n = 10⁶). A release never
changes; the key is its identity (id, creation time, n), not its id alone, so a database replaced behind the same
URL never serves another release's ỹ. The tables' bounded, thread-safe LRU, here keyed by that tuple."""


def create_queries(storage: QueryStorage, tables: TableCache, settings: Settings, principal: Principal,
                   session_id: int, body: QueryRequest) -> QueryResponse:
    """Measures rows by index in the caller's write transaction, which looked up and locked the caller's key
    (:func:`~curator_service.services.policy.principal_for_token` with ``lock``): the answers, the key's charge and
    the audit event commit together."""
    context = query_context(storage, principal, session_id)
    if (stored := replayed(storage, session_id, body)) is not None:
        return stored
    check_queryable(settings, session_id, context)
    check_indices(context, body.indices)
    check_query_budget(context, len(body.indices))
    results = store_answers(storage, session_id, body, answers(storage, tables, context, body.indices))
    storage.charge_key(context.key_id, len(results))
    storage.record_event(principal.actor, "query.create",
                         stored_target(f"session:{session_id} ({len(results)} queries)"))
    return QueryResponse(results=results)


def query_context(storage: QueryStorage, principal: Principal, session_id: int) -> QueryContext:
    """The session's context, or the same 404 whether it does not exist or is another key's (the caller is a modeler
    key: only modeler keys query, so :func:`~curator_service.services.policy.may_see` reduces to the key's id)."""
    context = storage.query_context(session_id)
    if context is None or context.key_id != principal.key_id:
        raise not_found(ModelingSession, session_id)
    return context


def replayed(storage: QueryStorage, session_id: int, body: QueryRequest) -> QueryResponse | None:
    """The stored results of a repeated ``request_id`` (None: a new request); 409 if it named other indices."""
    if body.request_id is None:
        return None
    stored = storage.stored_batch(session_id, body.request_id)
    if not stored:  # a batch always holds at least one query
        return None
    if [q.row_index for q in stored] != body.indices:
        raise ApiError(409, "conflict", f"request_id {body.request_id!r} was already used for other indices; "
                       "use a new request_id for a new request")
    return QueryResponse(results=[query_result(q) for q in stored])


def check_queryable(settings: Settings, session_id: int, context: QueryContext) -> None:
    """The session is open and this server still serves its release."""
    if context.status != "open":
        raise ApiError(409, "conflict", f"session {session_id} is closed; reopen it (POST /v1/sessions/"
                       f"{session_id}/reopen) or open a new session to query again")
    check_served(settings, context)


def check_indices(release: Release | QueryContext, indices: list[int]) -> None:
    bad = next((i for i in indices if not 0 <= i < release.n), None)
    if bad is not None:
        raise ApiError(422, "validation_error",
                       f"index {bad} is out of range; valid indices are 0 to {release.n - 1} (the release has "
                       f"{release.n} rows)")


def check_query_budget(key: ApiKey | QueryContext, count: int) -> None:
    remaining = key.max_queries - key.used_queries
    if count > remaining:
        raise ApiError(409, "query_budget_exhausted",
                       f"this key has {remaining} of {key.max_queries} queries left and the request asks for "
                       f"{count}; ask for fewer or ask the curator for a new key")


def answers(storage: QueryStorage, tables: TableCache, context: QueryContext, indices: list[int]) -> list[Answer]:
    """The answers for rows ``indices``: with private measurements, the ỹ drawn once at release time (no evaluator
    runs, so no error, pending state or timing depends on y); otherwise the dataset's evaluator (:func:`answer_of`).
    A column evaluator's time does not depend on y (an array lookup); a python evaluator is the curator's code."""
    if context.private:
        private_y = DECODED_PRIVATE_MEASUREMENTS.get((context.id, context.created_at, context.n),
                                                     lambda: decode_matrix(storage.private_measurements(context.id)))
        return [("done", float(private_y[i])) for i in indices]
    # The dataset's table blob is read only when the decoded table is not cached.
    table = tables.get(context.dataset_id, lambda: storage.load_table(context.dataset_id))
    return [answer_of(context, table, i) for i in indices]


def answer_of(context: QueryContext, table: RawTable, index: int) -> Answer:
    """Row ``index``'s answer: ``done`` with its value, ``pending`` (manual), or ``unmeasurable`` when the curator's
    python evaluator fails on it. Unmeasurable is an answer like any other, stored and charged: a refusal (an error,
    nothing charged) would tell the modeler for free on which rows the evaluator fails, a fact about their data."""
    try:
        value = measure(context.evaluator, table, index, context.simulation_key or "")
    except EvaluatorError:
        logger.error("a queried row is unmeasurable: the python evaluator %r failed on it",
                     context.evaluator["target"])  # never the row or its values
        return "unmeasurable", None
    return ("pending", None) if value is None else ("done", value)


def store_answers(storage: QueryStorage, session_id: int, body: QueryRequest,
                  answered: list[Answer]) -> list[QueryResult]:
    """One batch (keyed by ``request_id``) holding a query per index: done, pending or unmeasurable."""
    new = [NewQuery(index, status, value) for index, (status, value) in zip(body.indices, answered, strict=True)]
    ids = storage.store_batch(session_id, body.request_id, new, utcnow())
    return [QueryResult(query_id=query_id, index=query.row_index, status=query.status, value=query.value)
            for query_id, query in zip(ids, new, strict=True)]


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
