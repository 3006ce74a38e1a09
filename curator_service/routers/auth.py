"""The role each handler declares first: :data:`Curator`, :data:`Modeler` or :data:`AnyRole` (a dependency that
authenticates ``Authorization: Bearer <token>`` and checks the role; what the caller may see is the services'
:func:`~curator_service.services.policy.visible_or_404`). A :data:`Modeler` route (opening a session, the query
path) authenticates inside its handler's one write transaction: :class:`UncheckedModeler`, :class:`ModelerRoute`.

Every refusal is audited (the method and path only, never the token) and committed even though the request fails:
``auth.failed`` and ``auth.denied`` here, and any other 4xx answered to a caller whose token stood for someone
``refused.<code>`` (:func:`audit_refusals`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from curator_service.services import audit
from curator_service.services.key_policy import GovernanceRefusal, write_audited
from curator_service.services.policy import Principal, principal_for_token
from shared.api.errors import ApiError

_bearer = HTTPBearer(auto_error=False, description="The admin token (POBO_ADMIN_TOKEN) or an API key.")


ANONYMOUS = "anonymous"
"""How the audit log names a caller whose token stands for nobody."""

IN_PROCESS_PRINCIPAL = "pobo.principal"
"""The ASGI scope key of the console's own calls to the API (:mod:`curator_service.console.client`): the principal of
the console session that makes them, which no request from outside can set (the server builds its scope)."""


def _no_token() -> ApiError:
    return ApiError(401, "unauthorized", "this endpoint needs a token; send 'Authorization: Bearer <token>'")


def _not_a_modeler() -> ApiError:
    return ApiError(403, "forbidden", "only a modeler key may do this (its query budget is charged); "
                    "create one with POST /v1/keys")


def _record_refusal(session: Session, request: Request, actor: Principal | str, action: str) -> None:
    audit.record(session, actor, action, f"{request.method} {request.url.path}")
    request.state.refusal_audited = True


def _audit_refusal(request: Request, actor: Principal | str, action: str) -> None:
    """Records a refused call in its own transaction (the request's work never starts)."""
    with request.app.state.db.write() as session:
        _record_refusal(session, request, actor, action)


def _presented_token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        return None
    return credentials.credentials


def authenticate(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    if (console_principal := request.scope.get(IN_PROCESS_PRINCIPAL)) is not None:
        return console_principal
    token = _presented_token(credentials)
    if token is None:
        _audit_refusal(request, ANONYMOUS, "auth.failed")
        raise _no_token()
    try:
        with request.app.state.db.read() as session:
            request.state.principal = principal_for_token(session, token, request.app.state.settings.admin_token)
            return request.state.principal
    except ApiError:
        _audit_refusal(request, ANONYMOUS, "auth.failed")
        raise


@contextmanager
def governance_write(request: Request, principal: Principal) -> Iterator[Session]:
    """The request's write transaction for an act of key governance
    (:func:`curator_service.services.key_policy.write_audited`): a refusal is audited with its reason, and only so."""
    try:
        with write_audited(request.app.state.db, principal) as session:
            yield session
    except GovernanceRefusal:
        request.state.refusal_audited = True
        raise


def curator_only(request: Request, principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if not principal.is_curator:
        _audit_refusal(request, principal, "auth.denied")
        raise ApiError(403, "forbidden", "only the curator may do this; use the admin token or a curator key")
    return principal


@dataclass(frozen=True)
class UncheckedModeler:
    """A presented bearer token, not yet checked: :meth:`principal` authenticates it as a modeler key inside the
    handler's write transaction, so the query path runs one transaction (no read transaction of its own for
    authentication) and holds the key's row locked from the lookup to the charge. Its route is a
    :class:`ModelerRoute`."""

    request: Request
    token: str

    def principal(self, session: Session) -> Principal:
        """The modeler the token stands for; 401 (``auth.failed``) or 403 (``auth.denied``) otherwise, the refusal
        committed in this transaction before the error leaves (nothing else was written in it yet)."""
        try:
            principal = principal_for_token(session, self.token, self.request.app.state.settings.admin_token,
                                            lock=True)
        except ApiError:
            self._refuse(session, ANONYMOUS, "auth.failed")
            raise
        self.request.state.principal = principal
        if principal.role != "modeler":
            self._refuse(session, principal, "auth.denied")
            raise _not_a_modeler()
        return principal

    def _refuse(self, session: Session, actor: Principal | str, action: str) -> None:
        _record_refusal(session, self.request, actor, action)
        session.commit()


async def modeler_only(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> UncheckedModeler:
    """A modeler route's caller, checked by its handler inside its write transaction (:class:`UncheckedModeler`);
    401 at once without a token. Async, so the request costs no thread hop before its handler's."""
    token = _presented_token(credentials)
    if token is None:
        await run_in_threadpool(_audit_refusal, request, ANONYMOUS, "auth.failed")
        raise _no_token()
    return UncheckedModeler(request, token)


async def presented_bearer_token(request: Request) -> str | None:
    """The token a request presents, read as the routes' ``HTTPBearer`` dependency reads it (None: none)."""
    return _presented_token(await _bearer(request))


def _check_modeler(request: Request, token: str) -> None:
    with request.app.state.db.write() as session:
        UncheckedModeler(request, token).principal(session)


class ModelerRoute(APIRoute):
    """The route class of a :data:`Modeler` handler. FastAPI validates the path and body before the handler
    looks the key up; when they fail, the token is checked first, so a bad token or a curator's token gets its 401 or
    403 (audited) before the 422, as on every other route (whose dependency authenticates before the body is read)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def authenticated_first(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError:
                token = await presented_bearer_token(request)
                if token is not None:
                    await run_in_threadpool(_check_modeler, request, token)
                raise

        return authenticated_first


def audit_refusals(app: FastAPI) -> None:
    """Wraps the app's error handlers so that every 4xx answered to a caller whose token stood for someone (a refused
    seed, a curator-only kind, a budget or query budget exhausted, a body or an id refused) is audited
    ``refused.<code>`` with its method and path, in a transaction of its own (the request's was rolled back), unless
    it was audited already (``auth.denied``). A caller without a valid token is ``auth.failed``; a 413 (the body is
    refused while it is read) and a 503 (the database cannot write) are not audited."""
    for kind, handler in list(app.exception_handlers.items()):
        if kind in (ApiError, RequestValidationError, StarletteHTTPException):
            app.exception_handlers[kind] = _audited(handler)


def _audited(handler: Callable[[Request, Any], Response | Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
    async def audited(request: Request, exc: Exception) -> Response:
        answered = handler(request, exc)
        response = await answered if inspect.isawaitable(answered) else answered
        principal = getattr(request.state, "principal", None)
        if (400 <= response.status_code < 500 and principal is not None
                and not getattr(request.state, "refusal_audited", False)):
            code = json.loads(bytes(response.body)).get("code", "error")
            await run_in_threadpool(_audit_refusal, request, principal, f"refused.{code}")
        return response

    return audited


AnyRole = Annotated[Principal, Depends(authenticate)]
Curator = Annotated[Principal, Depends(curator_only)]
Modeler = Annotated[UncheckedModeler, Depends(modeler_only)]
ROLE_DEPENDENCIES = (authenticate, curator_only, modeler_only)
"""Every /v1 route depends on one of these (tests/curator_service/test_route_auth.py walks the routes)."""
