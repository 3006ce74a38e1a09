"""tools/image/compose_service.py: the image check runs each compose service with its own wiring, and only its own."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("compose_service_under_test", ROOT / "tools/image/compose_service.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run(tool, tmp_path, service, part, *extra):
    args = tool.build_parser().parse_args([part, service, "--compose", str(ROOT / "docker-compose.yml"),
                                           "--secrets", str(tmp_path / "s"), "--volumes", str(tmp_path / "v"), *extra])
    document = tool.yaml.safe_load(args.compose.read_text())["services"][service]
    return tool.options(document, args) if part == "options" else tool.argv(document, args)


def pairs(options):
    return list(zip(options[::2], options[1::2]))


def test_each_service_gets_only_its_own_secrets(tool, tmp_path, monkeypatch):
    monkeypatch.setattr(tool.os, "chown", lambda *args: None)  # the image's uid needs root; not what is tested
    secrets = {name: sorted(value.split(":")[1] for flag, value in pairs(run(tool, tmp_path, name, "options"))
                            if flag == "--volume" and ":/run/secrets/" in value)
               for name in ("curator", "curator-setup", "modeler-demo", "dask-scheduler", "dask-worker",
                            "cluster-certs")}
    assert secrets == {"curator": ["/run/secrets/admin_token", "/run/secrets/postgres_password"],
                       "curator-setup": ["/run/secrets/admin_token"], "modeler-demo": [],
                       "dask-scheduler": [], "dask-worker": ["/run/secrets/postgres_password"], "cluster-certs": []}


def test_tmpfs_and_dropped_capabilities_are_passed_on(tool, tmp_path, monkeypatch):
    monkeypatch.setattr(tool.os, "chown", lambda *args: None)
    options = pairs(run(tool, tmp_path, "curator", "options"))
    assert ("--mount", "type=tmpfs,destination=/tmp") in options and ("--cap-drop", "ALL") in options


def test_up_starts_the_default_services_and_the_named_profiles_dependencies_first(tool):
    services = tool.yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    plain = [line.split()[0] for line in tool.order(services, [])]
    demo = [line.split()[0] for line in tool.order(services, ["demo"])]
    assert "curator-setup" not in plain and "modeler-demo" not in plain
    assert demo[:len(plain)] == plain and demo[len(plain):] == ["curator-setup", "modeler-demo"]
    for listing in (plain, demo):
        for at, name in enumerate(listing):
            assert set(services[name].get("depends_on") or {}) <= set(listing[:at]), name
    with pytest.raises(SystemExit, match="cycle"):
        tool.order({"a": {"image": "x", "depends_on": ["b"]}, "b": {"image": "x", "depends_on": ["a"]}}, [])


def test_names_ports_and_defaults_are_rewritten_for_loopback(tool, tmp_path, monkeypatch):
    monkeypatch.delenv("POBO_MODE", raising=False)
    argv = run(tool, tmp_path, "curator", "argv", "--sub", "0.0.0.0=127.0.0.1", "--token", "8000=41234")
    assert argv == ["pobo-curator", "serve", "--host", "127.0.0.1", "--port", "41234"]
    options = dict(value.split("=", 1) for flag, value in pairs(
        run(tool, tmp_path, "curator", "options", "--sub", "postgres:5432=127.0.0.1:55999")) if flag == "--env")
    assert options["POBO_DATABASE_URL"] == "postgresql+psycopg://pobo@127.0.0.1:55999/pobo"
    assert options["POBO_MODE"] == "production"  # ${POBO_MODE:-production}
    assert tool.interpolate("$${HOME} $$x") == "${HOME} $x"
