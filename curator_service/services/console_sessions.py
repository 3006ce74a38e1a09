"""Console sessions, kept by the server (as the OWASP Session Management Cheat Sheet has them): a login makes a
random id of 256 bits, the browser holds it in a cookie without Max-Age, and the database holds only its SHA-256,
tied to the credential logged in with.

A session answers for its principal only while all of these hold, checked on every console request:

* it was not ended (logout, or the revocation of its key: :func:`end_sessions_of_key`);
* it was used within the idle limit and is younger than the absolute limit (``POBO_CONSOLE_IDLE_SECONDS``,
  ``POBO_CONSOLE_SESSION_SECONDS``);
* its credential still authenticates as a curator: the key is live (not revoked, not expired, its token the one
  logged in with) and a curator's, or the admin token is the one logged in with.

The id is no token of the API (useless as a bearer), and no token ever sits in a cookie.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from curator_service.persistence.db import Database
from curator_service.persistence.models import ConsoleSession, utcnow
from curator_service.services.audit import record
from curator_service.services.policy import ADMIN, Principal, hash_token, live_key_by_hash, principal_of_key
from curator_service.settings import Settings
from shared.api.errors import ApiError

TOUCH_SECONDS = 60.0
"""How stale ``last_seen_at`` may grow before a request writes it: browsing writes once a minute at most, and the
idle limit holds to within this."""


def open_session(session: Session, settings: Settings, principal: Principal, credential: str) -> str:
    """A new session for ``principal``, who logged in with ``credential``; returns its id (the only time the id
    exists outside the browser). Audited as ``console.login``."""
    raw = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(ConsoleSession(id_hash=hash_token(raw), key_id=principal.key_id, credential_hash=hash_token(credential),
                               created_at=now, last_seen_at=now,
                               expires_at=now + timedelta(seconds=settings.console_session_seconds)))
    record(session, principal, "console.login")
    return raw


def _open_row(session: Session, raw: str, settings: Settings) -> ConsoleSession | None:
    """The session with this id if it is neither ended nor past its idle or absolute limit."""
    row = session.scalar(select(ConsoleSession).where(ConsoleSession.id_hash == hash_token(raw)))
    now = utcnow()
    if row is None or row.ended_at is not None or row.expires_at <= now:
        return None
    if row.last_seen_at + timedelta(seconds=settings.console_idle_seconds) <= now:
        return None
    return row


def _credential_principal(session: Session, row: ConsoleSession, settings: Settings) -> Principal | None:
    """Who the session's credential stands for now; None when it stands for nobody any more."""
    if row.key_id is None:
        admin = settings.admin_token
        return ADMIN if admin and hmac.compare_digest(hash_token(admin), row.credential_hash) else None
    try:
        key = live_key_by_hash(session, row.credential_hash)
    except ApiError:  # revoked, expired, or no such key
        return None
    return principal_of_key(key) if key.id == row.key_id else None


def principal_of(db: Database, raw: str, settings: Settings) -> Principal | None:
    """The curator a console session stands for, or None (the browser goes to the login form). A session whose
    credential no longer stands for a curator answers None. Writes ``last_seen_at`` when it is more than
    :data:`TOUCH_SECONDS` old."""
    with db.read() as session:
        row = _open_row(session, raw, settings)
        if row is None:
            return None
        principal = _credential_principal(session, row, settings)
        row_id, stale = row.id, (utcnow() - row.last_seen_at).total_seconds() > TOUCH_SECONDS
    if principal is None or not principal.is_curator:
        return None
    if stale:
        with db.write() as session:
            session.execute(update(ConsoleSession).where(ConsoleSession.id == row_id).values(last_seen_at=utcnow()))
    return principal


def end_session(session: Session, raw: str) -> None:
    """Ends the session with this id (logout)."""
    session.execute(update(ConsoleSession).where(ConsoleSession.id_hash == hash_token(raw),
                                                 ConsoleSession.ended_at.is_(None)).values(ended_at=utcnow()))


def end_sessions_of_key(session: Session, key_id: int) -> None:
    """Ends every open console session of a key (it was revoked)."""
    session.execute(update(ConsoleSession).where(ConsoleSession.key_id == key_id, ConsoleSession.ended_at.is_(None))
                    .values(ended_at=utcnow()))
