"""docker-compose's services as ``buildah run`` arguments, so check_image.sh runs the image as compose wires it.

``order``: the services ``docker compose [--profile P]... up`` starts (those without a profile and those of the
named profiles, with what they depend on), dependencies first, one ``NAME IMAGE RESTART`` line each.
``options``: an ``--env`` per environment entry (``${VAR:-default}`` resolved from this environment), a
read-only ``--volume`` per secret the service lists (``<secrets dir>/<name>`` at ``/run/secrets/<name>``: a
service sees only its own secrets, as under compose), a ``--volume`` per named volume (a directory under
``<volumes dir>``, created owned by the image's user like a fresh compose volume over a directory the image
gave that user), a tmpfs ``--mount`` per ``tmpfs`` entry and a ``--cap-drop`` per dropped capability.
``argv``: the entrypoint then the command, ``$$`` unescaped. ``health``: the healthcheck's command (after ``CMD``).
One argument per line.

Chroot isolation shares the host's network, so service names and ports are rewritten: ``--sub OLD=NEW``
replaces a substring in values and arguments (``curator:8000=127.0.0.1:41234``), ``--token OLD=NEW`` an
argument equal to OLD (the ``8000`` after ``--port``).

Run: ``python tools/image/compose_service.py options|argv|health SERVICE --secrets DIR --volumes DIR [--sub ...]``
or ``python tools/image/compose_service.py order [--profile P]...``
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import yaml

IMAGE_UID = 10001  # the Dockerfile's user pobo


def interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` and ``${VAR}`` from this process's environment; ``$$`` is a literal ``$``."""
    def substitute(match: re.Match) -> str:
        return "$" if match[0] == "$$" else os.environ.get(match[1]) or match[2] or ""

    return re.sub(r"\$\$|\$\{(\w+)(?::-([^}]*))?\}", substitute, value)


def rewrite(value: str, args: argparse.Namespace) -> str:
    value = interpolate(str(value))
    for old, new in args.token:
        value = new if value == old else value
    for old, new in args.sub:
        value = value.replace(old, new)
    return value


def options(service: dict, args: argparse.Namespace) -> list[str]:
    out = []
    for variable, value in (service.get("environment") or {}).items():
        out += ["--env", f"{variable}={rewrite(value, args)}"]
    for secret in service.get("secrets", []):
        out += ["--volume", f"{args.secrets / secret}:/run/secrets/{secret}:ro"]
    for volume in service.get("volumes", []):
        name, target, *mode = volume.split(":")
        source = args.volumes / name
        if not source.exists():
            source.mkdir(parents=True)
            os.chown(source, IMAGE_UID, IMAGE_UID)
        out += ["--volume", ":".join([str(source), target, *mode])]
    tmpfs = service.get("tmpfs", [])
    for target in [tmpfs] if isinstance(tmpfs, str) else tmpfs:
        out += ["--mount", f"type=tmpfs,destination={target}"]
    for capability in service.get("cap_drop", []):
        out += ["--cap-drop", capability]
    return out


def argv(service: dict, args: argparse.Namespace) -> list[str]:
    return [rewrite(token, args) for token in service.get("entrypoint", []) + service["command"]]


def health(service: dict, args: argparse.Namespace) -> list[str]:
    kind, *command = service["healthcheck"]["test"]
    if kind != "CMD":
        raise SystemExit(f"only a CMD healthcheck can run from the host, not {kind}")
    return [rewrite(token, args) for token in command]


def order(services: dict, profiles: list[str]) -> list[str]:
    """``NAME IMAGE RESTART`` of each service ``up`` starts with ``profiles``, every one after its dependencies."""
    wanted = [name for name, service in services.items()
              if not service.get("profiles") or set(service["profiles"]) & set(profiles)]
    started: list[str] = []

    def start(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise SystemExit(f"depends_on cycle: {' -> '.join((*path, name))}")
        if name not in started:
            for dependency in services[name].get("depends_on") or {}:
                start(dependency, (*path, name))
            started.append(name)

    for name in wanted:
        start(name, ())
    return [f"{name} {services[name]['image']} {services[name].get('restart', 'no')}" for name in started]


def pair(text: str) -> tuple[str, str]:
    old, separator, new = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError(f"{text!r}: write OLD=NEW")
    return old, new


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["options", "argv", "health", "order"])
    parser.add_argument("service", nargs="?", help="the service (not for order)")
    parser.add_argument("--profile", action="append", default=[], help="order: a profile up enables")
    parser.add_argument("--compose", type=Path, default=Path("docker-compose.yml"))
    parser.add_argument("--secrets", type=Path, help="a directory holding one file per secret")
    parser.add_argument("--volumes", type=Path, help="a directory for the named volumes")
    parser.add_argument("--sub", type=pair, action="append", default=[], help="OLD=NEW, substrings")
    parser.add_argument("--token", type=pair, action="append", default=[], help="OLD=NEW, whole arguments")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    services = yaml.safe_load(args.compose.read_text())["services"]
    if args.part == "order":
        lines = order(services, args.profile)
    else:
        lines = {"options": options, "argv": argv, "health": health}[args.part](services[args.service], args)
    sys.stdout.write("".join(f"{line}\n" for line in lines))  # none for none: an empty line would be an argument


if __name__ == "__main__":
    main()
