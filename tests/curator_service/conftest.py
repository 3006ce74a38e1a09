"""Fixtures for the curator service tests: apps on SQLite or PostgreSQL, a live server, helpers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn
from click.testing import Result
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from curator_service.app import create_app
from curator_service.cli import app as cli_app
from curator_service.cli.serve import server_config
from curator_service.settings import Settings
from curator_service.testing import free_port

ADMIN = "test-admin-token-of-32-characters-or-more"
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}
# How long a test app's release POST waits for its job: the service's 2 s default answers 202 on a loaded machine
# (the tests of the 202 path set release_wait_seconds=0).
RELEASE_WAIT_SECONDS = 120.0
# Tests of refusals send many bad tokens from one address; the back-off has tests of its own (test_admission.py).
AUTH_FAILURES_ALLOWED = 1_000_000
# A test kind that runs until cancelled gives up after this: a test that failed before its cancel must not hold one
# of the session's two Dask workers for a job's 6 h limit (every later job would queue behind it).
UNCANCELLED_LIMIT_SECONDS = 300.0


class AnyParams(BaseModel):
    """The parameter model of a test's job kind that reads none: any JSON object."""

    model_config = ConfigDict(extra="allow")


def reset_postgres(url: str) -> None:
    """Every PostgreSQL test starts from an empty schema."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The storage conformance parameter: the same test on embedded SQLite and on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'curator.db'}"
    url = request.getfixturevalue("postgres_url")
    reset_postgres(url)
    return url


@pytest.fixture
def make_settings(tmp_path: Path, job_cluster) -> Callable[..., Settings]:
    """Settings for a test app; its jobs run on the session's cluster (``job_cluster``)."""

    def make(**overrides: Any) -> Settings:
        # Research mode (seeds accepted from the curator) and po-gp-ucb enabled, explicitly: the service's
        # defaults are production mode with uncertified mechanisms disabled.
        values: dict[str, Any] = {"data_dir": tmp_path, "admin_token": ADMIN, "allow_uncertified_mechanisms": True,
                                  "mode": "research", "release_wait_seconds": RELEASE_WAIT_SECONDS,
                                  "auth_failures_allowed": AUTH_FAILURES_ALLOWED}
        values.update(overrides)
        return Settings.from_env({}, **values)

    return make


@pytest.fixture
def make_client(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., TestClient]]:
    """Builds a TestClient around a fresh app (admin headers by default); closed at teardown."""
    clients: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        client = TestClient(create_app(make_settings(**overrides)), headers=ADMIN_HEADERS)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


def synthetic_table(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Features in [0, 1]³ with 9 significant digits (easy to look for in response bodies) and y."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(0.1, 0.9, size=(n, 3)), 9)
    y = np.round(np.sin(6 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2], 9)
    return X, y


def table_csv(X: np.ndarray, y: np.ndarray, columns: tuple[str, ...] = ("a", "b", "c", "y")) -> str:
    lines = [",".join(columns)] + [",".join(f"{v:.9f}" for v in (*x, t)) for x, t in zip(X, y)]
    return "\n".join(lines) + "\n"


def dataset_spec(name: str = "synthetic", **changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "feature_columns": ["a", "b", "c"],
        "evaluator": {"kind": "column", "column": "y"},
        "scaling": {"kind": "bounds", "lower": [0, 0, 0], "upper": [1, 1, 1], "diameter": 1},
        "budget": {"epsilon": 10.0, "delta": 1e-3},
    }
    spec.update(changes)
    return spec


def upload(client: TestClient, csv: str, spec: dict[str, Any]):
    return client.post("/v1/datasets", files={"file": ("data.csv", csv, "text/csv")}, data={"spec": json.dumps(spec)})


def register(client: TestClient, n: int = 40, **spec_changes: Any) -> dict[str, Any]:
    X, y = synthetic_table(n)
    response = upload(client, table_csv(X, y), dataset_spec(**spec_changes))
    assert response.status_code == 201, response.text
    return response.json()


def release(client: TestClient, dataset_id: int, **body: Any) -> dict[str, Any]:
    """A release (unseeded unless ``seed`` is given: seeded releases are research-only and uncertified)."""
    payload = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "dim": 3}
    payload.update({name: value for name, value in body.items() if value is not None})
    response = client.post(f"/v1/datasets/{dataset_id}/releases", json=payload)
    assert response.status_code == 201, response.text
    return response.json()


