"""Fixtures shared by the whole suite, and each test process's one Dask cluster and curator (started on first use)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from shared.datasets.paths import DatasetUnavailable, data_file

if TYPE_CHECKING:
    from curator_service.testing import LocalCurator

# The command-line tools' Rich consoles take their width from COLUMNS when first imported, so without it a test's
# wrapping would depend on which test imported them first (and on how long its temporary paths are).
os.environ.setdefault("COLUMNS", "250")

JOB_WORKERS = 2


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs the suite in two processes) each process gets a PostgreSQL database of
    its own, ``<name>_<worker>`` beside POBO_TEST_POSTGRES_URL's, created here when missing: the PostgreSQL tests
    drop and recreate the schema they start from, which two processes cannot share."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    url = os.environ.get("POBO_TEST_POSTGRES_URL")
    if not worker or not url:
        return
    base = make_url(url)
    own = base.set(database=f"{base.database}_{worker}")
    engine = create_engine(base.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        if connection.scalar(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": own.database}) is None:
            connection.execute(text(f'CREATE DATABASE "{own.database}"'))
    engine.dispose()
    os.environ["POBO_TEST_POSTGRES_URL"] = own.render_as_string(hide_password=False)
WORKER_STOP_SECONDS = 120.0  # Dask gives a worker 5 s to stop, which a loaded machine exceeded (an error at teardown)


@pytest.fixture(scope="session")
def job_cluster():
    """One Dask cluster of two worker processes per test process, started by the first test that asks for it (any
    test that runs a job, directly or through a fixture that makes an app or a curator) and shared by the rest of the
    session: every app in this process uses it (it is the process's embedded cluster,
    :func:`curator_service.jobs.cluster.embedded_cluster`) and so does every ``pobo-curator serve`` subprocess
    started after it (``POBO_DASK_SCHEDULER`` and the cluster's client credentials, ``POBO_DASK_TLS_*``, are
    exported), instead of each starting its own. Workers get the test PostgreSQL password as libpq's
    ``PGPASSWORD`` (only they): tasks carry database URLs without it."""
    from curator_service.jobs.cluster import embedded_cluster

    postgres = os.environ.get("POBO_TEST_POSTGRES_URL")
    password = make_url(postgres).password if postgres else None
    with pytest.MonkeyPatch.context() as patch:  # only the workers, spawned now, inherit it
        if password and "PGPASSWORD" not in os.environ:
            patch.setenv("PGPASSWORD", password)
        cluster = embedded_cluster(JOB_WORKERS)
    credentials = Path(tempfile.mkdtemp(prefix="pobo-test-dask-tls-"))  # 0700
    exported = {"POBO_DASK_SCHEDULER": cluster.scheduler_address}
    for name, pem in (("ca", cluster.security.tls_ca_file), ("cert", cluster.security.tls_client_cert),
                      ("key", cluster.security.tls_client_key)):  # Security.temporary(): PEM text, not paths
        (credentials / f"{name}.pem").write_text(pem)
        exported[f"POBO_DASK_TLS_{name.upper()}_FILE"] = str(credentials / f"{name}.pem")
    os.environ.update(exported)
    # Curator subprocesses: a release answers 201 once stored even on a loaded machine (tests of the 202 path
    # set the wait to 0 themselves).
    os.environ["POBO_RELEASE_WAIT_SECONDS"] = "120"
    yield cluster
    for variable in (*exported, "POBO_RELEASE_WAIT_SECONDS"):
        os.environ.pop(variable, None)
    shutil.rmtree(credentials)
    cluster.sync(stop_workers, list(cluster.workers.values()))  # stopped first, with time to spare; close() finds none
    cluster.close()


async def stop_workers(nannies) -> None:
    """Stops the workers together: each nanny asks its worker to close and waits for it, and on a loaded machine a
    close takes tens of seconds, so the waits overlap instead of adding up."""
    await asyncio.gather(*(nanny.kill(timeout=WORKER_STOP_SECONDS) for nanny in nannies))


@pytest.fixture(scope="session")
def curator(tmp_path_factory, job_cluster) -> Iterator[LocalCurator]:
    """A real curator (``pobo-curator serve`` in a subprocess on a free loopback port) shared by the end-to-end and
    the modeler client's tests, started by the first that asks. Its tests name their datasets and keys apart and
    look only at their own rows of the ledger; the SIGKILL test kills and restarts it on the same port and data."""
    from curator_service.testing import LocalCurator

    server = LocalCurator(tmp_path_factory.mktemp("curator")).start()
    yield server
    server.stop()


def missing_on_ci(reason: str) -> None:
    """A test whose dependency (a browser, an optional extra) is absent: skipped here with ``reason``, failed on CI
    (``CI=true``), whose `.ci/run` installs it, so that a test cannot go silently unrun there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI installs it (.ci/run)")
    pytest.skip(reason)


@pytest.fixture
def shared_data_file():
    """Returns a function that finds a real dataset file, skipping the test with a clear message when absent."""

    def find(name: str):
        try:
            return data_file(name)
        except DatasetUnavailable as exc:
            pytest.skip(str(exc))

    return find


@pytest.fixture
def postgres_url():
    """URL of a real PostgreSQL server for the storage conformance suite (set by .ci/run)."""
    url = os.environ.get("POBO_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("POBO_TEST_POSTGRES_URL is not set; .ci/run starts a PostgreSQL server and sets it")
    return url


def aligned_table(output: str, header: list[str]) -> list[list[str]]:
    """The rows of the plain table under the line naming ``header`` (cells two or more spaces apart): each row one
    line with one cell per column, each cell beginning where its header begins (left) or ending where it ends
    (right), so no column is narrower than its header."""
    lines = output.splitlines()
    [start] = [k for k, line in enumerate(lines) if re.split(r"\s{2,}", line.strip()) == header]
    head = lines[start]
    bounds, at = [], 0
    for name in header:
        at = head.index(name, at)
        bounds.append((at, at + len(name)))
        at += len(name)
    rows = []
    for line in lines[start + 1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(header):
            break
        at = 0
        for cell, (begin, end) in zip(cells, bounds):
            at = line.index(cell, at)
            assert at == begin or at + len(cell) == end, (line, cell, head)
            at += len(cell)
        rows.append(cells)
    return rows
