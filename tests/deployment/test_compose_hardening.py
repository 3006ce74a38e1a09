"""The compose file's containers as docs/deployment.md describes them: read-only roots with tmpfs, no capabilities
(PostgreSQL's entrypoint gets back the few it needs), no-new-privileges, memory limits, base images pinned by digest,
the demo behind its profile, and only the TLS front published."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_every_container_is_hardened():
    for name, service in services().items():
        assert service.get("read_only") is True and "/tmp" in service.get("tmpfs", []), name
        assert service.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
        assert re.fullmatch(r"\d+[mg]", str(service.get("mem_limit", ""))), name
    assert set(services()["postgres"].get("cap_add", [])) <= {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"}
    assert services()["tls-front"]["cap_add"] == ["NET_BIND_SERVICE"]  # the caddy binary's file capability
    assert all("cap_add" not in service
               for name, service in services().items() if name not in {"postgres", "tls-front"})


def test_images_are_the_built_one_or_pinned_by_digest():
    for name, service in services().items():
        assert service["image"] == "pobo:latest" or DIGEST.search(service["image"]), f"{name}: {service['image']}"
    dockerfile = (ROOT / "Dockerfile").read_text()
    (default,) = re.findall(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.MULTILINE)
    assert default.startswith("python:3.11-slim@") and DIGEST.search(default)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", dockerfile, re.MULTILINE)


def test_the_demo_is_behind_its_profile_and_only_the_tls_front_is_published():
    profiled = {name: service["profiles"] for name, service in services().items() if "profiles" in service}
    assert profiled == {"curator-setup": ["demo"], "modeler-demo": ["demo"]}
    published = {name: service["ports"] for name, service in services().items() if "ports" in service}
    assert published == {"tls-front": ["127.0.0.1:8443:8443"]}
    front = services()["tls-front"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in front["volumes"]
    caddyfile = (ROOT / "deploy" / "Caddyfile").read_text()
    assert "https://localhost:8443 {" in caddyfile and "reverse_proxy curator:8000" in caddyfile
    assert front["depends_on"]["curator"]["condition"] == "service_healthy"


def test_the_curator_believes_forwarded_headers_from_the_tls_front_alone():
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    front = document["services"]["tls-front"]["networks"]["default"]["ipv4_address"]
    subnet = document["networks"]["default"]["ipam"]["config"][0]["subnet"]
    assert ipaddress.ip_address(front) in ipaddress.ip_network(subnet)
    assert document["services"]["curator"]["environment"]["POBO_FORWARDED_ALLOW_IPS"] == front
    assert "trusted_proxies" not in (ROOT / "deploy" / "Caddyfile").read_text()  # Caddy forwards the peer itself