def modeler_key(client: TestClient, release_ids: list[int], max_queries: int = 10, role: str = "modeler",
                **policy: Any) -> dict:
    """A key (``policy``: e.g. ``jobs=["dp-mean"]``, which a modeler key needs to run a job)."""
    response = client.post("/v1/keys", json={"name": "modeler", "release_ids": release_ids,
                                             "max_queries": max_queries, "role": role, **policy})
    assert response.status_code == 201, response.text
    return response.json()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_error(response, status: int, code: str, *words: str) -> None:
    """A 4xx/5xx in the error model, whose sentence names what to fix."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "code"}, body
    assert body["code"] == code, body
    assert isinstance(body["detail"], str) and len(body["detail"].split()) >= 4, body
    for word in words:
        assert word in body["detail"], (word, body["detail"])


@dataclass(frozen=True)
class OpenSession:
    """A registered dataset, its release, a modeler key scoped to the release and the key's open session."""

    dataset: dict[str, Any]
    release: dict[str, Any]
    key: dict[str, Any]
    session: dict[str, Any]


def open_modeler_session(client: TestClient, max_queries: int = 10, n: int = 40) -> OpenSession:
    dataset = register(client, n=n)
    rel = release(client, dataset["id"])
    key = modeler_key(client, [rel["id"]], max_queries=max_queries)
    response = client.post(f"/v1/releases/{rel['id']}/sessions", headers=bearer(key["token"]))
    assert response.status_code == 201, response.text
    return OpenSession(dataset, rel, key, response.json())


@pytest.fixture(scope="session")
def open_session() -> Callable[..., OpenSession]:
    """``open_session(client, max_queries=10, n=40)``: registers an n-row dataset on ``client`` (a curator's),
    releases it, issues a modeler key allowed ``max_queries`` and opens the key's session on the release."""
    return open_modeler_session


@pytest.fixture
def world(client: TestClient, open_session: Callable[..., OpenSession]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A 40-row dataset's release, a modeler key allowed 2,000 queries, and its open session (a module with a
    ``world`` of its own uses that one)."""
    opened = open_session(client, max_queries=2000)
    return opened.key, opened.session


@dataclass(frozen=True)
class CuratorCli:
    """``pobo-curator`` admin commands against a live server, and a 20-row CSV (``csv``) to register."""

    url: str
    csv: Path

    def invoke(self, *args: str, connect: bool = True, token: str = ADMIN, columns: int = 250) -> Result:
        """The command's result (``stdout``, ``stderr``, ``exit_code``), with ``--url`` and ``--token`` unless
        ``connect`` is false; its output is captured, as in a pipe, ``columns`` wide."""
        options = ["--url", self.url, "--token", token] if connect else []
        return CliRunner().invoke(cli_app, [*args, *options], env={"COLUMNS": str(columns)})

    def __call__(self, *args: str, exit_code: int = 0) -> str:
        """The command's output (stdout and stderr), after checking its exit code."""
        result = self.invoke(*args)
        assert result.exit_code == exit_code, result.output
        return result.output


@pytest.fixture
def curator_cli(live_server: Callable[..., str], tmp_path: Path) -> CuratorCli:
    X, y = synthetic_table(20)
    csv = tmp_path / "table.csv"
    csv.write_text(table_csv(X, y))
    return CuratorCli(live_server(), csv)


def flat(output: str) -> str:
    """Terminal output with Rich's line wrapping undone."""
    return " ".join(output.split())


@pytest.fixture
def live_server(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., str]]:
    """Starts the app under a real uvicorn server on a free loopback port (in a thread), configured as ``serve``
    configures it; returns its URL."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(**overrides: Any) -> str:
        port = free_port()
        settings = make_settings(**overrides)
        config = server_config(create_app(settings), settings, "127.0.0.1", port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)
