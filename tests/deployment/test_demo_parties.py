"""The demo as its two parties (no admin token in the modeler's container).

The compose file gives ``curator-setup`` the admin token and ``modeler-demo`` nothing but the hand-off; the two
scripts, run as separate processes against a real curator in production mode, do the whole demo that way.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path, PurePosixPath

import httpx
import pytest
import yaml

from curator_service.testing import LocalCurator

ROOT = Path(__file__).resolve().parents[2]


def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def mounts(service: dict) -> dict[str, tuple[str, bool]]:
    """Target path → (volume, read-only) of a service's named volumes."""
    found = {}
    for volume in service.get("volumes", []):
        source, target, *mode = volume.split(":")
        found[target] = (source, mode == ["ro"])
    return found


def test_the_modeler_demo_gets_no_admin_token_in_any_form():
    modeler = services()["modeler-demo"]
    assert not modeler.get("secrets"), f"modeler-demo is given secrets {modeler.get('secrets')}"
    for variable in modeler.get("environment") or {}:
        assert "ADMIN" not in variable and "TOKEN" not in variable, f"modeler-demo's environment sets {variable}"
    wired = " ".join(modeler.get("entrypoint", []) + modeler["command"])
    assert "admin" not in wired.lower() and "/run/secrets" not in wired, wired
    assert all(not target.startswith("/run/secrets") for target in mounts(modeler)), mounts(modeler)


def test_the_setup_holds_the_admin_token_as_a_file_and_hands_over_through_a_volume_the_modeler_only_reads():
    setup, modeler = services()["curator-setup"], services()["modeler-demo"]
    assert setup["secrets"] == ["admin_token"]
    assert setup["environment"] == {"POBO_ADMIN_TOKEN_FILE": "/run/secrets/admin_token"}
    written = PurePosixPath(option(setup["command"], "--handoff"))
    read = PurePosixPath(option(modeler["command"], "--handoff"))
    volume, _ = mounts(setup)[str(written.parent)]
    assert mounts(modeler)[str(read.parent)] == (volume, True), "the modeler must mount the hand-off read-only"
    assert written.name == read.name
    assert option(setup["command"], "--url") == option(modeler["command"], "--url")
    assert setup["depends_on"]["curator"]["condition"] == "service_healthy"
    assert modeler["depends_on"]["curator-setup"]["condition"] == "service_completed_successfully"
    assert setup["restart"] == modeler["restart"] == "no"


@pytest.mark.slow  # about 40 s on two busy cores; CI's image step runs the same two parties from the image
def test_the_modeler_side_runs_the_demo_with_only_the_hand_off(tmp_path, job_cluster):
    handoff, out = tmp_path / "handoff" / "demo.json", tmp_path / "out"
    token_file = tmp_path / "admin_token"
    # Production mode, uncertified mechanisms off: what compose runs (no seeds; po-gp-ucb skipped).
    with LocalCurator(tmp_path / "curator",
                      env={"POBO_MODE": "production", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"},
                      startup_timeout=180) as curator:
        token_file.write_text(curator.admin_token + "\n")
        base = {k: v for k, v in os.environ.items() if not k.startswith("POBO_")}
        base["OPENBLAS_NUM_THREADS"] = "1"
        subprocess.run([sys.executable, "examples/demo_curator.py", "--url", curator.url, "--quick",
                        "--handoff", str(handoff)], env={**base, "POBO_ADMIN_TOKEN_FILE": str(token_file)},
                       cwd=ROOT, check=True, capture_output=True, timeout=300)

        assert stat.S_IMODE(handoff.stat().st_mode) == 0o600
        text = handoff.read_text()
        assert curator.admin_token not in text
        document = json.loads(text)
        # Shared for scoring: the synthetic optimum; the diabetes table's best value is a patient's outcome.
        assert {t["name"]: t["optimum"] is None for t in document["tables"]} == {"synthetic-gp": False,
                                                                                 "diabetes": True}
        release_ids = sorted(i for table in document["tables"] for i in table["release_ids"])
        assert len(release_ids) == 4  # two certified releases per table; po-gp-ucb refused in production
        with httpx.Client(base_url=curator.url, headers={"Authorization": f"Bearer {document['token']}"}) as key:
            assert key.get("/v1/datasets").status_code == 403  # a modeler key, not the curator's
            assert sorted(r["id"] for r in key.get("/v1/releases").json()) == release_ids  # scoped to exactly these

        done = subprocess.run([sys.executable, "examples/demo_modeler.py", "--url", curator.url,
                               "--handoff", str(handoff), "--out-dir", str(out)],
                              env=base, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [json.loads(path.read_text()) for path in sorted(out.glob("run-release-*.json"))]
    assert sorted(run["release"]["id"] for run in runs) == release_ids
    assert all(run["finished"] and len(run["queries"]) == 12 for run in runs)
    assert sorted(path.name for path in out.glob("*.png")) == ["demo-diabetes.png", "demo-synthetic-gp.png"]
    assert "regret" in done.stdout and "po-gp-ucb is NOT differentially private" in done.stdout
