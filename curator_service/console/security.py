"""The console's session cookie and CSRF tokens.

A login gives the browser one cookie holding a random session id (:mod:`curator_service.services.console_sessions`
keeps the session, its expiry and the credential behind it; never the token itself in a cookie). The cookie has no
Max-Age or Expires, so the browser keeps it in memory only and drops it when it closes; it is ``Secure`` (sent over
HTTPS only; browsers also accept it on loopback), ``HttpOnly`` (no script can read it) and ``SameSite=Strict``
(never sent with a request started by another site), scoped to ``/console``.

Every form carries a CSRF token, csrf = HMAC-SHA256(k, "csrf:" + c), with k a random key made when the
console is installed and c the value of the cookie the form belongs to: the session cookie, or before login a
random nonce cookie (so the login form is protected too). Another site can neither read c nor compute the
HMAC, so it cannot forge a form post; a restart makes open forms stale (the next post asks to reload).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from fastapi import Request
from fastapi.responses import Response

SESSION_COOKIE = "pobo_console"
LOGIN_NONCE_COOKIE = "pobo_console_login"
FLASH_COOKIE = "pobo_console_flash"
COOKIE_PATH = "/console"


def new_console_key() -> bytes:
    return secrets.token_bytes(32)


def _set(response: Response, name: str, value: str, max_age: int | None) -> None:
    """``max_age`` None: a cookie for as long as the browser runs, never written to its disk."""
    response.set_cookie(name, value, max_age=max_age, path=COOKIE_PATH, secure=True, httponly=True,
                        samesite="strict")


def _forget(response: Response, name: str) -> None:
    response.delete_cookie(name, path=COOKIE_PATH, secure=True, httponly=True, samesite="strict")


def session_id(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None


def log_in(response: Response, session: str) -> None:
    """Gives the browser the id of its new session (no Max-Age)."""
    _set(response, SESSION_COOKIE, session, None)
    _forget(response, LOGIN_NONCE_COOKIE)


def log_out(response: Response) -> None:
    _forget(response, SESSION_COOKIE)


def bound_cookie(request: Request) -> str | None:
    """The cookie value this browser's forms are bound to: the session cookie, else the pre-login nonce."""
    return session_id(request) or request.cookies.get(LOGIN_NONCE_COOKIE) or None


def form_cookie(request: Request) -> tuple[str, bool]:
    """:func:`bound_cookie`, or a new pre-login nonce (True then: the caller sets it with :func:`set_login_nonce`)."""
    existing = bound_cookie(request)
    return (existing, False) if existing else (secrets.token_urlsafe(32), True)


def set_login_nonce(response: Response, nonce: str) -> None:
    _set(response, LOGIN_NONCE_COOKIE, nonce, 3600)


def csrf_token(key: bytes, cookie_value: str) -> str:
    return hmac.new(key, b"csrf:" + cookie_value.encode(), hashlib.sha256).hexdigest()


def csrf_valid(key: bytes, cookie_value: str | None, submitted: str | None) -> bool:
    if not cookie_value or not submitted:
        return False
    return hmac.compare_digest(csrf_token(key, cookie_value).encode(), submitted.encode())  # bytes: any text is safe


def set_flash(response: Response, message: str, kind: str = "notice") -> None:
    """A one-shot message for the next page (after a redirect); API sentences only, never data values."""
    encoded = base64.urlsafe_b64encode(f"{kind}:{message[:1000]}".encode()).decode()  # cookies are ASCII
    _set(response, FLASH_COOKIE, encoded, 60)


def read_flash(request: Request) -> tuple[str, str] | None:
    """(kind, message) left by :func:`set_flash`; the caller forgets it with :func:`forget_flash`."""
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    try:
        kind, _, message = base64.urlsafe_b64decode(raw.encode()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return kind, message


def forget_flash(response: Response) -> None:
    _forget(response, FLASH_COOKIE)
