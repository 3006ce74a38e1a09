"""The curator killed with SIGKILL again and again (≥ 20 times) while a modeler's GP-UCB run, a concurrent
query writer and a release writer work against it, on SQLite and on PostgreSQL. At the end: every
acknowledged answer and ledger entry is stored, no key's used count differs from its stored queries, and
the modeler's run resumed to completion."""

from __future__ import annotations

import random
import threading
import time

import httpx
import numpy as np
import pytest

from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import RunSettings
from shared.api.http_client import ApiClient, ServerUnreachable

# About 1.5 minutes on an idle machine; each restart imports the whole service, so allow for a loaded one.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

KILLS = 20
ITERATIONS = 12 * KILLS  # a kill every 3 answers, but the run goes on while the server restarts: room for 20
ROWS = 300


# One client for all the polling: a new httpx client per call parses the CA bundle each time, which on a
# loaded two-core machine cost more than the restarts themselves.
HTTP = httpx.Client(timeout=30.0)


def wait_until_up(url: str, deadline: float = 300.0) -> None:
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        try:
            if HTTP.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not come back")


def post_until_acknowledged(url: str, path: str, token: str, body: dict) -> dict:
    """Retries the same request (same idempotency key) through kills until the server answers it."""
    while True:
        try:
            response = HTTP.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {token}"})
        except httpx.TransportError:
            wait_until_up(url)
            continue
        assert response.status_code in (200, 201), response.text
        return response.json()


@pytest.fixture(params=["sqlite", "postgres"])
def curator(request, tmp_path, job_cluster):
    env = {"POBO_MODE": "production", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"}
    if request.param == "postgres":
        from tests.curator_service.conftest import reset_postgres

        url = request.getfixturevalue("postgres_url")
        reset_postgres(url)
        env["POBO_DATABASE_URL"] = url
    server = LocalCurator(tmp_path / "curator", env=env, startup_timeout=300).start()  # restarts on a loaded machine
    yield server
    server.stop()


def test_sigkill_loop_loses_nothing_acknowledged_and_the_run_completes(curator, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(ROWS, 3))
    dataset = curator.register_table(
        "sigkill", X, ["a", "b", "c"], evaluator={"kind": "column", "column": "y"}, budget=(100.0, 0.5),
        extra_columns={"y": -((X - 0.6) ** 2).sum(axis=1)},
        scaling={"kind": "bounds", "lower": [0.0] * 3, "upper": [1.0] * 3, "diameter": 1.0},
    )
    release = curator.create_release(dataset.id, "gaussian", 4.0, 1e-5, 3)
    modeler_key = curator.issue_key([release.id], max_queries=10_000, name="gp-ucb")
    writer_key = curator.issue_key([release.id], max_queries=10_000, name="writer")
    url, admin = curator.url, curator.admin_token

    kill_now, stop = threading.Event(), threading.Event()
    outcome: dict = {}
    acknowledged_answers: dict[str, list[dict]] = {}
    acknowledged_releases: list[int] = []
    errors: list[BaseException] = []

    def modeler() -> None:
        client = ModelerClient(url, api=ApiClient(url, modeler_key.token, retries=1, backoff=0.05))
        path = tmp_path / "run.json"

        asked_at = [0]  # answers done when the last kill was asked for

        def every_third_answer(event) -> None:
            # Answers recovered after a restart arrive together, so count how many came, not which one came.
            done = len(event.record.done())
            if event.kind == "answer" and done - asked_at[0] >= 3:
                asked_at[0] = done
                kill_now.set()

        loop = None
        while True:
            try:
                if loop is None:
                    loop = RemoteGPUCB.start(client, release.id, RunSettings(iterations=ITERATIONS, refit_every=10),
                                             path, on_event=every_third_answer)
                outcome["record"] = loop.run()
                return
            except ServerUnreachable:
                wait_until_up(url)
                if path.exists():
                    loop = RemoteGPUCB.resume(client, path, on_event=every_third_answer)

    def writer() -> None:
        session = post_until_acknowledged(url, f"/v1/releases/{release.id}/sessions", writer_key.token, {})
        outcome["writer_session"] = session["id"]
        k = 0
        while not stop.is_set():
            request_id = f"w{k}"
            body = {"indices": [k % ROWS, (7 * k) % ROWS], "request_id": request_id}
            acknowledged_answers[request_id] = post_until_acknowledged(
                url, f"/v1/sessions/{session['id']}/queries", writer_key.token, body)["results"]
            if k % 10 == 0:
                made = post_until_acknowledged(url, f"/v1/datasets/{dataset.id}/releases", admin,
                                               {"mechanism": "gaussian", "epsilon": 0.01, "delta": 1e-9, "dim": 3})
                acknowledged_releases.append(made["id"])
            k += 1

    def guarded(target):
        def run() -> None:
            try:
                target()
            except BaseException as error:  # noqa: BLE001 - any failure of a thread: the main thread asserts none
                errors.append(error)
                stop.set()
        return run

    threads = [threading.Thread(target=guarded(modeler)), threading.Thread(target=guarded(writer))]
    for thread in threads:
        thread.start()
    kills = 0
    while kills < KILLS and not errors and threads[0].is_alive():
        if kill_now.wait(timeout=1.0):
            kill_now.clear()
            time.sleep(random.uniform(0.0, 0.2))  # land inside the next request, not between them
            curator.kill()
            kills += 1
            curator.start()
    threads[0].join(timeout=600)
    stop.set()
    threads[1].join(timeout=120)
    assert not errors, errors

    record = outcome["record"]
    assert record.finished and len(record.done()) == ITERATIONS
    stored_run = curator.session_queries(record.session_id).queries
    stored_writer = curator.session_queries(outcome["writer_session"]).queries
    keys = {key.id: key for key in curator.keys()}
    assert ([(q.query_id, q.index, q.value) for q in stored_run]
            == [(q.query_id, q.index, q.value) for q in record.done()])
    stored_by_id = {q.query_id: q for q in stored_writer}
    for request_id, results in acknowledged_answers.items():
        for result in results:
            assert stored_by_id[result["query_id"]].value == result["value"], request_id
    assert keys[modeler_key.id].used_queries == len(stored_run)
    assert keys[writer_key.id].used_queries == len(stored_writer)
    charged = {entry.release_id for entry in curator.ledger() if entry.kind == "charge"}
    assert set(acknowledged_releases) | {release.id} <= charged
    assert kills >= 20, f"only {kills} kills: the run finished first"
