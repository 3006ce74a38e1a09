"""Hostile-client checks: a real uvicorn server on loopback, driven over HTTP like any caller.

The server fixtures are the curator service tests' (``live_server`` on SQLite, ``database_url`` for both
backends); this file adds an HTTP client per caller and the server's captured log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from curator_service.testing import LocalCurator
from tests.curator_service.conftest import (  # noqa: F401 - fixtures re-exported for this directory
    ADMIN,
    database_url,
    live_server,
    make_settings,
    modeler_key,
    register,
    release,
)


@pytest.fixture
def connect(
    live_server: Callable[..., str],  # noqa: F811 - the fixture imported above, taken as an argument
) -> Iterator[Callable[..., httpx.Client]]:
    """``connect(**settings)``: an admin httpx client on a fresh live server; ``connect(token, url=...)``: another
    caller's client on a server already started."""
    clients: list[httpx.Client] = []

    def make(token: str | None = ADMIN, url: str | None = None, **overrides: Any) -> httpx.Client:
        base = url or live_server(**overrides)
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        client = httpx.Client(base_url=base, headers=headers, timeout=60)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="module")
def curator_process(tmp_path_factory: pytest.TempPathFactory, job_cluster) -> Iterator[LocalCurator]:
    """``pobo-curator serve`` in its own process (an evaluator's SystemExit must not take the test run down with
    it), logging to ``curator.log``; this checkout on its PYTHONPATH so it can import the tests' evaluators."""
    root = str(Path(__file__).resolve().parents[2])
    server = LocalCurator(tmp_path_factory.mktemp("hardening-curator"),
                          env={"PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))})
    with server:
        yield server


def process_client(server: LocalCurator, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@dataclass(frozen=True)
class World:
    """A live server with one dataset, one release, a modeler key scoped to it and the key's open session."""

    admin: httpx.Client
    modeler: httpx.Client
    dataset: dict[str, Any]
    release: dict[str, Any]
    key: dict[str, Any]
    session: dict[str, Any]


@pytest.fixture
def open_world(connect: Callable[..., httpx.Client]) -> Callable[..., World]:
    """``open_world(**settings)``: a :class:`World` on a fresh server."""

    def make(**settings: Any) -> World:
        admin = connect(**settings)
        dataset = register(admin)
        rel = release(admin, dataset["id"])
        key = modeler_key(admin, [rel["id"]])
        modeler = connect(key["token"], url=str(admin.base_url))
        session = modeler.post(f"/v1/releases/{rel['id']}/sessions").json()
        return World(admin, modeler, dataset, rel, key, session)

    return make


@pytest.fixture
def world(open_world: Callable[..., World]) -> World:
    return open_world()
