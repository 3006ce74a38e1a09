"""The job engine: jobs run in Dask worker processes, spread their pieces over the cluster, stop within
seconds of a cancel or at their time limit, are limited per key, are created once per request_id, charge at commit
when their kind says so, and are run once even when two replicas send them.

The kinds here are module-level functions: a kind travels to the worker process by reference to this module.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, model_validator
from sqlalchemy import select, update

from curator_service.jobs import JobKind
from curator_service.jobs.outcomes import JobFailed
from curator_service.jobs.state import STALE_SECONDS, finish, reap
from curator_service.persistence.models import Job, utcnow
from curator_service.services.job_kinds import KINDS
from curator_service.services.job_kinds.inputs import binary_labels, training_features
from curator_service.services.job_kinds.release import submitter
from curator_service.services.ledger import Spend, charge
from curator_service.services.ledger_events import job_event
from curator_service.services.policy import ADMIN
from shared.algorithms.ding.dptune import PartTrainer, PrivateLogisticRegression, partition_utilities
from tests.curator_service.conftest import (
    AnyParams,
    assert_error,
    bearer,
    dataset_spec,
    modeler_key,
    register,
    release,
    reset_postgres,
    synthetic_table,
    table_csv,
    upload,
)

FREE = lambda params, dataset: (0.0, 0.0)  # noqa: E731
CHARGED = lambda params, dataset: (0.5, 0.0)  # noqa: E731


def wait(client, job_id, timeout=30.0, until=("succeeded", "failed", "cancelled")):
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] not in until:
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def submit(client, kind, dataset_id=None, params=None, **extra):
    body = {"kind": kind, "params": params or {}, **extra}
    if dataset_id is not None:
        body["dataset_id"] = dataset_id
    return client.post("/v1/jobs", json=body)


def use(monkeypatch, name, run, cost=FREE, params=AnyParams, **kind):
    monkeypatch.setitem(KINDS, name, JobKind(name=name, description=name, params=params, cost=cost, run=run,
                                             needs_dataset=cost is not FREE, **kind))


class LogParams(BaseModel):
    path: str


class HeldParams(BaseModel):
    wait_for_cancel: bool = False
    go: str = "/"  # a file whose creation lets the job finish


class LeakParams(BaseModel):
    in_the_job: bool = False


class UtilitiesParams(BaseModel):
    seed: int
    loop: bool


# --- kinds ------------------------------------------------------------------------------------------------------


def report_pid(ctx):
    return {"pid": os.getpid()}


def slow_piece(item):
    time.sleep(0.3)
    return os.getpid()


def spread(ctx):
    return {"pids": ctx.map(slow_piece, range(8))}


def square(item):
    return item * item


def many(ctx):
    seen = []
    squares = ctx.map(square, range(600), progress=lambda done, total: seen.append((done, total)))
    return {"squares": squares, "progress": seen}


def until_cancelled(ctx):
    """Works until cancelled, at most 60 s (the suite's cluster outlives a failed test's app)."""
    ctx.progress(0.5, "working")
    for _ in range(3000):
        ctx.check_cancelled()
        time.sleep(0.02)
    raise JobFailed("never cancelled")


def ignores_everything(ctx):
    ctx.progress(0.5, "busy")
    time.sleep(8.0)
    return {"finished": True}


def append_job_id(ctx):
    with open(ctx.params.path, "a") as log:
        log.write(f"{ctx.job_id}\n")
    time.sleep(0.2)
    return {}


def make_numbers(ctx):
    ctx.progress(0.5, "made")
    if ctx.params.wait_for_cancel:
        until_cancelled(ctx)
    while not os.path.exists(ctx.params.go):  # held until the test creates the file
        ctx.check_cancelled()
        time.sleep(0.02)
    return [1.0, 2.0]  # not a dict: a kind with a commit may hand anything to it


def commit_numbers(session, job, params, result):
    entry = charge(session, job.dataset_id, Spend(epsilon=job.epsilon, delta=job.delta, purpose=f"job #{job.id}",
                                                  mechanism="job:committed", event=job_event("committed"), actor=ADMIN))
    session.flush()
    entry.job_id = job.id
    return {"sum": sum(result), "ledger_entry": entry.id}


class CountedParams(BaseModel):
    """Parameters that note each parse of themselves: the process that parsed them, a line in ``log``."""

    log: str
    epsilon: float

    @model_validator(mode="after")
    def noted(self) -> CountedParams:
        with open(self.log, "a") as log:
            log.write(f"{os.getpid()}\n")
        return self


def counted_cost(params, dataset):
    assert isinstance(params, CountedParams)
    return params.epsilon, 0.0


def counted_run(ctx):
    assert isinstance(ctx.params, CountedParams)
    return {"pid": os.getpid()}


def counted_commit(session, job, params, result):
    assert isinstance(params, CountedParams)
    return {**result, **commit_numbers(session, job, params, [params.epsilon])}


def commit_under_its_key(session, job, params, result):
    """A commit that charges the key that submitted the job, as a release's commit does."""
    entry = charge(session, job.dataset_id, Spend(epsilon=job.epsilon, delta=job.delta, purpose=f"job #{job.id}",
                                                  mechanism="job:capped", event=job_event("capped"),
                                                  actor=submitter(session, job)))
    session.flush()
    entry.job_id = job.id
    return {"ledger_entry": entry.id}


