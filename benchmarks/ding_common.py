"""Shared plumbing of the ding_* benchmarks: results folder, the command line, JSON output, tables."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
console = Console()


def command_line() -> str:
    return ".venv/bin/python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"command": command_line(), **payload}, indent=2, default=_plain) + "\n")
    return path


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value)}")


def replicate_columns(mean_utilities: np.ndarray, k: int) -> np.ndarray:
    """An |S| × k table whose row means are the given utilities (the paper draws mean utilities directly)."""
    return np.repeat(np.asarray(mean_utilities, dtype=float)[:, None], k, axis=1)
