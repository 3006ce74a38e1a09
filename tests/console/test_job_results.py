"""Job results as people read them, on a real server in a real browser: DPareto's front as a table of its points'
parameters, a sentence when every learner ended at the majority class (and the default learning rates, scaled to the
table's size, that learn on a few hundred rows), and dp-bo's releases with their noise scales and a sentence when the
noise dwarfs the value."""

from __future__ import annotations

import time

import numpy as np
import pytest

from shared.algorithms.dpareto.problems import dpsgd_privacy
from tests.console.test_console_pages import UNIT_BOX, api, unique


def finished(curator, kind: str, dataset_id: int, params: dict, timeout: float = 600) -> dict:
    with api(curator) as admin:
        job = admin.post("/v1/jobs", json={"kind": kind, "dataset_id": dataset_id, "params": params}).json()
        deadline = time.monotonic() + timeout
        while (job := admin.get(f"/v1/jobs/{job['id']}").json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, f"the {kind} job did not finish in {timeout} s"
            time.sleep(0.5)
    assert job["status"] == "succeeded", job["message"]
    return job


def register_breast_cancer(curator):
    """scikit-learn's breast-cancer table (569 rows, 30 features) with a 0/1 label column."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_breast_cancer(return_X_y=True)
    upper = np.ceil(X.max(axis=0) * 1.1)  # the test's stand-in for public bounds (a curator fixes them in advance)
    columns = [f"f{i}" for i in range(X.shape[1])]
    return curator.register_table(unique("breast-cancer"), X, columns, evaluator={"kind": "column",
                                  "column": "label"}, budget=(1.0, 1e-6), extra_columns={"label": y.astype(float)},
                                  scaling={"kind": "bounds", "lower": [0.0] * len(columns),
                                           "upper": upper.tolist(), "diameter": 1.0})


def assert_learns_at_large_epsilon(job: dict, seed: int) -> None:
    """398 training rows; some evaluated learner at ε ≤ 40 beats the majority class by at least 0.1, at no charge."""
    result = job["result"]
    assert (result["n_train"], job["epsilon"]) == (398, 0.0)
    within = [1 - p["error"] for p in result["points"] if p["epsilon"] <= 40]
    assert max(within) >= result["majority_baseline"] + 0.1, (seed, within, result["majority_baseline"])


@pytest.mark.slow
def test_dparetos_defaults_learn_on_the_breast_cancer_table_and_a_front_at_the_majority_says_why(admin_console):
    """569 rows, 398 for training: the default learning rates, Table 1's scaled to the table's size, beat the majority
    class by more than 0.1 at ε ≤ 40; learning rates too small to move the weights leave every learner at the
    majority class, and the job's page says so and why."""
    console, curator = admin_console, admin_console.curator
    dataset = register_breast_cancer(curator)
    job = finished(curator, "dpareto", dataset.id, {"label_column": "label", "seed": 0})
    result = job["result"]
    assert_learns_at_large_epsilon(job, 0)
    assert result["diagnosis"] is None
    for point in result["points"]:  # ε is the accountant's, from (lot, epochs, σ²) and n alone
        assert point["epsilon"] == dpsgd_privacy(point["params"], result["n_train"], result["delta"])

    console.open(f"/console/jobs/{job['id']}")
    rows = console.all("#front-points tbody tr")
    assert len(rows) == len(result["front"])
    shown = sorted(float(r.find_element("css selector", ".accuracy").text) for r in rows)
    assert shown[-1] == pytest.approx(result["best_accuracy"], abs=5e-4)
    assert console.all("#result-note-1") == []
    console.shot("job-dpareto-breast-cancer")

    stuck = finished(curator, "dpareto", dataset.id, {"label_column": "label", "seed": 0,
                                                       "learning_rate": [1e-7, 1e-6]})
    assert stuck["result"]["best_accuracy"] <= stuck["result"]["majority_baseline"] + 1 / stuck["result"]["n_test"]
    console.open(f"/console/jobs/{stuck['id']}")
    note = console.by_id("result-note-1").text
    assert note.startswith("Every learner ended at the majority class") and "learning rate" in note
    console.shot("job-dpareto-majority")


def test_dp_bo_shows_its_releases_with_their_noise_scales_and_says_when_the_noise_dwarfs_the_value(admin_console):
    console, curator = admin_console, admin_console.curator
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(80, 2))
    label = (X[:, 0] > 0.5).astype(float)
    dataset = curator.register_table(unique("dp-bo"), X, ["x0", "x1"], evaluator={"kind": "column",
                                     "column": "label"}, budget=(1.0, 1e-3), extra_columns={"label": label},
                                     scaling=UNIT_BOX)
    job = finished(curator, "dp-bo", dataset.id, {"label_column": "label", "log10_lambda": [-3, -1, 1],
                                                  "iterations": 2, "epsilon": 0.05, "delta": 1e-6, "seed": 1})
    result = job["result"]
    console.open(f"/console/jobs/{job['id']}")
    assert float(console.by_id("v-tilde").text) == pytest.approx(result["validation_accuracy"], rel=1e-3)
    assert console.by_id("v-scale").text == f"b = {result['value_noise_scale']:.3g}"
    assert result["value_noise_scale"] >= 1 / 0.05  # at ε = 0.05 the noise scale is at least 1/ε = 20
    notes = [n.text for n in console.all(".sentence")]
    assert any(n.startswith(f"ṽ = {result['validation_accuracy']:.3g} is mostly noise") for n in notes), notes
    assert any(n.startswith("λ̃ is not useful") and "close to a random grid point" in n for n in notes), notes
    console.shot("job-dp-bo")


@pytest.mark.slow
def test_dparetos_defaults_learn_on_the_breast_cancer_table_for_every_seed(console_curator):
    """Seeds 0–11 (each its own split, initial design and training noise): none ends at the majority class."""
    dataset = register_breast_cancer(console_curator)
    for seed in range(12):
        job = finished(console_curator, "dpareto", dataset.id, {"label_column": "label", "seed": seed})
        assert_learns_at_large_epsilon(job, seed)
