"""The console's only way to read or change anything: the service's own HTTP API, called in process.

Each call goes through the same ASGI stack as a request from outside (authorization, validation, the body
limits, the audit trail) as the principal of the console session (checked on every console request:
:mod:`curator_service.services.console_sessions`), which it carries in the ASGI scope instead of a bearer token
(:data:`~curator_service.routers.auth.IN_PROCESS_PRINCIPAL`). So the console can never show or do more than that
principal may through the API, and it repeats none of the API's logic.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request
from starlette.types import Receive, Scope, Send

from curator_service.routers.auth import IN_PROCESS_PRINCIPAL
from curator_service.services.policy import Principal


class ApiRefusal(Exception):
    """The API answered with an error: its status, machine code and sentence (safe to show: never data)."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class Api:
    """The API as ``principal`` sees it."""

    def __init__(self, request: Request, principal: Principal) -> None:
        self.app, self.request = request.app, request
        self.principal = principal

    async def _as_principal(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, IN_PROCESS_PRINCIPAL: self.principal}, receive, send)

    async def call(self, method: str, path: str, **options: Any) -> Any:
        """``options`` as for ``httpx.AsyncClient.request`` (json, params, data, files). Returns the decoded JSON."""
        return (await self.respond(method, path, **options)).json()

    async def respond(self, method: str, path: str, **options: Any) -> httpx.Response:
        """The API's response (its headers too), or :class:`ApiRefusal`."""
        transport = httpx.ASGITransport(app=self._as_principal)
        async with httpx.AsyncClient(transport=transport, base_url="http://console.internal") as client:
            response = await client.request(method, path, **options)
        if response.is_error:
            body = _json_or_none(response)
            detail = body.get("detail") if isinstance(body, dict) else None
            code = body.get("code") if isinstance(body, dict) else None
            if 400 <= response.status_code < 500:  # the API audited it (refused.<code>); the console need not
                self.request.state.refusal_audited = True
            raise ApiRefusal(response.status_code, code or "error",
                             detail if isinstance(detail, str) else f"the service answered {response.status_code}")
        return response

    async def get(self, path: str, **params: Any) -> Any:
        return await self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    async def post(self, path: str, body: Any = None, **options: Any) -> Any:
        return await self.call("POST", path, json=body, **options)

    async def put(self, path: str, body: Any) -> Any:
        return await self.call("PUT", path, json=body)

    async def delete(self, path: str) -> Any:
        return await self.call("DELETE", path)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
