"""The dpareto job: its total DP-SGD work is bounded at submission (a 422 that says what to reduce), and
its random-search or grid baseline runs on the cluster beside DPareto and comes back in the result.

The recording kind is a module-level function: it travels to the worker process by reference to this module.
"""

from __future__ import annotations

import os
from functools import partial

import numpy as np
import pytest

from curator_service.jobs import DatasetInfo, JobKind
from curator_service.services.job_kinds import KINDS, dpareto
from shared.algorithms.dpareto.optimizer import random_search
from shared.algorithms.dpareto.pareto import hypervolume_2d
from shared.algorithms.dpareto.problems import svt_problem
from shared.api.schemas import ScalingSpec
from tests.curator_service.conftest import assert_error, dataset_spec, table_csv, upload
from tests.jobs.test_engine import wait

OVER_LARGE = {"label_column": "y", "initial_points": 256, "iterations": 512, "max_epochs": 1000, "batch_size": [1, 2]}
SMALL = {"label_column": "y", "initial_points": 3, "iterations": 1, "max_epochs": 2, "seed": 4}


def labelled(client, n: int = 60):
    """A table of n rows with a 0/1 label ``y`` that depends on the features."""
    X = np.round(np.random.default_rng(1).uniform(0.1, 0.9, size=(n, 3)), 9)
    response = upload(client, table_csv(X, (X[:, 0] + X[:, 1] > 1.0).astype(float)), dataset_spec())
    assert response.status_code == 201, response.text
    return response.json()


def info(n: int) -> DatasetInfo:
    return DatasetInfo(id=1, n=n, d=3, columns=("a", "b", "c", "y"), numeric_columns=("a", "b", "c", "y"),
                       feature_columns=("a", "b", "c"), evaluator={"kind": "column", "column": "y"},
                       scaling=ScalingSpec(kind="bounds", lower=[0.0] * 3, upper=[1.0] * 3))


# --- the work bound ---------------------------------------------------------------------------------------------


def cost(params: dict, dataset: DatasetInfo | None) -> tuple[float, float]:
    """The kind's cost of ``params`` as the engine computes it: parsed by the kind's model, then priced."""
    return dpareto.KIND.cost(dpareto.KIND.parse(params), dataset)


def test_an_over_large_front_is_refused_with_a_422_and_the_defaults_are_accepted(client):
    """768 evaluations × 1000 epochs × 42 steps at lots of 1 (60 rows, 42 for training) is 3.2·10^7 steps; a baseline
    counts too: 2 DPareto evaluations alone fit, with 768 random points beside them they do not."""
    dataset = labelled(client)
    submit = lambda params: client.post("/v1/jobs", json={"kind": "dpareto", "dataset_id": dataset["id"],  # noqa: E731
                                                          "params": params})
    assert_error(submit(OVER_LARGE), 422, "validation_error", "32,256,000 DP-SGD steps", "10,000,000",
                 "fewer initial points", "batch_size")
    few = {**OVER_LARGE, "initial_points": 2, "iterations": 0}
    assert cost(few, info(60)) == (0.0, 0.0)
    assert_error(submit({**few, "baseline": "random", "baseline_points": 768}), 422, "validation_error",
                 "DP-SGD steps", "baseline points")
    assert client.get("/v1/jobs").json() == []
    job = submit({"label_column": "y"})
    assert job.status_code == 202, job.text
    assert client.post(f"/v1/jobs/{job.json()['id']}/cancel").status_code == 200
    assert wait(client, job.json()["id"], timeout=300.0)["status"] in ("cancelled", "succeeded")


def test_the_bound_fits_the_defaults_on_adult_and_the_benchmarks_long_job():
    """The constant's reasons (dpareto.MAX_STEPS): the defaults on all of Adult and on tables of up to ~74,000 rows,
    the service-latency benchmark's long front on its 500 rows, the end-to-end test's front on all of Adult."""
    assert cost({"label_column": "y"}, info(32_561)) == (0.0, 0.0)
    assert cost({"label_column": "y"}, info(74_000)) == (0.0, 0.0)
    with pytest.raises(ValueError, match="DP-SGD steps"):
        cost({"label_column": "y"}, info(80_000))
    long_job = {"label_column": "y", "initial_points": 64, "iterations": 256, "max_epochs": 200}
    assert cost(long_job, info(500)) == (0.0, 0.0)
    assert cost({"label_column": "y", "initial_points": 8, "iterations": 8}, info(32_561)) == (0.0, 0.0)


