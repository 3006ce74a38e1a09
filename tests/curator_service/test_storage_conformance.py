"""One conformance suite, two backends (embedded SQLite and PostgreSQL): ledger, keys, sessions, queries.

The PostgreSQL half runs when POBO_TEST_POSTGRES_URL is set (``.ci/run`` sets it); each test starts from
an empty schema.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.curator_service.conftest import (
    ADMIN_HEADERS,
    assert_error,
    bearer,
    modeler_key,
    register,
    release,
)


def test_release_and_ledger_entry_are_one_transaction(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client, budget={"epsilon": 1.0, "delta": 1e-4})
    rel = release(client, dataset["id"], epsilon=0.4, delta=2e-5)
    ledger = client.get("/v1/ledger").json()
    assert [(e["release_id"], e["epsilon"], e["delta"]) for e in ledger] == [(rel["id"], 0.4, 2e-5)]
    budget = client.get(f"/v1/datasets/{dataset['id']}").json()["budget"]
    assert budget["spent_epsilon"] == pytest.approx(0.4) and budget["remaining_epsilon"] == pytest.approx(0.6)
    # Basic composition: a second release that would overdraw is refused and leaves nothing behind.
    response = client.post(f"/v1/datasets/{dataset['id']}/releases",
                           json={"mechanism": "gaussian", "epsilon": 0.7, "delta": 1e-5, "dim": 2})
    assert_error(response, 409, "budget_exceeded", "epsilon=0.7", "epsilon=0.6")
    assert len(client.get("/v1/releases").json()) == 1 and len(client.get("/v1/ledger").json()) == 1
    # δ composes too.
    response = client.post(f"/v1/datasets/{dataset['id']}/releases",
                           json={"mechanism": "gaussian", "epsilon": 0.1, "delta": 9e-5, "dim": 2})
    assert_error(response, 409, "budget_exceeded", "delta")


def test_twenty_concurrent_releases_against_a_budget_for_five_create_exactly_five(live_server, database_url):
    url = live_server(database_url=database_url)
    with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=120) as admin:
        dataset = register(admin, budget={"epsilon": 1.0, "delta": 1e-3})
    barrier = threading.Barrier(20)

    def attempt(_: int) -> int:
        with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=120) as http:
            barrier.wait()
            return http.post(f"/v1/datasets/{dataset['id']}/releases",
                             json={"mechanism": "gaussian", "epsilon": 0.2, "delta": 1e-5, "dim": 2}).status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(attempt, range(20)))
    assert sorted(statuses) == [201] * 5 + [409] * 15
    with httpx.Client(base_url=url, headers=ADMIN_HEADERS) as admin:
        assert len(admin.get("/v1/releases").json()) == 5
        ledger = admin.get("/v1/ledger").json()
        assert len(ledger) == 5 and sum(e["epsilon"] for e in ledger) == pytest.approx(1.0)
        assert admin.get(f"/v1/datasets/{dataset['id']}").json()["budget"]["remaining_epsilon"] == pytest.approx(0)


def test_repeated_request_id_returns_the_stored_answer_and_is_charged_once(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client, evaluator={"kind": "column", "column": "y", "noise_std": 0.5})
    rel = release(client, dataset["id"])
    key = modeler_key(client, [rel["id"]], max_queries=3)
    headers = bearer(key["token"])
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=headers).json()
    url = f"/v1/sessions/{session['id']}/queries"
    first = client.post(url, json={"indices": [3, 4], "request_id": "r-1"}, headers=headers).json()
    again = client.post(url, json={"indices": [3, 4], "request_id": "r-1"}, headers=headers).json()
    assert again == first  # same values although the measurement is noisy: stored, not re-measured
    assert client.get(f"/v1/sessions/{session['id']}", headers=headers).json()["used"] == 2
    assert_error(client.post(url, json={"indices": [5], "request_id": "r-1"}, headers=headers), 409, "conflict",
                 "request_id")
    client.post(url, json={"indices": [5]}, headers=headers)
    assert_error(client.post(url, json={"indices": [6]}, headers=headers), 409, "query_budget_exhausted",
                 "0 of 3")
    # The budget is the key's: a stored answer is still returned after it is exhausted.
    assert client.post(url, json={"indices": [3, 4], "request_id": "r-1"}, headers=headers).json() == first
    listed = client.get(url, headers=headers).json()["queries"]
    assert [q["index"] for q in listed] == [3, 4, 5]


def test_concurrent_repeats_of_one_request_id_are_charged_once(live_server, database_url):
    url = live_server(database_url=database_url)
    with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=60) as admin:
        dataset = register(admin)
        rel = release(admin, dataset["id"])
        key = modeler_key(admin, [rel["id"]], max_queries=50)
    headers = bearer(key["token"])
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        session = http.post(f"/v1/releases/{rel['id']}/sessions").json()

    def attempt(_: int):
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            return http.post(f"/v1/sessions/{session['id']}/queries",
                             json={"indices": [1, 2, 3], "request_id": "same"}).json()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(attempt, range(8)))
    assert all(answer == answers[0] for answer in answers)
    with httpx.Client(base_url=url, headers=headers) as http:
        assert http.get(f"/v1/sessions/{session['id']}").json()["used"] == 3


def test_manual_evaluator_queries_wait_for_the_curator(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client, evaluator={"kind": "manual"})
    rel = release(client, dataset["id"])
    key = modeler_key(client, [rel["id"]])
    headers = bearer(key["token"])
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=headers).json()
    result = client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [7]}, headers=headers).json()
    [pending] = result["results"]
    assert pending["status"] == "pending" and pending["value"] is None
    listed = client.get("/v1/queries").json()["queries"]
    assert [(q["query_id"], q["index"], q["dataset_id"]) for q in listed] == [(pending["query_id"], 7, dataset["id"])]
    assert_error(client.post(f"/v1/queries/{pending['query_id']}/answer", json={"value": 1.5}, headers=headers),
                 403, "forbidden", "curator")
    answered = client.post(f"/v1/queries/{pending['query_id']}/answer", json={"value": 1.5}).json()
    assert answered == {"query_id": pending["query_id"], "index": 7, "status": "done", "value": 1.5}
    assert client.get(f"/v1/sessions/{session['id']}/queries", headers=headers).json()["queries"] == [answered]
    assert client.get("/v1/queries").json()["queries"] == []
    assert_error(client.post(f"/v1/queries/{pending['query_id']}/answer", json={"value": 2.0}), 409, "conflict",
                 "already answered")


def test_keys_are_hashed_scoped_and_revocable(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client)
    first, second = release(client, dataset["id"]), release(client, dataset["id"])
    key = modeler_key(client, [first["id"]])
    headers = bearer(key["token"])
    assert "token" not in client.get("/v1/keys").json()[0]
    assert [r["id"] for r in client.get("/v1/releases", headers=headers).json()] == [first["id"]]
    assert_error(client.get(f"/v1/releases/{second['id']}", headers=headers), 403, "forbidden",
                 f"release {second['id']}")
    assert_error(client.post(f"/v1/releases/{second['id']}/sessions", headers=headers), 403, "forbidden")
    session = client.post(f"/v1/releases/{first['id']}/sessions", headers=headers).json()
    assert client.delete(f"/v1/keys/{key['id']}").json()["revoked"] is True
    assert_error(client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]}, headers=headers), 401,
                 "unauthorized", "revoked")
    engine = client.app.state.db.engine
    with engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT token_hash FROM api_keys").scalar_one()
    assert stored != key["token"] and len(stored) == 64


def test_closed_session_refuses_new_queries(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client)
    rel = release(client, dataset["id"])
    key = modeler_key(client, [rel["id"]])
    headers = bearer(key["token"])
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=headers).json()
    closed = client.post(f"/v1/sessions/{session['id']}/close", headers=headers).json()
    assert closed["status"] == "closed"
    assert_error(client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]}, headers=headers), 409,
                 "conflict", "closed")
