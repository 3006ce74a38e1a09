"""The long Schemathesis run (CI runs a shorter one): no 5xx and no response the OpenAPI does not document,
as a modeler and as the admin, on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200)]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_long_fuzzing_run_finds_no_server_error_and_no_schema_violation(backend, request, tmp_path, job_cluster):
    command = [sys.executable, str(ROOT / "tools" / "fuzz_api.py"), "--examples", "400", "--seed", "1",
               "--min-requests", "20000", "--findings", str(tmp_path / "findings.md")]
    if backend == "postgres":
        from tests.curator_service.conftest import reset_postgres

        url = request.getfixturevalue("postgres_url")
        reset_postgres(url)
        command += ["--database-url", url]
    env = {**os.environ, "POBO_FUZZ_STRICT": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    report = (tmp_path / "findings.md").read_text() if (tmp_path / "findings.md").exists() else ""
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-2000:]}\n{report[:6000]}"
