"""The jobs framework, exercised through the built-in ``dp-mean`` kind."""

from __future__ import annotations

import time

import numpy as np
import pytest

from curator_service.jobs import JobKind
from curator_service.jobs.runner import JobRunner
from curator_service.services.job_kinds import KINDS
from tests.curator_service.conftest import (
    UNCANCELLED_LIMIT_SECONDS,
    AnyParams,
    assert_error,
    bearer,
    modeler_key,
    register,
    release,
)


def _wait(client, job_id, headers=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def test_dp_mean_is_charged_at_submission_and_released(client):
    dataset = register(client, budget={"epsilon": 1.0, "delta": 1e-4})
    params = {"column": "y", "lower": -2.0, "upper": 2.0, "epsilon": 0.5, "seed": 1}
    job = client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"], "params": params})
    assert job.status_code == 202, job.text
    ledger = client.get("/v1/ledger").json()
    assert [(e["job_id"], e["epsilon"], e["delta"]) for e in ledger] == [(job.json()["id"], 0.5, 0.0)]
    done = _wait(client, job.json()["id"])
    assert done["status"] == "succeeded" and done["progress"] == 1.0
    assert done["result"]["sensitivity"] == pytest.approx(4.0 / 40)
    assert abs(done["result"]["mean"]) < 5  # clipped mean in [-2, 2] plus Laplace(0.2) noise
    # The second submission would overdraw: refused, nothing queued.
    again = client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"],
                                          "params": {**params, "epsilon": 0.6}})
    assert_error(again, 409, "budget_exceeded")
    assert len(client.get("/v1/jobs").json()) == 1


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"kind": "nope", "dataset_id": 1}, 422, "validation_error", ["'nope'", "dp-mean"]),
        ({"kind": "dp-mean"}, 422, "validation_error", ["dataset_id"]),
        ({"kind": "dp-mean", "dataset_id": 1, "params": {"column": "y", "lower": 1, "upper": 0, "epsilon": 1}}, 422,
         "validation_error", ["upper"]),
        ({"kind": "dp-mean", "dataset_id": 1, "params": {"column": "zz", "lower": 0, "upper": 1, "epsilon": 1}}, 422,
         "validation_error", ["'zz'"]),
        ({"kind": "dp-mean", "dataset_id": 1, "params": {"column": "y", "lower": 0, "upper": 1}}, 422,
         "validation_error", ["params.epsilon", "required"]),
        ({"kind": "dp-mean", "dataset_id": 9, "params": {}}, 404, "not_found", ["dataset"]),
    ],
)
def test_bad_job_submissions(client, body, status, code, words):
    register(client)
    assert_error(client.post("/v1/jobs", json=body), status, code, *words)
    assert client.get("/v1/jobs").json() == [] and client.get("/v1/ledger").json() == []


def test_modeler_jobs_are_scoped_to_its_releases_and_its_own(client):
    first, second = register(client, name="first"), register(client, name="second")
    rel = release(client, first["id"])
    key = modeler_key(client, [rel["id"]], jobs=["dp-mean"])
    headers = bearer(key["token"])
    params = {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1}
    assert_error(client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": second["id"], "params": params},
                             headers=headers), 404, "not_found", f"dataset with id {second['id']}")
    own = client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": first["id"], "params": params},
                      headers=headers).json()
    admins = client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": first["id"], "params": params}).json()
    assert [j["id"] for j in client.get("/v1/jobs", headers=headers).json()] == [own["id"]]
    assert_error(client.get(f"/v1/jobs/{admins['id']}", headers=headers), 404, "not_found")
    assert _wait(client, own["id"], headers)["status"] == "succeeded"


def test_curator_only_kinds_refuse_modelers(client, monkeypatch):
    secret = JobKind(name="front", description="curator only", cost=lambda p, d: (0.0, 0.0),
                     params=AnyParams, run=lambda ctx: {"front": []}, needs_dataset=False)
    monkeypatch.setitem(KINDS, "front", secret)
    dataset = register(client)
    key = modeler_key(client, [release(client, dataset["id"])["id"]])
    assert_error(client.post("/v1/jobs", json={"kind": "front"}, headers=bearer(key["token"])), 403, "forbidden",
                 "curator")
    job = client.post("/v1/jobs", json={"kind": "front"}).json()
    assert _wait(client, job["id"])["result"] == {"front": []}
    assert [e["job_id"] for e in client.get("/v1/ledger").json()] == [None]  # the release's; a free job adds none


def run_until_cancelled(ctx):
    """A kind's run that works until cancelled or UNCANCELLED_LIMIT_SECONDS (module level: the kind travels to a
    worker process by reference)."""
    ctx.progress(0.25, "working")
    deadline = time.monotonic() + UNCANCELLED_LIMIT_SECONDS
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.02)
    raise RuntimeError("never cancelled")


def wait_for_progress(client, job_id, progress, timeout=30.0):
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/v1/jobs/{job_id}").json())["progress"] < progress:
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def test_cancel_a_running_job_keeps_its_charge(client, monkeypatch):
    monkeypatch.setitem(KINDS, "slow", JobKind(name="slow", description="waits", cost=lambda p, d: (0.3, 0.0),
                                               params=AnyParams, run=run_until_cancelled))
    dataset = register(client)
    job = client.post("/v1/jobs", json={"kind": "slow", "dataset_id": dataset["id"]}).json()
    assert wait_for_progress(client, job["id"], 0.25)["status"] == "running"
    client.post(f"/v1/jobs/{job['id']}/cancel")
    done = _wait(client, job["id"])  # the worker's heartbeat (niced, every second) may lag on a loaded machine
    assert done["status"] == "cancelled" and "stays charged" in done["message"]
    assert [e["job_id"] for e in client.get("/v1/ledger").json()] == [job["id"]]


