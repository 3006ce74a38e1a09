"""Service-level privacy checks through real ``pobo-curator serve`` processes on loopback.

Everything goes through the HTTP API, as a curator and a modeler would use it: neighbouring tables get the
same calibration (it never depends on the data), values outside the public bounds are clipped, each scaling
kind says what one neighbouring step hides, seeded releases are labelled, a modeler key never chooses the
noise in any mode, every ledger charge equals its mechanism's cost, and releases made under laxer settings
stop being served when the operator tightens them. These are exact checks, not statistical ones.
"""

from __future__ import annotations

import os
import stat
import uuid

import httpx
import numpy as np
import pytest

from curator_service.services.job_kinds import KINDS
from curator_service.testing import LocalCurator
from shared.api.http_client import ApiError
from shared.api.schemas import SEEDED_WARNING

D = 3
LOWER, UPPER = [0.0, 0.0, 0.0], [10.0, 20.0, 40.0]
WHOLE_RECORD = {"kind": "bounds", "lower": LOWER, "upper": UPPER, "diameter": 1.0}
PRODUCTION = {"POBO_MODE": "production", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"}


@pytest.fixture(scope="module")
def research(tmp_path_factory, job_cluster):
    """Research mode, uncertified mechanisms enabled (what the demo and benchmarks opt into)."""
    with LocalCurator(tmp_path_factory.mktemp("research")) as server:
        yield server


@pytest.fixture(scope="module")
def production(tmp_path_factory, job_cluster):
    """The service's defaults: production mode, uncertified mechanisms disabled."""
    server = LocalCurator(tmp_path_factory.mktemp("production"))
    server.env = {k: v for k, v in server.env.items() if k not in PRODUCTION}  # nothing asked: the defaults
    with server:
        yield server


def table(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(LOWER, UPPER, size=(n, D))
    return X, (X[:, 0] > 5).astype(float)  # a 0/1 label for the jobs


def register(curator, X, y, scaling=None, budget=(1000.0, 0.5)) -> int:
    return curator.register_table(f"t-{uuid.uuid4().hex[:8]}", X, ["a", "b", "c"],
                                  evaluator={"kind": "column", "column": "label"}, budget=budget,
                                  extra_columns={"label": y}, scaling=scaling or WHOLE_RECORD).id


def neighbour(X: np.ndarray, row: int, change: np.ndarray) -> np.ndarray:
    X_prime = X.copy()
    X_prime[row] += change
    return X_prime


def scaled_change(change: np.ndarray) -> float:
    """ℓ2 norm of a raw change after WHOLE_RECORD's scaling (width 1/√d per feature)."""
    return float(np.linalg.norm(change / (np.array(UPPER) - np.array(LOWER)) / np.sqrt(D)))


def test_neighbouring_tables_get_the_same_calibration(research, production):
    X, y = table()
    change = np.array([10.0, -20.0, 40.0]) * np.sign(0.5 - X[7] / UPPER)  # row 7 to the far corner of the box
    X_prime = neighbour(X, 7, change)
    assert 0.5 < scaled_change(change) <= 1.0  # a neighbour: ℓ2 ≤ 1 after scaling, most of the box
    for curator, seed, dims in ((production, None, [D]), (research, 11, [1, 2, D, 5])):
        ids = [register(curator, T, y) for T in (X, X_prime, table(seed=9)[0])]  # the third is no neighbour
        for epsilon, delta in ((0.5, 1e-6), (4.0, 1e-5)):
            for dim in dims:  # r = d is the identity; r ≠ d a projection drawn from the seed
                releases = [curator.create_release(i, "gaussian", epsilon, delta, dim, seed) for i in ids]
                assert len({(r.noise_std, r.sensitivity) for r in releases}) == 1, (epsilon, delta, dim)
                assert releases[0].noise_std > 0


def test_values_outside_the_public_bounds_are_clipped(production):
    X, y = table()
    X[:5] = [[1e6, -1e6, 5.0], [-3e5, 25.0, 1e9], [11.0, 21.0, 41.0], [-1.0, -1.0, -1.0], [1e12, 1e12, 1e12]]
    whole, raw = register(production, X, y), register(production, X, y, scaling={"kind": "identity"})
    noisy_whole = production.create_release(whole, "gaussian", 500.0, 1e-5, D)  # r = d: Z = scaled X + noise
    noisy_raw = production.create_release(raw, "gaussian", 500.0, 1e-5, D)
    with production.admin() as api:
        Z = np.array(api.get(f"/v1/releases/{noisy_whole.id}/inputs", params={"limit": 100})["rows"])
        Z_raw = np.array(api.get(f"/v1/releases/{noisy_raw.id}/inputs", params={"limit": 100})["rows"])
    width = 1 / np.sqrt(D)
    slack = 8 * noisy_whole.noise_std
    assert noisy_whole.noise_std < 0.05 and Z.min() > -slack and Z.max() < width + slack
    assert np.abs(Z_raw).max() > 1e5  # the control: identity scaling does not clip


@pytest.mark.parametrize(
    ("scaling", "whole_record"),
    [({"kind": "identity"}, False),
     ({"kind": "affine", "offset": [0, 0, 0], "scale": [10, 20, 40]}, False),
     ({"kind": "bounds", "lower": LOWER, "upper": UPPER, "diameter": 2.0}, False),
     (WHOLE_RECORD, True)],
)
def test_each_scaling_kind_says_what_it_hides(production, scaling, whole_record):
    X, y = table()
    release = production.create_release(register(production, X, y, scaling=scaling), "gaussian", 1.0, 1e-6, D)
    assert release.certified and release.neighbouring_step.whole_record is whole_record
    assert release.neighbouring_step.clipped is (scaling["kind"] == "bounds")
    assert bool(release.warnings) is not whole_record
    if not whole_record:
        assert "hides less than a whole record" in release.warnings[0]


def test_seeds_make_a_release_uncertified_and_production_refuses_them(research, production):
    X, y = table()
    seeded = research.create_release(register(research, X, y), "gaussian", 1.0, 1e-6, D, seed=5)
    assert (seeded.seeded, seeded.certified) == (True, False) and SEEDED_WARNING in seeded.warnings
    dataset = register(production, X, y)
    with pytest.raises(ApiError) as refused:
        production.create_release(dataset, "gaussian", 1.0, 1e-6, D, seed=5)
    assert refused.value.code == "seed_refused"
    unseeded = production.create_release(dataset, "gaussian", 1.0, 1e-6, D)
    assert (unseeded.seeded, unseeded.certified, unseeded.warnings) == (False, True, [])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_modeler_key_never_sends_a_seed(research, production, kind):
    """Every job kind, every mode: refused before anything is stored or charged."""
    X, y = table()
    for curator in (research, production):
        dataset = register(curator, X, y)
        release = curator.create_release(dataset, "gaussian", 1.0, 1e-6, D)
        modeler_may_run = "modeler" in KINDS[kind].roles
        # The key may run the kind where a modeler can, so that the seed alone is what is refused.
        token = curator.issue_key([release.id], max_queries=5, jobs=[kind] if modeler_may_run else None).token
        with curator.admin() as admin:
            ledger = admin.get("/v1/ledger")
        response = httpx.post(f"{curator.url}/v1/jobs", headers={"Authorization": f"Bearer {token}"},
                              json={"kind": kind, "dataset_id": dataset, "params": {"seed": 1}})
        assert response.status_code == 403, response.text
        assert response.json()["code"] == ("seed_refused" if modeler_may_run else "forbidden")
        with curator.admin() as admin:
            assert admin.get("/v1/ledger") == ledger
            assert not [job for job in admin.get("/v1/jobs")
                        if job["dataset_id"] == dataset and job["kind"] != "release"]


JOB_COSTS = {
    # kind: (params, the cost its docstring states)
    "dp-mean": ({"column": "label", "lower": 0, "upper": 1, "epsilon": 0.3}, (0.3, 0.0)),
    "dp-bo": ({"label_column": "label", "log10_lambda": [-3, -1, 0], "iterations": 2, "epsilon": 0.25,
               "delta": 1e-7}, (0.5, 2e-7)),
    "dp-tune": ({"label_column": "label", "k": 2, "epsilon": 0.05, "max_iterations": 4, "final_epsilon": 0.5,
                 "final_delta": 1e-7, "evaluation_epsilon": 0.2,
                 "candidates": [{"learning_rate": 0.1, "batch_size": 8, "epochs": 1, "clip_norm": 1.0}]},
                (4 * 0.05 + 0.5 + 0.2, 1e-7)),
    "dpareto": ({"label_column": "label", "iterations": 0, "initial_points": 2}, (0.0, 0.0)),
}


def test_every_ledger_charge_equals_its_mechanisms_cost(production):
    # every kind POST /v1/jobs creates; a release's charge is checked below
    assert set(JOB_COSTS) == {name for name, kind in KINDS.items() if kind.endpoint is None}, \
        "a job kind without a cost check"
    X, y = table()
    dataset = register(production, X, y, budget=(50.0, 1e-3))
    for epsilon, delta in ((0.7, 3e-6), (2.5, 1e-7)):
        release = production.create_release(dataset, "gaussian", epsilon, delta, 2)
        with production.admin() as admin:
            (entry,) = [e for e in admin.get("/v1/ledger") if e["release_id"] == release.id]
        assert (entry["epsilon"], entry["delta"]) == (release.epsilon, release.delta) == (epsilon, delta)
    with production.admin() as admin:
        for kind, (params, (epsilon, delta)) in JOB_COSTS.items():
            job = admin.post("/v1/jobs", {"kind": kind, "dataset_id": dataset, "params": params})
            try:  # stop it early; the charge was made at submission and stays
                admin.post(f"/v1/jobs/{job['id']}/cancel", {})
            except ApiError as exc:
                assert exc.code == "conflict"  # it had already finished
            charged = [(e["epsilon"], e["delta"]) for e in admin.get("/v1/ledger") if e["job_id"] == job["id"]]
            assert (job["epsilon"], job["delta"]) == pytest.approx((epsilon, delta)), kind
            assert charged == ([] if epsilon == delta == 0 else [pytest.approx((epsilon, delta))]), kind
        spent = admin.get(f"/v1/datasets/{dataset}")["budget"]
    assert spent["spent_epsilon"] == pytest.approx(0.7 + 2.5 + sum(cost[0] for _, cost in JOB_COSTS.values()))


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.slow  # two more server starts; tests/curator_service/test_flags_off.py checks the same in-process
def test_tightened_settings_stop_serving_laxer_releases_after_a_restart(tmp_path, job_cluster):
    server = LocalCurator(tmp_path / "data").start()
    try:
        X, y = table()
        dataset = register(server, X, y)
        seeded = server.create_release(dataset, "gaussian", 1.0, 1e-6, D, seed=3)
        uncertified = server.create_release(dataset, "po-gp-ucb", 1.0, 1e-6, 2)
        certified = server.create_release(dataset, "gaussian", 1.0, 1e-6, D)
        token = server.issue_key([seeded.id, uncertified.id, certified.id], max_queries=10).token
        server.stop()
        server.env.update(PRODUCTION)
        server.start()
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as modeler:
            for release, setting in ((seeded, "POBO_MODE"), (uncertified, "POBO_ALLOW_UNCERTIFIED_MECHANISMS")):
                for response in (modeler.get(f"/v1/releases/{release.id}/inputs"),
                                 modeler.post(f"/v1/releases/{release.id}/sessions")):
                    assert response.status_code == 403 and setting in response.json()["detail"]
                assert any(setting in w for w in modeler.get(f"/v1/releases/{release.id}").json()["warnings"])
            assert modeler.get(f"/v1/releases/{certified.id}/inputs").status_code == 200
        data = tmp_path / "data"
        assert _mode(data) == 0o700
        assert {p.name: _mode(p) for p in data.glob("curator.db*")} == dict.fromkeys(
            ["curator.db", "curator.db-wal", "curator.db-shm"], 0o600)
    finally:
        server.stop()