# --- where jobs run ---------------------------------------------------------------------------------------------


def test_a_job_runs_in_a_worker_process_of_a_two_worker_cluster(client, monkeypatch):
    use(monkeypatch, "pid", report_pid)
    done = wait(client, submit(client, "pid").json()["id"])
    assert done["status"] == "succeeded" and done["result"]["pid"] != os.getpid()  # not in the API's process
    worker_pids = client.app.state.jobs.client.run(os.getpid)  # {worker address: its process id}
    assert len(set(worker_pids.values())) == 2 and done["result"]["pid"] in worker_pids.values()


def memory_settings():
    import dask

    return dask.config.get("distributed.worker.memory.target"), dask.config.get("distributed.worker.memory.spill")


def test_workers_never_spill_task_data_to_disk(client, monkeypatch):
    use(monkeypatch, "pid", report_pid)
    wait(client, submit(client, "pid").json()["id"])
    assert set(client.app.state.jobs.client.run(memory_settings).values()) == {(False, False)}


def test_a_jobs_pieces_spread_over_the_workers(client, monkeypatch):
    use(monkeypatch, "spread", spread)
    done = wait(client, submit(client, "spread").json()["id"])
    assert done["status"] == "succeeded", done
    assert len(set(done["result"]["pids"])) == 2 and os.getpid() not in done["result"]["pids"]


def test_a_large_map_comes_back_in_order_with_its_progress(client, monkeypatch):
    use(monkeypatch, "many", many)
    done = wait(client, submit(client, "many").json()["id"])
    assert done["result"]["squares"] == [i * i for i in range(600)]  # 600 items in at most 256 tasks
    progress = done["result"]["progress"]
    assert progress[-1] == [600, 600] and all(a[0] < b[0] for a, b in zip(progress, progress[1:]))


def leak_in_a_piece(X, item):
    raise ValueError(f"row {item}: {X[item].tolist()}")


def leaky(ctx):
    if ctx.params.in_the_job:
        raise ValueError(f"first row {ctx.table.features[0].tolist()}")
    return {"never": ctx.map(partial(leak_in_a_piece, ctx.table.features), range(4))}


