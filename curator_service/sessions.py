"""Modeler sessions and index-only queries (DESIGN §3 step 4–5).

A query names rows of the released inputs by index; the curator measures the preimage row (or, on a release
with private measurements, reads the ỹ drawn for it at release time) and stores the answer in the same
transaction that charges the key's query budget, so an answer is durable before the modeler sees it. A
repeated ``request_id`` returns the stored results without a new charge.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Query as QueryParam, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.audit import record
from curator_service.auth import AnyRole, Curator, Modeler
from curator_service.datasets import cached_table
from curator_service.db import get_or_404
from curator_service.errors import ApiError
from curator_service.evaluators import measure
from curator_service.models import ApiKey, Dataset, ModelingSession, Query, QueryBatch, Release, utcnow
from curator_service.releases import check_served
from curator_service.storage import decode_matrix
from shared.api.schemas import (
    AnswerRequest,
    PendingQuery,
    PendingQueryList,
    QueryList,
    QueryRequest,
    QueryResponse,
    QueryResult,
    SessionOut,
)

router = APIRouter(tags=["sessions and queries"])


def session_out(session: Session, modeling: ModelingSession) -> SessionOut:
    """Budget figures are the key's: ``used`` counts every query charged to it, over all its sessions."""
    key = session.get(ApiKey, modeling.key_id)
    return SessionOut(
        id=modeling.id, release_id=modeling.release_id, max_queries=key.max_queries, used=key.used_queries,
        status=modeling.status,
    )


def query_result(query: Query) -> QueryResult:
    return QueryResult(query_id=query.id, index=query.row_index, status=query.status, value=query.value)


def _stored_results(session: Session, batch: QueryBatch, indices: list[int]) -> QueryResponse:
    queries = session.scalars(select(Query).where(Query.batch_id == batch.id).order_by(Query.id)).all()
    if [q.row_index for q in queries] != indices:
        raise ApiError(409, "conflict", f"request_id {batch.request_id!r} was already used for other indices; "
                       "use a new request_id for a new request")
    return QueryResponse(results=[query_result(q) for q in queries])


@router.post("/v1/releases/{release_id}/sessions", status_code=201, response_model=SessionOut,
             summary="Open a session on a release (modeler key)")
def open_session(request: Request, principal: Modeler, release_id: int) -> SessionOut:
    with request.app.state.db.write() as session:
        release = get_or_404(session, Release, release_id)
        principal.require_release(release_id)
        check_served(request.app.state.settings, release)
        modeling = ModelingSession(release_id=release_id, key_id=principal.key_id, status="open")
        session.add(modeling)
        session.flush()
        record(session, principal, "session.open", f"session:{modeling.id}")
        return session_out(session, modeling)


@router.get("/v1/sessions/{session_id}", response_model=SessionOut, summary="A session's status and budget")
def get_session(request: Request, principal: AnyRole, session_id: int) -> SessionOut:
    with request.app.state.db.read() as session:
        modeling = get_or_404(session, ModelingSession, session_id)
        principal.require_owner(modeling.key_id, "session")
        return session_out(session, modeling)


@router.post("/v1/sessions/{session_id}/queries", response_model=QueryResponse,
             summary="Measure rows by index (charged to the key's query budget)")
