"""One conformance suite, two backends (embedded SQLite and PostgreSQL): ledger, keys, sessions, queries, through
HTTP and, below it, through the service layer the console and the command line call.

The PostgreSQL half runs when POBO_TEST_POSTGRES_URL is set (``.ci/run`` sets it); each test starts from
an empty schema.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import select

from curator_service.jobs.worker import JobTask, run_job
from curator_service.persistence.blobs import TableCache
from curator_service.persistence.db import Database, migrate
from curator_service.persistence.models import Job, ModelingSession, Release
from curator_service.persistence.query_storage import SqlAlchemyQueryStorage
from curator_service.services import datasets, keys, ledger, queries, release_requests, releases
from curator_service.services.job_kinds import KINDS
from curator_service.services.policy import ADMIN, Principal, may_see, principal_for_token, visible
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import (
    DatasetOut,
    DatasetSpec,
    KeyCreate,
    QueryRequest,
    QueryResponse,
    ReleaseCreate,
    ReleaseOut,
)
from tests.curator_service.conftest import (
    ADMIN_HEADERS,
    assert_error,
    bearer,
    dataset_spec,
    modeler_key,
    register,
    release,
    synthetic_table,
    table_csv,
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


def wait_for_jobs(http: httpx.Client, kind: str, count: int, timeout: float = 180.0) -> None:
    """Until ``count`` jobs of ``kind`` have succeeded (any other end fails the test)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [job for job in http.get("/v1/jobs").raise_for_status().json() if job["kind"] == kind]
        assert all(job["status"] in ("queued", "running", "succeeded") for job in jobs), jobs
        if sum(job["status"] == "succeeded" for job in jobs) == count:
            return
        time.sleep(0.2)
    pytest.fail(f"{count} {kind} jobs did not succeed within {timeout} s")


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
    # Accepted: 201 (the release) or 202 (its job, still running); the running ones reserve their budget.
    assert sorted(202 if status == 201 else status for status in statuses) == [202] * 5 + [409] * 15
    with httpx.Client(base_url=url, headers=ADMIN_HEADERS) as admin:
        wait_for_jobs(admin, "release", count=5)
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
    # Out of scope reads exactly like missing: 404, so an id tells a modeler nothing.
    assert_error(client.get(f"/v1/releases/{second['id']}", headers=headers), 404, "not_found",
                 f"release with id {second['id']}")
    assert_error(client.post(f"/v1/releases/{second['id']}/sessions", headers=headers), 404, "not_found")
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


# --- the same guarantees at the service layer (what the console and the command line call) ----------------------


@dataclass(frozen=True)
class Service:
    """What a caller of :mod:`curator_service.services` holds: the database, the settings, the table cache."""

    db: Database
    settings: Settings
    tables: TableCache


@pytest.fixture
def service(make_settings, database_url) -> Iterator[Service]:
    settings = make_settings(database_url=database_url)
    db = Database(settings.database_url)
    migrate(db.engine)
    yield Service(db, settings, TableCache())
    db.dispose()


def store_table(service: Service, n: int = 40, **spec_changes) -> DatasetOut:
    X, y = synthetic_table(n)
    spec = DatasetSpec.model_validate(dataset_spec(**spec_changes))
    table = datasets.parse_registration(spec, table_csv(X, y).encode())
    with service.db.write() as session:
        return datasets.store_dataset(session, ADMIN, spec, table)


def make_release(service: Service, dataset_id: int, epsilon: float = 1.0, delta: float = 1e-5) -> ReleaseOut:
    """A release request at the service layer, its job run to the end right here (a worker's loop, no cluster)."""
    body = ReleaseCreate(mechanism="gaussian", epsilon=epsilon, delta=delta, dim=2)

    def run_here(job_id: int) -> None:
        run_job(JobTask(job_id, service.settings.database_url, KINDS["release"], time_limit_seconds=600))

    made, _ = release_requests.request_release(service.db, service.settings, ADMIN, dataset_id, body, run_here)
    assert isinstance(made, ReleaseOut), made
    return made


def key_principal(service: Service, release_ids: list[int], max_queries: int = 10) -> tuple[Principal, int]:
    with service.db.write() as session:
        created = keys.create_key(session, ADMIN, KeyCreate(name="m", release_ids=release_ids,
                                                            max_queries=max_queries))
    with service.db.read() as session:
        return principal_for_token(session, created.token, None), created.id


def raises(status: int, code: str, call, *args):
    with pytest.raises(ApiError) as caught:
        call(*args)
    assert (caught.value.status, caught.value.code) == (status, code), caught.value.detail
    return caught.value.detail


def test_service_release_and_ledger_entry_are_one_transaction(service):
    dataset = store_table(service, budget={"epsilon": 1.0, "delta": 1e-4})
    made = make_release(service, dataset.id, epsilon=0.4, delta=2e-5)
    detail = raises(409, "budget_exceeded", make_release, service, dataset.id, 0.7)
    assert "epsilon=0.6" in detail
    with service.db.read() as session:
        [entry] = ledger.list_entries(session, dataset.id)
        assert (entry.release_id, entry.epsilon, entry.delta) == (made.id, 0.4, 2e-5)
        assert [r.id for r in releases.list_releases(session, service.settings, ADMIN)] == [made.id]
        assert datasets.get_dataset(session, dataset.id).budget.remaining_epsilon == pytest.approx(0.6)


