"""Batch and asynchronous GP-UCB over the wire, against a real curator with a manual (lab) evaluator.

The client runs as the real ``pobo-modeler`` command in a subprocess, so it can be SIGKILLed mid-run; the
test plays the lab, answering pending queries through the curator's API.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from modeler_client.batch import GPBUCBProposer, gp_bucb
from modeler_client.runfile import RunRecord, RunSettings
from shared.api.schemas import API_PREFIX
from shared.gp.ucb import GPUCB

N = 40


def lab_table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 4.0, size=(N, 2))
    return X, -np.sum((X - 2.5) ** 2, axis=1)


def manual_release(curator, seed: int):
    X, y = lab_table(seed)
    dataset = curator.register_table(
        f"lab-{uuid.uuid4().hex[:8]}", X, ["a", "b"], evaluator={"kind": "manual"}, budget=(10.0, 1e-3),
        scaling={"kind": "bounds", "lower": [0, 0], "upper": [4, 4], "diameter": 1},
    )
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5)
    assert release.answers_repeat is False  # a lab measures a sample again: a new reading
    key = curator.issue_key([release.id], max_queries=100)
    return dataset, release, key


def pobo_modeler(*args: str, token: str) -> list[str]:
    command = str(Path(sys.executable).with_name("pobo-modeler"))
    return [command, *args, "--token", token, "--poll", "0.1", "--max-poll", "0.2"]


def pending_of(admin, dataset_id: int) -> list[dict]:
    return [q for q in admin.get(f"{API_PREFIX}/queries", params={"dataset_id": dataset_id})["queries"]]


def wait_for_pending(admin, dataset_id: int, count: int, process: subprocess.Popen, timeout: float = 300) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = pending_of(admin, dataset_id)
        if len(pending) >= count:
            return pending
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} queries pending after {timeout} s")


def answer(admin, queries: list[dict]) -> None:
    for query in queries:
        admin.post(f"{API_PREFIX}/queries/{query['query_id']}/answer", {"value": 10.0 - query["index"] / 7})


def answers_per_query(admin) -> dict[int, int]:
    counts: dict[int, int] = {}
    for event in admin.get(f"{API_PREFIX}/audit", params={"limit": 10_000}):
        if event["action"] == "query.answer":
            query_id = int(event["target"].split(":")[1])
            counts[query_id] = counts.get(query_id, 0) + 1
    return counts


def answer_until_exit(admin, dataset_id: int, process: subprocess.Popen, timeout: float = 300) -> str:
    """The lab answers whatever is pending until the client exits; returns its output."""
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        assert time.monotonic() < deadline, f"the client did not finish within {timeout} s"
        answer(admin, pending_of(admin, dataset_id))
        time.sleep(0.1)
    return process.stdout.read() if process.stdout else ""


# T = 20 is four batches of five: the kill comes while the third is pending, so the resumed client must both
# collect what the lab answered while it was down and propose new queries (in both modes).
@pytest.mark.slow  # a chaos test: SIGKILL mid-run
@pytest.mark.parametrize("mode", ["synchronous", "asynchronous"])
def test_batch_5_on_a_manual_evaluator_killed_and_resumed_answers_and_charges_each_query_once(curator, tmp_path, mode):
    dataset, release, key = manual_release(curator, 1)
    out = tmp_path / "batch.json"
    run = pobo_modeler("run", "--url", curator.url, "--release", str(release.id), "-T", "20", "--batch", "5",
                       "--hyperparameters", "fixed", "--out", str(out), token=key.token)
    if mode == "asynchronous":
        run.append("--asynchronous")
    process = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with curator.admin() as admin:
        try:
            for _ in range(2):  # the lab answers five at a time, twice
                batch = wait_for_pending(admin, dataset.id, 5, process)
                assert len(batch) == 5  # never more than q pending
                answer(admin, batch)
            third = wait_for_pending(admin, dataset.id, 5, process)
        finally:
            process.kill()  # SIGKILL while five are pending
            process.wait(timeout=30)
        answer(admin, third)  # the lab answers while the modeler's client is down
        resumed = subprocess.Popen(pobo_modeler("resume", str(out), token=key.token), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        output = answer_until_exit(admin, dataset.id, resumed)
        assert resumed.returncode == 0, output

        record = RunRecord.load(out)
        server = {q["query_id"]: q for q in admin.get(f"{API_PREFIX}/sessions/{record.session_id}/queries")["queries"]}
        session = admin.get(f"{API_PREFIX}/sessions/{record.session_id}")
        answered = answers_per_query(admin)
    assert record.finished and len(record.queries) == 20 and not record.pending()
    assert {q.query_id for q in record.queries} == set(server)  # the run file and the server agree
    assert all(q["status"] == "done" for q in server.values())
    assert session["used"] == 20  # charged once per query, the kill and the resume cost nothing
    assert all(answered[query_id] == 1 for query_id in server)  # answered once each
    assert len({q.index for q in record.queries}) == 20  # no row asked twice, before or after the kill
    if mode == "synchronous":
        batches = {}
        for query in record.queries:
            batches.setdefault(query.request_id, []).append(query.index)
        assert sorted(len(b) for b in batches.values()) == [5, 5, 5, 5]  # four requests of five indices


def test_asynchronous_mode_keeps_q_pending_and_proposes_when_any_answer_arrives(curator, tmp_path):
    dataset, release, key = manual_release(curator, 2)
    out = tmp_path / "async.json"
    run = pobo_modeler("run", "--url", curator.url, "--release", str(release.id), "-T", "7", "--batch", "3",
                       "--asynchronous", "--hyperparameters", "fixed", "--out", str(out), token=key.token)
    process = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen_pending = []
    try:
        with curator.admin() as admin:
            answered = 0
            while answered < 7:
                expected = min(3, 7 - answered)
                pending = wait_for_pending(admin, dataset.id, expected, process)
                seen_pending.append(len(pending))
                answer(admin, pending[:1])  # the lab finishes one sample at a time
                answered += 1
                if expected == 3 and answered + 2 < 7:  # a free place: a new query appears, back to three
                    deadline = time.monotonic() + 300
                    while len(pending_of(admin, dataset.id)) < 3 and time.monotonic() < deadline:
                        time.sleep(0.1)
        output, _ = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, output
    assert max(seen_pending) == 3  # never more than q pending
    record = RunRecord.load(out)
    assert record.finished and len(record.done()) == 7
    assert len({q.request_id for q in record.queries}) == 5  # 3 at the start, then one per answer (4 more)


def test_batch_beta_inflates_by_the_pending_information_and_plain_does_not():
    rng = np.random.default_rng(0)
    Z = rng.uniform(0, 1, size=(200, 2))
    ucb = GPUCB(Z, lengthscale=0.2, signal_variance=1.0, noise_variance=0.01, delta=0.1)
    for i in (0, 1, 2):
        ucb.observe(i, float(np.sin(5 * Z[i, 0])))
    before_mean, before_var = ucb.posterior.mean, ucb.posterior.variance
    picks = gp_bucb(ucb, 4)
    np.testing.assert_array_equal(ucb.posterior.mean, before_mean)  # the real posterior is untouched
    np.testing.assert_array_equal(ucb.posterior.variance, before_var)
    assert picks[0] == ucb.suggest() and len(set(picks)) == 4
    assert gp_bucb(ucb, 4, inflate=False) == ucb.suggest_batch(4)  # plain β is the engine's GP-BUCB

    # The second pick's β is exp(2C)·β_t with C = ½ log(1 + σ²(x_1)/σ_n²): check it against a hand computation.
    first = picks[0]
    information = 0.5 * math.log1p(ucb.posterior.variance[first] / ucb.noise_variance)
    with ucb.posterior.hallucinating() as post:
        post.observe(first, post.mean_at(first))
        expected = int(np.argmax(post.upper_confidence_bound(math.exp(2 * information) * ucb.beta(5))))
    assert picks[1] == expected


def test_batch_proposer_never_asks_measured_or_pending_rows_without_requery(bowl):
    release = bowl["release"]
    Z = np.random.default_rng(1).uniform(size=(release.n, release.dim))
    proposer = GPBUCBProposer(Z, release, RunSettings(iterations=10, batch=3, hyperparameters="fixed"), requery=False)
    proposer.tell(0, 1.0)
    picks = proposer.ask(3, pending=[5, 6])
    assert len(set(picks)) == 3 and not {0, 5, 6} & set(picks)  # neither measured nor pending rows again


def test_batch_proposers_never_ask_an_unmeasurable_row_again(bowl):
    """A row the curator could not measure was charged once; asking it again would be charged again."""
    release = bowl["release"]
    Z = np.random.default_rng(2).uniform(size=(release.n, release.dim))
    proposer = GPBUCBProposer(Z, release, RunSettings(iterations=10, batch=3, hyperparameters="fixed"), requery=True)
    proposer.tell(0, 1.0)
    first = proposer.ask(1, pending=[])[0]
    proposer.exclude(first)
    assert first not in proposer.ask(3, pending=[])
    ucb = GPUCB(Z[:5], lengthscale=0.2, signal_variance=1.0, noise_variance=0.01, delta=0.1, requery=False)
    ucb.exclude([0, 1, 2, 3])
    assert gp_bucb(ucb, 1) == [4]
    ucb.observe(4, 0.0)
    with pytest.raises(ValueError, match="nothing is left"):
        gp_bucb(ucb, 1)