def create_queries(request: Request, principal: Modeler, session_id: int, body: QueryRequest) -> QueryResponse:
    with request.app.state.db.write() as session:
        modeling = get_or_404(session, ModelingSession, session_id)
        principal.require_owner(modeling.key_id, "session")
        key = get_or_404(session, ApiKey, modeling.key_id, lock=True)  # serialises this key's charges
        if key.revoked:
            raise ApiError(401, "unauthorized", "this key was revoked; ask the curator for a new key")
        if body.request_id is not None:
            batch = session.scalars(
                select(QueryBatch).where(QueryBatch.session_id == session_id, QueryBatch.request_id == body.request_id)
            ).one_or_none()
            if batch is not None:
                return _stored_results(session, batch, body.indices)
        if modeling.status != "open":
            raise ApiError(409, "conflict", f"session {session_id} is closed; open a new session to query again")
        release = session.get(Release, modeling.release_id)
        check_served(request.app.state.settings, release)
        bad = next((i for i in body.indices if not 0 <= i < release.n), None)
        if bad is not None:
            raise ApiError(422, "validation_error",
                           f"index {bad} is out of range; valid indices are 0 to {release.n - 1} (the release has "
                           f"{release.n} rows)")
        remaining = key.max_queries - key.used_queries
        if len(body.indices) > remaining:
            raise ApiError(409, "query_budget_exhausted",
                           f"this key has {remaining} of {key.max_queries} queries left and the request asks for "
                           f"{len(body.indices)}; ask for fewer or ask the curator for a new key")
        batch = QueryBatch(session_id=session_id, request_id=body.request_id)
        session.add(batch)
        session.flush()
        queries = []
        for index, value in zip(body.indices, _answers(request, session, release, body.indices)):
            queries.append(Query(
                session_id=session_id, batch_id=batch.id, row_index=index,
                status="pending" if value is None else "done", value=value,
                answered_at=None if value is None else utcnow(),
            ))
        session.add_all(queries)
        key.used_queries += len(queries)
        session.flush()
        record(session, principal, "query.create", f"session:{session_id} ({len(queries)} queries)")
        return QueryResponse(results=[query_result(q) for q in queries])


def _answers(request: Request, session: Session, release: Release, indices: list[int]) -> list[float | None]:
    """The answers for rows ``indices``: with private measurements, the ỹ drawn once at release time (no evaluator
    runs, so no error, pending state or timing depends on y); otherwise the dataset's evaluator (None: pending)."""
    if release.measurements is not None:
        private_y = decode_matrix(release.measurements)
        return [float(private_y[i]) for i in indices]
    dataset = session.get(Dataset, release.dataset_id)
    table = cached_table(request.app, dataset)
    return [measure(dataset.evaluator, table, i, dataset.simulation_key) for i in indices]


@router.get("/v1/sessions/{session_id}/queries", response_model=QueryList,
            summary="Every query of a session, in order (to resume)")
def list_session_queries(request: Request, principal: AnyRole, session_id: int) -> QueryList:
    with request.app.state.db.read() as session:
        modeling = get_or_404(session, ModelingSession, session_id)
        principal.require_owner(modeling.key_id, "session")
        queries = session.scalars(select(Query).where(Query.session_id == session_id).order_by(Query.id))
        return QueryList(queries=[query_result(q) for q in queries])


@router.post("/v1/sessions/{session_id}/close", response_model=SessionOut, summary="Close a session")
def close_session(request: Request, principal: AnyRole, session_id: int) -> SessionOut:
    with request.app.state.db.write() as session:
        modeling = get_or_404(session, ModelingSession, session_id)
        principal.require_owner(modeling.key_id, "session")
        if modeling.status != "closed":
            modeling.status = "closed"
            record(session, principal, "session.close", f"session:{session_id}")
        return session_out(session, modeling)


@router.get("/v1/queries", response_model=PendingQueryList, summary="Queries waiting for a manual measurement")
def list_pending_queries(
    request: Request,
    principal: Curator,
    dataset_id: Annotated[int | None, QueryParam(description="Only this dataset's queries.")] = None,
) -> PendingQueryList:
    with request.app.state.db.read() as session:
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
        tables = {ds_id: cached_table(request.app, session.get(Dataset, ds_id)) for _, _, ds_id in pending}
        return PendingQueryList(queries=[
            PendingQuery(query_id=q.id, session_id=q.session_id, release_id=release_id, dataset_id=ds_id,
                         index=q.row_index, row=tables[ds_id].file_row(q.row_index), created_at=q.created_at)
            for q, release_id, ds_id in pending
        ])


@router.post("/v1/queries/{query_id}/answer", response_model=QueryResult,
             summary="Post the measurement of a pending manual query")
def answer_query(request: Request, principal: Curator, query_id: int, body: AnswerRequest) -> QueryResult:
    if not math.isfinite(body.value):
        raise ApiError(422, "validation_error", "'value' must be a finite number; send the measured value")
    with request.app.state.db.write() as session:
        query = get_or_404(session, Query, query_id, lock=True)
        if query.status != "pending":
            raise ApiError(409, "conflict", f"query {query_id} is already answered; answers cannot be changed")
        query.status, query.value, query.answered_at = "done", body.value, utcnow()
        record(session, principal, "query.answer", f"query:{query_id}")
        return query_result(query)
