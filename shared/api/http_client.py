"""The HTTP client both command lines use to talk to a curator service (docs/design.md §5).

``ApiClient`` wraps :mod:`httpx` with bearer authentication, JSON helpers, the error model of the API
(every 4xx/5xx body is ``{"detail": sentence, "code": machine code}``, raised as :class:`ApiError`
whose message is the server's sentence) and retries with exponential backoff.

Retry policy, and why:

* A request that never reached the server (connection refused, connect timeout) is retried for
  every method: nothing can have been charged or stored.
* A request that may have reached the server (read timeout, dropped connection, a 502/503/504
  answer) is retried only when repeating it cannot change anything twice: ``GET``/``HEAD``, and
  ``POST``s that carry a ``request_id`` (the service stores the answer under that key and returns it,
  uncharged, on a repeat). Callers can force either way with ``idempotent=``. Other 5xx (a 500 is a
  bug, not an outage) are not retried.
* Retrying lasts long enough to ride out a curator restart (4–8 s measured): a retryable failure is
  retried until at least ``retries`` retries *and* ``retry_for`` seconds of backoff have passed
  (default 30 s, or ``POBO_RETRY_FOR`` from the environment; ``retry_for=0`` keeps only the count).

The delay before retry ``k`` (k = 0, 1, …) is ``min(max_backoff, max(backoff · 2^k, Retry-After))``
seconds (the server's ``Retry-After`` when it sends one can lengthen it, never shorten it, so every
retry spends time and the budget ends). The budget counts these delays, not
the wall clock, so attempts that hang until their timeout make the real wait longer, never shorter.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from shared.api.errors import CODE_BY_STATUS, ApiError

Model = TypeVar("Model", bound=BaseModel)

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
_OUTAGE_STATUSES = frozenset({502, 503, 504})  # a proxy or server that is down or restarting
DEFAULT_RETRY_FOR = 30.0


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
        The least number of times a retryable failure is retried.
    retry_for:
        The least seconds of backoff spent retrying a retryable failure before giving up; ``None`` reads
        ``POBO_RETRY_FOR`` (default 30 s, enough for a curator restart), ``0`` keeps only ``retries``.
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
        retry_for: float | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        event_hooks: Mapping[str, list] | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if not 0 < backoff <= max_backoff:
            raise ValueError("backoff must be > 0 seconds and no more than max_backoff")
        if retry_for is None:
            retry_for = _retry_for_from_environment()
        if not retry_for >= 0:
            raise ValueError("retry_for must be a number of seconds >= 0")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.retry_for = retry_for
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
        attempt, waited = 0, 0.0
        while True:
            try:
                response = self._http.request(
                    method, path, json=json, params=params, headers=headers, files=files, data=data
                )
            except httpx.TransportError as exc:
                if self._may_retry(attempt, waited) and (idempotent or isinstance(exc, _NOT_SENT)):
                    waited += self._sleep(attempt, None)
                    attempt += 1
                    continue
                raise ServerUnreachable(
                    f"could not get an answer from the curator at {self.base_url} after {attempt + 1} "
                    f"attempt(s) over {waited:.1f} s of retries ({type(exc).__name__}: {exc}); check the URL "
                    f"and that the service is running"
                ) from exc
            if response.status_code in _OUTAGE_STATUSES and idempotent and self._may_retry(attempt, waited):
                waited += self._sleep(attempt, response.headers.get("Retry-After"))
                attempt += 1
                continue
            if response.status_code >= 400:
                raise error_from_response(response)
            return response

    def _may_retry(self, attempt: int, waited: float) -> bool:
        return attempt < self.retries or waited < self.retry_for

    def _sleep(self, attempt: int, retry_after: str | None) -> float:
        """Sleep before retry ``attempt``; returns the seconds slept."""
        delay = self.backoff * 2 ** min(attempt, 60)  # the cap keeps a long budget's 2^k a float
        if retry_after is not None:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        delay = min(self.max_backoff, delay)
        time.sleep(delay)
        return delay

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

    def put(self, path: str, json: Any = None, *, model: type[Model] | None = None) -> Any:
        """``PUT`` a JSON body (a put sets a state, so a retry sets the same one); parsed into ``model`` when given."""
        return _parse(self.request("PUT", path, json=json), model)

    def delete(self, path: str, *, model: type[Model] | None = None) -> Any:
        """``DELETE`` (not retried once it may have reached the server)."""
        return _parse(self.request("DELETE", path), model)

    def get_bytes(self, path: str, *, accept: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """``GET`` a non-JSON body; the caller checks ``response.headers['content-type']``."""
        return self.request("GET", path, params=params, headers={"Accept": accept})


def _retry_for_from_environment() -> float:
    raw = os.environ.get("POBO_RETRY_FOR", "").strip()
    if not raw:
        return DEFAULT_RETRY_FOR
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"POBO_RETRY_FOR must be a number of seconds, not {raw!r}") from None


def _parse(response: httpx.Response, model: type[Model] | None) -> Any:
    if not response.content:
        return None
    body = response.json()
    return model.model_validate(body) if model is not None else body
