"""The compose file's Dask cluster: workers are wired to the database like the curator (raw rows reach them, so
they sit inside the curator's side), and neither the cluster nor PostgreSQL is reachable from the demo's parties."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def networks(service: dict) -> set[str]:
    return set(service.get("networks") or ["default"])


def test_workers_reach_the_database_as_the_curator_does_and_the_curator_reaches_the_scheduler():
    services = compose()["services"]
    curator, worker, scheduler = services["curator"], services["dask-worker"], services["dask-scheduler"]
    for variable in ("POBO_DATABASE_URL", "POBO_DATABASE_PASSWORD_FILE"):
        assert worker["environment"][variable] == curator["environment"][variable]
    assert worker["secrets"] == ["postgres_password"]  # the database's secret, not the admin token
    port = scheduler["command"][scheduler["command"].index("--port") + 1]
    assert curator["environment"]["POBO_DASK_SCHEDULER"] == f"tcp://dask-scheduler:{port}"
    assert f"tcp://dask-scheduler:{port}" in worker["command"]
    assert curator["depends_on"]["dask-scheduler"]["condition"] == "service_healthy"
    assert "ports" not in scheduler and "ports" not in worker  # published nowhere


def test_the_demo_parties_share_no_network_with_the_cluster_or_the_database():
    document = compose()
    services = document["services"]
    inside = {"postgres", "dask-scheduler", "dask-worker"}
    assert document["networks"]["curator-internal"]["internal"] is True
    for name in inside:
        assert networks(services[name]) == {"curator-internal"}, name
    assert networks(services["curator"]) == {"curator-internal", "default"}
    for name in ("curator-setup", "modeler-demo"):
        assert not networks(services[name]) & set().union(*(networks(services[n]) for n in inside)), name
