"""The error half of the wire contract: the machine code for each HTTP status, and the exception both
parties raise for an error answer (the service to produce it, the client when it receives one)."""

from __future__ import annotations

CODE_BY_STATUS: dict[int, str] = {
    400: "validation_error",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "validation_error",
    409: "conflict",
    413: "payload_too_large",
    415: "validation_error",
    422: "validation_error",
    503: "unavailable",
}
"""The default ``code`` of an error body for a status, when nothing more specific applies."""


class ApiError(Exception):
    """An error answer: HTTP ``status``, machine ``code`` (``shared.api.schemas.ErrorCode``) and a sentence."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail

    def __repr__(self) -> str:
        return f"ApiError(status={self.status}, code={self.code!r}, detail={self.detail!r})"
