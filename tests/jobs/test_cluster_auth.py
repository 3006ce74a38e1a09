"""The job cluster is authenticated: with ``pobo-curator serve`` running, a Dask client without the cluster's
credentials, on any port the service's processes listen on, is refused, so another account on the machine cannot
run code on the workers that hold raw rows; and the workers' environment holds no admin token."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import psutil
import pytest
from distributed import Client, LocalCluster, Security

from curator_service.testing import LocalCurator

ATTEMPT_SECONDS = 3
DASK_PAGES = ("/info/main/workers.html", "/json/counts.json", "/metrics")


def listening_ports(root: psutil.Process) -> dict[int, int]:
    """Port → pid of every TCP socket the service's process tree (the service, its nannies' worker processes)
    listens on."""
    ports = {}
    for process in [root, *root.children(recursive=True)]:
        for connection in process.net_connections(kind="inet"):
            if connection.status == psutil.CONN_LISTEN:
                ports[connection.laddr.port] = process.pid
    return ports


def dask_client_gets_in(address: str, security: Security | None) -> bool:
    """Whether a Dask client connects to ``address`` and runs code there within :data:`ATTEMPT_SECONDS` (an HTTP
    port accepts the connection and then never answers Dask's handshake: that counts as refused)."""
    async def attempt() -> bool:
        async with Client(address, security=security, asynchronous=True, timeout=ATTEMPT_SECONDS,
                          set_as_default=False) as client:
            await client.run_on_scheduler(lambda: None)  # what an intruder does next: run code in the cluster
            return True

    try:
        return asyncio.run(asyncio.wait_for(attempt(), ATTEMPT_SECONDS))
    except Exception:  # noqa: BLE001 - any refusal: a closed handshake, a TLS alert, no answer in time
        return False


def test_the_attempt_gets_into_a_cluster_that_asks_for_no_credentials():
    """The positive control: the same attempt, against a cluster started without ``security``, runs its code."""
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", scheduler_port=0,
                      dashboard_address=None) as open_cluster:
        assert dask_client_gets_in(open_cluster.scheduler_address, None)


@pytest.mark.slow  # a server start with its own cluster, then up to 3 s per refused attempt: 30-60 s on 2 cores
def test_no_port_of_the_running_service_lets_a_dask_client_in_without_the_clusters_credentials(tmp_path: Path):
    curator = LocalCurator(tmp_path, env={"POBO_DASK_SCHEDULER": "", "POBO_JOB_WORKERS": "2"}).start()
    try:
        deadline = time.monotonic() + 120
        while httpx.get(f"{curator.url}/ready").status_code != 200:  # the embedded cluster is up
            assert time.monotonic() < deadline, curator.log_tail()
            time.sleep(0.5)
        root = psutil.Process(curator.process.pid)
        ports = listening_ports(root)
        workers = [p for p in root.children(recursive=True) if "spawn_main" in " ".join(p.cmdline())]
        assert len(workers) == 2
        # The scheduler and the nannies in the service's process, a listener in each worker process, the HTTP port.
        assert curator.port in ports and {ports[port] for port in ports} >= {root.pid, *(w.pid for w in workers)}
        assert len(ports) >= 1 + 1 + 2 + 2, ports

        foreign = Security.temporary()  # a well-formed client certificate from a CA that is not the cluster's
        let_in = [f"{scheme}://127.0.0.1:{port}" for port in sorted(ports) for scheme, security in
                  (("tcp", None), ("tls", foreign)) if dask_client_gets_in(f"{scheme}://127.0.0.1:{port}", security)]
        assert not let_in, f"a Dask client without the cluster's credentials got in at {let_in}"

        for port in ports:  # Dask's HTTP pages (workers, their logs, call stacks) are not served either
            for page in DASK_PAGES:
                try:
                    assert httpx.get(f"http://127.0.0.1:{port}{page}", timeout=ATTEMPT_SECONDS).status_code != 200, page
                except httpx.TransportError:
                    pass  # a TLS or Dask port

        for worker in workers:
            environment = worker.environ()
            assert "POBO_ADMIN_TOKEN" not in environment and "POBO_ADMIN_TOKEN_FILE" not in environment
            assert curator.admin_token not in " ".join(environment.values())
        assert httpx.get(f"{curator.url}/ready").status_code == 200  # the refused attempts left the cluster up
    finally:
        curator.stop()
