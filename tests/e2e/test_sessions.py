"""End-to-end: a real ``pobo-curator serve`` on loopback, driven by the modeler client and by raw HTTP.

Nothing of ours is mocked: the server is the installed command in a subprocess with its own SQLite
data directory; the client talks to it over TCP.
"""

from __future__ import annotations

import io
import json
import subprocess
import threading
import time
import uuid

import httpx
import numpy as np
import pytest

from curator_service.testing import curator_command
from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import RunRecord, RunSettings
from shared.api.http_client import ApiClient, ServerUnreachable

N, D = 60, 3


def raw_table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features with many significant digits (no value can match a count or an index by accident)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.1, 7.0, size=(N, D)) + rng.uniform(1e-7, 1e-6, size=(N, D))
    y = -np.sum((X - np.array([3.3, 4.4, 2.2])) ** 2, axis=1)
    return X, y


def register(curator, X, y, *, evaluator=None, name=None):
    return curator.register_table(
        name or f"table-{uuid.uuid4().hex[:8]}",
        X,
        [f"x{j}" for j in range(D)],
        evaluator=evaluator or {"kind": "column", "column": "y"},
        budget=(10.0, 1e-3),
        extra_columns={"y": y},
        scaling={"kind": "bounds", "lower": [0.0] * D, "upper": [8.0] * D, "diameter": 1.0},
    )


def measurements_by_index(curator, dataset_id: int, y: np.ndarray) -> np.ndarray:
    """y in release-index order: rows are stored in a secret order that only the curator can undo."""
    with curator.admin() as admin:
        rows = admin.get(f"/v1/datasets/{dataset_id}/row-order")["rows"]
    return y[np.array(rows) - 1]


def assert_no_raw_value(body: bytes, content_type: str, X: np.ndarray) -> None:
    """No feature value of X in a response: not as a JSON number, not as text, not as float64 bytes."""
    raw = X.ravel()
    if content_type.startswith("application/x-npy"):
        numbers = np.load(io.BytesIO(body), allow_pickle=False).ravel()
    else:
        numbers = np.array(list(_numbers(json.loads(body))) if body else [], dtype=float)
        text = body.decode()
        assert not [v for v in raw if repr(float(v)) in text or f"{v:.10g}" in text]
    assert not np.isclose(numbers[:, None], raw[None, :], rtol=1e-9, atol=0).any() if numbers.size else True
    assert not [v for v in raw if np.float64(v).tobytes() in body]


def _numbers(value):
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def test_whole_session_through_client_and_raw_http_never_shows_a_raw_value(curator, tmp_path):
    X, y = raw_table(1)
    dataset = register(curator, X, y)
    gaussian = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=3)
    uncertified = curator.create_release(dataset.id, "po-gp-ucb", 1.0, 1e-5, dim=2, seed=4)
    assert gaussian.certified and not uncertified.certified and uncertified.warnings
    key = curator.issue_key([gaussian.id, uncertified.id], max_queries=40)

    seen: list[httpx.Response] = []

    def keep(response: httpx.Response) -> None:
        response.read()
        seen.append(response)

    # 1. The modeler client runs GP-UCB on both releases.
    api = ApiClient(curator.url, key.token, event_hooks={"response": [keep]})
    client = ModelerClient(curator.url, api=api)
    for release in (gaussian, uncertified):
        run = RemoteGPUCB.start(client, release.id, RunSettings(iterations=6), tmp_path / f"run{release.id}.json")
        record = run.run()
        assert record.finished and len(record.done()) == 6
        assert {q.value for q in record.done()} <= set(y.tolist())  # measurements are y, as computed

    # 2. The same API by hand, including the error paths a modeler can reach.
    headers = {"Authorization": f"Bearer {key.token}"}
    with httpx.Client(base_url=curator.url, headers=headers, event_hooks={"response": [keep]}) as http:
        assert http.get(f"/v1/releases/{gaussian.id}").status_code == 200
        page = http.get(f"/v1/releases/{gaussian.id}/inputs", params={"offset": 10, "limit": 7}).json()
        assert (page["n"], page["dim"], page["offset"], len(page["rows"])) == (N, 3, 10, 7)
        npy = http.get(f"/v1/releases/{gaussian.id}/inputs", headers={"Accept": "application/x-npy"})
        assert np.load(io.BytesIO(npy.content)).shape == (N, 3)
        session = http.post(f"/v1/releases/{gaussian.id}/sessions", json={}).json()
        answer = http.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, 59]}).json()
        by_index = measurements_by_index(curator, dataset.id, y)
        assert [r["value"] for r in answer["results"]] == [by_index[0], by_index[59]]
        assert len(http.get(f"/v1/sessions/{session['id']}/queries").json()["queries"]) == 2
        out_of_range = http.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [N]})
        assert out_of_range.status_code == 422 and out_of_range.json()["code"] == "validation_error"
        assert http.get("/v1/datasets").json()["code"] == "forbidden"
        assert http.get(f"/v1/datasets/{dataset.id}").status_code == 403
        assert http.get("/v1/ledger").status_code == 403
        assert http.post(f"/v1/sessions/{session['id']}/close", json={}).json()["status"] == "closed"

    assert len(seen) > 30
    for response in seen:
        assert_no_raw_value(response.content, response.headers.get("content-type", ""), X)