def test_a_failing_piece_or_job_leaves_no_table_value_in_the_workers_logs(client, monkeypatch):
    """Dask logs a failed task's arguments and exception (with its message); pieces fail by type only and their
    items are hidden, so no value of the table reaches a worker's log or the job's message."""
    use(monkeypatch, "leaky", leaky, cost=CHARGED, params=LeakParams)
    dataset = register(client)
    values = [f"{v:.9f}".rstrip("0") for v in synthetic_table(40)[0].ravel()]
    for params in ({}, {"in_the_job": True}):
        failed = wait(client, submit(client, "leaky", dataset["id"], params).json()["id"])
        assert failed["status"] == "failed" and "ValueError" in failed["message"], failed
        assert not any(v in failed["message"] for v in values)
    logs = client.app.state.jobs.client.get_worker_logs()
    text = "\n".join(message for records in logs.values() for _, message in records)
    assert "Compute Failed" in text  # the piece's failure was logged by Dask …
    assert not [v for v in values if v in text]  # … without a value of the table


def dp_tune_utilities(ctx):
    """dp-tune's candidates × parts table as its job computes it (``tune_and_train``'s part trainers), its cells
    spread over the cluster by ``ctx.map`` or, with ``loop``, computed one after another in the job's own process."""
    candidates = [PrivateLogisticRegression(learning_rate=lr, batch_size=16, epochs=2, clip_norm=1.0)
                  for lr in (0.3, 3.0, 10.0)]
    labels = binary_labels(ctx.table, "y")
    make = partial(part_trainer, np.random.default_rng(ctx.params.seed))
    table = partition_utilities(training_features(ctx), labels, candidates, make, k=5, rng=ctx.rng,
                                map_fn=map if ctx.params.loop else ctx.map)
    return {"table": table.tolist()}


def part_trainer(rng, candidate):
    """A noise-free part trainer (its generator still orders the SGD batches; calibrating DP-SGD's noise would cost
    each worker seconds)."""
    return PartTrainer(candidate, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(rng.integers(2**63)),
                       private=False)


def test_dp_tune_cells_on_the_cluster_are_the_cells_computed_in_one_process(client, monkeypatch):
    """(dp-tune's Adult utility looked worse once its cells ran on the cluster; it was luck): with the same
    seed the 3 × 5 utilities are bit for bit those of a loop in one process, so no cell is trained on another part's
    rows, shares a random stream with another or comes back in another's place. (Each cell has its own generator,
    made before any is fitted: a generator shared by the cells would be copied to each piece on the cluster.)"""
    use(monkeypatch, "utilities", dp_tune_utilities, cost=CHARGED, params=UtilitiesParams)
    X, y = synthetic_table(300, seed=2)
    dataset = upload(client, table_csv(X, (y > np.median(y)).astype(float)), dataset_spec()).json()
    tables = [wait(client, submit(client, "utilities", dataset["id"], {"seed": 5, "loop": loop}).json()["id"],
                   timeout=120.0)["result"]["table"] for loop in (False, True)]
    assert tables[0] == tables[1]
    # Real utilities, not a constant. (Accuracies on parts of 48 rows take few values, and the registration's secret
    # row order changes them each run: a run with only 5 distinct values among the 15 failed a "> 5".)
    assert len({round(u, 9) for row in tables[0] for u in row}) > 1


# --- cancel and time limits -------------------------------------------------------------------------------------

BAD_CASE = {  # many candidates at batch size 1 and a tiny ε held the only worker for minutes
    "label_column": "y", "k": 2, "epsilon": 1e-12, "max_iterations": 10_000, "final_epsilon": 1e-12,
    "final_delta": 1e-9, "evaluation_epsilon": 1e-12, "seed": 3,
    "candidates": [{"learning_rate": 0.01 * (1 + i), "batch_size": 1, "epochs": 100, "clip_norm": 1.0}
                   for i in range(100)],
}


