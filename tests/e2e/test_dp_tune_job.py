"""End-to-end: ``pobo-modeler dp-tune`` against a real ``pobo-curator serve``: submit, follow, print the
selection, the held-out accuracy beside the majority baseline and the charge split; the ledger is
charged cap·ϵ + final ε + evaluation ε whatever the number of candidates (also when nothing is selected). On
Adult registered as a new user would (raw continuous columns, one-hot categories, public bounds) the
released model beats the majority-class baseline, in the job's own private held-out numbers and on
adult.test; trained on the raw columns (before the raw columns were scaled) it could predict ">50K" for everyone
(0.24)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import MinMaxScaler

from curator_service.admin_client import CuratorAdmin
from curator_service.services.job_kinds.inputs import TRAINING_ROW_NORM
from modeler_client.commands.common import connect
from modeler_client.commands.jobs import run_job
from shared.api.http_client import ApiClient
from shared.api.scaling import apply_scaling
from shared.api.schemas import DatasetOut, JobOut, ScalingSpec
from shared.datasets.adult import CATEGORIES, COLUMNS, SPLIT_FILES
from shared.datasets.paths import data_file
from shared.releases.gaussian import clip_rows
from tests.modeler_client.test_cli_and_plot import flat

UNIT_BOX = {"kind": "bounds", "lower": [0.0] * 5, "upper": [1.0] * 5}  # the features are min-max scaled


# Public round-number ranges of Adult's continuous columns (fixed without reading the data).
ADULT_BOUNDS = {"age": (17.0, 90.0), "fnlwgt": (0.0, 1.5e6), "education-num": (1.0, 16.0), "capital-gain": (0.0, 1e5),
                "capital-loss": (0.0, 5000.0), "hours-per-week": (1.0, 99.0)}


def adult_table(split: str, rows: int | None = None) -> tuple[np.ndarray, np.ndarray, list[str], dict]:
    """Adult as a new user would register it: the six continuous columns raw (age in years, fnlwgt ~10⁵, …),
    the categorical ones one-hot over adult.names' public categories, and the public bounds scaling
    (continuous: ADULT_BOUNDS; one-hot: [0, 1]). Returns X, y (1 = income > 50K), the names, the scaling."""
    names, lower, upper = [], [], []
    for column in COLUMNS:
        levels = CATEGORIES.get(column)
        names += [f"{column}={v}" for v in levels] if levels else [column]
        low, high = ADULT_BOUNDS.get(column, (0.0, 1.0))
        lower += [low] * (len(levels) if levels else 1)
        upper += [high] * (len(levels) if levels else 1)
    X, y = [], []
    with open(data_file(SPLIT_FILES[split]), encoding="utf-8") as handle:
        for fields in csv.reader(handle, skipinitialspace=True):
            if len(fields) != len(COLUMNS) + 1 or fields[0] == "age":  # blank lines, adult.test's header
                continue
            X.append([value for column, field in zip(COLUMNS, fields) for value in
                      ([float(field == v) for v in CATEGORIES[column]] if column in CATEGORIES else [float(field)])])
            y.append(int(fields[-1].rstrip(".") == ">50K"))
            if len(y) == rows:
                break
    return np.array(X), np.array(y), names, {"kind": "bounds", "lower": lower, "upper": upper}


class PatientAdmin(CuratorAdmin):
    """The curator's setup calls with a longer read timeout: all of Adult is a 14 MB upload, which took
    19 s to register on an idle 2-core machine and over the client's default 30 s on a busy one."""

    def admin(self, **options) -> ApiClient:
        return super().admin(timeout=300.0, **options)


def register_adult(curator, shared_data_file, rows: int | None) -> DatasetOut:
    """The first ``rows`` of adult.data (all when None), raw, with its public bounds scaling."""
    shared_data_file("adult.data")
    X, y, names, scaling = adult_table("train", rows)
    admin = PatientAdmin(curator.url, curator.admin_token)
    return admin.register_table(f"adult-{uuid.uuid4().hex[:8]}", X, names, budget=(50.0, 1e-3),
                                evaluator={"kind": "column", "column": "label"}, extra_columns={"label": y},
                                scaling=scaling)


def adult_test_accuracy(model: dict) -> float:
    """The released model's accuracy on adult.test, its rows mapped as the job maps them (the public
    scaling, then rows clipped to the unit ball)."""
    X, y, _, scaling = adult_table("test")
    features = clip_rows(apply_scaling(X, ScalingSpec.model_validate(scaling)), TRAINING_ROW_NORM)
    return float(np.mean(((features @ np.asarray(model["coef"]) + model["intercept"]) > 0) == y))


