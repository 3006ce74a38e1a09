"""A real curator (``pobo-curator serve`` in a subprocess on a free loopback port) for the end-to-end tests."""

from __future__ import annotations

import pytest

from curator_service.testing import LocalCurator


@pytest.fixture(scope="session")
def curator(tmp_path_factory, job_cluster) -> LocalCurator:
    """One server for the session; the SIGKILL test kills and restarts it on the same port and data."""
    server = LocalCurator(tmp_path_factory.mktemp("e2e-curator")).start()
    yield server
    server.stop()