def test_a_running_dp_tune_job_is_cancelled_within_5_seconds_and_frees_the_cluster(client):
    dataset = register(client, n=40)
    job = submit(client, "dp-tune", dataset["id"], BAD_CASE).json()
    assert job["epsilon"] == pytest.approx(1e-8 + 2e-12)
    wait(client, job["id"], until=("running",))
    time.sleep(1.0)  # into the candidates × parts
    asked = time.monotonic()
    assert client.post(f"/v1/jobs/{job['id']}/cancel").status_code == 200
    done = wait(client, job["id"], timeout=5.0)
    print(f"cancelled after {time.monotonic() - asked:.2f} s")
    assert done["status"] == "cancelled" and "budget stays charged" in done["message"]
    # Its pieces were taken off the cluster: a small job runs at once.
    mean = submit(client, "dp-mean", dataset["id"], {"column": "y", "lower": -2, "upper": 2, "epsilon": 0.1}).json()
    assert wait(client, mean["id"], timeout=10.0)["status"] == "succeeded"


def test_a_job_past_its_time_limit_is_failed(client, monkeypatch):
    use(monkeypatch, "bounded", until_cancelled, time_limit_seconds=1.0)
    done = wait(client, submit(client, "bounded").json()["id"], timeout=10.0)
    assert done["status"] == "failed" and "time limit of 1 s" in done["message"]


@pytest.mark.slow  # waits out the ignored cancel's thread (8 s)
def test_a_job_that_ignores_its_cancel_is_marked_cancelled_and_its_late_result_is_dropped(client, monkeypatch):
    use(monkeypatch, "stubborn", ignores_everything)
    job = submit(client, "stubborn").json()
    wait(client, job["id"], until=("running",))
    client.post(f"/v1/jobs/{job['id']}/cancel")
    done = wait(client, job["id"], timeout=5.0)
    assert done["status"] == "cancelled" and done["result"] is None
    time.sleep(8.0)  # the thread finishes its sleep: its result must not overwrite the verdict
    assert client.get(f"/v1/jobs/{job['id']}").json()["status"] == "cancelled"


# --- limits and idempotency -------------------------------------------------------------------------------------


def test_each_key_may_have_two_unfinished_jobs(client, monkeypatch):
    use(monkeypatch, "busy", until_cancelled, cost=CHARGED, roles=frozenset({"curator", "modeler"}))
    dataset = register(client)
    release_id = release(client, dataset["id"])["id"]
    first, second = (bearer(modeler_key(client, [release_id], jobs=["busy"])["token"]) for _ in range(2))

    def busy(headers):
        return client.post("/v1/jobs", json={"kind": "busy", "dataset_id": dataset["id"]}, headers=headers)

    one, two = busy(first).json(), busy(first).json()
    assert_error(busy(first), 409, "conflict", "2 jobs queued or running", "POBO_JOB_LIMIT_PER_KEY")
    other = busy(second)
    assert other.status_code == 202, other.text  # another key has its own limit
    client.post(f"/v1/jobs/{one['id']}/cancel")  # a job being cancelled no longer counts
    third = busy(first)
    assert third.status_code == 202, third.text
    for job in (two, other.json(), third.json()):
        client.post(f"/v1/jobs/{job['id']}/cancel")
    assert len([e for e in client.get("/v1/ledger").json() if e["job_id"]]) == 4  # the refused one paid nothing


def status_of(client, jobs):
    return [client.get(f"/v1/jobs/{job['id']}").json()["status"] for job in jobs]


def wait_for_one_running(client, jobs, timeout=60.0):
    """The one job of ``jobs`` that runs, once one does; fails if two ever run at once."""
    deadline = time.monotonic() + timeout
    while (states := status_of(client, jobs)).count("running") == 0:
        assert time.monotonic() < deadline, states
        time.sleep(0.05)
    assert states.count("running") == 1, states
    return jobs[states.index("running")]


