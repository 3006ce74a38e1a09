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
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Insert, Select, Update, create_engine, event, select
from sqlalchemy.engine import Dialect, Engine, make_url
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
        # On the driver's connection: through exec_driver_sql this statement cost a fifth of an empty transaction.
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


class WriteLockBusy(Exception):
    """Another transaction holds SQLite's write lock, and :meth:`Database.write_without_waiting` did not wait."""


class Database:
    """Session factory with three kinds of transaction: :meth:`read`, :meth:`write` and, on an SQLite file,
    :meth:`write_without_waiting`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        database = self.engine.url.database
        self._unwaiting_engine = (make_engine(url, busy_timeout_ms=0)
                                  if self.is_sqlite and database and database != ":memory:" else None)
        self._loop_connection: Any = None  # the unwaiting engine's DBAPI connection, held for the event loop
        self._loop_lock = threading.Lock()

    @property
    def writes_without_waiting(self) -> bool:
        """Whether :meth:`write_without_waiting` is available (an SQLite file; PostgreSQL's locks always wait)."""
        return self._unwaiting_engine is not None

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

    @contextmanager
    def write_without_waiting(self) -> Iterator[DriverTransaction]:
        """A write transaction for the event loop, which must never wait for a lock: its ``BEGIN IMMEDIATE`` runs on
        one sqlite3 connection held for the loop, with a busy timeout of 0 (and the engine's other PRAGMAs:
        ``synchronous=FULL``), and raises :class:`WriteLockBusy` at once when another transaction holds SQLite's
        write lock (the caller then runs :meth:`write` in a worker thread); also while another thread's loop uses
        that connection. Once the lock is held, a WAL transaction's statements and commit wait for no other lock
        (the commit's auto-checkpoint is passive and skips what readers use), so the loop blocks only for the
        statements and the commit's ``fdatasync``. No Session, pool checkout or SQLAlchemy transaction: an empty
        Session write transaction cost ~0.5 ms of SQLAlchemy against ~0.05 ms for ``BEGIN IMMEDIATE`` and
        ``COMMIT`` on the driver (docs/performance.md)."""
        if self._unwaiting_engine is None or not self._loop_lock.acquire(blocking=False):
            raise WriteLockBusy
        try:
            if self._loop_connection is None:
                self._loop_connection = self._unwaiting_engine.raw_connection()
            driver = self._loop_connection.driver_connection
            try:
                driver.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise WriteLockBusy from None
                raise
            transaction = DriverTransaction(driver, self._unwaiting_engine.dialect)
            try:
                yield transaction
                transaction.commit()
            except BaseException:
                if driver.in_transaction:
                    driver.rollback()
                raise
        finally:
            self._loop_lock.release()

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
        if self._unwaiting_engine is not None:
            with self._loop_lock:  # after the loop's transaction, if one runs
                if self._loop_connection is not None:
                    self._loop_connection.close()
                    self._loop_connection = None
            self._unwaiting_engine.dispose()


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


class DriverTransaction:
    """:meth:`Database.write_without_waiting`'s transaction: the sqlite3 connection in ``BEGIN IMMEDIATE``. It answers
    what the query path asks of a Session (:meth:`connection` for :class:`Prepared`, :meth:`commit`), nothing more."""

    def __init__(self, driver_connection: sqlite3.Connection, dialect: Dialect) -> None:
        self.driver_connection, self.dialect = driver_connection, dialect

    def connection(self) -> DriverTransaction:
        return self

    def commit(self) -> None:
        self.driver_connection.commit()  # durable before it returns: the connection's synchronous=FULL


class Prepared:
    """A hot-path statement (the query path's): on SQLite it is compiled once to SQL and run on the DBAPI
    cursor of the caller's transaction (the sqlite3 module keeps it prepared in its per-connection cache), with the
    columns' own SQLAlchemy type processing for parameters and results; elsewhere it runs as the Core statement.

    Measured on SQLite: a Core ``execute`` of the query path's context select costs ~160 µs against ~15 µs on the
    cursor (most of it SQLAlchemy's per-execution bookkeeping, not SQL), and the path runs six of them.
    :meth:`run` answers a select's rows (named tuples), an insert's new id, or None for an update. An insert names
    its ``columns`` and must be given every one of them (no Python-side defaults are applied here)."""

    def __init__(self, statement: Select | Insert | Update, columns: Sequence[str] = ()) -> None:
        self.statement = statement
        self.columns = tuple(columns)
        self._core = (statement.returning(*statement.table.primary_key, sort_by_parameter_order=True)
                      if isinstance(statement, Insert) else statement)
        self._sqlite: _CompiledForSqlite | None = None

    def run(self, connection: Connection | DriverTransaction, parameters: dict[str, Any]) -> Any:
        if connection.dialect.name != "sqlite":  # a DriverTransaction is SQLite's only
            result = cast(Connection, connection).execute(self._core, parameters)
            return result.all() if isinstance(self.statement, Select) else (
                result.scalar_one() if isinstance(self.statement, Insert) else None)
        compiled = self._sqlite or self._compile(connection.dialect)
        driver = (connection.driver_connection if isinstance(connection, DriverTransaction)
                  else cast(sqlite3.Connection, connection.connection.driver_connection))
        cursor = driver.cursor()
        try:
            cursor.execute(compiled.sql, [process(parameters[name]) if process else parameters[name]
                                          for name, process in compiled.parameters])
            if compiled.row is None:
                return cursor.lastrowid if isinstance(self.statement, Insert) else None
            return [compiled.row._make(process(value) if process else value
                                       for value, process in zip(raw, compiled.results, strict=True))
                    for raw in cursor.fetchall()]
        finally:
            cursor.close()

    def run_many(self, connection: Connection | DriverTransaction, rows: list[dict[str, Any]]) -> list[int]:
        """The new ids of an insert of ``rows``, in their order (one statement elsewhere, prepared rows on SQLite)."""
        if connection.dialect.name != "sqlite":  # a DriverTransaction is SQLite's only
            return list(cast(Connection, connection).execute(self._core, rows).scalars())
        return [self.run(connection, row) for row in rows]

    def _compile(self, dialect: Dialect) -> _CompiledForSqlite:
        compiled = self.statement.compile(dialect=dialect, column_keys=list(self.columns) or None)
        if compiled.insert_prefetch or compiled.update_prefetch:
            raise ValueError("a prepared statement must be given every column; it applies no Python defaults")
        binds = compiled.binds

        def processor(type_: Any, kind: str) -> Callable[[Any], Any] | None:
            impl = type_.dialect_impl(dialect)
            return impl.bind_processor(dialect) if kind == "bind" else impl.result_processor(dialect, None)

        if compiled.positiontup is None:  # SQLite's paramstyle (qmark) is positional: never None there
            raise ValueError(f"a prepared statement needs a positional paramstyle, not {dialect.paramstyle!r}")
        parameters = tuple((name, processor(binds[name].type, "bind")) for name in compiled.positiontup)
        row: type[tuple[Any, ...]] | None = None
        results: tuple[Callable[[Any], Any] | None, ...] = ()
        if isinstance(self.statement, Select):
            selected = self.statement.selected_columns
            # One assignment of both: mypy takes a lone ``row = namedtuple(...)`` for a class definition.
            row, results = (namedtuple("PreparedRow", selected.keys()),  # its fields are the statement's
                            tuple(processor(column.type, "result") for column in selected))
        self._sqlite = _CompiledForSqlite(compiled.string, parameters, row, results)
        return self._sqlite


_CompiledForSqlite = namedtuple("_CompiledForSqlite", "sql parameters row results")


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
