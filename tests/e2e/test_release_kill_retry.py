"""A release POST whose client is killed (SIGKILL) while the request is in flight, retried with the same
``request_id`` as a restarted client does, is stored and charged once (7 of 46 such releases were
charged twice before releases were idempotent). A real server (``pobo-curator serve``) and a real client process."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from shared.api.schemas import ReleaseCreate

N = 40_000  # × 3 features: 120,000 samples of the safe sampler, seconds: the POST is in flight (it waits ≤ 2 s)

CLIENT = """
import sys
from curator_service.admin_client import CuratorAdmin
from shared.api.schemas import ReleaseCreate
url, token, dataset, request_id = sys.argv[1:]
print("sending", flush=True)
CuratorAdmin(url, token).create_release(int(dataset), ReleaseCreate(mechanism="gaussian", epsilon=1.0, delta=1e-5,
                                                                    request_id=request_id))
print("done", flush=True)
"""


@pytest.mark.slow  # a chaos test: SIGKILL mid-run
def test_a_release_retried_after_its_client_was_killed_mid_request_is_charged_once(curator):
    X = np.random.default_rng(2).uniform(0.0, 1.0, size=(N, 3))
    dataset = curator.register_table(f"kill-{uuid.uuid4().hex[:8]}", X, ["a", "b", "c"],
                                     evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
                                     extra_columns={"y": X.sum(axis=1)},
                                     scaling={"kind": "bounds", "lower": [0] * 3, "upper": [1] * 3, "diameter": 1})
    request_id = f"kill-retry-{uuid.uuid4().hex}"
    client = subprocess.Popen([sys.executable, "-c", CLIENT, curator.url, curator.admin_token, str(dataset.id),
                               request_id], stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline() == "sending\n"
    deadline = time.monotonic() + 60
    while not (jobs := [j for j in curator.jobs() if j.request_id == request_id]):
        assert time.monotonic() < deadline and client.poll() is None, "the server never received the release"
        time.sleep(0.02)
    client.send_signal(signal.SIGKILL)  # the server has the job; its answer (≤ 2 s later) never arrives
    client.wait(timeout=10)
    assert client.returncode == -signal.SIGKILL and "done" not in client.stdout.read()
    [job] = jobs
    assert job.status in ("queued", "running")  # the release was still being made: the POST was in flight

    retried = curator.create_release(dataset.id, ReleaseCreate(mechanism="gaussian", epsilon=1.0, delta=1e-5,
                                                               request_id=request_id))
    assert retried.n == N and retried.certified
    assert [j.id for j in curator.jobs() if j.request_id == request_id] == [job.id]
    assert [r.id for r in curator.releases(dataset.id)] == [retried.id]
    [entry] = curator.ledger(dataset.id)
    assert (entry.release_id, entry.epsilon) == (retried.id, 1.0)
    assert curator.dataset(dataset.id).budget.spent_epsilon == 1.0
