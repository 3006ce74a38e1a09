"""End-to-end: ``pobo-modeler dp-bo`` against a real ``pobo-curator serve`` — submit, wait, print λ̃ and ṽ
with their sensitivities and noise scale; the dataset's ledger is charged (2ε, 2δ); only the two releases
and public parameters come back."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from shared.api.http_client import ApiError
from shared.api.schemas import JobOut
from tests.modeler_client.test_cli_and_plot import flat

RESULT_KEYS = {"log10_lambda", "lambda", "index", "validation_accuracy", "epsilon", "delta", "selection_sensitivity",
               "value_sensitivity", "value_noise_scale", "iterations", "validation_size", "dataset_kernel",
               "info_gain_bound", "grid_size", "guarantee"}


def box(X: np.ndarray) -> dict:
    """Bounds scaling to the columns' ranges (for a test table; a real curator fixes bounds without the data)."""
    return {"kind": "bounds", "lower": X.min(axis=0).tolist(), "upper": X.max(axis=0).tolist()}


def modeler(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "modeler_client.cli", "dp-bo", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def test_dp_bo_through_the_cli(curator):
    X, y = load_breast_cancer(return_X_y=True)
    columns = [f"f{j}" for j in range(X.shape[1])]
    dataset = curator.register_table(f"cancer-{uuid.uuid4().hex[:8]}", X, columns,
                                     evaluator={"kind": "column", "column": "label"}, budget=(10.0, 1e-3),
                                     extra_columns={"label": y}, scaling=box(X))
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=4, seed=1)
    key = curator.issue_key([release.id], max_queries=10, jobs=["dp-bo"])
    common = ["--url", curator.url, "--token", key.token, "--release", str(release.id)]

    options = ["--label-column", "label", "--epsilon", "2", "--delta", "1e-5", "--iterations", "6", "--grid-points",
               "9"]
    planned = modeler(*common, *options, "--plan")
    assert planned.returncode == 0, planned.stderr + planned.stdout
    plan = flat(planned.stdout)
    assert "total charged to the dataset ε = 4, δ = 2e-05 (two releases, λ̃ and ṽ, of ε = 2, δ = 1e-05 each)" in plan
    assert "nothing was submitted or charged" in plan and "λ̃ is not useful" in plan
    with curator.admin() as api:
        assert not [j for j in api.get("/v1/jobs") if j["kind"] == "dp-bo" and j["dataset_id"] == dataset.id], \
            "the plan submitted a job"

    done = modeler(*common, *options)
    assert done.returncode == 0, done.stderr + done.stdout
    text = flat(done.stdout)
    assert "λ̃" in text and "ṽ" in text and "privacy cost ε = 4, δ = 2e-05" in text

    with curator.admin() as api:
        ledger = api.get("/v1/ledger")
        jobs = [JobOut.model_validate(j) for j in api.get("/v1/jobs")]
    job = next(j for j in jobs if j.kind == "dp-bo" and j.dataset_id == dataset.id)
    assert job.status == "succeeded" and (job.epsilon, job.delta) == (4.0, 2e-5)
    assert [(e["epsilon"], e["delta"]) for e in ledger if e["job_id"] == job.id] == [(4.0, 2e-5)]
    assert set(job.result) == RESULT_KEYS  # no trace, no observed value, no row
    grid = np.linspace(-6.0, 0.0, 9)
    assert job.result["log10_lambda"] == grid[job.result["index"]]
    assert job.result["validation_size"] == round(0.5 * len(y))
    # The range floor: each sensitivity is at least the accuracy range 1, so ṽ's Laplace scale is ≥ 1/ε.
    result = job.result
    assert min(result["selection_sensitivity"], result["value_sensitivity"]) >= 1.0
    assert result["value_noise_scale"] == pytest.approx(result["value_sensitivity"] / 2.0)
    scale = result["value_noise_scale"]
    assert (f"sensitivities λ̃: {result['selection_sensitivity']:.4g}, ṽ: {result['value_sensitivity']:.4g} "
            f"noise scale of ṽ {scale:.3g} (Laplace; standard deviation {np.sqrt(2) * scale:.3g})") in text
    assert f"ṽ (private best validation accuracy) {result['validation_accuracy']:.3g}" in text
    # the plan stated the job's own noise before anything was charged, and the verdict on λ̃ is the same after
    assert (f"sensitivities λ̃: {result['selection_sensitivity']:.4g}, ṽ: {result['value_sensitivity']:.4g} "
            f"expected noise of ṽ Laplace scale {scale:.3g}") in plan
    assert "λ̃ is not useful: at ε = 2 per release over 9 grid points" in text and result["grid_size"] == 9
    # At ε = 2 the noise's standard deviation (≥ √2/2) passes a quarter of an accuracy's range: said in plain words.
    assert f"ṽ = {result['validation_accuracy']:.3g} is mostly noise: its noise has standard deviation" in text
    assert "the curator has approved no label columns" in flat(done.stderr)  # nothing says 'label' is 0/1
    assert "warning" not in text and not job.seeded and job.certified



def test_bad_label_column_is_refused_and_not_charged(curator):
    X, y = load_breast_cancer(return_X_y=True)
    dataset = curator.register_table(f"cancer-{uuid.uuid4().hex[:8]}", X[:60, :3], ["a", "b", "c"],
                                     evaluator={"kind": "column", "column": "label"}, budget=(10.0, 1e-3),
                                     extra_columns={"label": y[:60]}, scaling=box(X[:60, :3]))
    params = {"label_column": "nope", "log10_lambda": [-2.0, 0.0], "iterations": 2, "epsilon": 1.0, "delta": 1e-5}
    with curator.admin() as api:
        before = api.get("/v1/ledger")
        with pytest.raises(ApiError) as refused:
            api.post("/v1/jobs", {"kind": "dp-bo", "dataset_id": dataset.id, "params": params})
        assert refused.value.status == 422 and "label_column 'nope' is not a numeric column" in refused.value.detail
        assert api.get("/v1/ledger") == before
