"""The console's only way to read or change anything: the service's own HTTP API, called in process.

Each call goes through the same ASGI stack as a request from outside (authentication, validation, the
upload limit, the audit trail), with the token from the console's cookie as its bearer token. So the console
can never show or do more than that token may through the API, and it repeats none of the API's logic.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import Request


class ApiRefusal(Exception):
    """The API answered with an error: its status, machine code and sentence (safe to show: never data)."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class Api:
    """The API as the holder of ``token`` sees it."""

    def __init__(self, request: Request, token: str) -> None:
        self.app = request.app
        self.token = token

    async def call(self, method: str, path: str, **options: Any) -> Any:
        """``options`` as for ``httpx.AsyncClient.request`` (json, params, data, files). Returns the decoded JSON."""
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console.internal",
                                     headers={"Authorization": f"Bearer {self.token}"}) as client:
            response = await client.request(method, path, **options)
        if response.is_error:
            body = _json_or_none(response)
            detail = body.get("detail") if isinstance(body, dict) else None
            code = body.get("code") if isinstance(body, dict) else None
            raise ApiRefusal(response.status_code, code or "error",
                             detail if isinstance(detail, str) else f"the service answered {response.status_code}")
        return response.json()

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
