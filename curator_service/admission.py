"""What a request must show before the service reads its body, and how much body it may send.

* **A bearer token first.** Every ``/v1`` route needs one (tests/curator_service/test_route_auth.py walks them). A
  request without one gets its 401 (audited ``auth.failed``) before any of its body is read. A request whose body may
  be larger than :data:`PREAUTH_READ_BYTES` (it declares a larger length, or none) has its token checked here first,
  so a bad token is refused before its body is read too. A smaller body (every query of the modeler's hot path) is
  read before its route's own check refuses a bad token: the hot path pays no second key lookup, and an
  unauthenticated caller makes the service read at most 64 KiB.
* **Bounded bodies.** A multipart body to an upload route (:data:`UPLOAD_ROUTES`) may be up to
  ``POBO_MAX_UPLOAD_BYTES``; every other body up to ``POBO_MAX_JSON_BYTES`` (1 MiB): a 413 from the declared length
  before anything is read, or as soon as the body grows past the limit.
* **Back-off.** After ``POBO_AUTH_FAILURES_ALLOWED`` failed authentications from one client address within
  :data:`FORGET_SECONDS`, each further failure makes that address wait 1, 2, 4, … up to :data:`MAX_WAIT_SECONDS`
  seconds, during which its ``/v1`` requests get 429 with ``Retry-After`` and its console logins are refused, unless
  they present a *proven* token: one that authenticated within the last :data:`PROVEN_SECONDS` (from any address).
  A guesser never holds one, so the wait still bounds its guesses, while the modelers and the admin who share its
  address (behind a NAT, or a proxy whose headers are not believed) keep working with the tokens they use; only a
  token not yet used waits with the guesser. Each wait is audited once (``auth.throttled``), not each request it
  refuses. The count is per process and per client address: the TCP peer's, or behind a reverse proxy named in
  ``POBO_FORWARDED_ALLOW_IPS`` the address it forwards (no other peer's ``X-Forwarded-For`` is believed).

The console's own calls to the API (in process, :mod:`curator_service.console.client`) carry their session's
principal in the ASGI scope and pass the token checks; the body limits hold for them too.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from curator_service.errors import PayloadTooLarge, error_response
from curator_service.routers.auth import ANONYMOUS, IN_PROCESS_PRINCIPAL, authenticate
from curator_service.services import audit
from curator_service.settings import Settings
from shared.api.errors import ApiError

PREAUTH_READ_BYTES = 64 * 1024
UPLOAD_ROUTES = ("/v1/datasets", "/v1/datasets/{dataset_id}/answers/csv", "/console/datasets",
                 "/console/datasets/{dataset_id}/answers")
"""The routes whose multipart bodies may be as large as ``POBO_MAX_UPLOAD_BYTES`` (a CSV)."""
_UPLOAD_PATTERNS: tuple[re.Pattern[str], ...] = tuple(compile_path(path)[0] for path in UPLOAD_ROUTES)

FORGET_SECONDS = 15 * 60.0
MAX_WAIT_SECONDS = 300.0
PROVEN_SECONDS = 24 * 3600.0
MAX_CLIENTS = 65_536
"""Addresses (and proven tokens) the back-off remembers at most (the oldest are forgotten first)."""


class AuthThrottle:
    """Failed authentications per client address, the wait each must sit out, and the tokens proven lately (see the
    module's docstring). A proven token is kept as an HMAC under a key of this process, never as itself."""

    def __init__(self, allowed: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed, self.clock = allowed, clock
        self._clients: dict[str, tuple[int, float, float]] = {}  # address -> (failures, last failure, wait until)
        self._proven: OrderedDict[bytes, float] = OrderedDict()  # HMAC of a token -> when it last authenticated
        self._secret = secrets.token_bytes(32)

    def _digest(self, token: str) -> bytes:
        return hmac.digest(self._secret, token.encode(), hashlib.sha256)

    def proved(self, token: str) -> None:
        """Records that ``token`` authenticated just now."""
        digest = self._digest(token)
        self._proven[digest] = self.clock()
        self._proven.move_to_end(digest)
        if len(self._proven) > MAX_CLIENTS:
            self._proven.popitem(last=False)

    def proven(self, token: str | None) -> bool:
        """Whether ``token`` authenticated within the last :data:`PROVEN_SECONDS`."""
        if token is None:
            return False
        last = self._proven.get(self._digest(token))
        return last is not None and self.clock() - last <= PROVEN_SECONDS

    def refuses(self, client: str, token: str | None) -> float:
        """Seconds a request of ``client`` presenting ``token`` must still wait (0: it may go on)."""
        wait = self.wait(client)
        return 0.0 if wait <= 0 or self.proven(token) else wait

    def wait(self, client: str) -> float:
        """Seconds ``client`` must still wait before it may authenticate again (0: none)."""
        entry = self._clients.get(client)
        return 0.0 if entry is None else max(0.0, entry[2] - self.clock())

    def failed(self, client: str) -> tuple[int, float]:
        """Records a failure; returns (failures counted, the wait it starts in seconds, 0 when none)."""
        now = self.clock()
        failures, last, _ = self._clients.get(client, (0, now, now))
        failures = 1 if now - last > FORGET_SECONDS else failures + 1
        excess = failures - self.allowed
        wait = min(MAX_WAIT_SECONDS, 2.0 ** (excess - 1)) if excess > 0 else 0.0
        self._clients[client] = (failures, now, now + wait)
        if len(self._clients) > MAX_CLIENTS:
            self._forget(now)
        return failures, wait

    def _forget(self, now: float) -> None:
        stale = [c for c, (_, last, until) in self._clients.items() if now - last > FORGET_SECONDS and until <= now]
        for client in stale:
            del self._clients[client]
        if len(self._clients) > MAX_CLIENTS:
            for client in sorted(self._clients, key=lambda c: self._clients[c][1])[:len(self._clients) // 2]:
                del self._clients[client]


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else "unknown"


def throttled(wait: float) -> ApiError:
    return ApiError(429, "too_many_requests", f"too many failed authentications from this address; wait "
                    f"{math.ceil(wait)} s before the next request, and check the token (the admin token, or a key "
                    "from the curator)")


async def note_failure(request: Request, throttle: AuthThrottle) -> None:
    """Counts a failed authentication of the request's client; audits the wait it starts, if it starts one."""
    client = client_address(request.scope)
    failures, wait = throttle.failed(client)
    if wait > 0:
        def record() -> None:
            with request.app.state.db.write() as session:
                audit.record(session, ANONYMOUS, "auth.throttled",
                             f"client {client}: {failures} failed authentications; waits {wait:g} s")
        await run_in_threadpool(record)


def declared_length(text: str) -> bool:
    """Whether a Content-Length may be read as a number: plain digits, few enough for ``int``."""
    return text.isdigit() and len(text) <= 20


class Head:
    """What the checks read of a request's head, taken from the raw ASGI headers in one pass (the first of each, as
    Starlette's ``Headers.get`` reads them)."""

    __slots__ = ("authorization", "content_length", "content_type", "chunked")

    def __init__(self, scope: Scope) -> None:
        self.authorization = self.content_length = None
        self.content_type, self.chunked = "", False
        for name, value in scope["headers"]:
            if name == b"authorization" and self.authorization is None:
                self.authorization = value.decode("latin-1")
            elif name == b"content-length" and self.content_length is None:
                self.content_length = value.decode("latin-1")
            elif name == b"content-type" and not self.content_type:
                self.content_type = value.decode("latin-1")
            elif name == b"transfer-encoding":
                self.chunked = True

    def bearer_token(self) -> str | None:
        """The token as FastAPI's ``HTTPBearer`` reads it (``get_authorization_scheme_param``; None: none), without
        building a request."""
        if not self.authorization:
            return None
        scheme, _, credentials = self.authorization.partition(" ")
        credentials = credentials.strip()
        return credentials if scheme.lower() == "bearer" and credentials else None

    def may_be_large(self) -> bool:
        """Whether the body may exceed :data:`PREAUTH_READ_BYTES`: a larger declared length, or a body of no declared
        length (chunked)."""
        if self.content_length is None:
            return self.chunked
        return not declared_length(self.content_length) or int(self.content_length) > PREAUTH_READ_BYTES


def body_limit(scope: Scope, head: Head, settings: Settings) -> tuple[int, str]:
    """The most bytes this request's body may have, and the setting that says so: an upload's limit, or the JSON
    limit for any other body; no body is ever larger than the upload limit."""
    if (scope["method"] == "POST" and head.content_type.startswith("multipart/form-data")
            and any(pattern.match(scope["path"]) for pattern in _UPLOAD_PATTERNS)):
        return settings.max_upload_bytes, "POBO_MAX_UPLOAD_BYTES"
    if settings.max_upload_bytes < settings.max_json_bytes:
        return settings.max_upload_bytes, "POBO_MAX_UPLOAD_BYTES"
    return settings.max_json_bytes, "POBO_MAX_JSON_BYTES"


class AdmissionMiddleware:
    """The checks of the module's docstring, before the route (and FastAPI's body parsing) sees the request."""

    def __init__(self, app: ASGIApp, settings: Settings, throttle: AuthThrottle) -> None:
        self.app, self.settings, self.throttle = app, settings, throttle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = Head(scope)
        guarded = scope["path"].startswith("/v1/") and IN_PROCESS_PRINCIPAL not in scope
        if guarded and (refusal := await self._refusal(scope, head)) is not None:
            await refusal(scope, receive, send)
            return
        limit, setting = body_limit(scope, head, self.settings)
        declared = head.content_length
        if declared is not None and declared_length(declared) and int(declared) > limit:
            await error_response(413, "payload_too_large", PayloadTooLarge(limit, setting).detail)(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(limit, setting)
            return message

        async def watching_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                if message["status"] == 401:
                    await note_failure(Request(scope), self.throttle)
                elif (token := head.bearer_token()) is not None and scope.get("state", {}).get("principal"):
                    self.throttle.proved(token)  # the route authenticated it (request.state.principal)
            await send(message)

        await self.app(scope, limited_receive, watching_send if guarded else send)

    async def _refusal(self, scope: Scope, head: Head) -> JSONResponse | None:
        """The 429 of a waiting client, or the 401 of a missing or (for a body that may be large) bad token; None
        when the request may go on."""
        token = head.bearer_token()
        wait = self.throttle.refuses(client_address(scope), token)
        if wait > 0:
            refusal = throttled(wait)
            return error_response(refusal.status, refusal.code, refusal.detail, {"Retry-After": str(math.ceil(wait))})
        if token is not None and not head.may_be_large():
            return None
        request = Request(scope)
        credentials = None if token is None else HTTPAuthorizationCredentials(scheme="Bearer", credentials=token)
        try:
            await run_in_threadpool(authenticate, request, credentials)  # audits its refusal as auth.failed
        except ApiError as refusal:
            await note_failure(request, self.throttle)
            return error_response(refusal.status, refusal.code, refusal.detail)
        if token is not None:
            self.throttle.proved(token)
        return None
