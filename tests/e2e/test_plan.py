"""End-to-end (a real ``pobo-curator serve`` on loopback): the planner endpoint charges nothing, reads only the
dataset's public shape, and states exactly what :func:`shared.algorithms.planner.plan` computes for that shape."""

from __future__ import annotations

import uuid

import httpx
import numpy as np
import pytest

from shared.algorithms.planner import ReleaseSetting, plan
from shared.releases.measurements import MeasurementOption
from tests.e2e.test_sessions import D, N, raw_table, register


def admin_http(curator) -> httpx.Client:
    return httpx.Client(base_url=curator.url, headers={"Authorization": f"Bearer {curator.admin_token}"}, timeout=120)


def state(http: httpx.Client, dataset_id: int) -> tuple:
    """Everything a plan must leave untouched: the budget, the ledger, the releases."""
    return (http.get(f"/v1/datasets/{dataset_id}").json()["budget"], http.get("/v1/ledger").json(),
            http.get("/v1/releases").json())


def test_the_plan_charges_nothing_and_matches_the_shared_planner(curator):
    X, y = raw_table(21)
    dataset = register(curator, X, y)
    body = {"epsilons": [0.5, 1, 2, 4], "delta": 1e-6, "measurements": {"clip": [-60, 0], "share": 0.5},
            "simulate_runs": 1, "queries": 20}
    with admin_http(curator) as http:
        before = state(http, dataset.id)
        response = http.post(f"/v1/datasets/{dataset.id}/plan", json=body)
        assert response.status_code == 200, response.text
        assert state(http, dataset.id) == before
    out = response.json()
    width = 1 / np.sqrt(D)  # the registered box: bounds scaling with diameter 1
    setting = ReleaseSetting(n=N, d=D, width=width, delta=1e-6, r=D,
                             measurements=MeasurementOption((-60.0, 0.0), 0.5))
    expected = plan(setting, body["epsilons"], simulate_runs=1, queries=20)
    assert (out["n"], out["d"], out["charged"]) == (N, D, False) and out["width"] == pytest.approx(width, rel=1e-12)
    assert out["bound_covers"] == expected.bound_covers and "measurements are private" in out["bound_covers"]
    assert out["assumptions"] == (
        f"≤ N× random search per query, for a modeler whose pick rate on an ordinary record is at most 1/n (n = {N}); "
        "covers choices made from the released inputs (and measurements only with the private-measurement option, "
        "which this plan uses)")
    for row, want in zip(out["rows"], expected.rows, strict=True):
        assert row["epsilon"] == want.epsilon
        assert row["mu"] == pytest.approx(want.mu, rel=1e-12)
        assert row["noise_to_spread"] == pytest.approx(want.noise_to_spread, rel=1e-12)
        assert row["random_search_multiple"] == pytest.approx(want.random_search_multiple, rel=1e-12)
        assert row["parameters"]["noise_std"] == pytest.approx(want.parameters["noise_std"], rel=1e-12)
        assert row["parameters"]["measurements"]["noise_std"] == pytest.approx(
            want.parameters["measurements"]["noise_std"], rel=1e-12)
        assert row["regret"] == pytest.approx(want.regret, rel=1e-6, abs=1e-9)
    assert out["random_search_regret"] == pytest.approx(expected.random_search_regret, rel=1e-9)
    assert out["non_private_regret"] == pytest.approx(expected.non_private_regret, rel=1e-6, abs=1e-9)
    assert out["half_gap_epsilon"] == expected.half_gap_epsilon
    multiples = [row["random_search_multiple"] for row in out["rows"]]
    assert multiples == sorted(multiples) and 1 < multiples[0] < multiples[-1] <= N


def test_the_plan_refuses_what_it_cannot_answer_quickly_or_honestly(curator):
    X, y = raw_table(22)
    dataset = register(curator, X, y)
    identity = curator.register_table(
        f"raw-{uuid.uuid4().hex[:8]}", X, [f"x{j}" for j in range(D)], evaluator={"kind": "column", "column": "y"},
        budget=(1.0, 1e-5), extra_columns={"y": y}, scaling={"kind": "identity"})
    key = curator.issue_key([curator.create_release(dataset.id, "gaussian", 1.0, 1e-5).id], max_queries=1)
    with admin_http(curator) as http:
        too_big = http.post(f"/v1/datasets/{dataset.id}/plan",
                            json={"epsilons": [1, 2, 4, 8], "simulate_runs": 20, "queries": 50})
        assert too_big.status_code == 422 and "ask for fewer runs" in too_big.json()["detail"]
        too_long = http.post(f"/v1/datasets/{dataset.id}/plan", json={"epsilons": [1], "simulate_runs": 1,
                                                                      "queries": N + 1})
        assert too_long.status_code == 422 and f"at most n = {N}" in too_long.json()["detail"]
        no_box = http.post(f"/v1/datasets/{identity.id}/plan", json={"epsilons": [1]})
        assert no_box.status_code == 422 and "give 'width'" in no_box.json()["detail"]
        boxed = http.post(f"/v1/datasets/{identity.id}/plan", json={"epsilons": [1], "width": 2.0})
        assert boxed.status_code == 200 and boxed.json()["width"] == 2.0
    modeler = httpx.post(f"{curator.url}/v1/datasets/{dataset.id}/plan", json={"epsilons": [1]},
                         headers={"Authorization": f"Bearer {key.token}"})
    assert modeler.status_code == 403
