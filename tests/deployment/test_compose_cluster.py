"""The compose file's Dask cluster: workers are wired to the database like the curator (raw rows reach them, so
they sit inside the curator's side), every member talks mutual TLS with certificates the one-shot ``cluster-certs``
makes, and neither the cluster nor PostgreSQL is reachable from the demo's parties."""

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
    assert curator["environment"]["POBO_DASK_SCHEDULER"] == f"tls://dask-scheduler:{port}"
    assert f"tls://dask-scheduler:{port}" in worker["command"]
    assert curator["depends_on"]["dask-scheduler"]["condition"] == "service_healthy"
    assert "ports" not in scheduler and "ports" not in worker  # published nowhere


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_scheduler_is_tls_and_every_member_presents_a_certificate_of_the_clusters_ca():
    services = compose()["services"]
    certs, scheduler, worker, curator = (services[name] for name in ("cluster-certs", "dask-scheduler", "dask-worker",
                                                                     "curator"))
    assert certs["command"] == ["pobo-curator", "cluster", "certs", "/tls"] and certs["restart"] == "no"
    assert certs["volumes"] == ["dask-tls:/tls"] and certs["network_mode"] == "none"
    assert scheduler["depends_on"]["cluster-certs"]["condition"] == "service_completed_successfully"
    assert option(scheduler["command"], "--protocol") == "tls"
    for member, role in ((scheduler, "scheduler"), (worker, "worker")):
        assert "dask-tls:/tls:ro" in member["volumes"]
        assert (option(member["command"], "--tls-ca-file"), option(member["command"], "--tls-cert"),
                option(member["command"], "--tls-key")) == ("/tls/ca.pem", f"/tls/{role}.pem", f"/tls/{role}.key")
    assert "dask-tls:/tls:ro" in curator["volumes"]
    assert {k: v for k, v in curator["environment"].items() if k.startswith("POBO_DASK_TLS_")} == {
        "POBO_DASK_TLS_CA_FILE": "/tls/ca.pem", "POBO_DASK_TLS_CERT_FILE": "/tls/client.pem",
        "POBO_DASK_TLS_KEY_FILE": "/tls/client.key"}
    assert "POBO_DASK_ALLOW_PLAINTEXT" not in curator["environment"]
    # Dask's unauthenticated HTTP pages are off on the scheduler and the workers.
    assert scheduler["environment"]["DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES"] == "[]"
    assert worker["environment"]["DASK_DISTRIBUTED__WORKER__HTTP__ROUTES"] == "[]"
    assert not any("ADMIN" in variable for variable in worker["environment"])


def test_the_demo_parties_share_no_network_with_the_cluster_or_the_database():
    document = compose()
    services = document["services"]
    inside = {"postgres", "dask-scheduler", "dask-worker"}
    assert services["cluster-certs"]["network_mode"] == "none"
    assert document["networks"]["curator-internal"]["internal"] is True
    for name in inside:
        assert networks(services[name]) == {"curator-internal"}, name
    assert networks(services["curator"]) == {"curator-internal", "default"}
    for name in ("curator-setup", "modeler-demo"):
        assert not networks(services[name]) & set().union(*(networks(services[n]) for n in inside)), name
