"""The import contracts (``.importlinter``): ``lint-imports`` keeps every one of them on this tree, and the contracts
that list a package's modules by name list every module there is, so a new module cannot sit outside them unseen."""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shared", "curator_service", "modeler_client")


def contracts() -> dict[str, dict[str, str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    prefix = "importlinter:contract:"
    return {name.removeprefix(prefix): dict(config[name]) for name in config.sections() if name.startswith(prefix)}


def listed(value: str) -> set[str]:
    """The module names of a contract's list (one a line; a layer's line may hold several, split by | or :)."""
    return {name.strip() for line in value.split("\n") for name in re.split(r"[|:]", line) if name.strip()}


def children(package: str) -> set[str]:
    """The modules and subpackages directly in a package of this tree."""
    directory = ROOT / package
    return {path.stem for path in directory.glob("*.py") if path.stem != "__init__"} | {
        path.name for path in directory.iterdir() if (path / "__init__.py").is_file()}


def test_lint_imports_keeps_every_contract_on_this_tree():
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([Path(sys.executable).parent / "lint-imports", "--no-cache"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    kept = re.search(r"Contracts: (\d+) kept, (\d+) broken", run.stdout)
    assert kept is not None and kept.groups() == (str(len(contracts())), "0"), run.stdout


def test_the_curator_and_the_modeler_are_layered_module_by_module():
    for name, package in (("curator-layers", "curator_service"), ("modeler-layers", "modeler_client")):
        contract = contracts()[name]
        assert contract["type"] == "layers" and contract["containers"].strip() == package
        assert listed(contract["layers"]) == children(package), name


def test_every_library_module_is_forbidden_the_command_line_layer():
    contract = contracts()["cli-shared-by-command-lines"]
    assert listed(contract["forbidden_modules"]) == {"shared.cli"}
    command_lines = {"shared.cli", "curator_service.cli", "modeler_client.cli", "modeler_client.commands"}
    library = {f"{package}.{child}" for package in PACKAGES for child in children(package)} - command_lines
    assert listed(contract["source_modules"]) == library
