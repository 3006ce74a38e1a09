"""The role each handler declares first: :data:`Curator`, :data:`Modeler` or :data:`AnyRole` (a dependency that
authenticates ``Authorization: Bearer <token>`` and checks the role; what the caller may see is the services'
:func:`~curator_service.services.policy.visible_or_404`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from curator_service.services import audit
from curator_service.services.policy import Principal, principal_for_token
from shared.api.errors import ApiError

_bearer = HTTPBearer(auto_error=False, description="The admin token (POBO_ADMIN_TOKEN) or an API key.")


ANONYMOUS = "anonymous"
"""How the audit log names a caller whose token stands for nobody."""


def _audit_refusal(request: Request, actor: Principal | str, action: str) -> None:
    """Records a refused call in its own transaction (the request's work never starts): the method and path only,
    never the token."""
    with request.app.state.db.write() as session:
        audit.record(session, actor, action, f"{request.method} {request.url.path}")


def authenticate(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        _audit_refusal(request, ANONYMOUS, "auth.failed")
        raise ApiError(401, "unauthorized", "this endpoint needs a token; send 'Authorization: Bearer <token>'")
    try:
        with request.app.state.db.read() as session:
            return principal_for_token(session, credentials.credentials, request.app.state.settings.admin_token)
    except ApiError:
        _audit_refusal(request, ANONYMOUS, "auth.failed")
        raise


def curator_only(request: Request, principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if not principal.is_curator:
        _audit_refusal(request, principal, "auth.denied")
        raise ApiError(403, "forbidden", "only the curator may do this; use the admin token or a curator key")
    return principal


def modeler_only(request: Request, principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if principal.role != "modeler":
        _audit_refusal(request, principal, "auth.denied")
        raise ApiError(403, "forbidden", "only a modeler key may do this (its query budget is charged); "
                       "create one with POST /v1/keys")
    return principal


AnyRole = Annotated[Principal, Depends(authenticate)]
Curator = Annotated[Principal, Depends(curator_only)]
Modeler = Annotated[Principal, Depends(modeler_only)]
ROLE_DEPENDENCIES = (authenticate, curator_only, modeler_only)
"""Every /v1 route depends on one of these (tests/curator_service/test_route_auth.py walks the routes)."""