def test_a_key_never_holds_every_worker_so_another_keys_job_starts(make_client, database_url, monkeypatch):
    """(a job cannot starve other jobs): on the two-worker cluster key A submits three jobs that
    work until cancelled. A runs one at a time (its share: every worker but one), the others wait queued, so key B's
    job starts on the worker left free; when A's running job ends, A's next one starts. (With A's jobs on both
    workers, B's would wait for one to end: a minute here, hours for a real job.) On PostgreSQL the claim counts
    under the key's advisory lock."""
    client = make_client(job_limit_per_key=3, database_url=database_url)
    use(monkeypatch, "busy", until_cancelled, cost=CHARGED, roles=frozenset({"curator", "modeler"}))
    dataset = register(client)
    release_id = release(client, dataset["id"])["id"]
    key_a, key_b = (bearer(modeler_key(client, [release_id], jobs=["busy"])["token"]) for _ in range(2))

    def busy(headers):
        return client.post("/v1/jobs", json={"kind": "busy", "dataset_id": dataset["id"]}, headers=headers).json()

    jobs = [busy(key_a) for _ in range(3)]
    try:
        running = wait_for_one_running(client, jobs)
        jobs.append(busy(key_b))
        wait(client, jobs[3]["id"], timeout=45.0, until=("running",))
        assert sorted(status_of(client, jobs[:3])) == ["queued", "queued", "running"]
        client.post(f"/v1/jobs/{running['id']}/cancel")
        wait(client, running["id"], until=("cancelled",))
        wait_for_one_running(client, [job for job in jobs[:3] if job is not running])
        assert status_of(client, jobs[3:]) == ["running"]
    finally:  # free the shared cluster for the next tests
        for job in jobs:
            client.post(f"/v1/jobs/{job['id']}/cancel")


def test_a_retried_request_id_returns_the_same_job_and_is_charged_once(client):
    dataset = register(client, budget={"epsilon": 0.15, "delta": 1e-4})
    params = {"column": "y", "lower": -2, "upper": 2, "epsilon": 0.1}
    first = submit(client, "dp-mean", dataset["id"], params, request_id="mean-1")
    again = submit(client, "dp-mean", dataset["id"], params, request_id="mean-1")  # the budget is spent by now
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["request_id"] == "mean-1"
    assert_error(submit(client, "dp-mean", dataset["id"], {**params, "epsilon": 0.05}, request_id="mean-1"), 409,
                 "conflict", "'mean-1'", "different body")
    assert [e["job_id"] for e in client.get("/v1/ledger").json() if e["job_id"]] == [first.json()["id"]]
    assert len(client.get("/v1/jobs").json()) == 1


def test_racing_retries_create_one_job(client, monkeypatch):
    use(monkeypatch, "pid", report_pid)
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(submit(client, "pid", request_id="race")))
               for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200] * 5 + [202]
    assert len({a.json()["id"] for a in answers}) == 1 and len(client.get("/v1/jobs").json()) == 1


# --- kinds that charge when they commit -------------------------------------------------------------------------


def test_a_committing_kind_is_charged_once_at_commit_and_not_if_cancelled_first(client, monkeypatch):
    use(monkeypatch, "committed", make_numbers, cost=CHARGED, commit=commit_numbers, params=HeldParams)
    dataset = register(client, budget={"epsilon": 0.8, "delta": 1e-4})
    waiting = submit(client, "committed", dataset["id"], {"wait_for_cancel": True}).json()
    assert client.get("/v1/ledger").json() == []  # submission checks the budget but charges nothing
    wait(client, waiting["id"], until=("running",))
    client.post(f"/v1/jobs/{waiting['id']}/cancel")
    cancelled = wait(client, waiting["id"], timeout=5.0)
    assert cancelled["status"] == "cancelled" and "nothing was charged" in cancelled["message"]
    done = wait(client, submit(client, "committed", dataset["id"]).json()["id"])
    assert done["status"] == "succeeded" and done["result"]["sum"] == 3.0
    assert [e["id"] for e in client.get("/v1/ledger").json()] == [done["result"]["ledger_entry"]]
    # 0.5 of 0.8 is spent: a new job is refused at submission; one admitted before the spend fails at its commit.
    assert_error(submit(client, "committed", dataset["id"]), 409, "budget_exceeded")


