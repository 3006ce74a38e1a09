"""The query path's transaction runs in a worker thread: a query that waits for SQLite's write lock leaves the event
loop free to answer other requests."""

from __future__ import annotations

import os
import sys
import threading
import time

from curator_service.persistence.db import Database
from tests.curator_service.conftest import bearer, modeler_key, register, release

# seconds: generous, for a loaded machine; the waits below end as soon as their condition holds
WAIT = int(os.environ.get("Q_WAIT", "300"))


def hold_write_lock(db: Database) -> tuple[threading.Event, threading.Thread]:
    """A thread holding ``db``'s write lock (an open write transaction) until the returned event is set."""
    held, release_ = threading.Event(), threading.Event()

    def hold() -> None:
        with db.write():
            held.set()
            release_.wait(WAIT)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(WAIT)
    return release_, holder


def in_a_thread(function: str) -> bool:
    """Whether some thread is inside ``function``."""
    def frames(frame):
        while frame is not None:
            yield frame
            frame = frame.f_back
    return any(f.f_code.co_name == function for top in sys._current_frames().values() for f in frames(top))


def poll(condition) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_query_meeting_a_held_lock_waits_in_a_thread_while_the_loop_serves_others(client):
    rel = release(client, register(client)["id"])
    key = modeler_key(client, [rel["id"]], max_queries=10)
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=bearer(key["token"])).json()
    url = f"/v1/sessions/{session['id']}/queries"
    release_, holder = hold_write_lock(client.app.state.db)

    answered: list = []
    querier = threading.Thread(target=lambda: answered.append(
        client.post(url, json={"indices": [3], "request_id": "r1"}, headers=bearer(key["token"]))), daemon=True)
    querier.start()
    try:
        assert poll(lambda: in_a_thread("_create_queries"))
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
