"""The query storage contract (:class:`~curator_service.persistence.query_storage.QueryStorage`), one conformance
suite on embedded SQLite and on PostgreSQL: what each method answers, raises and writes, and that the key's lock
taken before it serialises two queries of one key (no lost charge)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from curator_service.persistence.blobs import RawTable, encode_matrix
from curator_service.persistence.db import Database, migrate
from curator_service.persistence.models import ApiKey, AuditEvent, Dataset, ModelingSession, Query, QueryBatch, Release
from curator_service.persistence.query_storage import NewQuery, QueryStorage, SqlAlchemyQueryStorage, StoredQuery
from curator_service.services.policy import hash_token, principal_for_token

CREATED = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
TABLE = RawTable({"a": np.array([0.5, 1.5, 2.5]), "y": np.array([1.0, 2.0, 3.0]), "name": np.array(["p", "q", "r"])},
                 ("a",), np.array([2, 0, 1]))


@pytest.fixture
def db(database_url):
    database = Database(database_url)
    migrate(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def world(db) -> dict[str, int]:
    """A key with a session on a release of a 3-row dataset (a JSON evaluator, a simulation key), and a second
    release with private measurements."""
    with db.write() as session:
        dataset = Dataset(name="d", n=3, d=1, columns=["a", "y", "name"], feature_columns=["a"],
                          evaluator={"kind": "column", "column": "y", "noise_std": 0.5}, scaling={"kind": "bounds"},
                          goal="maximize", budget_epsilon=1.0, budget_delta=1e-5, table=TABLE.encode(),
                          source_rows=encode_matrix(TABLE.source_rows, np.int64), simulation_key="k" * 64)
        session.add(dataset)
        session.flush()
        plain = Release(dataset_id=dataset.id, mechanism="gaussian", certified=True, seeded=False, epsilon=1.0,
                        delta=1e-5, n=3, dim=1, inputs=b"", created_at=CREATED)
        private = Release(dataset_id=dataset.id, mechanism="gaussian", certified=True, seeded=None, epsilon=1.0,
                          delta=1e-5, n=3, dim=1, inputs=b"", measurements=encode_matrix(np.array([4.0, 5.0, 6.0])))
        key = ApiKey(name="m", role="modeler", token_hash=hash_token("t"), release_ids=[], max_queries=50,
                     used_queries=7, revoked=False)
        session.add_all([plain, private, key])
        session.flush()
        modeling = ModelingSession(release_id=plain.id, key_id=key.id, status="open")
        on_private = ModelingSession(release_id=private.id, key_id=key.id, status="closed")
        session.add_all([modeling, on_private])
        session.flush()
        return {"key": key.id, "session": modeling.id, "private_session": on_private.id, "dataset": dataset.id,
                "release": plain.id, "private_release": private.id}


def test_the_sqlalchemy_storage_is_the_contract_and_every_method_of_it_is_abstract():
    assert issubclass(SqlAlchemyQueryStorage, QueryStorage)
    with pytest.raises(TypeError, match="abstract"):
        QueryStorage()  # type: ignore[abstract]


def test_a_context_names_its_session_key_release_and_dataset_typed(db, world):
    with db.write() as session:
        storage = SqlAlchemyQueryStorage(session)
        context = storage.query_context(world["session"])
        private = storage.query_context(world["private_session"])
        assert storage.query_context(world["private_session"] + 100) is None
    assert (context.key_id, context.status, context.max_queries, context.used_queries) == (world["key"], "open", 50, 7)
    assert (context.id, context.n, context.mechanism, context.seeded, context.private) == (
        world["release"], 3, "gaussian", False, False)
    assert context.created_at == CREATED and context.created_at.tzinfo is not None
    assert context.dataset_id == world["dataset"]
    assert context.evaluator == {"kind": "column", "column": "y", "noise_std": 0.5}
    assert context.simulation_key == "k" * 64
    assert (private.id, private.status, private.seeded, private.private) == (
        world["private_release"], "closed", None, True)


def test_a_stored_batch_reads_back_in_its_order_with_its_times(db, world):
    now = datetime.now(UTC)
    asked = [NewQuery(2, "done", 0.25), NewQuery(0, "pending", None), NewQuery(2, "unmeasurable", None)]
    with db.write() as session:
        ids = SqlAlchemyQueryStorage(session).store_batch(world["session"], "r-1", asked, now)
        anonymous = SqlAlchemyQueryStorage(session).store_batch(world["session"], None, asked[:1], now)
    assert len(ids) == 3 and ids == sorted(ids) and anonymous[0] > ids[-1]
    with db.read() as session:
        storage = SqlAlchemyQueryStorage(session)
        assert storage.stored_batch(world["session"], "r-1") == [
            StoredQuery(ids[0], 2, "done", 0.25), StoredQuery(ids[1], 0, "pending", None),
            StoredQuery(ids[2], 2, "unmeasurable", None)]
        assert storage.stored_batch(world["session"], "r-2") == []
        assert storage.stored_batch(world["private_session"], "r-1") == []  # a request id is per session
        stored = [session.get(Query, query_id) for query_id in ids]
        assert [(q.created_at, q.answered_at) for q in stored] == [(now, now), (now, None), (now, now)]
        [batch] = session.scalars(select(QueryBatch).where(QueryBatch.request_id == "r-1")).all()
        assert (batch.session_id, batch.created_at) == (world["session"], now)


def test_a_batch_is_never_empty_and_a_request_id_is_stored_once_per_session(db, world):
    now = datetime.now(UTC)
    with db.write() as session, pytest.raises(ValueError, match="at least one"):
        SqlAlchemyQueryStorage(session).store_batch(world["session"], "r", [], now)
    with db.write() as session:
        SqlAlchemyQueryStorage(session).store_batch(world["session"], "r", [NewQuery(1, "done", 1.0)], now)
    with pytest.raises(IntegrityError), db.write() as session:
        SqlAlchemyQueryStorage(session).store_batch(world["session"], "r", [NewQuery(1, "done", 1.0)], now)
    with db.write() as session:  # the same id in another session is another batch
        SqlAlchemyQueryStorage(session).store_batch(world["private_session"], "r", [NewQuery(1, "done", 1.0)], now)


def test_a_charge_adds_to_the_key_and_an_unknown_key_is_a_key_error(db, world):
    with db.write() as session:
        SqlAlchemyQueryStorage(session).charge_key(world["key"], 3)
        with pytest.raises(KeyError):
            SqlAlchemyQueryStorage(session).charge_key(world["key"] + 100, 1)
    with db.read() as session:
        assert session.get(ApiKey, world["key"]).used_queries == 10


def test_private_measurements_and_tables_load_or_are_key_errors(db, world):
    with db.read() as session:
        storage = SqlAlchemyQueryStorage(session)
        assert storage.private_measurements(world["private_release"]) == encode_matrix(np.array([4.0, 5.0, 6.0]))
        for missing in (world["release"], world["private_release"] + 100):  # none drawn, no release
            with pytest.raises(KeyError):
                storage.private_measurements(missing)
        table = storage.load_table(world["dataset"])
        with pytest.raises(KeyError):
            storage.load_table(world["dataset"] + 100)
    assert table.feature_columns == ("a",) and list(table.columns) == ["a", "y", "name"]
    assert table.columns["y"].tolist() == [1.0, 2.0, 3.0] and table.columns["name"].tolist() == ["p", "q", "r"]
    assert [table.file_row(i) for i in range(3)] == [3, 1, 2]


def test_an_event_commits_or_rolls_back_with_its_transaction(db, world):
    with db.write() as session:
        SqlAlchemyQueryStorage(session).record_event("key:1:m", "query.create", "session:1 (2 queries)")
    with pytest.raises(RuntimeError), db.write() as session:
        SqlAlchemyQueryStorage(session).record_event("key:1:m", "query.create", "rolled back")
        raise RuntimeError
    with db.read() as session:
        events = session.execute(select(AuditEvent.actor, AuditEvent.action, AuditEvent.target)).all()
    assert [tuple(e) for e in events] == [("key:1:m", "query.create", "session:1 (2 queries)")]


def test_the_keys_lock_serialises_two_queries_of_one_key(db, world):
    """Each thread, as the query path does: lock the key, read the budget from the context, charge it. Under the
    lock no other query of the key charges between the read and the charge, so every query read a different budget
    and its charge came right after it."""
    rounds, threads = 10, 4
    barrier = threading.Barrier(threads)

    def query(_: int) -> list[int]:
        barrier.wait()
        seen = []
        for _ in range(rounds):
            with db.write() as session:
                principal_for_token(session, "t", None, lock=True)
                storage = SqlAlchemyQueryStorage(session)
                used = storage.query_context(world["session"]).used_queries
                storage.charge_key(world["key"], 1)
                assert storage.query_context(world["session"]).used_queries == used + 1
                seen.append(used)
        return seen

    with ThreadPoolExecutor(threads) as pool:
        seen = sorted(used for part in pool.map(query, range(threads)) for used in part)
    assert seen == list(range(7, 7 + rounds * threads))
    with db.read() as session:
        assert session.get(ApiKey, world["key"]).used_queries == 7 + rounds * threads
