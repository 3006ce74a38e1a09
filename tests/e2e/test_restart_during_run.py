"""End-to-end: the curator restarts (SIGTERM or SIGKILL, then ``pobo-curator serve`` again on the same port
and data directory) in the middle of ``pobo-modeler run``, and the run finishes on its own, every query
charged once. The client's default budget (30 s of backoff) covers a restart of 4–8 s; on a loaded
test machine a restart took over 30 s, so the command gets ``POBO_RETRY_FOR=300`` (which also checks that the
setting reaches ``pobo-modeler``); tests/modeler_client/test_http_client.py pins the default itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from modeler_client.runfile import RunRecord
from tests.e2e.test_sessions import measurements_by_index, raw_table, register

ITERATIONS = 8
RESTART_AFTER = 3  # answers in the run file when the curator goes down
DOWN_FOR = 3.0  # seconds with nothing listening, so the client must wait out real connection errors


def answers_so_far(path) -> int:
    try:
        return len(RunRecord.load(path).done())
    except (FileNotFoundError, ValueError):  # not written yet
        return 0


@pytest.mark.slow  # two server starts and a run: 37-57 s on the shared 2-core machine
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_pobo_modeler_run_finishes_across_a_curator_restart(tmp_path, how, job_cluster):
    curator = LocalCurator(tmp_path / "curator").start()
    try:
        X, y = raw_table(15)
        dataset = register(curator, X, y)
        release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=3)
        key = curator.issue_key([release.id], max_queries=ITERATIONS)
        path = tmp_path / "run.json"
        env = {**os.environ, "POBO_RETRY_FOR": "300"}
        command = [sys.executable, "-m", "modeler_client.cli", "run", "--url", curator.url, "--token", key.token,
                   "--release", str(release.id), "--iterations", str(ITERATIONS), "--out", str(path)]
        with open(tmp_path / "modeler.log", "wb") as log:
            modeler = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 120
            while answers_so_far(path) < RESTART_AFTER and modeler.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert modeler.poll() is None and answers_so_far(path) < ITERATIONS, "the run ended before the restart"
            curator.stop() if how == "sigterm" else curator.kill()
            time.sleep(DOWN_FOR)
            started = time.monotonic()
            curator.start()
            print(f"{how}: curator down {DOWN_FOR + time.monotonic() - started:.1f} s")
            returncode = modeler.wait(timeout=180)
        finally:
            if modeler.poll() is None:
                modeler.kill()
        assert returncode == 0, (tmp_path / "modeler.log").read_text(errors="replace")

        record = RunRecord.load(path)
        assert record.finished and len(record.done()) == ITERATIONS
        client = ModelerClient(curator.url, key.token)
        server = client.queries(record.session_id)
        assert [(q.query_id, q.index, q.value) for q in server] == [
            (q.query_id, q.index, q.value) for q in record.done()
        ]
        by_index = measurements_by_index(curator, dataset.id, y)
        assert [q.value for q in server] == [by_index[q.index] for q in server]
        assert client.session(record.session_id).used == ITERATIONS  # a retried query was not charged again
    finally:
        curator.stop()
