"""``/v1/keys``: create (the token is shown once), list (never tokens), revoke."""

from __future__ import annotations

from fastapi import APIRouter, Request

from curator_service.routers.auth import Curator
from curator_service.services import keys
from shared.api.schemas import KeyCreate, KeyCreated, KeyOut

router = APIRouter(tags=["keys"])


@router.post("/v1/keys", status_code=201, response_model=KeyCreated, summary="Create a key (its token is shown once)")
def create_key(request: Request, principal: Curator, body: KeyCreate) -> KeyCreated:
    with request.app.state.db.write() as session:
        return keys.create_key(session, principal, body)


@router.get("/v1/keys", response_model=list[KeyOut], summary="List keys (never their tokens)")
def list_keys(request: Request, principal: Curator) -> list[KeyOut]:
    with request.app.state.db.read() as session:
        return keys.list_keys(session)


@router.delete("/v1/keys/{key_id}", response_model=KeyOut, summary="Revoke a key (its sessions stop working)")
def revoke_key(request: Request, principal: Curator, key_id: int) -> KeyOut:
    with request.app.state.db.write() as session:
        return keys.revoke_key(session, principal, key_id)