def test_a_commit_that_no_longer_fits_the_budget_fails_and_stores_nothing(client, monkeypatch, tmp_path):
    use(monkeypatch, "committed", make_numbers, cost=CHARGED, commit=commit_numbers, params=HeldParams)
    dataset = register(client, budget={"epsilon": 0.8, "delta": 1e-4})
    go = tmp_path / "go"
    held = submit(client, "committed", dataset["id"], {"go": str(go)}).json()  # admitted: 0.5 of 0.8 fits
    with client.app.state.db.write() as session:  # a charge that bypassed the reservation (an older replica)
        charge(session, dataset["id"], Spend(epsilon=0.5, delta=0.0, purpose="elsewhere", mechanism="job:other",
                                             event=job_event("other"), actor=ADMIN))
    go.touch()
    failed = wait(client, held["id"])
    assert failed["status"] == "failed" and "budget" in failed["message"]
    assert failed["result"] == {"error": {"status": 409, "code": "budget_exceeded"}}
    assert [e["purpose"] for e in client.get("/v1/ledger").json()] == ["elsewhere"]


def test_a_commit_on_a_worker_that_would_pass_its_keys_cap_is_refused_and_charges_nothing(client, monkeypatch):
    """A key's ε/δ cap is checked by the ledger's charge itself, so it holds in a commit on a Dask worker (whose
    process imports the job engine and the kind, nothing more); the same job under a key whose cap holds it is charged
    to that key (the positive control)."""
    use(monkeypatch, "capped", make_numbers, cost=CHARGED, commit=commit_under_its_key, params=HeldParams)
    dataset = register(client, budget={"epsilon": 10.0, "delta": 1e-4})
    release_id = release(client, dataset["id"])["id"]
    small, large = (modeler_key(client, [release_id], role="curator", epsilon_cap=cap) for cap in (0.4, 0.6))
    before = client.get("/v1/ledger").json()

    def capped(key):
        response = client.post("/v1/jobs", json={"kind": "capped", "dataset_id": dataset["id"], "params": {}},
                               headers=bearer(key["token"]))
        assert response.status_code == 202, response.text  # submission reserves the dataset's budget; commit charges
        return wait(client, response.json()["id"])

    refused = capped(small)
    assert refused["status"] == "failed" and "this key's own cap (epsilon=0.4" in refused["message"], refused
    assert refused["result"] == {"error": {"status": 409, "code": "budget_exceeded"}}
    assert client.get("/v1/ledger").json() == before
    with client.app.state.db.read() as session:
        claimant = session.get(Job, refused["id"]).claimed_by
    assert claimant.startswith("tls://") and not claimant.endswith(f"pid {os.getpid()}")  # a worker committed it
    charged = capped(large)
    assert charged["status"] == "succeeded", charged
    [entry] = [e for e in client.get("/v1/ledger").json() if e not in before]
    assert entry["actor"].startswith(f"key:{large['id']}:") and entry["epsilon"] == 0.5


def test_a_kinds_parameters_are_parsed_once_on_submission_and_once_in_the_worker(client, monkeypatch, tmp_path):
    """The engine parses the JSON with the kind's model and hands the same object on: cost at submission, run and
    commit in the worker; parameters the model refuses are a 422 naming the parameter, and nothing is stored."""
    use(monkeypatch, "counted", counted_run, cost=counted_cost, commit=counted_commit, params=CountedParams)
    dataset = register(client)
    log = tmp_path / "parses.log"
    assert_error(submit(client, "counted", dataset["id"], {"log": str(log), "epsilon": "much"}), 422,
                 "validation_error", "params.epsilon")
    assert client.get("/v1/jobs").json() == [] and not log.exists()
    done = wait(client, submit(client, "counted", dataset["id"], {"log": str(log), "epsilon": 0.25}).json()["id"])
    assert done["status"] == "succeeded" and done["result"]["sum"] == 0.25, done
    assert log.read_text().split() == [str(os.getpid()), str(done["result"]["pid"])]
    assert done["result"]["pid"] != os.getpid()  # the worker's parse, in the worker process
    ledger = [(e["id"], e["epsilon"]) for e in client.get("/v1/ledger").json()]
    assert ledger == [(done["result"]["ledger_entry"], 0.25)]


