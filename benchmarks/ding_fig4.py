"""Ding et al., Fig. 4: iterations T of Algorithm 1 against n = (u* − u₀)/g.

Setting (the paper's where it gives one): |S| = 100 mean utilities drawn i.i.d. uniform on (0, 1), u* their
maximum, u₀ = 0, g = u*/n, 10 runs per point (mean ± sd). The paper does not say which kϵ Fig. 4 used; we
run Fig. 3's legend values 0.5, 5, 10 under both readings of that legend (kϵ itself, or ϵ with k = 10, i.e.
kϵ = 5, 50, 100) and the noiseless world (Lemma 1). The loop is run uncapped (cap 10⁵) to see the paper's
T; we also report how often ``suggested_cap`` would have cut it. Fit: T ≈ c·log n by least squares through
the origin, natural log and log₂ (the paper: c ≈ 3, between 1 and 5).

    .venv/bin/python benchmarks/ding_fig4.py [--quick]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from ding_common import console, replicate_columns
from harness import save_figure, write_json
from rich.progress import track
from rich.table import Table

from shared.algorithms.ding.dptune import constant_overhead_select, noiseless_iterations, suggested_cap
from shared.dp.noise import noise_source

K = 10
UNCAPPED = 100_000


def legend_value(k_epsilon: float | None, factor: float) -> str:
    """The Fig. 3 legend value (0.5, 5 or 10) that stands for ``k_epsilon`` when the legend is kϵ / ``factor``."""
    value = None if k_epsilon is None else k_epsilon / factor
    return str(value) if value in (0.5, 5.0, 10.0) else "-"


def fit_multiplier(ns: np.ndarray, ts: np.ndarray, log) -> float:
    x = log(ns)
    return float(x @ ts / (x @ x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs, fewer n")
    args = parser.parse_args()
    runs = 3 if args.quick else 10
    ns = np.array([2, 8, 32, 128, 512] if args.quick else [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
    settings = [None, 0.5, 5.0, 10.0, 50.0, 100.0]  # None = the noiseless world
    T = {str(ke): np.zeros((len(ns), runs)) for ke in settings}
    over_cap = {str(ke): 0 for ke in settings if ke}
    for j, n in enumerate(track(ns, description="n")):
        for run in range(runs):
            utilities = np.random.default_rng(1000 * run + 7).uniform(size=100)
            u_star = utilities.max()
            g = u_star / n
            T["None"][j, run] = noiseless_iterations(u_star, u0=0.0, g=g)
            for ke in settings[1:]:
                result = constant_overhead_select(
                    replicate_columns(utilities, K), epsilon=ke / K, u0=0.0, g=g, max_iterations=UNCAPPED,
                    rng=noise_source(run * 7919 + j * 104729 + int(ke * 10)),
                )
                T[str(ke)][j, run] = result.iterations
                over_cap[str(ke)] += result.iterations > suggested_cap(u0=0.0, g=g, k=K, epsilon=ke / K)

    table = Table(title="Fig. 4: iterations T against n = (u* − u0)/g  (|S| = 100, uniform utilities)")
    table.add_column("n", justify="right")
    for ke in settings:
        table.add_column("noiseless" if ke is None else f"kϵ={ke}", justify="right")
    for j, n in enumerate(ns):
        table.add_row(str(n), *(f"{T[str(ke)][j].mean():.1f} ± {T[str(ke)][j].std():.1f}" for ke in settings))
    console.print(table)
    fits = {}
    summary = Table(title="multiplier c in T ≈ c·log n (paper: ≈ 3, sandwiched between 1 and 5; log base not stated)")
    for column in ("setting", "legend value if legend = kϵ", f"legend value if legend = ϵ (k = {K})", "c (ln n)",
                   "c (log₂ n)", "in [1, 5] (ln)?", "runs over suggested_cap"):
        summary.add_column(column)
    for ke in settings:
        flat_n = np.repeat(ns, runs).astype(float)
        flat_t = T[str(ke)].ravel()
        c_ln, c_log2 = fit_multiplier(flat_n, flat_t, np.log), fit_multiplier(flat_n, flat_t, np.log2)
        fits[str(ke)] = {"c_ln": c_ln, "c_log2": c_log2}
        summary.add_row("noiseless" if ke is None else f"kϵ={ke}", legend_value(ke, 1.0), legend_value(ke, K),
                        f"{c_ln:.2f}", f"{c_log2:.2f}",
                        "yes" if 1 <= c_ln <= 5 else "no",
                        "-" if ke is None else f"{over_cap[str(ke)]}/{len(ns) * runs}")
    console.print(summary)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for ke in settings:
        label = "noiseless (Lemma 1)" if ke is None else f"kϵ = {ke}"
        ax.errorbar(ns, T[str(ke)].mean(axis=1), yerr=T[str(ke)].std(axis=1), capsize=3, marker="o", label=label)
    grid = np.geomspace(ns.min(), ns.max(), 100)
    for c in (1, 3, 5):
        ax.plot(grid, c * np.log(grid), "k:", linewidth=0.8)
        ax.annotate(f"{c}·ln n", (grid[-1], c * math.log(grid[-1])), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("n = (u* − u0)/g")
    ax.set_ylabel("iterations T")
    ax.set_title("Ding et al. Fig. 4 reproduction (|S| = 100, 10 runs)" if not args.quick else "Fig. 4 (quick)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = "ding_fig4_quick" if args.quick else "ding_fig4"
    save_figure(fig, name, dpi=120)
    path = write_json(name, {
        "setting": {"S": 100, "k": K, "u0": 0.0, "runs": runs, "utilities": "uniform(0,1)", "uncapped": UNCAPPED},
        "n": ns, "iterations": {key: value for key, value in T.items()},
        "mean": {key: value.mean(axis=1) for key, value in T.items()},
        "sd": {key: value.std(axis=1) for key, value in T.items()},
        "fits": fits, "runs_over_suggested_cap": over_cap, "paper": {"multiplier": 3, "range": [1, 5]},
    })
    console.print(f"wrote {path} and {name}.png")


if __name__ == "__main__":
    main()