def test_service_twenty_concurrent_releases_against_a_budget_for_five_create_exactly_five(service):
    dataset = store_table(service, budget={"epsilon": 1.0, "delta": 1e-3})
    barrier = threading.Barrier(20)

    def attempt(_: int) -> str:
        barrier.wait()
        try:
            make_release(service, dataset.id, epsilon=0.2)
        except ApiError as exc:
            return exc.code
        return "created"

    with ThreadPoolExecutor(20) as pool:
        outcomes = sorted(pool.map(attempt, range(20)))
    assert outcomes == ["budget_exceeded"] * 15 + ["created"] * 5
    with service.db.read() as session:
        assert sum(e.epsilon for e in ledger.list_entries(session)) == pytest.approx(1.0)


def test_service_queries_are_charged_once_per_request_id_and_stop_at_the_key_budget(service):
    dataset = store_table(service, evaluator={"kind": "column", "column": "y", "noise_std": 0.5})
    made = make_release(service, dataset.id)
    modeler, _ = key_principal(service, [made.id], max_queries=3)
    with service.db.write() as session:
        opened = queries.open_session(session, service.settings, modeler, made.id)

    def ask(indices: list[int], request_id: str | None = None) -> QueryResponse:
        with service.db.write() as session:
            return queries.create_queries(SqlAlchemyQueryStorage(session), service.tables, service.settings, modeler,
                                          opened.id, QueryRequest(indices=indices, request_id=request_id))

    first = ask([3, 4], "r-1")
    assert ask([3, 4], "r-1") == first
    raises(409, "conflict", ask, [5], "r-1")
    ask([5])
    assert "0 of 3" in raises(409, "query_budget_exhausted", ask, [6])
    with service.db.read() as session:
        assert queries.get_session(session, modeler, opened.id).used == 3
        assert [q.index for q in queries.list_session_queries(session, modeler, opened.id).queries] == [3, 4, 5]


def test_service_objects_of_other_keys_answer_404_like_missing_ones(service):
    dataset = store_table(service)
    first, second = make_release(service, dataset.id), make_release(service, dataset.id)
    owner, _ = key_principal(service, [first.id])
    other, other_id = key_principal(service, [first.id])
    with service.db.write() as session:
        opened = queries.open_session(session, service.settings, owner, first.id)
    with service.db.read() as session:
        missing = raises(404, "not_found", queries.get_session, session, other, opened.id + 100)
        hidden = raises(404, "not_found", queries.get_session, session, other, opened.id)
        assert hidden == missing.replace(str(opened.id + 100), str(opened.id))  # the same sentence
        raises(404, "not_found", releases.get_release, session, service.settings, owner, second.id)
        assert [s.id for s in queries.list_sessions(session, other)] == []
        assert [s.id for s in queries.list_sessions(session, ADMIN)] == [opened.id]
    with service.db.write() as session:
        keys.revoke_key(session, ADMIN, other_id)
    with service.db.read() as session:
        raises(401, "unauthorized", principal_for_token, session, "not-a-token", None)


def test_service_manual_queries_wait_for_the_curator(service):
    dataset = store_table(service, evaluator={"kind": "manual"})
    made = make_release(service, dataset.id)
    modeler, _ = key_principal(service, [made.id])
    with service.db.write() as session:
        opened = queries.open_session(session, service.settings, modeler, made.id)
        [pending] = queries.create_queries(SqlAlchemyQueryStorage(session), service.tables, service.settings,
                                           modeler, opened.id, QueryRequest(indices=[7])).results
    assert (pending.status, pending.value) == ("pending", None)
    with service.db.read() as session:
        [listed] = queries.pending_queries(session, service.tables, dataset.id).queries
    assert (listed.query_id, listed.index) == (pending.query_id, 7) and 1 <= listed.row <= 40
    with service.db.write() as session:
        assert queries.answer_query(session, ADMIN, pending.query_id, 1.5).value == 1.5
    with service.db.write() as session:
        raises(409, "conflict", queries.answer_query, session, ADMIN, pending.query_id, 2.0)
    with service.db.read() as session:
        assert queries.pending_queries(session, service.tables).queries == []


def test_service_listings_show_exactly_the_rows_a_caller_may_see(service):
    """The listings' SQL condition (``visible``) and the per-row rule (``may_see``) agree for every caller."""
    dataset = store_table(service)
    first, second = make_release(service, dataset.id), make_release(service, dataset.id)
    owner, _ = key_principal(service, [first.id])
    other, _ = key_principal(service, [first.id, second.id])
    with service.db.write() as session:
        mine = queries.open_session(session, service.settings, owner, first.id)
        queries.open_session(session, service.settings, other, second.id)
    with service.db.read() as session:
        for principal in (ADMIN, owner, other):
            for model in (Release, ModelingSession, Job):
                listed = {row.id for row in session.scalars(select(model).where(visible(principal, model)))}
                allowed = {row.id for row in session.scalars(select(model)) if may_see(session, principal, row)}
                assert listed == allowed, (principal.actor, model.__name__)
        assert [r.id for r in releases.list_releases(session, service.settings, owner)] == [first.id]
        assert [s.id for s in queries.list_sessions(session, owner)] == [mine.id]
        assert len(queries.list_sessions(session, ADMIN)) == 2
