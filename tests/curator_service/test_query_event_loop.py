"""The query path runs its transaction on the event loop only when SQLite's write lock is free, and never waits for
it there: ``Database.write_without_waiting`` refuses at once while another transaction holds the lock,
and a query that meets a held lock is answered from a worker thread while the loop keeps serving other requests."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from sqlalchemy import text

from curator_service.persistence.db import Database, WriteLockBusy, migrate
from tests.curator_service.conftest import bearer

# seconds: generous, for a loaded machine; the waits below end as soon as their condition holds
WAIT = int(__import__("os").environ.get("Q_WAIT", "300"))


INSERT_EVENT = "INSERT INTO audit_events (actor, action, created_at) VALUES ('t', ?, '2026-01-01')"


def hold_write_lock(db: Database) -> tuple[threading.Event, threading.Event, threading.Thread]:
    """A thread holding ``db``'s write lock (an open write transaction) until ``release`` is set."""
    held, release_ = threading.Event(), threading.Event()

    def hold() -> None:
        with db.write():
            held.set()
            release_.wait(WAIT)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(WAIT)
    return held, release_, holder


def in_worker_thread(function: str) -> bool:
    """Whether a thread is inside ``function`` called with ``on_event_loop=False`` (the query's fallback, waiting
    for the lock in a worker thread)."""
    def frames(frame):
        while frame is not None:
            yield frame
            frame = frame.f_back
    return any(f.f_code.co_name == function and f.f_locals.get("on_event_loop") is False
               for top in sys._current_frames().values() for f in frames(top))


def poll(condition) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_write_without_waiting_refuses_while_another_transaction_holds_the_lock(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'pobo.db'}")
    migrate(db.engine)
    try:
        assert db.writes_without_waiting
        _, release_, holder = hold_write_lock(db)
        with pytest.raises(WriteLockBusy), db.write_without_waiting() as transaction:
            transaction.driver_connection.execute(INSERT_EVENT, ("never written",))
        release_.set()
        holder.join(WAIT)

        # the positive control: with the lock free it writes and commits
        with db.write_without_waiting() as transaction:
            transaction.driver_connection.execute(INSERT_EVENT, ("written",))
        with db.read() as session:
            actions = session.execute(text("SELECT action FROM audit_events WHERE actor = 't'")).scalars().all()
        assert actions == ["written"]
    finally:
        db.dispose()


def test_the_loop_transaction_commits_durably_rolls_back_on_error_and_runs_one_at_a_time(tmp_path):
    """The loop's transaction runs on one sqlite3 connection held for it (no Session): it must keep the engine's
    PRAGMAs (a commit on disk before the response: synchronous=FULL), never wait (busy timeout 0, and a second
    transaction while it is in use is refused, not queued), and leave nothing behind when its block raises."""
    db = Database(f"sqlite:///{tmp_path / 'pobo.db'}")
    migrate(db.engine)
    try:
        with db.write_without_waiting() as transaction:
            driver = transaction.driver_connection
            pragmas = [driver.execute(f"PRAGMA {name}").fetchone()[0]
                       for name in ("synchronous", "busy_timeout", "journal_mode", "foreign_keys")]
            assert pragmas == [2, 0, "wal", 1]  # 2: FULL
            with pytest.raises(WriteLockBusy), db.write_without_waiting():
                pass
            driver.execute(INSERT_EVENT, ("committed",))
        with pytest.raises(RuntimeError), db.write_without_waiting() as transaction:
            transaction.driver_connection.execute(INSERT_EVENT, ("rolled back",))
            raise RuntimeError
        with db.write_without_waiting() as transaction:  # the refusal's path: commit, then the error leaves
            transaction.driver_connection.execute(INSERT_EVENT, ("committed, then refused",))
            transaction.commit()
        with db.read() as session:
            actions = session.execute(text("SELECT action FROM audit_events WHERE actor = 't'")).scalars().all()
        assert actions == ["committed", "committed, then refused"]
    finally:
        db.dispose()


def test_an_in_memory_database_or_postgresql_never_writes_on_the_event_loop():
    db = Database("sqlite://")
    try:
        assert not db.writes_without_waiting
        with pytest.raises(WriteLockBusy), db.write_without_waiting():
            pass
    finally:
        db.dispose()


def test_a_query_meeting_a_held_lock_waits_in_a_thread_while_the_loop_serves_others(client, open_session):
    opened = open_session(client)
    key, session = opened.key, opened.session
    url = f"/v1/sessions/{session['id']}/queries"
    db: Database = client.app.state.db
    _, release_, holder = hold_write_lock(db)

    answered: list = []
    querier = threading.Thread(target=lambda: answered.append(
        client.post(url, json={"indices": [3], "request_id": "r1"}, headers=bearer(key["token"]))), daemon=True)
    querier.start()
    try:
        assert poll(lambda: in_worker_thread("_create_queries"))
        # the loop is free while the query waits for the lock: a read on another route is answered
        assert client.get(f"/v1/sessions/{session['id']}", headers=bearer(key["token"])).json()["used"] == 0
        assert not answered
    finally:
        release_.set()
        holder.join(WAIT)
        querier.join(WAIT)
    assert answered[0].status_code == 200, answered[0].text
    assert [r["index"] for r in answered[0].json()["results"]] == [3]
    assert client.get(f"/v1/sessions/{session['id']}").json()["used"] == 1
