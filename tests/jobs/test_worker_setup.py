"""A pobo worker fails closed when it would spill task data (raw rows, a release's M) to its disk (audit
G1): a real ``dask worker`` with Dask's default spilling never joins the scheduler, and the embedded cluster's
nannies respawn their workers without spilling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from curator_service.jobs.cluster import SPILLING_EXIT_CODE, embedded_cluster

DASK = Path(sys.executable).with_name("dask")
DEADLINE_SECONDS = 300  # polls: a loaded 2-core machine starts a worker process slowly


def _start_worker(scheduler: str, *, spilling: bool) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DASK_")}
    if not spilling:
        env |= {"DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": "False", "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL": "False"}
    return subprocess.Popen([str(DASK), "worker", scheduler, "--no-nanny", "--nthreads", "1", "--no-dashboard",
                             "--preload", "curator_service.jobs.cluster"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")  # the bare scheduler's HTTP endpoint
def test_a_worker_that_would_spill_exits_before_joining_and_one_that_would_not_joins():
    with (LocalCluster(n_workers=0, processes=True, host="127.0.0.1", scheduler_port=0, dashboard_address=None) as bare,
          Client(bare) as client):
        spilling = _start_worker(bare.scheduler_address, spilling=True)
        try:
            _, stderr = spilling.communicate(timeout=DEADLINE_SECONDS)
        finally:
            spilling.kill()
        assert spilling.returncode == SPILLING_EXIT_CODE
        assert "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL=False" in stderr  # the log says what to fix
        assert client.scheduler_info()["workers"] == {}
        # Positive control: the same command with spilling off joins the cluster.
        joining = _start_worker(bare.scheduler_address, spilling=False)
        try:
            client.wait_for_workers(1, timeout=DEADLINE_SECONDS)
            assert joining.poll() is None
        finally:
            joining.kill()
            joining.wait(30)


def test_the_embedded_cluster_respawns_its_workers_without_spilling(job_cluster):
    """A nanny respawns its worker from its own copy of the configuration (``Nanny.config``, passed on every
    (re)start): with the setting applied only inside a ``with`` block that copy lost it once the block had exited."""
    assert job_cluster is embedded_cluster(len(job_cluster.workers))  # the session's cluster is the embedded one
    for nanny in job_cluster.workers.values():
        memory = nanny.config["distributed"]["worker"]["memory"]
        assert memory["target"] is False and memory["spill"] is False
