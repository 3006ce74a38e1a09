"""Modeler sessions and index-only queries (DESIGN §3 steps 4–5).

A query names rows of the released inputs by index; the curator measures the preimage row (or, on a release
with private measurements, reads the ỹ drawn for it at release time) and stores the answer in the same
transaction that charges the key's query budget, so an answer is durable before the modeler sees it. A
repeated ``request_id`` returns the stored results without a new charge.
"""

from __future__ import annotations

import math

from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import TableCache, decode_matrix
from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import ApiKey, Dataset, ModelingSession, Query, QueryBatch, Release, utcnow
from curator_service.services.audit import record
from curator_service.services.datasets import cached_table
from curator_service.services.evaluators import measure
from curator_service.services.policy import Principal, check_live, visible, visible_or_404
from curator_service.services.releases import check_served
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import PendingQuery, PendingQueryList, QueryList, QueryRequest, QueryResponse, QueryResult, SessionOut


def session_out(session: Session, modeling: ModelingSession) -> SessionOut:
    """Budget figures are the key's: ``used`` counts every query charged to it, over all its sessions."""
    key = session.get(ApiKey, modeling.key_id)
    return SessionOut(
        id=modeling.id, release_id=modeling.release_id, max_queries=key.max_queries, used=key.used_queries,
        status=modeling.status,
    )


def query_result(query: Query) -> QueryResult:
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


def close_session(session: Session, principal: Principal, session_id: int) -> SessionOut:
    modeling = visible_or_404(session, principal, ModelingSession, session_id)
    if modeling.status != "closed":
        modeling.status = "closed"
        record(session, principal, "session.close", f"session:{session_id}")
    return session_out(session, modeling)


def list_session_queries(session: Session, principal: Principal, session_id: int) -> QueryList:
    modeling = visible_or_404(session, principal, ModelingSession, session_id)
    queries = session.scalars(select(Query).where(Query.session_id == modeling.id).order_by(Query.id))
    return QueryList(queries=[query_result(q) for q in queries])


# --- queries: create_queries and its steps ---------------------------------------------------------------------


def create_queries(session: Session, tables: TableCache, settings: Settings, principal: Principal, session_id: int,
                   body: QueryRequest) -> QueryResponse:
    """Measures rows by index in the caller's write transaction: the answers, the key's charge and the audit
    event commit together."""
    modeling = visible_or_404(session, principal, ModelingSession, session_id)
    key = locked_live_key(session, modeling)
    if (stored := replayed(session, modeling, body)) is not None:
        return stored
    release = queryable_release(session, settings, modeling)
    check_indices(release, body.indices)
    check_query_budget(key, len(body.indices))
    queries = store_answers(session, modeling, body, answers(session, tables, release, body.indices))
    key.used_queries += len(queries)
    record(session, principal, "query.create", f"session:{session_id} ({len(queries)} queries)")
    return QueryResponse(results=[query_result(q) for q in queries])


def locked_live_key(session: Session, modeling: ModelingSession) -> ApiKey:
    """The session's key, locked (this serialises the key's charges, and its repeats of one request_id)."""
    key = get_or_404(session, ApiKey, modeling.key_id, lock=True)
    check_live(session, key)
    return key


def replayed(session: Session, modeling: ModelingSession, body: QueryRequest) -> QueryResponse | None:
    """The stored results of a repeated ``request_id`` (None: a new request); 409 if it named other indices."""
    if body.request_id is None:
        return None
    batch = session.scalars(select(QueryBatch).where(QueryBatch.session_id == modeling.id,
                                                     QueryBatch.request_id == body.request_id)).one_or_none()
    if batch is None:
        return None
    queries = session.scalars(select(Query).where(Query.batch_id == batch.id).order_by(Query.id)).all()
    if [q.row_index for q in queries] != body.indices:
        raise ApiError(409, "conflict", f"request_id {batch.request_id!r} was already used for other indices; "
                       "use a new request_id for a new request")
    return QueryResponse(results=[query_result(q) for q in queries])


def queryable_release(session: Session, settings: Settings, modeling: ModelingSession) -> Release:
    """The session's release, if the session is open and this server still serves the release."""
    if modeling.status != "open":
        raise ApiError(409, "conflict", f"session {modeling.id} is closed; open a new session to query again")
    release = session.get(Release, modeling.release_id)
    check_served(settings, release)
    return release


def check_indices(release: Release, indices: list[int]) -> None:
    bad = next((i for i in indices if not 0 <= i < release.n), None)
    if bad is not None:
        raise ApiError(422, "validation_error",
                       f"index {bad} is out of range; valid indices are 0 to {release.n - 1} (the release has "
                       f"{release.n} rows)")


def check_query_budget(key: ApiKey, count: int) -> None:
    remaining = key.max_queries - key.used_queries
    if count > remaining:
        raise ApiError(409, "query_budget_exhausted",
                       f"this key has {remaining} of {key.max_queries} queries left and the request asks for "
                       f"{count}; ask for fewer or ask the curator for a new key")


def answers(session: Session, tables: TableCache, release: Release, indices: list[int]) -> list[float | None]:
    """The answers for rows ``indices``: with private measurements, the ỹ drawn once at release time (no evaluator
    runs, so no error, pending state or timing depends on y); otherwise the dataset's evaluator (None: pending)."""
    if release.measurements is not None:
        private_y = decode_matrix(release.measurements)
        return [float(private_y[i]) for i in indices]
    dataset = session.get(Dataset, release.dataset_id)
    table = cached_table(tables, dataset)
    return [measure(dataset.evaluator, table, i, dataset.simulation_key) for i in indices]


def store_answers(session: Session, modeling: ModelingSession, body: QueryRequest,
                  values: list[float | None]) -> list[Query]:
    """One batch (keyed by ``request_id``) holding a query per index, done or pending."""
    batch = QueryBatch(session_id=modeling.id, request_id=body.request_id)
    session.add(batch)
    session.flush()
    queries = [Query(session_id=modeling.id, batch_id=batch.id, row_index=index,
                     status="pending" if value is None else "done", value=value,
                     answered_at=None if value is None else utcnow())
               for index, value in zip(body.indices, values, strict=True)]
    session.add_all(queries)
    session.flush()
    return queries


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
    tables_by_id = {ds_id: cached_table(tables, session.get(Dataset, ds_id)) for _, _, ds_id in pending}
    return PendingQueryList(queries=[
        PendingQuery(query_id=q.id, session_id=q.session_id, release_id=release_id, dataset_id=ds_id,
                     index=q.row_index, row=tables_by_id[ds_id].file_row(q.row_index), created_at=q.created_at)
        for q, release_id, ds_id in pending
    ])


def answer_query(session: Session, principal: Principal, query_id: int, value: float) -> QueryResult:
    """Posts the measurement of a pending manual query (once: answers cannot be changed)."""
    if not math.isfinite(value):
        raise ApiError(422, "validation_error", "'value' must be a finite number; send the measured value")
    query = get_or_404(session, Query, query_id, lock=True)
    if query.status != "pending":
        raise ApiError(409, "conflict", f"query {query_id} is already answered or marked 'cannot measure' (status "
                       f"{query.status}); correct it with a reason instead (POST /v1/queries/{query_id}/correct)")
    return post_answer(session, principal, query, value)


def post_answer(session: Session, principal: Principal, query: Query, value: float) -> QueryResult:
    """The measurement of a pending query (locked by the caller): stored, audited (never the value)."""
    query.status, query.value, query.answered_at = "done", value, utcnow()
    record(session, principal, "query.answer", f"query:{query.id}")
    return query_result(query)
