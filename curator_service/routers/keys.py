"""``/v1/keys``: create (the token is shown once), list (never tokens), revoke, and each key's policy."""

from __future__ import annotations

from fastapi import APIRouter, Request

from curator_service.routers.auth import AnyRole, Curator, governance_write
from curator_service.routers.params import KeyId
from curator_service.services import keys
from shared.api.errors import ApiError
from shared.api.governance import KeyCreateWithPolicy, KeyPolicy, KeyPolicyOut
from shared.api.schemas import KeyCreated, KeyOut

router = APIRouter(tags=["keys"])


@router.post("/v1/keys", status_code=201, response_model=KeyCreated, summary="Create a key (its token is shown once)")
def create_key(request: Request, principal: Curator, body: KeyCreateWithPolicy) -> KeyCreated:
    """Creates a modeler (or curator) key scoped to releases, with a query budget and an optional policy. The token is
    shown once and only its hash is stored. A key creates only keys inside its own policy (no cap of its own, job
    kinds it may run, an expiry no later than its own); a refusal is a 403, audited."""
    with governance_write(request, principal) as session:
        return keys.create_key(session, principal, body, policy=body)


@router.get("/v1/keys", response_model=list[KeyOut], summary="List keys (never their tokens)")
def list_keys(request: Request, principal: Curator) -> list[KeyOut]:
    """Every key with its scope, query budget and use, and whether it is revoked; never a token."""
    with request.app.state.db.read() as session:
        return keys.list_keys(session)


@router.get("/v1/keys/me/policy", response_model=KeyPolicyOut,
            summary="The calling key's own policy (caps, job kinds, expiry) and what it has spent")
def my_policy(request: Request, principal: AnyRole) -> KeyPolicyOut:
    """The calling key's own policy (caps, job kinds, expiry) and what it has spent so far."""
    if principal.key_id is None:
        raise ApiError(422, "validation_error", "the admin token is not a key and has no policy; call this with a key")
    with request.app.state.db.read() as session:
        return keys.get_policy(session, principal.key_id)


# ``:int``: the path matches digits only, so ``/v1/keys/me/policy`` belongs to the route above alone (a PUT there
# is a 405 naming GET, not a 422 about key_id from the route below).
@router.get("/v1/keys/{key_id:int}/policy", response_model=KeyPolicyOut,
            summary="A key's policy (caps, job kinds, expiry) and what it has spent")
def get_policy(request: Request, principal: Curator, key_id: KeyId) -> KeyPolicyOut:
    """A key's policy (caps, job kinds, expiry) and what it has spent so far."""
    with request.app.state.db.read() as session:
        return keys.get_policy(session, key_id)


@router.put("/v1/keys/{key_id:int}/policy", response_model=KeyPolicyOut,
            summary="Change a key's policy (fields left out keep their value; null returns a field to its default)")
def set_policy(request: Request, principal: Curator, key_id: KeyId, body: KeyPolicy) -> KeyPolicyOut:
    """Changes the policy fields sent (caps, job kinds, expiry, governance) and keeps the others; null returns a
    field to the role's default. The admin token or a governance key only, never on its own policy, and within its
    own policy. Audited, a refusal (403) too."""
    with governance_write(request, principal) as session:
        return keys.set_policy(session, principal, key_id, body)


@router.delete("/v1/keys/{key_id}", response_model=KeyOut, summary="Revoke a key (its sessions stop working)")
def revoke_key(request: Request, principal: Curator, key_id: KeyId) -> KeyOut:
    """Revokes a key: its token stops working at once, for new sessions and for queries in open ones, and its console
    sessions end. The admin token or a governance key only. Audited, a refusal (403) too."""
    with governance_write(request, principal) as session:
        return keys.revoke_key(session, principal, key_id)
