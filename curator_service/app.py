"""The app factory: ``create_app(settings)`` builds the FastAPI application (migrations run at start)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Response

from curator_service import __version__
from curator_service.admission import AdmissionMiddleware, AuthThrottle
from curator_service.console import install_console
from curator_service.errors import ERROR_RESPONSES, GuardMiddleware, install_error_handlers
from curator_service.jobs.runner import JobRunner
from curator_service.openapi import document as openapi_document
from curator_service.persistence.blobs import TableCache
from curator_service.persistence.db import Database, migrate
from curator_service.routers import ROUTERS, sessions
from curator_service.routers.auth import audit_refusals
from curator_service.services.job_kinds import KINDS
from curator_service.settings import Settings
from shared.api.schemas import Health, Ready

DESCRIPTION = """The curator's side of pobo (private outsourced Bayesian optimization).

The curator registers a table, makes a release of its inputs (certified `gaussian`, or the uncertified
`po-gp-ucb` when the operator enables it), issues modeler keys, and answers index-only queries. Every
error is `{"detail": sentence, "code": machine code}`. Authenticate with `Authorization: Bearer <token>`.
"""


def make_data_dir_private(data_dir: Path) -> None:
    """The data directory holds the embedded database and the admin token: owner only (0700)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    data_dir.chmod(0o700)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service for ``settings`` (default: from the environment). The database is migrated here.

    ``app.state`` holds what the services need: ``settings``, ``db`` (:class:`Database`), ``tables`` (the decoded
    table cache), ``jobs`` (the job runner, which sends jobs to the Dask cluster) and ``auth_throttle`` (the back-off
    after failed authentications, :mod:`curator_service.admission`)."""
    settings = settings or Settings.from_env()
    make_data_dir_private(settings.data_dir)
    db = Database(settings.database_url)
    migrate(db.engine)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.jobs.recover()
        yield
        app.state.jobs.shutdown()
        db.dispose()

    app = FastAPI(
        title="pobo curator service", version=__version__, description=DESCRIPTION, lifespan=lifespan,
        # /docs comes with the console, vendored (ReDoc would need a CDN)
        responses=ERROR_RESPONSES, docs_url=None, redoc_url=None,
    )
    app.state.settings = settings
    app.state.db = db
    app.state.tables = TableCache()
    app.state.jobs = JobRunner(app, KINDS)
    app.state.auth_throttle = AuthThrottle(settings.auth_failures_allowed)
    install_error_handlers(app)
    audit_refusals(app)
    # Guard is outermost (it answers whatever an inner layer raises); admission refuses before a body is read.
    app.add_middleware(AdmissionMiddleware, settings=settings, throttle=app.state.auth_throttle)
    app.add_middleware(GuardMiddleware)

    @app.get("/health", response_model=Health, tags=["health"], summary="Liveness (no authentication)")
    def health() -> Health:
        """Liveness: answers while the service runs, with its version. Needs no token."""
        return Health(version=__version__)

    @app.get("/ready", response_model=Ready, tags=["health"],
             summary="Readiness: the database answers and accepts a write, and the job workers run (no authentication)",
             responses={503: {"model": Ready, "description": "A dependency is unavailable; the body says which."}})
    def ready(response: Response) -> Ready:
        """Readiness for a load balancer or orchestrator: 200 when the database answers a query and commits a write
        (a full disk does not) and the job workers accept work, else 503 naming the dependency (never the error,
        which can name a host or user)."""
        answers = db.answers()
        checks = {"database": "ok" if answers else "unavailable",
                  "database_writes": "ok" if answers and db.accepts_writes() else "unavailable",
                  "jobs": "ok" if app.state.jobs.accepting else "unavailable"}
        ok = all(value == "ok" for value in checks.values())
        response.status_code = 200 if ok else 503
        return Ready(status="ready" if ok else "unavailable", checks=checks)

    # Starlette tries routes in order until one matches: the modeler's query path (a request per GP-UCB iteration)
    # goes first, so a query is not matched against the curator's routers first (docs/performance.md, route matching).
    for router in sorted(ROUTERS, key=lambda router: router is not sessions.router):
        app.include_router(router)
    install_console(app)

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
