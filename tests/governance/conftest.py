"""A real curator (``pobo-curator serve`` on loopback) and raw-HTTP helpers for the governance tests.

Everything goes through HTTP as a curator, a lab user and a modeler would use it; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from curator_service.testing import LocalCurator
from tests.curator_service.conftest import reset_postgres

FEATURES = ["a", "b", "c"]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def lab(request, tmp_path_factory, job_cluster) -> Iterator[LocalCurator]:
    """One server per test module and backend (research mode, as the harness sets it: the curator may seed). On
    PostgreSQL the key's row lock and the lab's ``FOR UPDATE OF queries`` are real; it runs when
    POBO_TEST_POSTGRES_URL is set (.ci/run does), from an empty schema."""
    # Expired and revoked keys are refused here many times from one address; the back-off has tests of its own.
    env = {**backend_env(request.param), "POBO_AUTH_FAILURES_ALLOWED": "1000"}
    server = LocalCurator(tmp_path_factory.mktemp("governance-curator"), env=env).start()
    yield server
    server.stop()


def backend_env(backend: str) -> dict[str, str]:
    """The environment that points a server at ``backend`` ("sqlite": its own file; "postgres": the empty schema of
    POBO_TEST_POSTGRES_URL, skipped when it is not set)."""
    if backend == "sqlite":
        return {}
    url = os.environ.get("POBO_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("POBO_TEST_POSTGRES_URL is not set; .ci/run starts a PostgreSQL server and sets it")
    reset_postgres(url)
    return {"POBO_DATABASE_URL": url}


def http(server: LocalCurator, token: str | None = None) -> httpx.Client:
    """A raw HTTP client with ``token`` (the admin token by default)."""
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token or server.admin_token}"},
                        timeout=30.0)


def mrn(i: int) -> str:
    """A medical record number: text with leading zeros, as hospitals write them."""
    return f"MRN-{i:07d}"


def lab_csv(n: int = 30, seed: int = 0) -> tuple[str, np.ndarray, np.ndarray]:
    """A table with features a, b, c in [0.1, 0.9] (9 significant digits), an ``mrn`` column, a 0/1 ``label``
    and a measured ``y`` (a column a manual evaluator never reads). Returns (csv text, X, y)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(0.1, 0.9, size=(n, 3)), 9)
    y = np.round(-np.sum((X - 0.55) ** 2, axis=1), 9)
    label = (X[:, 0] > 0.5).astype(int)
    lines = ["mrn,a,b,c,label,y"] + [f"{mrn(i)},{x[0]:.9f},{x[1]:.9f},{x[2]:.9f},{t},{v:.9f}"
                                     for i, (x, t, v) in enumerate(zip(X, label, y))]
    return "\n".join(lines) + "\n", X, y


def register_csv(server: LocalCurator, csv: str, *, evaluator: dict | None = None,
                 budget: tuple[float, float] = (10.0, 1e-3), **spec: Any) -> dict:
    body = {
        "name": f"lab-{uuid.uuid4().hex[:8]}",
        "feature_columns": FEATURES,
        "evaluator": evaluator or {"kind": "column", "column": "y"},
        "scaling": {"kind": "bounds", "lower": [0, 0, 0], "upper": [1, 1, 1], "diameter": 1},
        "budget": {"epsilon": budget[0], "delta": budget[1]},
        "label_columns": ["label"],  # every table here has the 0/1 label column of lab_csv
        **spec,
    }
    with http(server) as admin:
        response = admin.post("/v1/datasets", files={"file": ("table.csv", csv.encode(), "text/csv")},
                              data={"spec": json.dumps(body)})
    assert response.status_code == 201, response.text
    return response.json()


def make_release(server: LocalCurator, dataset_id: int, epsilon: float = 1.0, token: str | None = None) -> dict:
    with http(server, token) as client:
        response = client.post(f"/v1/datasets/{dataset_id}/releases",
                               json={"mechanism": "gaussian", "epsilon": epsilon, "delta": 1e-6})
    assert response.status_code == 201, response.text
    return response.json()


def create_key(server: LocalCurator, release_ids: list[int], max_queries: int = 20, **policy: Any) -> dict:
    with http(server) as admin:
        response = admin.post("/v1/keys", json={"name": "acme", "release_ids": release_ids,
                                                "max_queries": max_queries, **policy})
    assert response.status_code == 201, response.text
    return response.json()


def assert_error(response: httpx.Response, status: int, code: str, *words: str) -> None:
    """A 4xx in the error model whose sentence names what to fix."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "code"} and body["code"] == code, body
    for word in words:
        assert word in body["detail"], (word, body["detail"])


def ledger(server: LocalCurator) -> list[dict]:
    with http(server) as admin:
        return admin.get("/v1/ledger").json()
