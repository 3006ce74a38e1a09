"""Replicas starting together over one fresh PostgreSQL database ("migrations take a lock"): ``migrate``
takes an advisory lock in its transaction, so the second replica waits for the first's schema and finds it current
instead of racing to create the same tables."""

from __future__ import annotations

import multiprocessing

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import event, inspect, text

from curator_service.persistence.db import MIGRATIONS_DIR, make_engine, migrate, schema_revision
from curator_service.persistence.models import Base

LOCK = "pg_advisory_xact_lock"
CREATE_VERSION_TABLE = "CREATE TABLE alembic_version"
JOIN_SECONDS = 300.0


def head_revision() -> str:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


def replica(url: str, number: int, locked: bool, start, both_found_it_empty, reports) -> None:
    """One replica's start in its own process (Alembic's ``context`` is one per process, so threads would not do):
    ``migrate`` on a fresh engine; reports ("lock", number) when it takes the lock and ("error", text) if it fails."""
    engine = make_engine(url)

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _statement(connection, cursor, statement, parameters, context, executemany):
        if LOCK in statement:
            if not locked:
                return "SELECT 1", parameters
            reports.put(("lock", number))
        if not locked and statement.lstrip().startswith(CREATE_VERSION_TABLE):
            both_found_it_empty.wait(JOIN_SECONDS)
        return statement, parameters

    start.wait(JOIN_SECONDS)
    try:
        migrate(engine)
    except Exception as exc:  # noqa: BLE001 - the test reports what each replica raised
        reports.put(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        engine.dispose()


@pytest.mark.parametrize("locked", [True, False], ids=["with-the-lock", "lock-skipped"])
def test_two_replicas_migrating_at_once_leave_one_schema_at_head(postgres_url, locked):
    """Two replicas (processes, each with its own engine) call ``migrate`` at once on an empty database: both
    succeed, and the schema is at head with one version row. ``lock-skipped`` is the control: each engine runs
    ``SELECT 1`` in place of the lock, and each replica waits, before creating Alembic's version table, until both
    have found the database empty (the window of two replicas starting together, made certain); one replica then
    fails, since PostgreSQL makes the second CREATE TABLE wait for the first transaction and refuses it once that
    commits."""
    from tests.curator_service.conftest import reset_postgres  # here: the replicas' imports of this module skip it

    reset_postgres(postgres_url)
    spawn = multiprocessing.get_context("spawn")  # not a fork of this process and its Dask threads
    start, both_found_it_empty, reports = spawn.Barrier(2), spawn.Barrier(2), spawn.Queue()
    replicas = [spawn.Process(target=replica, args=(postgres_url, number, locked, start, both_found_it_empty,
                                                    reports)) for number in range(2)]
    for process in replicas:
        process.start()
    for process in replicas:
        process.join(JOIN_SECONDS)
    assert [process.exitcode for process in replicas] == [0, 0]
    reported = [reports.get(timeout=JOIN_SECONDS) for _ in range(reports.qsize())]
    errors = [text for what, text in reported if what == "error"]
    if locked:
        assert not errors, errors
        assert sorted(number for what, number in reported if what == "lock") == [0, 1]
    else:
        [error] = errors
        assert "alembic_version" in error or "duplicate key" in error, error
    engine = make_engine(postgres_url)
    try:
        assert schema_revision(engine) == head_revision()
        with engine.connect() as connection:
            assert connection.scalar(text("SELECT count(*) FROM alembic_version")) == 1
        assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