def tune_through_the_cli(curator, X: np.ndarray, y: np.ndarray, budget: float, *options: str
                         ) -> tuple[JobOut, list[dict], str]:
    """Register (X, y) (features in the unit box), give a modeler a key, run ``pobo-modeler dp-tune`` with
    ``options`` in a subprocess; return the job and its ledger entries as the curator sees them, and the
    output without table borders."""
    dataset = curator.register_table(f"tune-{uuid.uuid4().hex[:8]}", X, ["a", "b", "c", "d", "e"],
                                     evaluator={"kind": "column", "column": "label"}, budget=(budget, 1e-3),
                                     extra_columns={"label": y}, scaling=UNIT_BOX)
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=3, seed=1)
    token = curator.issue_key([release.id], max_queries=10, jobs=["dp-tune"]).token
    command = [sys.executable, "-m", "modeler_client.cli", "dp-tune", "--url", curator.url, "--token", token,
               "--release", str(release.id), "--label-column", "label", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr + done.stdout
    with curator.admin() as api:
        jobs = [JobOut.model_validate(j) for j in api.get("/v1/jobs")]
        ledger = api.get("/v1/ledger")
    job = next(j for j in jobs if j.kind == "dp-tune" and j.dataset_id == dataset.id)
    return job, [e for e in ledger if e["job_id"] == job.id], flat(done.stdout)


def test_dp_tune_through_the_cli(curator):
    X, y = load_breast_cancer(return_X_y=True)
    job, entries, text = tune_through_the_cli(
        curator, MinMaxScaler().fit_transform(X[:, :5]), y, 10.0, "--learning-rates", "0.5,2", "--batch-sizes", "32",
        "--epochs", "1,3", "--k", "5", "--epsilon", "0.5", "--max-iterations", "6", "--final-epsilon", "1",
        "--evaluation-epsilon", "0.2", "--test-fraction", "0.25")
    assert "4 candidates" in text and "warning" not in text  # unseeded and charged: nothing to warn about
    assert job.status == "succeeded" and (job.epsilon, job.delta) == (pytest.approx(6 * 0.5 + 1.0 + 0.2), 1e-5)
    assert [(e["epsilon"], e["delta"]) for e in entries] == [(job.epsilon, 1e-5)]
    assert not job.seeded and job.certified
    result, held_out = job.result, job.result["held_out"]
    assert result["iterations"] <= 6
    assert (held_out["rows"], held_out["epsilon"]) == (round(0.25 * len(y)), 0.2)
    assert held_out["noise_scale"] == pytest.approx(1 / held_out["rows"] / 0.1)  # Δ = 1/n_test at ε/2 each
    assert "privacy cost ε = 4.2 = selection 3 + final training 1" in text
    assert "held-out evaluation 0.2; δ = 1e-05" in text
    accuracy = "no model" if result["selected"] is None else f"{held_out['accuracy']:.3f}"
    assert (f"held-out accuracy {accuracy} against the majority-class baseline {held_out['majority_baseline']:.3f} "
            f"on {held_out['rows']} rows") in text
    if result["selected"] is not None:
        assert len(result["model"]["coef"]) == 5 and "rows clipped to l2 norm 1" in text


def test_nothing_selected_still_shows_the_whole_charge(curator):
    """No candidate passes a 0.995 threshold on coin-flip labels (utility ≈ 0.5 ± 0.05; the sparse vector's
    noise scales are 2/(kϵ) = 0.008 and 4/(kϵ) = 0.016, so even at utility 0.69 a pass needs noise above 0.3:
    odds about e^(−0.3/0.016) ≈ 7e-9). The final training does not run, yet its ε stays charged, and the
    CLI says so."""
    rng = np.random.default_rng(0)
    job, entries, text = tune_through_the_cli(
        curator, rng.uniform(size=(400, 5)), rng.integers(0, 2, size=400), 60.0, "--learning-rates", "0.5",
        "--batch-sizes", "32", "--epochs", "1", "--k", "5", "--epsilon", "50", "--max-iterations", "1",
        "--u0", "0.99", "--g", "0.005")
    assert job.result["selected"] is None and job.result["model"] is None
    assert job.epsilon == pytest.approx(50 + 1.0 + 0.1) and [e["epsilon"] for e in entries] == [job.epsilon]
    held_out = job.result["held_out"]
    assert (held_out["rows"], held_out["accuracy"]) == (80, None)  # the default test_fraction 0.2
    assert "selected candidate none passed the threshold" in text
    baseline = held_out["majority_baseline"]
    assert f"held-out accuracy no model against the majority-class baseline {baseline:.3f}" in text
    assert "ε = 51.1 = selection 50 + final training 1 (charged, not run) + held-out evaluation 0.1" in text


# Reasonable DP-SGD settings for unit-ball rows: each reached ≥ 0.80 on adult.test in 6 seeded trainings at
# ε = 1 on 6,400 rows; on the raw columns, such candidates fell to 0.24 (everyone predicted ">50K").
ADULT_CANDIDATES = [{"learning_rate": lr, "batch_size": batch, "epochs": epochs, "clip_norm": 1.0}
                    for lr, batch, epochs in ((3.0, 256, 3), (3.0, 256, 5), (3.0, 128, 3), (10.0, 256, 3))]
ADULT_MAJORITY = 0.7638  # share of adult.test with income ≤ 50K


def tune_adult(curator, dataset: DatasetOut, **params) -> JobOut:
    """A dp-tune job on the Adult table: a modeler's, unseeded (production noise: OpenDP), or with ``seed`` the
    curator's own in research mode (a modeler key may not send a seed)."""
    if params.get("seed") is None:
        release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2, seed=1)
        client = connect(curator.url, curator.issue_key([release.id], max_queries=1, jobs=["dp-tune"]).token)
    else:
        client = connect(curator.url, curator.admin_token)
    base = {"label_column": "label", "candidates": ADULT_CANDIDATES, "u0": 0.5, "g": 0.05, "final_epsilon": 1.0,
            "final_delta": 1e-5, "evaluation_epsilon": 1.0}
    return run_job(client, "dp-tune", dataset.id, {**base, **params}, poll=0.5, wait=1200)


