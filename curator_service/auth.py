"""Who is calling: the admin token, curator keys and modeler keys (``Authorization: Bearer <token>``).

Keys are random 32-byte tokens shown once; only their SHA-256 is stored. Each handler declares what it
needs in its signature with one of :data:`Curator`, :data:`Modeler` or :data:`AnyRole`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select

from curator_service.errors import ApiError
from curator_service.models import ApiKey

TOKEN_PREFIX = "pobo_"

_bearer = HTTPBearer(auto_error=False, description="The admin token (POBO_ADMIN_TOKEN) or an API key.")


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. ``key_id`` is None for the admin token."""

    role: str
    key_id: int | None = None
    name: str = "admin"
    release_ids: frozenset[int] = frozenset()

    @property
    def is_curator(self) -> bool:
        return self.role == "curator"

    @property
    def actor(self) -> str:
        """How the audit log names this caller."""
        return "admin" if self.key_id is None else f"key:{self.key_id}:{self.name}"

    def require_release(self, release_id: int) -> None:
        """Curators see every release; a modeler only those its key is scoped to."""
        if not self.is_curator and release_id not in self.release_ids:
            raise ApiError(403, "forbidden", f"this key is not scoped to release {release_id}; "
                           "ask the curator for a key that includes it")

    def require_owner(self, key_id: int, noun: str) -> None:
        """Curators may act on everything; a modeler only on what its own key created."""
        if not self.is_curator and key_id != self.key_id:
            raise ApiError(403, "forbidden", f"this {noun} belongs to another key; use the key that created it")


def authenticate(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise ApiError(401, "unauthorized", "this endpoint needs a token; send 'Authorization: Bearer <token>'")
    token = credentials.credentials
    admin_token = request.app.state.settings.admin_token
    if admin_token and hmac.compare_digest(token.encode(), admin_token.encode()):
        return Principal(role="curator")
    with request.app.state.db.read() as session:
        key = session.scalars(select(ApiKey).where(ApiKey.token_hash == hash_token(token))).one_or_none()
    if key is None:
        raise ApiError(401, "unauthorized", "the token is not valid; check it or ask the curator for a new key")
    if key.revoked:
        raise ApiError(401, "unauthorized", "this key was revoked; ask the curator for a new key")
    return Principal(role=key.role, key_id=key.id, name=key.name, release_ids=frozenset(key.release_ids))


def curator_only(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if not principal.is_curator:
        raise ApiError(403, "forbidden", "only the curator may do this; use the admin token or a curator key")
    return principal


def modeler_only(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    if principal.role != "modeler":
        raise ApiError(403, "forbidden", "only a modeler key may do this (its query budget is charged); "
                       "create one with POST /v1/keys")
    return principal


AnyRole = Annotated[Principal, Depends(authenticate)]
Curator = Annotated[Principal, Depends(curator_only)]
Modeler = Annotated[Principal, Depends(modeler_only)]
