"""End-to-end: ``pobo-modeler dpareto`` with curator credentials against a real ``pobo-curator serve``: the
front comes back and is plotted, nothing is charged to the ledger, and modelers cannot run it. On Adult
(a9a binarisation with its public 0/1 bounds) the front reaches beyond the majority-class baseline."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import MinMaxScaler

from modeler_client.commands.common import connect
from modeler_client.commands.jobs import run_job
from shared.api.http_client import ApiError
from shared.api.schemas import JobOut
from tests.e2e.test_dp_tune_job import UNIT_BOX, register_adult


def test_dpareto_through_the_cli(curator, tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    X = MinMaxScaler().fit_transform(X[:, :5])
    dataset = curator.register_table(f"cancer-{uuid.uuid4().hex[:8]}", X, ["a", "b", "c", "d", "e"],
                                     evaluator={"kind": "column", "column": "label"}, budget=(10.0, 1e-3),
                                     extra_columns={"label": y}, scaling=UNIT_BOX)
    out = tmp_path / "front.png"
    command = [sys.executable, "-m", "modeler_client.cli", "dpareto", "--url", curator.url, "--token",
               curator.admin_token, "--dataset", str(dataset.id), "--label-column", "label", "--initial-points", "4",
               "--iterations", "3", "--max-epochs", "3", "--seed", "2", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr + done.stdout
    assert "not differentially private" in done.stdout and out.stat().st_size > 0

    with curator.admin() as api:
        jobs = [JobOut.model_validate(j) for j in api.get("/v1/jobs")]
        ledger = api.get("/v1/ledger")
    job = next(j for j in jobs if j.kind == "dpareto" and j.dataset_id == dataset.id)
    assert job.status == "succeeded" and (job.epsilon, job.delta) == (0.0, 0.0)
    assert not [e for e in ledger if e.get("job_id") == job.id]
    assert len(job.result["points"]) == 7 and 1 <= len(job.result["front"]) <= 7
    assert all(p["epsilon"] > 0 and 0 <= p["error"] <= 1 for p in job.result["points"])

    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=3, seed=1)
    key = curator.issue_key([release.id], max_queries=5)
    client = connect(curator.url, key.token)
    try:
        client.submit_job("dpareto", dataset.id, {"label_column": "label"})
        raise AssertionError("a modeler key must not run dpareto")
    except ApiError as error:
        assert error.status in (403, 404)


def front_on_adult(curator, dataset, **params) -> JobOut:
    client = connect(curator.url, curator.admin_token)
    body = {"label_column": "label", "optimizer": "adam", "seed": 2, **params}
    return run_job(client, "dpareto", dataset.id, body, poll=0.5, wait=1200)


def assert_front_beats_the_majority(job: JobOut) -> None:
    result = job.result
    assert 0.70 < result["majority_baseline"] < 0.80  # Adult: about 76% earn ≤ 50K
    best = max(1.0 - p["error"] for p in result["front"])
    assert best == result["best_accuracy"] > result["majority_baseline"] + 0.03, result["front"]
    assert len(result["front"]) >= 2  # a front, not one constant classifier


def test_dpareto_on_adult_beats_the_majority_baseline(curator, shared_data_file):
    """8,000 rows, DP-Adam, 6 initial points and 4 DPareto steps of at most 20 epochs; learning rates in the
    upper decade of Table 1's (few points, so the curator narrows the domain)."""
    dataset = register_adult(curator, shared_data_file, 8000)
    assert_front_beats_the_majority(front_on_adult(curator, dataset, initial_points=6, iterations=4, max_epochs=20,
                                                   learning_rate=[0.005, 0.05]))


@pytest.mark.slow
def test_dpareto_on_all_of_adult_beats_the_majority_baseline(curator, shared_data_file):
    """All 32,561 rows, Table 1's domain (up to 64 epochs), 8 + 8 points."""
    dataset = register_adult(curator, shared_data_file, None)
    assert_front_beats_the_majority(front_on_adult(curator, dataset, initial_points=8, iterations=8))