def assert_beats_the_majority(job: JobOut, held_out_margin: float = 0.02) -> None:
    """By 0.02 on adult.test (16,281 rows) and by ``held_out_margin`` in the job's private held-out numbers."""
    held_out = job.result["held_out"]
    assert held_out["noise_scale"] < 0.01  # the two noisy numbers are precise enough to compare
    assert held_out["accuracy"] > held_out["majority_baseline"] + held_out_margin, held_out
    assert adult_test_accuracy(job.result["model"]) > ADULT_MAJORITY + 0.02


def test_dp_tune_on_adult_beats_the_majority_baseline(curator, shared_data_file):
    """8,000 rows: k = 20 parts, ϵ = 1 per iteration (kϵ = 20), cap 8; charged 8 + 1 + 1.

    Whether one job clears a margin is luck, so the job is seeded (the curator's, research mode): the seed fixes the
    noise but not the held-out rows, which follow the table's secret row order, new at each registration. Measured
    (the same computation in-process, on a cluster and through this service): 19 of 20 seeds pass, before
    and after the cells went to the cluster (the other selects nothing: its first sparse-vector iteration fails, which
    ends the loop); on adult.test the model scores 0.785–0.823 (mean 0.810) against 0.7838 needed; seed 0 over 18
    row orders scores 0.806–0.817. The held-out margin (1,600 random rows) is the thin one: accuracy − baseline was
    0.022–0.061 over those 18 orders (sd 0.011), so it is required to be positive, not above 0.02 (which fails about
    1 run in 40). The unseeded path's privacy is tested by tests/shared/test_dptune.py and the CLI test above."""
    job = tune_adult(curator, register_adult(curator, shared_data_file, 8000), k=20, epsilon=1.0, max_iterations=8,
                     seed=0)
    assert job.seeded and not job.certified
    assert job.epsilon == pytest.approx(10.0) and job.result["held_out"]["rows"] == 1600
    assert_beats_the_majority(job, held_out_margin=0.0)


@pytest.mark.slow
def test_dp_tune_on_all_of_adult_beats_the_majority_baseline(curator, shared_data_file):
    """All 32,561 rows, the benchmark's k = 100 parts at kϵ = 50."""
    job = tune_adult(curator, register_adult(curator, shared_data_file, None), k=100, epsilon=0.5, max_iterations=12)
    assert_beats_the_majority(job)