def test_repeated_request_id_returns_the_stored_answer_and_is_charged_once(curator):
    X, y = raw_table(2)
    dataset = register(curator, X, y)
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2)
    key = curator.issue_key([release.id], max_queries=5)
    client = ModelerClient(curator.url, key.token)
    session = client.open_session(release.id)
    first = client.query(session.id, [7, 8], request_id="iteration-1")
    again = client.query(session.id, [7, 8], request_id="iteration-1")
    by_index = measurements_by_index(curator, dataset.id, y)
    assert again == first and [r.value for r in first] == [by_index[7], by_index[8]]
    assert client.session(session.id).used == 2
    assert len(client.queries(session.id)) == 2
    with curator.admin() as admin:
        (listed,) = [k for k in admin.get("/v1/keys") if k["id"] == key.id]
    assert listed["used_queries"] == 2


def test_manual_evaluator_run_waits_until_the_curator_answers_with_the_cli(curator, tmp_path):
    X, y = raw_table(3)
    dataset = register(curator, X, y, evaluator={"kind": "manual"})
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2)
    key = curator.issue_key([release.id], max_queries=5)
    client = ModelerClient(curator.url, key.token)
    events = []
    run = RemoteGPUCB.start(
        client, release.id, RunSettings(iterations=2), tmp_path / "manual.json", poll=0.1, max_poll=0.3,
        on_event=events.append,
    )
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("record", run.run()), daemon=True)
    worker.start()

    answered = {}
    deadline = time.monotonic() + 90
    with curator.admin() as admin:
        while len(answered) < 2 and time.monotonic() < deadline:
            pending = [q for q in admin.get("/v1/queries")["queries"] if q["dataset_id"] == dataset.id]
            for query in pending:
                value = 100.0 + query["index"]  # the "lab result" for that row
                command = [*curator_command(), "queries", "answer", str(query["query_id"]), str(value),
                           "--url", curator.url, "--token", curator.admin_token]
                subprocess.run(command, check=True, capture_output=True, timeout=120)
                answered[query["query_id"]] = value
            time.sleep(0.2)
    worker.join(timeout=60)
    record = outcome["record"]
    assert record.finished
    assert {q.query_id: q.value for q in record.done()} == answered
    assert any(e.kind == "waiting" for e in events)
    assert RunRecord.load(tmp_path / "manual.json").pending() == []


@pytest.mark.slow  # a chaos test: SIGKILL mid-run
def test_sigkill_mid_session_loses_nothing_and_the_run_resumes_to_completion(curator, tmp_path):
    X, y = raw_table(4)
    dataset = register(curator, X, y)
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=3)
    key = curator.issue_key([release.id], max_queries=10)
    path = tmp_path / "run.json"
    before: dict = {}

    def kill_after_four(event) -> None:
        if event.kind == "answer" and len(event.record.done()) == 4 and not before:
            with curator.admin() as admin:
                before["queries"] = admin.get(f"/v1/sessions/{event.record.session_id}/queries")["queries"]
                before["ledger"] = admin.get("/v1/ledger")
            curator.kill()

    impatient = ModelerClient(curator.url, api=ApiClient(curator.url, key.token, retries=1, retry_for=0, backoff=0.05))
    run = RemoteGPUCB.start(impatient, release.id, RunSettings(iterations=8), path, on_event=kill_after_four)
    with pytest.raises(ServerUnreachable):
        run.run()
    crashed = RunRecord.load(path)
    assert len(crashed.done()) == 4 and crashed.in_flight is not None  # the 5th query never got an answer

    curator.start()
    with curator.admin() as admin:
        assert admin.get(f"/v1/sessions/{crashed.session_id}/queries")["queries"] == before["queries"]
        assert admin.get("/v1/ledger") == before["ledger"]
    assert len(before["queries"]) == 4 and len(before["ledger"]) >= 1

    record = RemoteGPUCB.resume(ModelerClient(curator.url, key.token), path).run()
    assert record.finished and len(record.done()) == 8
    client = ModelerClient(curator.url, key.token)
    server = client.queries(record.session_id)
    assert [(q.query_id, q.index, q.value) for q in server] == [(q.query_id, q.index, q.value) for q in record.done()]
    by_index = measurements_by_index(curator, dataset.id, y)
    assert [q.value for q in server] == [by_index[q.index] for q in server]
    assert client.session(record.session_id).used == 8  # every iteration charged exactly once
