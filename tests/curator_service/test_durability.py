"""A curator killed with SIGKILL restarts with every answered query and every ledger entry intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.curator_service.conftest import ADMIN, ADMIN_HEADERS, bearer, free_port, modeler_key, register, release

CLI = Path(sys.executable).with_name("pobo-curator")


def _serve(data_dir: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "POBO_DATA_DIR": str(data_dir), "POBO_ADMIN_TOKEN": ADMIN,
           "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"}
    env.pop("POBO_DATABASE_URL", None)
    process = subprocess.Popen([str(CLI), "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300  # a poll: a loaded 2-core machine took 34 s at load 18, and more at 25
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    return process
            except httpx.TransportError:
                pass
            assert process.poll() is None, "pobo-curator serve exited"
            assert time.monotonic() < deadline, "pobo-curator serve did not start"
            time.sleep(0.1)
    except BaseException:  # a server that never answered must not outlive the test
        process.kill()
        process.wait(10)
        raise


@pytest.mark.slow  # a chaos test: SIGKILL mid-run
def test_sigkill_loses_nothing(tmp_path, job_cluster):
    port = free_port()
    server = _serve(tmp_path, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=30) as admin:
            dataset = register(admin)
            manual = register(admin, name="lab", evaluator={"kind": "manual"})
            rel, lab = release(admin, dataset["id"]), release(admin, manual["id"], epsilon=0.5)
            key = modeler_key(admin, [rel["id"], lab["id"]], max_queries=20)
            modeler = httpx.Client(base_url=url, headers=bearer(key["token"]), timeout=30)
            session = modeler.post(f"/v1/releases/{rel['id']}/sessions").json()
            answers = [modeler.post(f"/v1/sessions/{session['id']}/queries",
                                    json={"indices": [i], "request_id": f"q{k}"}).json()["results"][0]
                       for k, i in enumerate((3, 1, 4, 1, 5))]
            lab_session = modeler.post(f"/v1/releases/{lab['id']}/sessions").json()
            pending = modeler.post(f"/v1/sessions/{lab_session['id']}/queries", json={"indices": [9, 2]}).json()
            answered = admin.post(f"/v1/queries/{pending['results'][0]['query_id']}/answer",
                                  json={"value": 7.25}).json()
            ledger = admin.get("/v1/ledger").json()
            modeler.close()
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)

    server = _serve(tmp_path, port)
    try:
        with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=30) as admin:
            assert admin.get("/v1/ledger").json() == ledger
            assert admin.get(f"/v1/datasets/{dataset['id']}").json()["budget"]["spent_epsilon"] == 1.0
            with httpx.Client(base_url=url, headers=bearer(key["token"]), timeout=30) as modeler:
                assert modeler.get(f"/v1/sessions/{session['id']}/queries").json()["queries"] == answers
                lab_queries = modeler.get(f"/v1/sessions/{lab_session['id']}/queries").json()["queries"]
                assert lab_queries == [answered, pending["results"][1]]
                assert modeler.get(f"/v1/sessions/{session['id']}").json()["used"] == 7
                # The session resumes: a retried request is answered from storage, a new one is measured.
                again = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [5], "request_id": "q4"})
                assert again.json()["results"] == [answers[-1]]
                fresh = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [6]})
                assert fresh.json()["results"][0]["status"] == "done"
            assert [q["index"] for q in admin.get("/v1/queries").json()["queries"]] == [2]
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)
