"""The query path's prepared statements (:class:`~curator_service.persistence.db.Prepared`) read and write exactly what
SQLAlchemy Core does: the same typed rows (timezone-aware times, JSON lists and objects, booleans), the new row's id,
and values that read back unchanged through the ORM. On SQLite they bypass Core's execution; elsewhere they are
Core."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from curator_service.persistence.db import Database, Prepared, migrate
from curator_service.persistence.models import ApiKey, Dataset, KeyPolicy, ModelingSession, Query, QueryBatch, Release
from curator_service.services.policy import LIVE_KEY, hash_token
from curator_service.services.queries import INSERT_BATCH, INSERT_QUERY, QUERY_CONTEXT, STORED_BATCH

EXPIRES = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


@pytest.fixture
def db(database_url):
    database = Database(database_url)
    migrate(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def world(db):
    """A key with a policy's expiry and a session on a release of a dataset with a JSON evaluator."""
    with db.write() as session:
        dataset = Dataset(name="d", n=3, d=1, columns=["a", "y"], feature_columns=["a"],
                          evaluator={"kind": "column", "column": "y"}, scaling={"kind": "bounds"}, goal="maximize",
                          budget_epsilon=1.0, budget_delta=1e-5, table=b"")
        session.add(dataset)
        session.flush()
        release = Release(dataset_id=dataset.id, mechanism="gaussian", certified=True, seeded=False, epsilon=1.0,
                          delta=1e-5, n=3, dim=1, inputs=b"")
        key = ApiKey(name="m", role="modeler", token_hash=hash_token("t"), release_ids=[7, 8], max_queries=5,
                     used_queries=0, revoked=False)
        session.add_all([release, key])
        session.flush()
        session.add(KeyPolicy(key_id=key.id, expires_at=EXPIRES))
        modeling = ModelingSession(release_id=release.id, key_id=key.id, status="open")
        session.add(modeling)
        session.flush()
        return key.id, modeling.id


def test_a_prepared_select_answers_what_core_answers(db, world):
    key_id, session_id = world
    with db.read() as session:
        connection = session.connection()
        for statement, parameters in ((LIVE_KEY, {"token_hash": hash_token("t")}),
                                      (QUERY_CONTEXT.statement, {"session_id": session_id})):
            core = [tuple(row) for row in connection.execute(statement, parameters)]
            prepared = Prepared(statement).run(connection, parameters)
            assert [tuple(row) for row in prepared] == core and len(core) == 1
        key = Prepared(LIVE_KEY).run(connection, {"token_hash": hash_token("t")})[0]
        assert (key.id, key.release_ids, key.revoked, key.expires_at) == (key_id, [7, 8], False, EXPIRES)
        context = QUERY_CONTEXT.run(connection, {"session_id": session_id})[0]
        assert context.evaluator == {"kind": "column", "column": "y"} and context.private is False
        assert context.created_at.tzinfo is not None
        assert Prepared(LIVE_KEY).run(connection, {"token_hash": hash_token("other")}) == []


def test_prepared_inserts_return_their_ids_and_read_back_through_the_orm(db, world):
    _, session_id = world
    now = datetime.now(UTC)
    with db.write() as session:
        connection = session.connection()
        batch_id = INSERT_BATCH.run(connection, {"session_id": session_id, "request_id": "r", "created_at": now})
        rows = [{"session_id": session_id, "batch_id": batch_id, "row_index": index, "value": value, "status": status,
                 "answered_at": answered, "created_at": now}
                for index, value, status, answered in ((2, 0.5, "done", now), (0, None, "pending", None))]
        ids = INSERT_QUERY.run_many(connection, rows)
    with db.read() as session:
        assert session.get(QueryBatch, batch_id).created_at == now
        stored = [session.get(Query, query_id) for query_id in ids]
        assert [(q.row_index, q.value, q.status, q.answered_at, q.created_at) for q in stored] == [
            (2, 0.5, "done", now, now), (0, None, "pending", None, now)]
        replay = STORED_BATCH.run(session.connection(), {"session_id": session_id, "request_id": "r"})
        assert [(q.id, q.row_index, q.value) for q in replay] == [(ids[0], 2, 0.5), (ids[1], 0, None)]


def test_a_prepared_insert_must_be_given_every_column_with_a_default(db, world):
    """The cursor path applies no Python-side defaults (``created_at``'s ``utcnow``): naming too few columns is a
    programming error caught at the first run, not a row with a NULL time."""
    _, session_id = world
    too_few = Prepared(QueryBatch.__table__.insert(), ("session_id", "request_id"))
    with db.write() as session:
        connection = session.connection()
        if connection.dialect.name != "sqlite":
            pytest.skip("Core applies the defaults itself on this backend")
        with pytest.raises(ValueError, match="every column"):
            too_few.run(connection, {"session_id": session_id, "request_id": "x"})

