"""Modeler sessions on a release and their index-only queries."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from curator_service.persistence.db import WriteLockBusy
from curator_service.routers.auth import AnyRole, Modeler, ModelerRoute, UncheckedModeler, presented_bearer_token
from curator_service.routers.params import ReleaseFilter, ReleaseId, SessionId
from curator_service.services import queries
from shared.api.schemas import DB_INT_MAX, QueryList, QueryRequest, QueryResponse, SessionOut

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
    return await _answered(request, caller, session_id, body)


async def _answered(request: Request, caller: UncheckedModeler, session_id: int, body: QueryRequest) -> QueryResponse:
    if request.app.state.db.writes_without_waiting:
        # On the event loop when SQLite's write lock is free and the answers are cached (no thread hop); the loop
        # never waits for the lock (see Database.write_without_waiting and docs/performance.md).
        try:
            return _create_queries(request, caller, session_id, body, on_event_loop=True)
        except (WriteLockBusy, queries.NeedsThread):
            pass  # nothing was written: run it in a worker thread, which may wait for the lock
    return await run_in_threadpool(_create_queries, request, caller, session_id, body)


def _create_queries(request: Request, caller: UncheckedModeler, session_id: int, body: QueryRequest, *,
                    on_event_loop: bool = False) -> QueryResponse:
    state = request.app.state
    transaction = state.db.write_without_waiting if on_event_loop else state.db.write
    with transaction() as session:  # the one transaction of the request: the key lookup, answers, charge, audit
        principal = caller.principal(session)
        return queries.create_queries(session, state.tables, state.settings, principal, session_id, body,
                                      on_event_loop=on_event_loop)


class QueryRoute(ModelerRoute):
    """The query path's route (a request per GP-UCB iteration). A plainly well-formed request (a bearer token, a
    plain decimal session id in range, ``Content-Type: application/json`` and a body its model accepts) skips FastAPI's
    per-request work: the dependency chain, the body's content-type parsing, the response's revalidation. It is
    validated and serialised by the route's own body and response fields, as FastAPI does. Anything else goes to
    FastAPI's handler, so every refusal (401, 403, 422, 400, 413) and their order are as on every modeler route."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        body_field, response_field = self.body_field, self.response_field

        async def well_formed_first(request: Request) -> Response:
            token = await presented_bearer_token(request)
            session_id = _plain_id(request.path_params["session_id"])
            if token is None or session_id is None or request.headers.get("content-type") != "application/json":
                return await handler(request)
            try:
                raw = await request.body()
            except HTTPException:  # the body grew past the upload limit: 413
                raise
            except Exception:  # noqa: BLE001 - FastAPI's handler answers a body that cannot be read (400)
                return await handler(request)
            try:
                body, errors = body_field.validate(json.loads(raw), loc=("body",))
            except Exception:  # noqa: BLE001 - not JSON: FastAPI's handler says so, after checking the token
                return await handler(request)
            if errors:
                return await handler(request)
            answer = await _answered(request, UncheckedModeler(request, token), session_id, body)
            return Response(response_field.serialize_json(answer), media_type="application/json")

        return well_formed_first


def _plain_id(text: str) -> int | None:
    """``text`` as an id when it is plain decimal digits in range (what the path parameter's validation accepts
    alike); None otherwise."""
    if not (text.isascii() and text.isdigit()) or text.startswith("0") or len(text) > len(str(DB_INT_MAX)):
        return None
    value = int(text)
    return value if value <= DB_INT_MAX else None


router.add_api_route("/v1/sessions/{session_id}/queries", create_queries, methods=["POST"],
                     response_model=QueryResponse, summary="Measure rows by index (charged to the key's query budget)",
                     route_class_override=QueryRoute)


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
