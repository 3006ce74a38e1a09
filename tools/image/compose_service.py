"""One docker-compose service as ``buildah run`` arguments, so check_image.sh runs the image as compose wires it.

``options``: an ``--env`` per environment entry (``${VAR:-default}`` resolved from this environment), a
read-only ``--volume`` per secret the service lists (``<secrets dir>/<name>`` at ``/run/secrets/<name>``: a
service sees only its own secrets, as under compose) and a ``--volume`` per named volume (a directory under
``<volumes dir>``, created owned by the image's user like a fresh compose volume over a directory the image
gave that user). ``argv``: the entrypoint then the command, ``$$`` unescaped. One argument per line.

Chroot isolation shares the host's network, so service names and ports are rewritten: ``--sub OLD=NEW``
replaces a substring in values and arguments (``curator:8000=127.0.0.1:41234``), ``--token OLD=NEW`` an
argument equal to OLD (the ``8000`` after ``--port``).

Run: ``python tools/image/compose_service.py SERVICE options|argv --secrets DIR --volumes DIR [--sub ...]``
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
    return out


def argv(service: dict, args: argparse.Namespace) -> list[str]:
    return [rewrite(token, args) for token in service.get("entrypoint", []) + service["command"]]


def pair(text: str) -> tuple[str, str]:
    old, separator, new = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError(f"{text!r}: write OLD=NEW")
    return old, new


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("service")
    parser.add_argument("part", choices=["options", "argv"])
    parser.add_argument("--compose", type=Path, default=Path("docker-compose.yml"))
    parser.add_argument("--secrets", type=Path, required=True, help="a directory holding one file per secret")
    parser.add_argument("--volumes", type=Path, required=True, help="a directory for the named volumes")
    parser.add_argument("--sub", type=pair, action="append", default=[], help="OLD=NEW, substrings")
    parser.add_argument("--token", type=pair, action="append", default=[], help="OLD=NEW, whole arguments")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    service = yaml.safe_load(args.compose.read_text())["services"][args.service]
    lines = options(service, args) if args.part == "options" else argv(service, args)
    sys.stdout.write("".join(f"{line}\n" for line in lines))  # none for none: an empty line would be an argument


if __name__ == "__main__":
    main()
