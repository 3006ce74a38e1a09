"""Database engine, transactions and row locks.

SQLite (the embedded default) runs in WAL mode with ``synchronous=FULL`` (a commit is on disk before
the response leaves) and a busy timeout. Write transactions start with ``BEGIN IMMEDIATE``, which takes
SQLite's single write lock up front: writers queue instead of failing on a stale snapshot, and a
read-check-write sequence (the ledger's budget check) cannot interleave with another writer. On
PostgreSQL the same sequences lock the row they depend on with ``SELECT … FOR UPDATE``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, event, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

from shared.api.errors import ApiError

Row = TypeVar("Row")

SQLITE_BUSY_TIMEOUT_MS = 60_000
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
_WRITE = "pobo_write"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def make_engine(url: str, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS) -> Engine:
    """An engine for ``url``; SQLite files get WAL, ``synchronous=FULL``, foreign keys and a busy timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=40)  # uvicorn runs 40 threads
    if parsed.database and parsed.database != ":memory:":
        make_private(Path(parsed.database))
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin (see "begin" below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get(_WRITE, False)
        # On the driver's connection, not through exec_driver_sql: SQLAlchemy's per-statement work is not needed here.
        connection.connection.driver_connection.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def make_private(database: Path) -> None:
    """The embedded database holds raw rows: its file and its -wal, -shm and -journal files are made 0600
    (SQLite creates the latter with the database file's mode), and a directory created for it 0700."""
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(database, os.O_CREAT | os.O_WRONLY, 0o600))  # an empty file is an empty SQLite database
    for path in (database, *(database.with_name(database.name + s) for s in SQLITE_SIDE_FILES)):
        if path.exists():
            path.chmod(0o600)


MIGRATION_LOCK = 0x706F626F  # "pobo": the PostgreSQL advisory lock that serialises replicas' migrations


def migrate(engine: Engine) -> None:
    """Brings the schema to the newest Alembic revision (run at every start; a no-op when current).

    On PostgreSQL the transaction first takes an advisory lock, so replicas starting together migrate one after
    the other (the second finds the schema current) instead of racing to create the same tables. SQLite's
    ``BEGIN`` of a DDL transaction already serialises them."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def schema_revision(engine: Engine) -> str | None:
    """The database's current Alembic revision (None: never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


class Database:
    """Session factory with two kinds of transaction: :meth:`read` and :meth:`write`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction (a consistent snapshot; never blocks writers under WAL)."""
        with self._sessions() as session:  # closing ends the transaction and keeps loaded rows readable
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction, committed when the block ends without an exception, rolled back otherwise."""
        with self._sessions() as session:
            session.connection(execution_options={_WRITE: True})
            yield from _committed(session)

    def answers(self) -> bool:
        """Whether a new connection opens and reads the schema's revision: what a readiness probe needs to know.
        A fresh connection, not a pooled one, because a pooled SQLite connection answers from its cache even
        after its file was replaced or corrupted (and a pool that cannot connect any more is not ready)."""
        def read(cursor: Any) -> bool:
            cursor.execute("SELECT version_num FROM alembic_version")
            cursor.fetchall()
            return True

        return self._on_fresh_connection(read)

    def accepts_writes(self) -> bool:
        """Whether a new connection commits a write (rewriting the schema's revision as it is): false on a full disk
        or a read-only file system, where every request that writes (an audit row included) would fail. Another
        writer holding the lock past :data:`PROBE_LOCK_TIMEOUT_MS` means the database is writing: true."""
        def write(cursor: Any) -> bool:
            if self.is_sqlite:
                cursor.execute(f"PRAGMA busy_timeout={PROBE_LOCK_TIMEOUT_MS}")
                cursor.execute("BEGIN IMMEDIATE")
            else:
                cursor.execute(f"SET LOCAL lock_timeout = {PROBE_LOCK_TIMEOUT_MS}")
            cursor.execute("UPDATE alembic_version SET version_num = version_num")
            cursor.connection.commit()
            return True

        return self._on_fresh_connection(write, busy_means=True)

    def _on_fresh_connection(self, probe: Callable[[Any], bool], busy_means: bool = False) -> bool:
        """``probe(cursor)`` on a connection of a new pool (same creator and connect-time PRAGMAs, none of the
        pooled connections); False when it raises (its text may name a host or user: never shown), ``busy_means``
        when it raised because a lock was held."""
        pool = self.engine.pool.recreate()
        try:
            connection = pool.connect()
            try:
                cursor = connection.cursor()
                try:
                    return probe(cursor)
                except Exception as exc:
                    if _lock_busy(exc):
                        return busy_means
                    raise
                finally:
                    driver = connection.driver_connection  # None once the connection is closed or invalidated
                    if self.is_sqlite and driver is not None and driver.in_transaction:
                        driver.rollback()
            finally:
                connection.close()
        except Exception:  # noqa: BLE001 -- any DBAPI error means not ready
            return False
        finally:
            pool.dispose()

    def dispose(self) -> None:
        self.engine.dispose()


PROBE_LOCK_TIMEOUT_MS = 2_000
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that expired


def _lock_busy(exc: BaseException) -> bool:
    """Whether ``exc`` says another transaction held the lock a probe waited for (SQLite's busy, PostgreSQL's
    lock_not_available)."""
    if isinstance(exc, sqlite3.OperationalError):
        return exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return getattr(exc, "sqlstate", None) == LOCK_NOT_AVAILABLE


def _committed(session: Session) -> Iterator[Session]:
    """Yields ``session``, then commits it, or rolls it back if the block raised."""
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise


def not_found(model: type, row_id: int) -> ApiError:
    """The one 404 of the service: for a row that does not exist and for one the caller may not see alike."""
    noun = getattr(model, "noun", "row")
    return ApiError(404, "not_found", f"there is no {noun} with id {row_id} that you may see; list them to see "
                    "the valid ids")


def get_or_404(session: Session, model: type[Row], row_id: int, *, lock: bool = False) -> Row:
    """The row of ``model`` with ``row_id`` (locked ``FOR UPDATE`` if asked) or a 404 naming it."""
    statement = select(model).where(model.id == row_id)  # type: ignore[attr-defined]
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).one_or_none()
    if row is None:
        raise not_found(model, row_id)
    return row


def revision(message: str) -> None:
    """Autogenerates a migration from the difference between :mod:`.models` and the newest revision
    (a developer tool: it builds a scratch SQLite database at head and compares)."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        engine = make_engine(f"sqlite:///{scratch}/scratch.db")
        migrate(engine)
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.revision(config, message=message, autogenerate=True)
        engine.dispose()
