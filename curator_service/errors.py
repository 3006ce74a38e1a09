"""The error model of docs/design.md §5: every error is ``{"detail": sentence, "code": machine code}``.

Handlers here turn FastAPI's validation errors, Starlette's HTTP errors and unexpected exceptions into
that shape. Sentences name the field to fix and never contain a data value.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.api.errors import CODE_BY_STATUS, ApiError
from shared.api.schemas import ErrorBody
from shared.checks import MAX_NUMBER_CHARS

logger = logging.getLogger("curator_service")


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": code} for status, code in CODE_BY_STATUS.items() if status != 405
}


class PayloadTooLarge(StarletteHTTPException):
    """Raised while reading a body that grows past its limit (an HTTP exception so FastAPI's body parser passes it
    through instead of calling it a parse error); ``setting`` names the variable that sets the limit."""

    def __init__(self, limit: int, setting: str = "POBO_MAX_UPLOAD_BYTES") -> None:
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes; "
                         f"send a smaller one or raise {setting}")


BEARER_CHALLENGE = 'Bearer realm="pobo curator"'
"""The ``WWW-Authenticate`` challenge of every 401 (RFC 6750): the scheme a client must use."""


def error_response(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": BEARER_CHALLENGE}
    return JSONResponse(status_code=status, content={"detail": detail, "code": code}, headers=headers)


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: FastAPI, scope: Scope) -> str:
    """The ``Allow`` header of a 405: every method some route answers at this path (Starlette names only the first
    matching route's, and FastAPI declares one route per method)."""
    def answered(method: str) -> bool:
        probe = {**scope, "method": method}
        return any(route.matches(probe)[0] == Match.FULL for route in app.router.routes)

    return ", ".join(method for method in HTTP_METHODS if answered(method))


def _location(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) if parts else "the request body"


REQUEST_MODEL_REFUSAL = "invalid request: "
"""How every sentence of a request refused by its model (FastAPI's or a job kind's) starts: the fuzzer tells these
from refusals that depend on the data (an offset past the end, an unknown column) by it."""


def validation_sentence(errors: Sequence[Mapping[str, Any]], prefix: str = "") -> str:
    """One sentence naming each bad field and what is wrong with it (never echoing the input)."""
    problems = []
    for error in errors[:5]:
        where = _location(tuple(error.get("loc", ())))
        message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
        if error.get("type") == "missing":
            message = "is required"
        elif error.get("type") == "extra_forbidden":
            message = "is not a known field; remove it"
        elif error.get("type") == "json_invalid":
            where, message = "the request body", "is not valid JSON"
        message = message[:1].lower() + message[1:]
        if where != "the request body":
            problems.append(f"'{prefix}{where}': {message}")
        else:  # a model-level rule; its sentence names its fields itself when it starts with one
            problems.append(message if message.startswith("'") else f"{where} {message}")
    more = f" (and {len(errors) - 5} more problems)" if len(errors) > 5 else ""
    return REQUEST_MODEL_REFUSAL + "; ".join(problems) + more + "; fix the field and retry"


def api_error_from_validation(exc: ValidationError, prefix: str = "") -> ApiError:
    return ApiError(422, "validation_error", validation_sentence(exc.errors(include_input=False), prefix))


INT_DIGITS = "integer string conversion"
"""What Python's ``ValueError`` says of an integer with more digits than it reads (4,300)."""
NUMBER_TOO_LONG = ("has a number of more than 4,300 digits, which no field takes; send each number with at most "
                   f"{MAX_NUMBER_CHARS} characters (a large or small one with an exponent, e.g. 1e-9)")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "validation_error", validation_sentence(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = CODE_BY_STATUS.get(exc.status_code, "internal_error" if exc.status_code >= 500 else "validation_error")
        detail = exc.detail if isinstance(exc.detail, str) else "the request could not be processed"
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError) and INT_DIGITS in str(exc.__cause__):
            # FastAPI's body parser: json.loads refused an integer of more than 4,300 digits
            return error_response(422, "validation_error", "the body " + NUMBER_TOO_LONG)
        if exc.status_code == 404 and detail == "Not Found":
            detail = "there is no such endpoint; see /docs for the API"
        elif exc.status_code == 405:
            allow = allowed_methods(app, request.scope)
            detail = f"this endpoint does not accept the method {request.method}, only {allow}; see /docs for the API"
            return error_response(405, code, detail, {"Allow": allow})
        return error_response(exc.status_code, code, detail)


def log_unexpected(exc: BaseException) -> None:
    """Logs where an unexpected error happened without its message (which might quote data)."""
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-6))
    logger.error("unexpected %s (message withheld: it may contain data)\n%s", type(exc).__name__, frames)


CANNOT_WRITE_SQLSTATES = frozenset({"53100", "25006"})
"""PostgreSQL's ``disk_full`` and ``read_only_sql_transaction`` (a database switched to read-only)."""
CANNOT_WRITE_SQLITE = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY})

CANNOT_WRITE_SENTENCE = ("the curator's database cannot write now (its disk is full or it is read-only); nothing of "
                         "this request was stored; retry once the operator has freed space")


def cannot_write(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an error it wraps, says the database cannot write: a full disk (SQLite's ``SQLITE_FULL``,
    as SQLAlchemy wraps it, or raised as is by a raw sqlite3 connection; PostgreSQL's ``disk_full``;
    a file's ``ENOSPC``) or a read-only database."""
    seen = 0
    while exc is not None and seen < 8:  # the error, what SQLAlchemy wraps, and what it was raised from
        if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) in CANNOT_WRITE_SQLITE:
            return True
        if getattr(exc, "sqlstate", None) in CANNOT_WRITE_SQLSTATES:
            return True
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        exc, seen = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__, seen + 1
    return False


class GuardMiddleware:
    """Answers a body that outgrew its limit (:class:`PayloadTooLarge`, raised while the admission layer inside it
    reads the body) with 413, a database that cannot write (a full disk) with 503, and other unexpected
    exceptions with a JSON 500. A client that closed its connection while sending its body gets nothing (it is
    gone) and one log line, not a traceback.

    Pure ASGI so that it sits inside Starlette's error middleware: an unexpected exception is answered
    here and never reaches the server log with its message.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # the last line of defence: answer, log without data
            if started:
                raise
            if isinstance(exc, ClientDisconnect):  # the client went away while sending its body: nobody to answer
                logger.info("client closed the connection before its request body arrived: %s %s", scope["method"],
                            scope["path"])
                return
            if isinstance(exc, PayloadTooLarge):
                response = error_response(413, "payload_too_large", exc.detail)
            elif cannot_write(exc):
                logger.error("the database cannot write (a full disk or a read-only database): answered 503")
                response = error_response(503, "unavailable", CANNOT_WRITE_SENTENCE)
            else:
                log_unexpected(exc)
                response = error_response(
                    500, "internal_error", "the curator service hit an internal error; its log says where"
                )
            await response(scope, receive, send)
