"""``pobo-curator serve`` and ``upgrade``: run the service, or only bring its database schema up to date."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from curator_service.cli.common import USAGE_ERROR, console, fail
from curator_service.settings import ADMIN_TOKEN_FILE, Settings

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

DataDir = Annotated[Path | None, typer.Option(help="Where the embedded database lives (POBO_DATA_DIR).")]
DatabaseUrl = Annotated[str | None, typer.Option(help="SQLAlchemy URL, e.g. postgresql+psycopg://… "
                                                 "(POBO_DATABASE_URL; default: SQLite in the data dir).")]


def _admin_token(data_dir: Path) -> str:
    """POBO_ADMIN_TOKEN, or a token kept in ``<data dir>/admin_token`` (created once, mode 0600)."""
    path = data_dir / ADMIN_TOKEN_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def _settings(**overrides: object) -> Settings:
    """The settings from the environment, or the command ends with their sentences (exit 2): it never starts on
    settings it refused."""
    try:
        return Settings.from_env(None, **overrides)
    except ValidationError as exc:
        fail("cannot start: " + "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()),
             USAGE_ERROR)


def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    forwarded_allow_ips: Annotated[str | None, typer.Option(
        help="The reverse proxy's address(es), comma-separated: only these peers' X-Forwarded-For is believed "
             "(POBO_FORWARDED_ALLOW_IPS; default: none, the TCP peer is the client).")] = None,
    access_log: Annotated[bool, typer.Option(help="Log every HTTP request (uvicorn's access log). Off by default: "
                                             "the audit trail records every query and refusal, and the line costs each "
                                             "query.")] = False,
) -> None:
    """Run the curator service; jobs run on a local Dask cluster of worker processes started beside it
    (POBO_JOB_WORKERS), or on the cluster POBO_DASK_SCHEDULER names."""
    os.umask(0o077)  # everything the service writes (database, WAL, admin token) is for its owner only

    from curator_service.app import create_app

    given = {"data_dir": data_dir, "database_url": database_url, "forwarded_allow_ips": forwarded_allow_ips}
    settings = _settings(**given)
    if settings.admin_token is None:
        settings = _settings(**given, admin_token=_admin_token(settings.data_dir))
        console.print("admin token: POBO_ADMIN_TOKEN is unset, using the one in "
                      f"{settings.data_dir / ADMIN_TOKEN_FILE}")
    console.print(f"pobo curator on http://{host}:{port} (mode {settings.mode}, "
                  f"uncertified mechanisms {'enabled' if settings.allow_uncertified_mechanisms else 'disabled'})")
    # The embedded workers inherit this environment and need no admin token (the settings hold it from here on).
    for variable in ("POBO_ADMIN_TOKEN", "POBO_ADMIN_TOKEN_FILE"):
        os.environ.pop(variable, None)
    app = create_app(settings)
    if settings.dask_scheduler is None:  # the embedded cluster starts with the service, not with its first job
        from curator_service.jobs.cluster import start_embedded_cluster

        start_embedded_cluster(settings.job_workers, app.state.jobs.preload)
        console.print(f"jobs: {settings.job_workers} local Dask worker processes (mutual TLS on loopback), starting "
                      "(/ready says when)")
    else:
        from curator_service.jobs.cluster import PLAINTEXT_WARNING

        console.print(f"jobs: the Dask cluster at {settings.dask_scheduler}")
        if settings.dask_allow_plaintext and settings.dask_scheduler.startswith("tcp://"):
            console.print("WARNING: " + PLAINTEXT_WARNING % settings.dask_scheduler)
    if settings.forwarded_allow_ips:
        console.print(f"X-Forwarded-For believed from {settings.forwarded_allow_ips} only")
    import uvicorn

    uvicorn.Server(server_config(app, settings, host, port, access_log=access_log)).run()


def server_config(app: FastAPI, settings: Settings, host: str, port: int, *, access_log: bool = False,
                  log_level: str = "info") -> uvicorn.Config:
    """How ``serve`` runs the app under uvicorn. Proxy headers (``X-Forwarded-For``, ``X-Forwarded-Proto``) are
    believed only from the peers ``POBO_FORWARDED_ALLOW_IPS`` names: uvicorn's own default believes any loopback
    peer, so a caller on the host could name any client address it liked and escape the back-off."""
    import uvicorn

    trusted = settings.forwarded_allow_ips
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=access_log,
                          proxy_headers=bool(trusted), forwarded_allow_ips=trusted or [])


def upgrade(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """Bring the database schema to the newest revision and stop (serve does this at every start too)."""
    os.umask(0o077)

    from curator_service.persistence.db import Database, migrate, schema_revision

    settings = Settings.from_env(data_dir=data_dir, database_url=database_url)
    db = Database(settings.database_url)
    try:
        migrate(db.engine)
        console.print(f"database schema at revision {schema_revision(db.engine)}")
    finally:
        db.dispose()
