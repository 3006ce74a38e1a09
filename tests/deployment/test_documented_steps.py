"""The deployment's documented steps are what the image check runs: tools/image/doc_steps.py takes the marked block
out of docs/deployment.md, refuses a block the check could not stand in for, and the block's own commands leave
secrets the containers' other uids can read in a directory no other host account enters."""

from __future__ import annotations

import importlib.util
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deployment.md"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("doc_steps_under_test", ROOT / "tools/image/doc_steps.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_check_runs_the_marked_block_and_the_block_starts_the_stack_with_the_demo(tool):
    steps = tool.checked(tool.block(DOC.read_text(), "compose"))
    assert steps[-1] == "docker compose --profile demo up --build"
    script = (ROOT / "tools/image/check_image.sh").read_text()
    assert 'doc_steps.py compose >"$WORK/steps.sh"' in script and 'source "$WORK/steps.sh"' in script
    assert "chmod" not in script.replace("chmod 0711", "")  # no mode fixed behind the documented steps' back


def test_the_documented_steps_leave_secrets_the_containers_read_and_other_accounts_cannot_reach(tool, tmp_path):
    steps = tool.block(DOC.read_text(), "compose")
    (tmp_path / "steps.sh").write_text("\n".join(steps) + "\n")
    calls = tmp_path / "docker-calls"
    # `docker` records its arguments; the rest runs as written, under the strictest umask an operator may have.
    subprocess.run(["bash", "-euc", f'umask 077; docker() {{ echo "$*" >>{calls}; }}; source steps.sh'],
                   cwd=tmp_path, check=True, timeout=60)
    assert calls.read_text().splitlines() == ["compose --profile demo up --build"]
    secrets = tmp_path / "secrets"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700  # no other host account enters it
    names = {"admin_token", "postgres_password"}
    assert {path.name for path in secrets.iterdir()} == names
    for name in names:
        mode = stat.S_IMODE((secrets / name).stat().st_mode)
        assert mode & stat.S_IROTH and not mode & 0o022, f"{name}: {oct(mode)}"  # readable by uid 10001 and 999
        assert len((secrets / name).read_text().strip()) >= 32


@pytest.mark.parametrize("doc, message", [
    ("# Deployment\n```sh\ndocker compose up --build\n```\n", "no block is marked check_image: compose"),
    ("<!-- check_image: compose -->\ntext\n", "not followed by a fenced block"),
    ("<!-- check_image: compose -->\n```sh\nmkdir secrets\n", "not closed"),
])
def test_a_missing_marker_or_block_fails_the_check(tool, doc, message):
    with pytest.raises(tool.StepsError, match=message):
        tool.block(doc, "compose")


@pytest.mark.parametrize("steps, message", [
    (["chmod 0444 secrets/*", "docker compose up --build", "docker exec curator true"], "cannot stand in for"),
    (["docker compose up -d"], "cannot stand in for"),
    (["mkdir -m 700 secrets"], "never run `docker compose"),
])
def test_a_step_the_check_cannot_stand_in_for_fails_it(tool, steps, message):
    with pytest.raises(tool.StepsError, match=message):
        tool.checked(steps)


def test_the_command_line_prints_the_steps_and_fails_with_a_sentence(tmp_path):
    ok = subprocess.run([sys.executable, str(ROOT / "tools/image/doc_steps.py"), "compose"], capture_output=True,
                        text=True, check=True, timeout=60)
    assert ok.stdout.splitlines()[-1] == "docker compose --profile demo up --build"
    broken = tmp_path / "deployment.md"
    broken.write_text("<!-- check_image: compose -->\n```sh\ndocker run pobo\n```\n")
    failed = subprocess.run([sys.executable, str(ROOT / "tools/image/doc_steps.py"), "compose", "--doc", str(broken)],
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1 and "cannot stand in for" in failed.stderr
