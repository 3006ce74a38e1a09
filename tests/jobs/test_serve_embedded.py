"""``pobo-curator serve`` with no ``POBO_DASK_SCHEDULER`` starts its own Dask cluster of worker processes (no extra
command), runs a job there, and takes the workers with it when it stops (the rest of the suite shares one cluster)."""

from __future__ import annotations

import time

import httpx
import numpy as np
import psutil
import pytest

from curator_service.testing import LocalCurator

SCALING = {"kind": "bounds", "lower": [0.0, 0.0], "upper": [1.0, 1.0], "diameter": 1}


@pytest.mark.slow  # a server start with its own cluster: 20-40 s on the shared 2-core machine
def test_serve_starts_its_own_workers_runs_a_job_there_and_stops_them(tmp_path):
    curator = LocalCurator(tmp_path, env={"POBO_DASK_SCHEDULER": "", "POBO_JOB_WORKERS": "2"}).start()
    try:
        assert "jobs: 2 local Dask worker processes (mutual TLS on loopback), starting" in curator.log_tail()
        deadline = time.monotonic() + 120
        while httpx.get(f"{curator.url}/ready").status_code != 200:  # ready once the workers are up
            assert time.monotonic() < deadline, curator.log_tail()
            time.sleep(0.5)
        workers = [p for p in psutil.Process(curator.process.pid).children(recursive=True)
                   if "spawn_main" in " ".join(p.cmdline())]
        # WORKER_NICENESS above the service's own (os.nice is relative): the API keeps the CPU first
        expected = min(psutil.Process(curator.process.pid).nice() + 10, 19)
        assert len(workers) == 2 and all(p.nice() == expected for p in workers)
        X = np.random.default_rng(0).uniform(size=(30, 2))
        dataset = curator.register_table("t", X, ["a", "b"], evaluator={"kind": "column", "column": "y"},
                                         budget=(5.0, 1e-3), scaling=SCALING, extra_columns={"y": X[:, 0]})
        release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2)  # a release is a job on the workers
        assert release.n == 30
    finally:
        curator.stop()
    deadline = time.monotonic() + 30
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in workers):
        assert time.monotonic() < deadline, "the embedded workers outlived the service"
        time.sleep(0.2)
