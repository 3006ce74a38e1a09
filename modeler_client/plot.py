"""Plots of runs, as matplotlib figures (for notebooks) and PNG files (for the CLI): every measurement, the
best value so far and, when the optimum is known, simple regret, against the number of answers.

Figures are built with :class:`matplotlib.figure.Figure` directly, not pyplot: no global state, no backend to
choose, nothing to close; in Jupyter a returned figure is shown inline (``%matplotlib inline``).

A random-search band (``random_values``: every value of the table, as a demo or a benchmark knows them) shows
what k distinct rows drawn uniformly would give: the mean of their best and its 10–90 % range, exactly, from
P(best of k ≤ v_(m)) = C(m, k) / C(n, k) with v_(m) the m-th smallest value.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln

from modeler_client.importance import Importance
from modeler_client.runfile import RunRecord


def run_label(record: RunRecord) -> str:
    release = record.release
    certified = "certified" if release.certified else "NOT DP"
    batch = f", q={record.settings.batch}" if record.settings.batch > 1 else ""
    return f"release {release.id}: {release.mechanism} ε={release.epsilon:g} ({certified}){batch}"


def run_title(records: Sequence[RunRecord]) -> str:
    """The datasets and releases the runs are on (what a reader of the figure needs to know first)."""
    datasets = ", ".join(str(d) for d in dict.fromkeys(r.release.dataset_id for r in records))
    releases = ", ".join(f"{r.release.id} ({r.release.mechanism} ε={r.release.epsilon:g})"
                         for r in {r.release.id: r for r in records}.values())
    return f"dataset {datasets} · release {releases}"


def random_search_band(values: ArrayLike, queries: int, goal: str = "maximize",
                       quantiles: tuple[float, float] = (0.1, 0.9)) -> tuple[NDArray, NDArray, NDArray]:
    """(mean, low, high) of the best of k = 1..``queries`` distinct uniformly random rows, exactly."""
    ordered = np.sort(np.asarray(values, dtype=float))
    if goal == "minimize":
        ordered = ordered[::-1]  # "best" is then the smallest: the same maths on the reversed order
    n = len(ordered)
    m = np.arange(1, n + 1)
    mean, low, high = (np.empty(min(queries, n)) for _ in range(3))
    for k in range(1, len(mean) + 1):
        log_cdf = np.where(m >= k, _log_binomial(m, k) - _log_binomial(n, k), -np.inf)
        cdf = np.exp(log_cdf)  # P(best of k is at most the m-th value in that order)
        pmf = np.diff(cdf, prepend=0.0)
        mean[k - 1] = pmf @ ordered
        low[k - 1], high[k - 1] = (ordered[np.searchsorted(cdf, p - 1e-12)] for p in quantiles)
    return mean, low, high


def _log_binomial(a: NDArray | int, b: int) -> NDArray:
    a = np.asarray(a, dtype=float)
    with np.errstate(invalid="ignore"):
        return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def figure_runs(
    records: Sequence[RunRecord],
    *,
    labels: Sequence[str] | None = None,
    measurements: bool = True,
    random_values: ArrayLike | None = None,
) -> Figure:
    """Best-so-far (with every measurement as a dot) and, if any run knows its optimum, log simple regret."""
    labels = list(labels) if labels is not None else [run_label(r) for r in records]
    with_regret = [r.simple_regret() is not None for r in records]
    panels = 2 if any(with_regret) else 1
    fig = Figure(figsize=(6.0 * panels, 4.4))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    goal = records[0].goal if records else "maximize"
    longest = max((len(r.done()) for r in records), default=0)
    band = random_search_band(random_values, longest, goal) if random_values is not None and longest else None
    best_ax = axes[0]
    for k, (record, label) in enumerate(zip(records, labels)):
        best = record.best_so_far()
        answers = np.arange(1, len(best) + 1)
        best_ax.plot(answers, best, color=f"C{k}", label=label)
        if measurements:
            best_ax.scatter(answers, [q.value for q in record.done()], s=10, color=f"C{k}", alpha=0.45)
    if band is not None:
        _draw_band(best_ax, *band)
    best_ax.set(xlabel="answers", ylabel=f"value ({goal}): measurements and best so far", title="Best value found")
    best_ax.grid(alpha=0.3)
    best_ax.legend(fontsize=8)
    if panels == 2:
        regret_ax = axes[1]
        for k, (record, label, known) in enumerate(zip(records, labels, with_regret)):
            regret = record.simple_regret() if known else None
            if regret is not None:
                # Regret 0 (optimum found) cannot be drawn on a log axis; show it at the floor.
                regret_ax.plot(range(1, len(regret) + 1), regret.clip(min=1e-6), color=f"C{k}", marker=".", label=label)
        known_records = [r for r, known in zip(records, with_regret) if known]
        if band is not None:
            unit = known_records[0].settings.signal_std or 1.0
            optimum = known_records[0].settings.optimum
            _draw_band(regret_ax, *(np.abs(optimum - b).clip(min=1e-6) / unit for b in band))
        in_sigma = any(r.settings.signal_std for r in records)
        regret_ax.set(xlabel="answers", ylabel="simple regret" + (" (units of σ_y)" if in_sigma else ""), yscale="log",
                      title="Simple regret")
        regret_ax.grid(alpha=0.3, which="both")
        regret_ax.legend(fontsize=8)
    fig.suptitle(run_title(records), fontsize=10)
    fig.tight_layout()
    return fig


def _draw_band(ax, mean: NDArray, low: NDArray, high: NDArray) -> None:
    k = np.arange(1, len(mean) + 1)
    ax.fill_between(k, low, high, color="grey", alpha=0.2, label="random search 10–90 %")
    ax.plot(k, mean, color="grey", ls=":", label="random search (mean)")


def plot_runs(records: Sequence[RunRecord], out: str | Path, **options) -> Path:
    """:func:`figure_runs` saved as a PNG at ``out``; returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure_runs(records, **options).savefig(out, dpi=110)
    return out


def figure_importance(importance: Importance, title: str = "") -> Figure:
    """A horizontal bar per released coordinate: its relative importance (1 / ARD lengthscale, largest = 1), with
    the half-samples' middle-80% interval as an error bar; the warnings, if any, in red beneath."""
    order = np.argsort(importance.relative)
    lines = [textwrap.fill("⚠ " + sentence, 90) for sentence in importance.warnings]
    extra = sum(line.count("\n") + 1 for line in lines)
    fig = Figure(figsize=(6.4, 0.9 + 0.32 * len(order) + 0.17 * extra))
    ax = fig.add_subplot()
    relative = np.array([importance.relative[j] for j in order])
    error = None
    if importance.low:
        low, high = np.array([importance.low[j] for j in order]), np.array([importance.high[j] for j in order])
        error = np.vstack([np.maximum(relative - low, 0.0), np.maximum(high - relative, 0.0)])
    ax.barh([importance.names[j] for j in order], relative, color="C0", xerr=error, capsize=3, ecolor="0.25")
    what = "feature" if importance.per_feature else "released coordinate (mixes the features)"
    ax.set(xlabel="relative importance: 1 / ARD lengthscale, largest = 1 (bars: half-samples' middle 80%)",
           xlim=(0, 1.1),
           title=(title + "\n" if title else "") + f"Importance per {what}, from {importance.observations} answers")
    ax.grid(axis="x", alpha=0.3)
    if lines:
        fig.text(0.01, 0.01, "\n".join(lines), color="#b00", fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.17 * extra / fig.get_figheight(), 1, 1))
    return fig