def test_unfinished_committing_jobs_reserve_their_cost(client, monkeypatch, tmp_path):
    use(monkeypatch, "committed", make_numbers, cost=CHARGED, commit=commit_numbers, params=HeldParams)
    dataset = register(client, budget={"epsilon": 1.2, "delta": 1e-4})
    go = tmp_path / "go"
    answers = [submit(client, "committed", dataset["id"], {"go": str(go)}) for _ in range(5)]
    # 2 × 0.5 of 1.2 reserved; the admin is not limited
    assert [a.status_code for a in answers] == [202, 202, 409, 409, 409]
    assert_error(answers[2], 409, "budget_exceeded", "releases still running hold (epsilon=1, delta=0)")
    client.post(f"/v1/jobs/{answers[0].json()['id']}/cancel")  # a cancelled one frees its reservation
    assert submit(client, "committed", dataset["id"], {"go": str(go)}).status_code == 202
    go.touch()


def test_a_kind_may_call_a_job_uncertified(client, monkeypatch):
    use(monkeypatch, "maybe", report_pid, cost=CHARGED,
        uncertified=lambda params: "not DP" if params.get("loose") else None)
    dataset = register(client)
    loose, strict = (submit(client, "maybe", dataset["id"], params).json() for params in ({"loose": 1}, {}))
    assert (loose["certified"], loose["warnings"]) == (False, ["not DP"])
    assert (strict["certified"], strict["warnings"]) == (True, [])


def test_a_kind_with_its_own_endpoint_is_not_created_by_post_jobs(client, monkeypatch):
    use(monkeypatch, "elsewhere", report_pid, endpoint="POST /v1/elsewhere")
    assert_error(submit(client, "elsewhere"), 422, "validation_error", "POST /v1/elsewhere")
    assert client.get("/v1/jobs").json() == []


# --- several replicas and restarts ------------------------------------------------------------------------------


def test_two_replicas_sending_the_same_jobs_run_each_once(make_client, database_url, monkeypatch, tmp_path):
    use(monkeypatch, "append", append_job_id, params=LogParams)
    first, second = make_client(database_url=database_url), make_client(database_url=database_url)
    log = tmp_path / "runs.log"
    ids = []
    for _ in range(3):
        job = submit(first, "append", params={"path": str(log)}).json()
        second.app.state.jobs.submit(job["id"])  # the other replica sends it too (as its recovery would)
        ids.append(job["id"])
        assert wait(first, job["id"])["status"] == "succeeded"
    assert sorted(int(line) for line in log.read_text().split()) == ids


def first_value(ctx):
    return {"first": ctx.table.features[0].tolist()}


