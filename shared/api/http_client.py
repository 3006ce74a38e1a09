"""The HTTP client both command lines use to talk to a curator service (DESIGN §5).

``ApiClient`` wraps :mod:`httpx` with bearer authentication, JSON helpers, the error model of the API
(every 4xx/5xx body is ``{"detail": sentence, "code": machine code}``, raised as :class:`ApiError`
whose message is the server's sentence) and retries with exponential backoff.

Retry policy, and why:

* A request that never reached the server (connection refused, connect timeout) is retried for
  every method: nothing can have been charged or stored.
* A request that may have reached the server (read timeout, dropped connection, a 5xx answer) is
  retried only when repeating it cannot change anything twice: ``GET``/``HEAD``, and ``POST``s that
  carry a ``request_id`` (the service stores the answer under that key and returns it, uncharged,
  on a repeat). Callers can force either way with ``idempotent=``.

The delay before retry ``k`` (k = 0, 1, …) is ``min(max_backoff, backoff · 2^k)`` seconds, or the
server's ``Retry-After`` when it sends one (capped the same way).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from shared.api.errors import CODE_BY_STATUS, ApiError

Model = TypeVar("Model", bound=BaseModel)

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


class ServerUnreachable(ApiError):
    """No answer from the server after every retry (status 0, code ``unreachable``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(0, "unreachable", detail)


def error_from_response(response: httpx.Response) -> ApiError:
    """The :class:`ApiError` an error response stands for; falls back to a sentence when the body is not ours."""
    status = response.status_code
    code = CODE_BY_STATUS.get(status, "internal_error" if status >= 500 else "http_error")
    detail = f"the server answered HTTP {status} {response.reason_phrase}".rstrip()
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        code = str(body.get("code") or code)
        raw = body.get("detail")
        if isinstance(raw, str) and raw:
            detail = raw
        elif raw is not None:  # a framework-style list of validation problems
            detail = f"{detail}: {raw}"
    return ApiError(status, code, detail)


class ApiClient:
    """A small synchronous client for the pobo API.

    Parameters
    ----------
    base_url:
        The service's root, e.g. ``http://127.0.0.1:8000``.
    token:
        Bearer token (admin token or an API key); ``None`` for the public ``/health``.
    timeout:
        Seconds for each attempt (connect, read, write, pool).
    retries:
        How many times a retryable failure is retried (so at most ``retries + 1`` attempts).
    backoff, max_backoff:
        Delay before retry k is ``min(max_backoff, backoff · 2^k)`` seconds.
    transport:
        Optional httpx transport (e.g. an ASGI transport to talk to an in-process app).
    event_hooks:
        Optional httpx event hooks (``{"request": [...], "response": [...]}``), e.g. to log or inspect traffic.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        event_hooks: Mapping[str, list] | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        headers = {"User-Agent": "pobo-client"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport,
            event_hooks=dict(event_hooks or {}),
        )

    # --- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- core --------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
    ) -> httpx.Response:
        """Send one request with the retry policy of this module; raise :class:`ApiError` on an error answer."""
        method = method.upper()
        if idempotent is None:
            idempotent = method in _SAFE_METHODS or (isinstance(json, Mapping) and json.get("request_id") is not None)
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method, path, json=json, params=params, headers=headers, files=files, data=data
                )
            except httpx.TransportError as exc:
                if attempt < self.retries and (idempotent or isinstance(exc, _NOT_SENT)):
                    self._sleep(attempt, None)
                    attempt += 1
                    continue
                raise ServerUnreachable(
                    f"could not get an answer from the curator at {self.base_url} after {attempt + 1} "
                    f"attempt(s) ({type(exc).__name__}: {exc}); check the URL and that the service is running"
                ) from exc
            if response.status_code >= 500 and idempotent and attempt < self.retries:
                self._sleep(attempt, response.headers.get("Retry-After"))
                attempt += 1
                continue
            if response.status_code >= 400:
                raise error_from_response(response)
            return response

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * 2**attempt
        if retry_after is not None:
            try:
                delay = float(retry_after)
            except ValueError:
                pass
        time.sleep(max(0.0, min(self.max_backoff, delay)))

    # --- JSON helpers ------------------------------------------------------------------------------

    def get(self, path: str, *, params: Mapping[str, Any] | None = None, model: type[Model] | None = None) -> Any:
        """``GET`` a JSON body; parsed into ``model`` when given."""
        return _parse(self.request("GET", path, params=params), model)

    def post(
        self,
        path: str,
        json: Any = None,
        *,
        model: type[Model] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
    ) -> Any:
        """``POST`` (JSON, or multipart with ``files``/``data``); parsed into ``model`` when given."""
        if isinstance(json, BaseModel):
            json = json.model_dump(mode="json", exclude_none=True)
        response = self.request("POST", path, json=json, files=files, data=data, idempotent=idempotent)
        return _parse(response, model)

    def delete(self, path: str, *, model: type[Model] | None = None) -> Any:
        """``DELETE`` (not retried once it may have reached the server)."""
        return _parse(self.request("DELETE", path), model)

    def get_bytes(self, path: str, *, accept: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """``GET`` a non-JSON body; the caller checks ``response.headers['content-type']``."""
        return self.request("GET", path, params=params, headers={"Accept": accept})


def _parse(response: httpx.Response, model: type[Model] | None) -> Any:
    if not response.content:
        return None
    body = response.json()
    return model.model_validate(body) if model is not None else body
