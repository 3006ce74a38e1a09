"""PNG plots of runs: best-so-far value and, when the optimum is known, simple regret, against iteration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from modeler_client.runfile import RunRecord  # noqa: E402


def run_label(record: RunRecord) -> str:
    release = record.release
    certified = "certified" if release.certified else "NOT DP"
    return f"release {release.id}: {release.mechanism} ε={release.epsilon:g} ({certified})"


def plot_runs(records: Sequence[RunRecord], out: str | Path, *, labels: Sequence[str] | None = None) -> Path:
    """One panel of best-so-far values, plus a log-scale simple-regret panel if any run knows its optimum."""
    labels = list(labels) if labels is not None else [run_label(r) for r in records]
    with_regret = [r.simple_regret() is not None for r in records]
    panels = 2 if any(with_regret) else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.0 * panels, 4.2), squeeze=False)
    best_ax = axes[0, 0]
    for record, label in zip(records, labels):
        best = record.best_so_far()
        best_ax.plot(range(1, len(best) + 1), best, marker=".", label=label)
    goal = records[0].goal if records else "maximize"
    best_ax.set(xlabel="iteration", ylabel=f"best value so far ({goal})", title="Best value found")
    best_ax.grid(alpha=0.3)
    best_ax.legend(fontsize=8)
    if panels == 2:
        regret_ax = axes[0, 1]
        for record, label, known in zip(records, labels, with_regret):
            if known:
                regret = record.simple_regret()
                # Regret 0 (optimum found) cannot be drawn on a log axis; show it at the floor.
                regret_ax.plot(range(1, len(regret) + 1), regret.clip(min=1e-6), marker=".", label=label)
        in_sigma = any(r.settings.signal_std for r in records)
        regret_ax.set(
            xlabel="iteration",
            ylabel="simple regret" + (" (units of σ_y)" if in_sigma else ""),
            yscale="log",
            title="Simple regret",
        )
        regret_ax.grid(alpha=0.3, which="both")
        regret_ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
