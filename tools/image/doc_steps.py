"""The commands docs/deployment.md marks for the image check: the fenced block after the line
``<!-- check_image: NAME ... -->``, printed line by line, so check_image.sh runs the documented steps as written.

It refuses (exit 1, with a sentence) when the marker or its block is gone, or when the block runs a ``docker``
command that check_image.sh cannot stand in for (only ``docker compose [--profile P]... up --build``).

Run: ``python tools/image/doc_steps.py NAME [--doc docs/deployment.md]``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- check_image: (\S+)")
COMPOSE_UP = re.compile(r"^docker compose(?: --profile [\w.-]+)* up --build$")


class StepsError(ValueError):
    """The documentation and the check disagree; the message says how."""


def block(text: str, name: str) -> list[str]:
    """The lines of the fenced block right after the ``check_image: name`` marker."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        found = MARKER.match(line)
        if found and found[1] == name:
            if at + 1 == len(lines) or not lines[at + 1].startswith("```"):
                raise StepsError(f"the check_image: {name} marker is not followed by a fenced block")
            for end in range(at + 2, len(lines)):
                if lines[end].startswith("```"):
                    return lines[at + 2:end]
            raise StepsError(f"the check_image: {name} block is not closed")
    raise StepsError(f"no block is marked check_image: {name}; check_image.sh runs the steps that marker names")


def checked(lines: list[str]) -> list[str]:
    """``lines``, once every ``docker`` command among them is one check_image.sh stands in for."""
    for line in lines:
        if re.match(r"^\s*docker\b", line) and not COMPOSE_UP.match(line.strip()):
            raise StepsError(f"the documented step {line.strip()!r} is a Docker command check_image.sh cannot stand in "
                             "for: it runs `docker compose [--profile P]... up --build` only")
    if not any(COMPOSE_UP.match(line.strip()) for line in lines):
        raise StepsError("the documented steps never run `docker compose ... up --build`: "
                         "the check would start nothing")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "deployment.md")
    args = parser.parse_args()
    try:
        lines = checked(block(args.doc.read_text(), args.name))
    except StepsError as error:
        sys.exit(f"{args.doc}: {error}")
    sys.stdout.write("".join(f"{line}\n" for line in lines))


if __name__ == "__main__":
    main()
