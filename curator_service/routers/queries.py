"""``/v1/queries``: the curator's side of manual measurements (list pending, post an answer)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from curator_service.routers.auth import Curator
from curator_service.services import queries
from shared.api.schemas import AnswerRequest, PendingQueryList, QueryResult

router = APIRouter(tags=["sessions and queries"])


@router.get("/v1/queries", response_model=PendingQueryList, summary="Queries waiting for a manual measurement")
def list_pending_queries(
    request: Request,
    principal: Curator,
    dataset_id: Annotated[int | None, Query(description="Only this dataset's queries.")] = None,
) -> PendingQueryList:
    with request.app.state.db.read() as session:
        return queries.pending_queries(session, request.app.state.tables, dataset_id)


@router.post("/v1/queries/{query_id}/answer", response_model=QueryResult,
             summary="Post the measurement of a pending manual query")
def answer_query(request: Request, principal: Curator, query_id: int, body: AnswerRequest) -> QueryResult:
    with request.app.state.db.write() as session:
        return queries.answer_query(session, principal, query_id, body.value)
