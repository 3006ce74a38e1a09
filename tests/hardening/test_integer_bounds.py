"""Every integer on the wire is bounded to what both databases store (PostgreSQL's INTEGER, 2^31 − 1),
so ids, counts and seeds beyond it are a 4xx with a sentence, never a 500; so are releases whose arithmetic
overflows on huge values."""

from __future__ import annotations

import pytest

from tests.curator_service.conftest import assert_error, dataset_spec, synthetic_table, table_csv, upload

BEYOND = [2**31, 2**63, 2**64]


@pytest.fixture
def world(open_world, database_url):
    """The world on SQLite, and on PostgreSQL when configured."""
    return open_world(database_url=database_url)


@pytest.mark.parametrize("big", BEYOND)
def test_ids_beyond_the_database_range_are_4xx(world, big):
    admin, modeler = world.admin, world.modeler
    requests = [
        (admin, "GET", f"/v1/datasets/{big}", None), (admin, "GET", f"/v1/releases/{big}", None),
        (admin, "GET", f"/v1/releases/{big}/inputs", None), (admin, "DELETE", f"/v1/keys/{big}", None),
        (admin, "GET", f"/v1/sessions/{big}", None), (admin, "GET", f"/v1/jobs/{big}", None),
        (admin, "POST", f"/v1/queries/{big}/answer", {"value": 1.0}),
        (admin, "GET", f"/v1/ledger?dataset_id={big}", None),
        (admin, "POST", f"/v1/datasets/{big}/releases", {"mechanism": "gaussian", "epsilon": 1, "delta": 1e-5}),
        (admin, "POST", "/v1/keys", {"name": "k", "release_ids": [big], "max_queries": 1}),
        (admin, "POST", "/v1/jobs", {"kind": "dp-mean", "dataset_id": big,
                                     "params": {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1}}),
        (modeler, "POST", f"/v1/releases/{big}/sessions", None),
        (modeler, "POST", f"/v1/sessions/{big}/queries", {"indices": [0]}),
    ]
    for client, method, url, body in requests:
        response = client.request(method, url, json=body)
        assert 400 <= response.status_code < 500, (method, url, response.status_code, response.text)
        assert response.json()["code"] in ("validation_error", "not_found"), (method, url, response.text)
    assert admin.get("/health").status_code == 200


@pytest.mark.parametrize("body", [
    {"name": "k", "release_ids": [1], "max_queries": 3_000_000_000},
    {"name": "k", "release_ids": [1], "max_queries": 2**63},
])
def test_counts_beyond_the_database_range_are_422(world, body):
    admin = world.admin
    assert_error(admin.post("/v1/keys", json=body), 422, "validation_error", "max_queries")
    assert len(admin.get("/v1/keys").json()) == 1


@pytest.mark.parametrize("seed", [-1, 2**64, 2**200])
def test_seeds_outside_their_range_are_422(world, seed):
    admin = world.admin
    body = {"mechanism": "gaussian", "epsilon": 0.1, "delta": 1e-6, "seed": seed}
    assert_error(admin.post("/v1/datasets/1/releases", json=body), 422, "validation_error", "seed")


def test_query_indices_beyond_the_range_are_422(world):
    modeler, session = world.modeler, world.session
    for big in BEYOND:
        response = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [big]})
        assert_error(response, 422, "validation_error", "ind")


def test_a_release_whose_arithmetic_overflows_on_huge_values_is_422(connect):
    """Identity scaling keeps the raw units: po-gp-ucb's centred SVD of values near 1e300 overflows."""
    admin = connect()
    X, y = synthetic_table(10)
    response = upload(admin, table_csv(X * 1e300, y), dataset_spec(name="huge", scaling={"kind": "identity"}))
    assert response.status_code == 201, response.text
    dataset_id = response.json()["id"]
    for body in ({"mechanism": "po-gp-ucb", "dim": 2}, {"mechanism": "po-gp-ucb"}):
        response = admin.post(f"/v1/datasets/{dataset_id}/releases",
                              json={"epsilon": 1.0, "delta": 1e-5, **body})
        assert_error(response, 422, "validation_error", "scal")
    assert admin.get("/v1/ledger").json() == []


def test_a_budget_raise_too_large_for_the_ledger_sum_is_422(world):
    """Fuzz finding: a raise of 1.6e308 made the budget's sum overflow (500 on every later read of the dataset)."""
    admin = world.admin
    response = admin.post(f"/v1/datasets/{world.dataset['id']}/budget", json={"epsilon": 1.6e308, "reason": "fuzz"})
    assert_error(response, 422, "validation_error", "'epsilon'")
    assert admin.get(f"/v1/datasets/{world.dataset['id']}").status_code == 200
