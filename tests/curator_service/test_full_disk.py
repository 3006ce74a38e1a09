"""A database that cannot write (a full disk, a read-only database) is answered 503 with a sentence, for writes and
for reads that write an audit row alike, and ``/ready`` says so; once space is back nothing was lost.

SQLite: a real full disk, the data directory on a small tmpfs filled to the last block (where the machine lets the
test mount one). PostgreSQL: a database switched to read-only (a real server state), and the server's own
``disk_full`` error injected into the driver's statements (filling the server's disk is not the test's to do)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from tests.curator_service.conftest import assert_error, bearer

SENTENCE = "cannot write"


def fill(directory: Path) -> Path:
    """Writes a file into ``directory`` until its file system has no block left; returns it."""
    ballast = directory / "ballast"
    fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    try:
        while True:  # the last partial block
            os.write(fd, b"\0" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)
    return ballast


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 24 MiB tmpfs mounted for the test (root only), unmounted after it."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the PostgreSQL tests inject the error")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _writes_and_audited_reads(client, dataset: dict, key: dict, session: dict) -> list:
    return [
        client.post("/v1/keys", json={"name": "later", "release_ids": [1], "max_queries": 1}),  # a write
        client.get(f"/v1/datasets/{dataset['id']}/row-order"),  # a read that writes its audit row
        client.get(f"/v1/releases/{key['release_id']}/inputs"),  # likewise (released inputs are audited)
        client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]},
                    headers=bearer(key["token"])),  # the query path
        client.get("/v1/datasets", headers=bearer("not-a-token")),  # a refused caller's auth.failed row
    ]


def _world(opened):
    return opened.dataset, {**opened.key, "release_id": opened.release["id"]}, opened.session


def _unavailable(answers: list) -> None:
    for response in answers:
        assert_error(response, 503, "unavailable", SENTENCE, "nothing of this request was stored")


def test_a_full_disk_is_a_503_on_writes_and_audited_reads_and_ready_says_so_sqlite(make_client, small_disk,
                                                                                  open_session):
    client = make_client(data_dir=small_disk)
    dataset, key, session = _world(open_session(client))
    keys = len(client.get("/v1/keys").json())
    ballast = fill(small_disk)
    _unavailable(_writes_and_audited_reads(client, dataset, key, session))
    ready = client.get("/ready")
    assert ready.status_code == 503 and ready.json()["checks"]["database_writes"] == "unavailable", ready.text
    assert ready.json()["checks"]["database"] == "ok"  # it still answers reads
    assert client.get("/health").status_code == 200
    ballast.unlink()
    assert client.get("/ready").status_code == 200
    assert client.post("/v1/keys", json={"name": "later", "release_ids": [1], "max_queries": 1}).status_code == 201
    assert len(client.get("/v1/keys").json()) == keys + 1  # nothing lost, nothing half-written
    assert client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]},
                       headers=bearer(key["token"])).status_code == 200


def _set_read_only(url: str, on: bool) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    database = make_url(url).database
    with engine.connect() as connection:
        connection.execute(text("SET default_transaction_read_only = off"))  # this session's own, to undo it
        change = "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
        connection.execute(text(f'ALTER DATABASE "{database}" {change}'))
    engine.dispose()


def test_a_read_only_database_is_a_503_and_ready_says_so_postgres(make_client, postgres_url, open_session):
    from tests.curator_service.conftest import reset_postgres

    reset_postgres(postgres_url)
    client = make_client(database_url=postgres_url)
    dataset, key, session = _world(open_session(client))
    db = client.app.state.db
    _set_read_only(postgres_url, True)
    try:
        db.engine.dispose()  # new connections get the setting
        _unavailable(_writes_and_audited_reads(client, dataset, key, session))
        ready = client.get("/ready")
        assert ready.status_code == 503 and ready.json()["checks"]["database_writes"] == "unavailable", ready.text
    finally:
        _set_read_only(postgres_url, False)
        db.engine.dispose()
    assert client.get("/ready").status_code == 200
    assert client.post("/v1/keys", json={"name": "later", "release_ids": [1], "max_queries": 1}).status_code == 201


def test_postgres_disk_full_is_a_503(make_client, postgres_url, open_session):
    import psycopg

    from tests.curator_service.conftest import reset_postgres

    reset_postgres(postgres_url)
    client = make_client(database_url=postgres_url)
    dataset, key, session = _world(open_session(client))
    engine = client.app.state.db.engine

    def disk_full(_conn, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            raise psycopg.errors.DiskFull("could not extend file: No space left on device")

    event.listen(engine, "before_cursor_execute", disk_full)
    try:
        _unavailable(_writes_and_audited_reads(client, dataset, key, session))
    finally:
        event.remove(engine, "before_cursor_execute", disk_full)
    assert client.post("/v1/keys", json={"name": "later", "release_ids": [1], "max_queries": 1}).status_code == 201
