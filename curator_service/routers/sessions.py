"""Modeler sessions on a release and their index-only queries."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from curator_service.persistence.query_storage import SqlAlchemyQueryStorage
from curator_service.routers.auth import AnyRole, Modeler, ModelerRoute, UncheckedModeler
from curator_service.routers.params import ReleaseFilter, ReleaseId, SessionId
from curator_service.services import queries
from shared.api.schemas import QueryList, QueryRequest, QueryResponse, SessionOut

router = APIRouter(tags=["sessions and queries"])

# The modeler routes are async handlers that run their blocking work in one thread-pool hop: for a sync handler
# FastAPI takes two (the handler, then its response's validation), each a thread wake-up on the query path.


async def open_session(request: Request, caller: Modeler, release_id: ReleaseId) -> SessionOut:
    """Opens a modeling session on a release in the key's scope; queries in it are charged to the key's query budget."""
    return await run_in_threadpool(_open_session, request, caller, release_id)


def _open_session(request: Request, caller: UncheckedModeler, release_id: int) -> SessionOut:
    with request.app.state.db.write() as session:
        return queries.open_session(session, request.app.state.settings, caller.principal(session), release_id)


router.add_api_route("/v1/releases/{release_id}/sessions", open_session, methods=["POST"], status_code=201,
                     response_model=SessionOut, summary="Open a session on a release (modeler key)",
                     route_class_override=ModelerRoute)


@router.get("/v1/sessions", response_model=list[SessionOut], summary="Sessions this caller may see")
def list_sessions(
    request: Request,
    principal: AnyRole,
    release_id: ReleaseFilter = None,
) -> list[SessionOut]:
    """Sessions this caller may see: every session for the curator, its own key's for a modeler. Filter by release."""
    with request.app.state.db.read() as session:
        return queries.list_sessions(session, principal, release_id)


@router.get("/v1/sessions/{session_id}", response_model=SessionOut, summary="A session's status and budget")
def get_session(request: Request, principal: AnyRole, session_id: SessionId) -> SessionOut:
    """A session's status and its key's query budget (max and used)."""
    with request.app.state.db.read() as session:
        return queries.get_session(session, principal, session_id)


async def create_queries(request: Request, caller: Modeler, session_id: SessionId, body: QueryRequest) -> QueryResponse:
    """Measures rows by index: the curator measures each preimage row (or returns its private measurement) and stores
    the answer before responding; a manual evaluator's queries stay pending. Each index is charged to the key's query
    budget once; a repeated request_id returns the stored results uncharged. At most 1,000 indices per request."""
    return await run_in_threadpool(_create_queries, request, caller, session_id, body)


def _create_queries(request: Request, caller: UncheckedModeler, session_id: int, body: QueryRequest) -> QueryResponse:
    state = request.app.state
    with state.db.write() as session:  # the one transaction of the request: the key lookup, answers, charge, audit
        principal = caller.principal(session)
        return queries.create_queries(SqlAlchemyQueryStorage(session), state.tables, state.settings, principal,
                                      session_id, body)


router.add_api_route("/v1/sessions/{session_id}/queries", create_queries, methods=["POST"],
                     response_model=QueryResponse, summary="Measure rows by index (charged to the key's query budget)",
                     route_class_override=ModelerRoute)


@router.get("/v1/sessions/{session_id}/queries", response_model=QueryList,
            summary="Every query of a session, in order (to resume)")
def list_session_queries(request: Request, principal: AnyRole, session_id: SessionId) -> QueryList:
    """Every query of a session in order, with its status and value, to resume a run."""
    with request.app.state.db.read() as session:
        return queries.list_session_queries(session, principal, session_id)


@router.post("/v1/sessions/{session_id}/close", response_model=SessionOut, summary="Close a session")
def close_session(request: Request, principal: AnyRole, session_id: SessionId) -> SessionOut:
    """Closes a session; no further queries are accepted in it."""
    with request.app.state.db.write() as session:
        return queries.close_session(session, principal, session_id)


@router.post("/v1/sessions/{session_id}/reopen", response_model=SessionOut, summary="Reopen a closed session")
def reopen_session(request: Request, principal: AnyRole, session_id: SessionId) -> SessionOut:
    """Opens a closed session again, so that its run continues in it (a run closes its session when it ends)."""
    with request.app.state.db.write() as session:
        return queries.reopen_session(session, principal, session_id)
