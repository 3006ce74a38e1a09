"""Packaging without a Docker engine: the compose file is valid Compose, and every command the compose
file and the Dockerfile run exists in the package (console scripts with their subcommands and options,
scripts, modules)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import typer
import yaml
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"  # provenance in tests/data/README.md
Validator = jsonschema.Draft201909Validator  # the schema's $schema (its draft-2019-09 URL is spelt the old way)


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def exec_form(arguments: str) -> list[str]:
    """A Dockerfile CMD/ENTRYPOINT/HEALTHCHECK argument in exec (JSON) form, or shell form split."""
    arguments = re.sub(r"^(--\S+\s+)*CMD\s+", "", arguments)  # HEALTHCHECK [options] CMD ...
    return json.loads(arguments) if arguments.startswith("[") else shlex.split(arguments)


def console_scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def check_options(command, rest: list[str], argv: list[str]) -> None:
    """Fail unless every ``--option`` in ``rest`` is one the (click) ``command`` accepts, ``--no-x`` flags too."""
    options = {opt for param in command.params for opt in (*param.opts, *getattr(param, "secondary_opts", []))}
    unknown = [token for token in rest if token.startswith("--") and token.split("=")[0] not in options]
    assert not unknown, f"{' '.join(argv)}: unknown options {unknown}"


def check_command(argv: list[str]) -> None:
    """Fail unless ``argv`` names something the image really has, used with options it really accepts."""
    program, *rest = argv
    scripts = console_scripts()
    if program in scripts:
        module, _, attribute = scripts[program].partition(":")
        command = typer.main.get_command(getattr(importlib.import_module(module), attribute))
        while hasattr(command, "commands") and rest and not rest[0].startswith("-"):
            assert rest[0] in command.commands, f"{program} has no subcommand {rest[0]!r}"
            command, rest = command.commands[rest[0]], rest[1:]
        check_options(command, rest, argv)
    elif program == "dask":  # distributed's `dask scheduler` / `dask worker`: click commands under dask_cli
        (entry,) = importlib.metadata.entry_points(group="dask_cli", name=rest[0])
        check_options(entry.load(), rest[1:], argv)
        if "--preload" in rest:
            assert importlib.util.find_spec(rest[rest.index("--preload") + 1]), f"{argv}: no preload module"
    elif program == "python" and rest[0] == "-c":
        compile(rest[1], "<healthcheck>", "exec")
        for module in re.findall(r"import ([\w.]+)", rest[1]):
            assert importlib.util.find_spec(module), module
    elif program == "python" and rest[0] == "-m":
        assert importlib.util.find_spec(rest[1]), f"no module {rest[1]}"
    elif program == "python":
        script = ROOT / rest[0]
        assert script.is_file(), f"{rest[0]} is not in the repository"
        top = rest[0].split("/")[0]
        copied = [args.split()[0] for instruction, args in dockerfile() if instruction == "COPY"]
        assert top in copied, f"the Dockerfile does not copy {top}/ into the image"
        spec = importlib.util.spec_from_file_location(f"packaged_{script.stem}", script)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded  # dataclasses look their module up while the script loads
        sys.path.insert(0, str(script.parent))  # as `python script.py` does: the script's siblings import
        try:
            spec.loader.exec_module(loaded)
        finally:
            sys.path.remove(str(script.parent))
        loaded.build_parser().parse_args(rest[1:])  # argparse exits (fails the test) on an unknown option
    else:
        pytest.fail(f"unknown program {program!r} in {argv}")


def test_compose_file_is_valid_against_the_compose_specification():
    schema = json.loads(SCHEMA.read_text())
    Validator.check_schema(schema)
    errors = list(Validator(schema).iter_errors(compose()))
    assert not errors, [error.message for error in errors]


def test_compose_runs_the_curator_on_postgresql_and_a_one_shot_modeler_demo():
    services = compose()["services"]
    assert services["curator"]["environment"]["POBO_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert services["curator"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["modeler-demo"]["restart"] == "no"
    assert services["modeler-demo"]["depends_on"]["curator"]["condition"] == "service_healthy"
    assert "--url" in services["modeler-demo"]["command"]
    # A broken schema file would make the validity test vacuous: an invalid document must be refused.
    schema = json.loads(SCHEMA.read_text())
    broken = {"services": {"curator": {"image": "pobo", "restart": ["always"], "no_such_key": 1}}}
    assert list(Validator(schema).iter_errors(broken))


def test_every_setting_the_compose_file_passes_is_one_the_service_reads():
    from curator_service.settings import Settings

    read = {f"POBO_{field.upper()}" for field in Settings.model_fields}
    for name, service in compose()["services"].items():
        for variable in service.get("environment", {}):
            if variable.startswith("POBO_") and name != "modeler-demo":
                assert variable in read, f"{name}: the service never reads {variable}"


def test_compose_builds_one_image_once_and_passes_secrets_as_files_only():
    document = compose()
    services = document["services"]
    builders = [name for name, service in services.items() if "build" in service]
    assert builders == ["curator"]
    assert services["modeler-demo"]["image"] == services["curator"]["image"]
    assert services["modeler-demo"]["pull_policy"] == "never"
    for name, service in services.items():
        for variable, value in service.get("environment", {}).items():
            assert not re.search(r"PASSWORD$|TOKEN$", variable), f"{name}: secret {variable} in the environment"
            if "://" in str(value):
                assert make_url(str(value)).password is None, f"{name}: a password in {variable}"
        for secret in service.get("secrets", []):
            assert secret in document["secrets"] and "file" in document["secrets"][secret]
    assert services["curator"]["environment"]["POBO_ADMIN_TOKEN_FILE"] == "/run/secrets/admin_token"
    assert "admin_token" not in services["postgres"].get("secrets", [])


def test_every_command_the_compose_file_runs_exists_in_the_package():
    services = compose()["services"]
    ours = [name for name, service in services.items() if service.get("image") == "pobo:latest"]
    assert {"curator", "curator-setup", "modeler-demo"} <= set(ours)
    for name in ours:
        service = services[name]
        check_command(service["command"])
        if "healthcheck" in service:
            test = service["healthcheck"]["test"]
            assert test[0] == "CMD"
            check_command(test[1:])


def test_dockerfile_builds_one_image_with_both_clis_run_by_a_non_root_user():
    instructions = dockerfile()
    assert instructions[0][0] == "ARG" and instructions[0][1].startswith("BASE_IMAGE=python:3.11-slim@sha256:")
    assert instructions[1] == ("FROM", "${BASE_IMAGE}")
    users = [(i, args) for i, (instruction, args) in enumerate(instructions) if instruction == "USER"]
    assert users and users[-1][1] not in {"root", "0"}
    (cmd_at,) = [i for i, (instruction, _) in enumerate(instructions) if instruction == "CMD"]
    assert users[-1][0] < cmd_at
    for instruction, args in instructions:
        if instruction == "COPY":
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        if instruction in {"CMD", "ENTRYPOINT", "HEALTHCHECK"}:
            check_command(exec_form(args))
    installs = " ".join(args for instruction, args in instructions if instruction == "RUN")
    assert "pip install" in installs and set(console_scripts()) == {"pobo-curator", "pobo-modeler"}


def test_dockerignore_keeps_data_and_environments_out_of_the_image():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".git", ".venv", "*.sqlite*", "var"):
        assert entry in ignored
    copied = {args.split()[0] for instruction, args in dockerfile() if instruction == "COPY"}
    assert not copied & set(ignored), "the Dockerfile copies something .dockerignore excludes"


def test_the_wheel_carries_every_data_file_the_service_reads(tmp_path):
    """The image installs a wheel (not the checkout): templates, static files and migrations must be in it."""
    import subprocess
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("pobo-*.whl")
    packaged = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(["git", "ls-files", "curator_service", "shared", "modeler_client"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    data_files = [path for path in tracked if not path.endswith(".py") and (ROOT / path).exists()]
    assert any(path.startswith("curator_service/console/templates/") for path in data_files)
    missing = [path for path in data_files if path not in packaged]
    assert not missing, f"not in the wheel: {missing}"


def test_the_lockfile_pins_with_hashes_every_dependency_the_image_installs():
    """A dependency added to pyproject.toml but not to requirements.lock would make the image build fail
    (`--require-hashes`); `make lock` regenerates the file."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["curator"] + \
        project["optional-dependencies"]["postgres"] + ["setuptools>=68"]
    text = re.sub(r"\\\n\s*", " ", (ROOT / "requirements.lock").read_text())
    pinned = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            requirement, *hashes = line.split(" --hash=")
            name, _, version = requirement.split(";")[0].strip().partition("==")
            assert version and hashes, f"not pinned with a hash: {line[:80]}"
            pinned[canonicalize_name(name)] = version
    for requirement in map(Requirement, wanted):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is not in requirements.lock; run `make lock`"
        assert requirement.specifier.contains(pinned[name], prereleases=True), \
            f"requirements.lock pins {name}=={pinned[name]}, outside {requirement}; run `make lock`"