def test_a_grid_baseline_needs_two_values_per_hyperparameter_and_counts_its_points():
    with pytest.raises(ValueError, match="baseline_points ≥ 32"):
        cost({"label_column": "y", "baseline": "grid"}, None)  # 24 points by default: 1 per dimension
    with pytest.raises(ValueError, match="needs a baseline"):
        cost({"label_column": "y", "baseline_points": 40}, None)
    grid = dpareto.DparetoParams(label_column="y", baseline="grid", baseline_points=242)  # 3^5 = 243 > 242
    assert dpareto.baseline_evaluations(grid) == 32
    assert dpareto.training_steps(grid, 800) == (8 + 16 + 32) * 64 * 100


def test_random_search_takes_known_evaluations_instead_of_evaluating_them_again():
    svt, calls = svt_problem(), []

    def counting_map(fn, items):
        items = list(items)
        calls.append(len(items))
        return map(fn, items)

    fresh = random_search(svt, evaluations=10, rng=3)
    reused = random_search(svt, evaluations=10, rng=3, map_fn=counting_map, known=fresh.evaluations[:4])
    assert calls == [6] and reused.evaluations[:4] == fresh.evaluations[:4]
    assert [(e.params, e.epsilon, e.error) for e in reused.evaluations] == \
           [(e.params, e.epsilon, e.error) for e in fresh.evaluations]


# --- the baseline on the cluster ----------------------------------------------------------------------------------


def with_pid(fn, item):
    return os.getpid(), fn(item)


def dpareto_recording_pids(ctx):
    """The dpareto kind, its ``ctx.map`` calls recording the process that evaluated each piece."""
    calls, cluster_map = [], ctx.map

    def map_with_pids(fn, items, progress=None):
        answers = cluster_map(partial(with_pid, fn), items, progress)
        calls.append([pid for pid, _ in answers])
        return [answer for _, answer in answers]

    ctx.map = map_with_pids
    return {**dpareto.run(ctx), "map_pids": calls}


def point_key(point: dict) -> tuple:
    return point["epsilon"], point["error"], tuple(sorted(point["params"].items()))


@pytest.mark.parametrize(("baseline", "returned", "on_cluster"),
                         [({"baseline": "random", "baseline_points": 7}, 7, 4),
                          ({"baseline": "grid", "baseline_points": 40}, 32, 32)], ids=["random", "grid"])
def test_a_baseline_is_evaluated_on_the_clusters_workers_and_returned_beside_the_front(client, monkeypatch, baseline,
                                                                                        returned, on_cluster):
    """3 initial points and 1 HVPoI step; random search's 7 points start with DPareto's 3 initial ones (reused, so
    4 go to the cluster), the grid is the 2^5 within 40. Every baseline piece ran in a worker process."""
    monkeypatch.setitem(KINDS, "dpareto-pids", JobKind(name="dpareto-pids", description="dpareto, recording pids",
                                                       params=dpareto.DparetoParams, cost=dpareto.cost,
                                                       run=dpareto_recording_pids))
    dataset = labelled(client)
    job = client.post("/v1/jobs", json={"kind": "dpareto-pids", "dataset_id": dataset["id"],
                                        "params": {**SMALL, **baseline}})
    assert job.status_code == 202, job.text
    done = wait(client, job.json()["id"], timeout=300.0)
    assert done["status"] == "succeeded", done["message"]
    result = done["result"]

    initial_pids, baseline_pids = result["map_pids"]  # DPareto's initial design, then the baseline
    worker_pids = set(client.app.state.jobs.client.run(os.getpid).values())
    assert len(initial_pids) == 3 and len(baseline_pids) == on_cluster
    assert set(baseline_pids) <= worker_pids and os.getpid() not in baseline_pids

    points = result["baseline_points"]
    assert result["baseline"] == baseline["baseline"] and len(points) == returned
    assert len({point_key(p)[2] for p in points}) == returned  # distinct settings
    assert all(p["epsilon"] > 0 and 0.0 <= p["error"] <= 1.0 for p in points)
    assert result["baseline_hypervolume"] == pytest.approx(
        hypervolume_2d(np.array([[p["epsilon"], p["error"]] for p in points]), result["anti_ideal"]))
    assert result["baseline_front"] and {point_key(p) for p in result["baseline_front"]} <= set(map(point_key, points))
    if baseline["baseline"] == "random":
        assert points[:3] == result["points"][:3]  # the paper's comparison: the same start
    assert len(result["points"]) == 4 and result["hypervolume"] > 0