def test_a_failing_job_reports_its_type_not_its_message(client, monkeypatch):
    def run(ctx):
        raise ValueError(f"row value {ctx.table.features[0, 0]!r}")

    monkeypatch.setitem(KINDS, "boom", JobKind(name="boom", description="fails", cost=lambda p, d: (0.1, 0.0),
                                               params=AnyParams, run=run))
    dataset = register(client)
    job = client.post("/v1/jobs", json={"kind": "boom", "dataset_id": dataset["id"]}).json()
    done = _wait(client, job["id"])
    assert done["status"] == "failed" and "ValueError" in done["message"] and "row value" not in done["message"]
    assert_error(client.post(f"/v1/jobs/{job['id']}/cancel"), 409, "conflict", "failed")


@pytest.mark.parametrize("kind", sorted(name for name, kind in KINDS.items() if kind.endpoint is None))
def test_a_seed_in_job_params_is_refused_in_production(make_client, kind):
    """Every kind POST /v1/jobs creates (a kind with an endpoint of its own, the release, is checked there)."""
    client = make_client(mode="production")
    dataset = register(client)
    response = client.post("/v1/jobs", json={"kind": kind, "dataset_id": dataset["id"], "params": {"seed": 1}})
    assert_error(response, 403, "seed_refused", "production", "'seed'")
    assert client.get("/v1/jobs").json() == [] and client.get("/v1/ledger").json() == []


def test_a_seeded_job_queued_in_research_mode_does_not_run_in_production(make_client, monkeypatch):
    monkeypatch.setattr(JobRunner, "submit", lambda self, job_id: None)  # the service dies before it runs
    research = make_client()
    dataset = register(research)
    params = {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1, "seed": 1}
    job = research.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"], "params": params}).json()
    monkeypatch.undo()
    production = make_client(mode="production")  # same data directory: recovery runs the queued job
    done = _wait(production, job["id"])
    assert done["status"] == "failed" and "production" in done["message"] and done["result"] is None


def test_a_seeded_jobs_noise_and_rng_are_independent_streams(client, monkeypatch):
    def run(ctx):
        noise = ctx.noise.add_gaussian(np.zeros(4), 1.0, ctx.noise.grid(1.0))
        return {"noise": noise, "rng": ctx.rng.normal(0.0, 1.0, 4)}

    monkeypatch.setitem(KINDS, "streams", JobKind(name="streams", description="draws", cost=lambda p, d: (0.0, 0.0),
                                                  params=AnyParams, run=run, needs_dataset=False))
    results = [_wait(client, client.post("/v1/jobs", json={"kind": "streams", "params": {"seed": 5}}).json()["id"])
               ["result"] for _ in range(2)]
    assert results[0] == results[1]  # reproducible
    assert results[0]["noise"] != results[0]["rng"]


def test_a_job_that_cannot_start_fails_instead_of_staying_queued(make_client, monkeypatch):
    monkeypatch.setattr(JobRunner, "submit", lambda self, job_id: None)  # the service dies before it runs
    monkeypatch.setitem(KINDS, "vanishing", JobKind(name="vanishing", description="removed by an upgrade",
                                                    cost=lambda p, d: (0.1, 0.0), params=AnyParams, run=lambda ctx: {}))
    before = make_client()
    dataset = register(before)
    job = before.post("/v1/jobs", json={"kind": "vanishing", "dataset_id": dataset["id"]}).json()
    monkeypatch.undo()  # restarted without that kind: recovery runs the queued job, which cannot start
    after = make_client()
    done = _wait(after, job["id"])
    assert done["status"] == "failed" and "could not start (KeyError)" in done["message"]
    assert [e["job_id"] for e in after.get("/v1/ledger").json()] == [job["id"]]


def test_dp_bo_progress_and_fitting_do_not_depend_on_the_data(monkeypatch):
    """The learner is fitted at every grid point, in grid order, before GP-UCB's first step, so which λ
    GP-UCB picks (data-dependent) never shows as a slow fit or a fast repeat between two
    progress points. Two tables whose GP-UCB paths differ give the same sequence of events."""
    from shared.algorithms.kusner.validation_tasks import LogisticValidationTask
    from tests.privacy.test_adversarial_params import run_kind, table, with_column

    events: list[str] = []
    fit = LogisticValidationTask.weights
    monkeypatch.setattr(LogisticValidationTask, "weights",
                        lambda task, lam: events.append(f"fit {lam:.3g}") or fit(task, lam))
    grid = np.linspace(-4, 1, 9)
    params = {"label_column": "label", "log10_lambda": grid.tolist(), "iterations": 12, "epsilon": 1.0, "delta": 1e-5}
    traces = []
    for raw in (table(0), with_column(table(5), "label", 0, 1.0)):
        events.clear()
        run_kind("dp-bo", params, raw, progress=lambda fraction, message=None: events.append(f"progress {message}"))
        traces.append(list(events))
    first_step = traces[0].index("progress GP-UCB step 1 of 12")
    assert traces[0][1:first_step] == [f"fit {10.0**g:.3g}" for g in grid]  # after "fitting …": every point once
    assert all(e.startswith("progress GP-UCB step") for e in traces[0][first_step:])
    assert traces[0] == traces[1]


def test_labels_other_than_one_count_as_zero_so_no_row_value_can_fail_a_job():
    """A failure on one row's label value would tell a modeler that such a row exists."""
    from curator_service.persistence.blobs import RawTable
    from curator_service.services.job_kinds.inputs import binary_labels

    table = RawTable(columns={"y": np.array([0.0, 1.0, 2.0, -1.0, 1.0])}, feature_columns=())
    np.testing.assert_array_equal(binary_labels(table, "y"), [0, 1, 0, 0, 1])
