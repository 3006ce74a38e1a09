"""Who is calling and what they may see: the admin token, curator keys, modeler keys, and seeds.

Keys are random 32-byte tokens shown once; only their SHA-256 is stored. A curator sees everything; a modeler
sees the releases its key is scoped to (and the datasets behind them, for jobs) and the sessions and jobs its
own key created. Anything else answers 404 exactly like a row that does not exist (:func:`visible_or_404`), so
an id tells a modeler nothing about what other callers hold.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import ColumnElement, bindparam, false, select, true
from sqlalchemy import Row as SqlRow
from sqlalchemy.orm import Session

from curator_service.persistence.db import get_or_404, not_found
from curator_service.persistence.models import ApiKey, Dataset, Job, KeyPolicy, ModelingSession, Release, utcnow
from curator_service.settings import Settings, refuse_seed_in_production
from shared.api.errors import ApiError

Row = TypeVar("Row")

TOKEN_PREFIX = "pobo_"
ADMIN_ACTOR = "admin"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


KEY_ACTOR_PREFIX = "key:"  # a key's actor is key:<id>:<name>


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. ``key_id`` is None for the admin token."""

    role: str
    key_id: int | None = None
    name: str = ADMIN_ACTOR
    release_ids: frozenset[int] = frozenset()

    @property
    def is_curator(self) -> bool:
        return self.role == "curator"

    @property
    def actor(self) -> str:
        """How the audit log and the ledger name this caller."""
        return ADMIN_ACTOR if self.key_id is None else f"{KEY_ACTOR_PREFIX}{self.key_id}:{self.name}"


ADMIN = Principal(role="curator")
"""The admin token's principal (also what the command line and the console act as with it)."""


def principal_for_token(session: Session, token: str, admin_token: str | None, *, lock: bool = False) -> Principal:
    """The caller a bearer token stands for; 401 with a sentence when it stands for nobody. ``lock``: the key's row
    is locked ``FOR UPDATE`` (a write transaction that then charges the key: the query path)."""
    if admin_token and hmac.compare_digest(token.encode(), admin_token.encode()):
        return ADMIN
    return principal_of_key(live_key(session, token, lock=lock))


def principal_of_key(key: ApiKey | SqlRow) -> Principal:
    """The caller a key stands for (an ORM row or a Core row with its id, name, role and release ids)."""
    return Principal(role=key.role, key_id=key.id, name=key.name, release_ids=frozenset(key.release_ids))


_keys, _policies = ApiKey.__table__, KeyPolicy.__table__
LIVE_KEY = (select(_keys.c.id, _keys.c.name, _keys.c.role, _keys.c.release_ids, _keys.c.revoked,
                   _policies.c.expires_at)
            .select_from(_keys.outerjoin(_policies, _policies.c.key_id == _keys.c.id))
            .where(_keys.c.token_hash == bindparam("token_hash")))
"""A key and its policy's expiry in one statement, built once (SQLAlchemy Core: no ORM objects, and per request only
the parameters change)."""
LOCKED_LIVE_KEY = LIVE_KEY.with_for_update(of=_keys)


def live_key(session: Session, token: str, *, lock: bool = False) -> SqlRow:
    """The key whose stored SHA-256 matches the token (looked up by that hash, so nothing is compared character by
    character against a secret), if it is live; 401 with a sentence otherwise."""
    return live_key_by_hash(session, hash_token(token), lock=lock)


def live_key_by_hash(session: Session, token_hash: str, *, lock: bool = False) -> SqlRow:
    """:func:`live_key` of the token whose SHA-256 is ``token_hash``."""
    key = session.execute(LOCKED_LIVE_KEY if lock else LIVE_KEY, {"token_hash": token_hash}).one_or_none()
    if key is None:
        raise ApiError(401, "unauthorized", "the token is not valid; check it or ask the curator for a new key")
    if key.revoked:
        raise ApiError(401, "unauthorized", "this key was revoked; ask the curator for a new key")
    if key.expires_at is not None and key.expires_at <= utcnow():  # a policy's expiry (:mod:`.key_policy`)
        raise ApiError(401, "unauthorized", f"this key expired at {key.expires_at.isoformat()}; ask the curator "
                       "for a new key")
    return key


def may_see(session: Session, principal: Principal, row: object) -> bool:
    """Whether ``principal`` may see ``row``: a curator everything; a modeler its releases in scope, the datasets
    behind them, and the sessions and jobs of its own key (:func:`visible` is the same rule for listings)."""
    if principal.is_curator:
        return True
    if isinstance(row, Release):
        return row.id in principal.release_ids
    if isinstance(row, Dataset):
        return session.scalar(select(Release.id).where(Release.dataset_id == row.id,
                                                        Release.id.in_(principal.release_ids)).limit(1)) is not None
    if isinstance(row, ModelingSession | Job):
        return row.key_id == principal.key_id
    return False


def visible(principal: Principal, model: type) -> ColumnElement[bool]:
    """:func:`may_see` as a SQL condition, for listings of ``model`` (releases, sessions, jobs)."""
    if principal.is_curator:
        return true()
    if model is Release:
        return Release.id.in_(principal.release_ids)
    if model in (ModelingSession, Job):
        return model.key_id == principal.key_id
    return false()


def visible_or_404(session: Session, principal: Principal, model: type[Row], row_id: int, *,
                   lock: bool = False) -> Row:
    """The one way a service fetches an object by id for a caller: the row, or the same 404 whether it does not
    exist or the caller may not see it."""
    row = get_or_404(session, model, row_id, lock=lock)
    if not may_see(session, principal, row):
        raise not_found(model, row_id)
    return row


def refuse_seed(settings: Settings, principal: Principal, seed: object) -> None:
    """A seed makes the noise reproducible, so whoever knows it can subtract the noise: it is accepted only
    from the curator, and only in research mode."""
    if seed is not None and not principal.is_curator:
        raise ApiError(403, "seed_refused", "a modeler key may not send a seed (whoever knows the seed can replay "
                       "the noise), in any mode; remove 'seed' from the request")
    refuse_seed_in_production(settings, seed)
