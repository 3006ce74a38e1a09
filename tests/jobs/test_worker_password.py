"""A job's task carries the database URL without its password (Dask's messages are unencrypted unless TLS is
configured); the worker puts its own password back."""

from curator_service.jobs.worker import with_password, without_password

URL = "postgresql+psycopg://pobo:s3cret@db.internal:5432/pobo"
BARE = "postgresql+psycopg://pobo@db.internal:5432/pobo"


def test_the_task_url_has_no_password():
    assert without_password(URL) == BARE and "s3cret" not in without_password(URL)
    in_query = "postgresql+psycopg://pobo@db.internal:5432/pobo?password=s3cret&sslpassword=k3y&sslmode=require"
    assert without_password(in_query) == BARE + "?sslmode=require"


def test_the_worker_reads_its_password_file(monkeypatch, tmp_path):
    secret = tmp_path / "db_password"
    secret.write_text("from-file\n")
    monkeypatch.setenv("POBO_DATABASE_PASSWORD_FILE", str(secret))
    assert with_password(BARE) == BARE.replace("pobo@", "pobo:from-file@")


def test_the_worker_takes_the_password_of_its_own_url_for_the_same_database_only(monkeypatch):
    monkeypatch.delenv("POBO_DATABASE_PASSWORD_FILE", raising=False)
    monkeypatch.setenv("POBO_DATABASE_URL", URL)
    assert with_password(BARE) == URL
    other = "postgresql+psycopg://pobo@elsewhere:5432/pobo"
    assert with_password(other) == other  # then libpq's PGPASSWORD or ~/.pgpass, if any
