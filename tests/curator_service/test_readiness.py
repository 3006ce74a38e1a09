"""``/ready``: 200 only while the database answers and the job workers accept work; 503 names what is down."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text


def test_ready_when_the_database_answers_and_the_workers_run(client):
    response = client.get("/ready", headers={})  # no token needed: an orchestrator probes it
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "database_writes": "ok",
                                                             "jobs": "ok"}}


def test_unavailable_names_the_database_and_never_its_error(make_client):
    client = make_client()
    db = client.app.state.db
    path = Path(db.engine.url.database)
    db.dispose()  # its connections would write their cached pages back on closing
    # The race a CI run lost (200): the job runner's reaper pools a connection after the dispose, and a pooled
    # connection answers from its cache after the file is replaced. Make it certain; the probe must connect afresh.
    with db.read() as session:
        session.execute(text("SELECT 1"))
    path.write_bytes(b"this is not a database " * 512)  # a corrupted or replaced file
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    response = client.get("/ready")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"database": "unavailable",
                                                                   "database_writes": "unavailable", "jobs": "ok"}}
    assert str(path) not in response.text and "not a database" not in response.text


def test_unavailable_when_the_job_workers_stopped(client):
    client.app.state.jobs.shutdown()
    response = client.get("/ready")
    assert response.status_code == 503 and response.json()["checks"] == {"database": "ok", "database_writes": "ok",
                                                                   "jobs": "unavailable"}
    assert client.get("/health").status_code == 200  # still alive: liveness and readiness differ