def test_a_database_replaced_at_the_same_url_is_never_served_from_a_workers_cache(make_client, database_url,
                                                                                   monkeypatch, tmp_path):
    """Workers outlive the API; after a reset at the same URL, dataset 1 is another table."""
    use(monkeypatch, "first", first_value, cost=CHARGED)
    old = make_client(database_url=database_url, data_dir=tmp_path / "a")
    dataset = register(old, n=40)
    for _ in range(4):  # both workers decode the old dataset 1
        wait(old, submit(old, "first", dataset["id"]).json()["id"])
    old.app.state.db.dispose()
    if database_url.startswith("sqlite"):
        for suffix in ("", "-wal", "-shm"):
            Path(database_url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    else:
        reset_postgres(database_url)
    new = make_client(database_url=database_url, data_dir=tmp_path / "b")
    X, y = synthetic_table(40, seed=1)
    other = upload(new, table_csv(X, y), dataset_spec()).json()  # dataset 1 again, other rows
    assert other["id"] == dataset["id"]
    rows = {tuple(np.round(row, 9)) for row in X}
    for _ in range(4):
        done = wait(new, submit(new, "first", other["id"]).json()["id"], timeout=60)
        assert done["status"] == "succeeded" and tuple(np.round(done["result"]["first"], 9)) in rows, done


def test_a_job_whose_task_was_lost_is_sent_again(client, monkeypatch):
    """A queued job the cluster lost (never sent here) is re-sent after a minute, not left queued; one whose
    task beats while it waits for its key's turn is not (a second waiting task every minute otherwise)."""
    use(monkeypatch, "pid", report_pid)
    old = utcnow() - timedelta(minutes=2)
    with client.app.state.db.write() as session:
        jobs = [Job(kind="pid", params={}, status="queued", progress=0.0, created_at=old),  # lost
                Job(kind="pid", params={}, status="queued", progress=0.0),  # fresh
                Job(kind="pid", params={}, status="queued", progress=0.0, created_at=old, heartbeat_at=utcnow()),
                Job(kind="pid", params={}, status="queued", progress=0.0, created_at=old, heartbeat_at=old)]
        session.add_all(jobs)
        session.flush()
        lost, fresh, waiting, waited_and_lost = (job.id for job in jobs)
    assert client.app.state.jobs.resend_waiting() == [lost, waited_and_lost]  # the fresh one may be on its way
    assert wait(client, lost)["status"] == wait(client, waited_and_lost)["status"] == "succeeded"
    assert [client.get(f"/v1/jobs/{i}").json()["status"] for i in (fresh, waiting)] == ["queued", "queued"]


def test_the_reaper_never_overwrites_a_verdict_committed_while_it_looked(make_client, database_url):
    """On PostgreSQL the reaper's UPDATE waited for a release's commit and then overwrote 'succeeded'."""
    db = make_client(database_url=database_url).app.state.db
    with db.write() as session:
        job = Job(kind="release", params={}, status="running", progress=0.5, claimed_by="worker",
                  heartbeat_at=utcnow() - timedelta(seconds=60), started_at=utcnow())
        session.add(job)
        session.flush()
        job_id = job.id
    locked = threading.Event()

    def store():  # the worker's _store: the row locked, a slow commit, succeeded
        with db.write() as session:
            session.execute(select(Job).where(Job.id == job_id).with_for_update())
            locked.set()
            time.sleep(1.0)
            finish(session, job_id, "worker", "succeeded", "done", {"release_id": 7})

    storing = threading.Thread(target=store)
    storing.start()
    assert locked.wait(10)
    time.sleep(0.2)
    with db.write() as session:
        reaped = reap(session, lambda kind: False, stale_seconds=0.1)
    storing.join()
    with db.read() as session:
        final = session.get(Job, job_id)
    assert reaped == [] and (final.status, final.result) == ("succeeded", {"release_id": 7})


def test_a_restart_fails_only_jobs_whose_worker_stopped_beating(make_client, monkeypatch):
    use(monkeypatch, "busy", until_cancelled)
    before = make_client()
    live, dead = (submit(before, "busy").json() for _ in range(2))
    wait(before, live["id"], until=("running",))
    wait(before, dead["id"], until=("running",))
    before.post(f"/v1/jobs/{dead['id']}/cancel")  # stand-in for a worker that died: no heartbeat any more
    wait(before, dead["id"])
    with before.app.state.db.write() as session:
        session.execute(update(Job).where(Job.id == dead["id"]).values(
            status="running", claimed_by="a worker that died", cancel_requested=False,
            heartbeat_at=utcnow() - timedelta(seconds=STALE_SECONDS + 1)))
    after = make_client()  # a replica starting now: its recovery reaps
    assert after.get(f"/v1/jobs/{dead['id']}").json()["status"] == "failed"
    assert "stopped while this job was running" in after.get(f"/v1/jobs/{dead['id']}").json()["message"]
    assert after.get(f"/v1/jobs/{live['id']}").json()["status"] == "running"  # its worker still beats
    after.post(f"/v1/jobs/{live['id']}/cancel")
    assert wait(after, live["id"], timeout=5.0)["status"] == "cancelled"
