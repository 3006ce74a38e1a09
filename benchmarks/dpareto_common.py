"""Shared pieces of the DPareto benchmarks: Rich progress and the plots of fronts and hypervolumes."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import harness  # one BLAS thread and the repository on sys.path, before numpy loads
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shared.algorithms.dpareto.optimizer import ParetoResult

COLOURS = {"dpareto": "tab:red", "random": "tab:blue", "grid": "tab:green", "exact": "black"}


@contextmanager
def progress_bar(description: str, total: int):
    """Yields a callback for the DPareto loops that advances one Rich bar."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
        task = bar.add_task(description, total=total)

        def advance(method: str, done: int, total_run: int, evaluation) -> None:
            bar.update(task, advance=1, description=f"{description} [{method} {done}/{total_run}]")

        yield advance


def plot_front(ax, runs: list[ParetoResult], exact: np.ndarray | None, title: str) -> None:
    """All sampled points of each run (small dots) and each run's empirical front (steps)."""
    for run in runs:
        colour = COLOURS[run.method]
        ax.scatter(*run.points.T, s=8, alpha=0.35, color=colour)
        front = run.front()
        ax.step(*front.T, where="post", color=colour, label=f"{run.method} ({len(run.points)} points)")
    if exact is not None:
        ax.step(*exact.T, where="post", color="black", linestyle="--", label="exact front (fine grid)")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("error = 1 − utility")
    ax.set_title(title)
    ax.legend(fontsize=7)


def plot_hypervolume(ax, traces: dict[str, np.ndarray], grid: list[tuple[int, float]], exact: float | None,
                     title: str) -> None:
    """Hypervolume against evaluations: mean (and range over seeds) per method, grid sizes as points."""
    for method, trace in traces.items():
        trace = np.atleast_2d(trace)
        x = np.arange(1, trace.shape[1] + 1)
        ax.plot(x, trace.mean(axis=0), color=COLOURS[method], label=f"{method} (mean of {len(trace)})")
        if len(trace) > 1:
            ax.fill_between(x, trace.min(axis=0), trace.max(axis=0), color=COLOURS[method], alpha=0.15)
    if grid:
        ax.plot(*zip(*grid), "s-", color=COLOURS["grid"], label="grid (k per dimension)")
    if exact is not None:
        ax.axhline(exact, color="black", linestyle="--", label="exact")
        ax.axhline(0.95 * exact, color="grey", linestyle=":", label="95% of exact")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("hypervolume (anti-ideal (10, 1))")
    ax.set_title(title)
    ax.legend(fontsize=7)


def save(fig, name: str) -> Path:
    fig.tight_layout()
    path = harness.save_figure(fig, name)
    plt.close(fig)
    return path
