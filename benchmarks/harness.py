"""What every benchmark script shares: one BLAS thread, the results folder, `--quick`, JSON and figures, and the
previous code of a git ref to measure beside this tree's.

Import it first (``import harness``): it pins BLAS to one thread before numpy loads (the machine's two cores
are shared; threaded BLAS only spins) and puts the repository root on ``sys.path`` so scripts run as
``.venv/bin/python benchmarks/<name>.py``. Results go to ``benchmarks/results/<name>[_quick].{json,png}``;
every JSON records the command line that made it.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

RESULTS = Path(__file__).resolve().parent / "results"

PAPER_ACQUISITION = "paper-ucb"
"""The acquisition every reproduction of a paper passes explicitly: Algorithm 2's GP-UCB, μ + √β_t σ (whatever the
modeler's default acquisition is)."""


def add_quick(parser: argparse.ArgumentParser, what: str) -> None:
    """``--quick``: a small run that checks the script end to end (``what`` says what it cuts)."""
    parser.add_argument("--quick", action="store_true", help=f"a quick run: {what}; results get a _quick suffix")


def result_path(name: str, suffix: str, *, quick: bool = False) -> Path:
    """``benchmarks/results/<name>[_quick].<suffix>``, the folder created if needed."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / f"{name}{'_quick' if quick else ''}.{suffix}"


def command_line() -> str:
    """The command that is running, as one would type it from the repository root."""
    return ".venv/bin/python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(sys.argv[0]).name}",
                                                                   *sys.argv[1:]])


def write_json(name: str, payload: dict, *, quick: bool = False) -> Path:
    """Writes ``{"command": …, **payload}`` (numpy values as plain numbers) and returns the path."""
    path = result_path(name, "json", quick=quick)
    path.write_text(json.dumps({"command": command_line(), **payload}, indent=1, default=_plain) + "\n")
    return path


@functools.cache
def commit_stamp() -> tuple[str, bool]:
    """The short commit of the repository's HEAD and whether the tree differs from it (tracked files), as at the first
    call: a script calls it when it starts, so a long run is named by the code it started with."""
    git = ["git", "-C", str(REPOSITORY)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dirty = bool(subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                text=True, check=True).stdout.strip())
    return commit, dirty


def dated_name(name: str, *, today: datetime.date | None = None, stamp: tuple[str, bool] | None = None) -> str:
    """``<name>_<date>_<short commit>``: how every results file is named (the date in UTC, the commit the run
    started from, :func:`commit_stamp`)."""
    commit, _ = commit_stamp() if stamp is None else stamp
    return f"{name}_{(today or datetime.datetime.now(datetime.UTC).date()).isoformat()}_{commit}"


def write_dated_json(name: str, payload: dict, *, folder: Path | None = None, today: datetime.date | None = None,
                     stamp: tuple[str, bool] | None = None) -> Path:
    """Writes ``{"command", "commit", "tree_dirty", "date", **payload}`` to ``<name>_<date>_<commit>.json`` in
    ``folder`` (default the results folder) and returns the path. A file is never overwritten: a second result of
    the same name, day and commit gets ``_2``, ``_3``, … after the commit."""
    folder = RESULTS if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    commit, dirty = commit_stamp() if stamp is None else stamp
    day = (today or datetime.datetime.now(datetime.UTC).date()).isoformat()
    text = json.dumps({"command": command_line(), "commit": commit, "tree_dirty": dirty, "date": day, **payload},
                      indent=1, default=_plain) + "\n"
    stem = dated_name(name, today=today, stamp=(commit, dirty))
    for copy in range(1, 1000):
        path = folder / f"{stem}{'' if copy == 1 else f'_{copy}'}.json"
        try:
            with path.open("x") as handle:  # exclusive: an existing file is left as it is
                handle.write(text)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{name}: 999 results of this name, day and commit already exist in {folder}")


def save_figure(fig, name: str, *, quick: bool = False, dpi: int = 110) -> Path:
    """Saves a matplotlib figure as ``<name>[_quick].png`` and returns the path."""
    path = result_path(name, "png", quick=quick)
    fig.savefig(path, dpi=dpi)
    return path


def worktree(ref: str) -> Path:
    """A detached ``git worktree`` of ``ref`` at ``build/worktree-<commit>`` (made once, reused): the previous code,
    measured without keeping a copy of it here. One tree per commit, so benchmarks of different refs never move
    each other's checkout."""
    commit = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    tree = REPOSITORY / "build" / f"worktree-{commit[:12]}"
    if not (tree / ".git").exists():
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", str(tree), commit],
                       capture_output=True, text=True, check=True)
    return tree


def run_at(ref: str, script: str, *arguments: str) -> dict:
    """Runs ``script`` (a benchmark) with the arguments and ``--tree <worktree of ref>`` and returns the JSON its last
    output line holds: the script puts the tree first on ``sys.path``, so it measures the code at ``ref``."""
    output = subprocess.run([sys.executable, script, *arguments, "--tree", str(worktree(ref))],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value)}")
