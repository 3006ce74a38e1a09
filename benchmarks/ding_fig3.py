"""Ding et al., Fig. 3: fidelity α_t = u_{s*(t)} / u* over the iterations t of Algorithm 1.

The paper plots 8 runs per legend value 0.5, 5, 10 and states: at kϵ = 0.5 a reasonable fidelity is
unlikely; at kϵ = 5 or 10 α_t converges towards 1 rapidly. It does not give |S|, u₀, g or k for this
figure, and its legend is ambiguous: the values may be kϵ (as the text says) or ϵ with k = 10, i.e.
kϵ = 5, 50, 100. We run kϵ ∈ {0.5, 5, 10, 50, 100} and print both readings beside the paper's words.
Setting: Fig. 4's utilities (|S| = 100, uniform on (0, 1)), u₀ = 0, g = 0.01, k = 10, uncapped; and, to
show what the number of candidates does, |S| = 10. α_t = 0 while nothing has been selected; after a run
stops α keeps its final value; curves run to the longest run's T. 200 runs per setting (the paper's 8 cannot
bound a minimum): the table gives the mean ± sd, the 5th percentile and the minimum of α_T; the figure draws 8
runs and the mean of all.

    .venv/bin/python benchmarks/ding_fig3.py [--quick] [--runs 200]
"""

from __future__ import annotations

import argparse

import numpy as np
from ding_common import console, replicate_columns
from harness import save_figure, write_json
from rich.table import Table

from shared.algorithms.ding.dptune import Selection, constant_overhead_select
from shared.dp.noise import noise_source

K, U0, G = 10, 0.0, 0.01
K_EPSILONS = (0.5, 5.0, 10.0, 50.0, 100.0)
LEGEND = (0.5, 5.0, 10.0)  # Fig. 3's legend values
PAPER = {0.5: "unlikely to reach a reasonable fidelity", 5.0: "converges towards 1", 10.0: "converges towards 1"}
READINGS = {"legend = kϵ": 1.0, f"legend = ϵ, k = {K} (kϵ = {K}×)": float(K)}


def select(utilities: np.ndarray, k_epsilon: float, seed: int, g: float = G) -> Selection:
    return constant_overhead_select(replicate_columns(utilities, K), epsilon=k_epsilon / K, u0=U0, g=g,
                                    max_iterations=100_000, rng=noise_source(seed))


def fidelity_curve(utilities: np.ndarray, selection: Selection, length: int) -> np.ndarray:
    """α_t for t = 1..length: u_{s*}/u* after iteration t (0 before any selection, the final value after T)."""
    curve, current = np.zeros(length), 0.0
    for t in range(length):
        if t < len(selection.history) and selection.history[t].accepted is not None:
            current = utilities[selection.history[t].accepted] / utilities.max()
        curve[t] = current
    return curve


def fidelity_curves(runs: int, sizes: tuple[int, ...] = (100, 10), k_epsilons: tuple[float, ...] = K_EPSILONS,
                    g: float = G) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, list[Selection]]]]:
    """({|S|: {kϵ: runs × L array of α_t}}, the selections), L = the longest run's T over every setting."""
    utilities = {size: np.random.default_rng(size).uniform(size=size) for size in sizes}
    selections = {str(size): {str(ke): [select(utilities[size], ke, 31 * run + size, g) for run in range(runs)]
                              for ke in k_epsilons} for size in sizes}
    length = max(s.iterations for by_ke in selections.values() for runs_ in by_ke.values() for s in runs_)
    curves = {size: {ke: np.array([fidelity_curve(utilities[int(size)], s, length) for s in runs_])
                     for ke, runs_ in by_ke.items()} for size, by_ke in selections.items()}
    return curves, selections


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per setting")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    curves, selections = fidelity_curves(runs)
    length = curves["100"][str(K_EPSILONS[0])].shape[1]
    final = {size: {ke: c[:, -1] for ke, c in by_ke.items()} for size, by_ke in curves.items()}
    iterations = {size: {ke: [s.iterations for s in runs_] for ke, runs_ in by_ke.items()}
                  for size, by_ke in selections.items()}

    def cell(size: str, ke: float) -> str:
        values = final[size][str(ke)]
        return f"{values.mean():.2f} ± {values.std():.2f}, p5 {np.percentile(values, 5):.2f}, min {values.min():.2f}"

    table = Table(title=f"Fig. 3: final fidelity α_T = u_s*/u* ({runs} runs; u0 = {U0}, g = {G}, k = {K}; "
                        f"curves to t = {length})")
    for column in ("reading", "legend", "kϵ", "|S| = 100: α_T mean ± sd, p5, min", "|S| = 10: α_T mean ± sd, p5, min",
                   "paper (Fig. 3)"):
        table.add_column(column)
    for reading, factor in READINGS.items():
        for legend in LEGEND:
            table.add_row(reading, str(legend), str(legend * factor), cell("100", legend * factor),
                          cell("10", legend * factor), PAPER[legend])
    console.print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(K_EPSILONS), figsize=(3.4 * len(K_EPSILONS), 6), sharex=True, sharey=True)
    for row, size in enumerate(("100", "10")):
        for col, ke in enumerate(K_EPSILONS):
            ax = axes[row, col]
            for curve in curves[size][str(ke)][:8]:
                ax.plot(np.arange(1, length + 1), curve, linewidth=1)
            ax.plot(np.arange(1, length + 1), curves[size][str(ke)].mean(axis=0), color="black", linewidth=2,
                    label=f"mean of {runs}")
            ax.legend(fontsize=7, loc="lower right")
            ax.set_title(f"|S| = {size}, kϵ = {ke}", fontsize=9)
            ax.set_ylim(0, 1.05)
            if row == 1:
                ax.set_xlabel("iteration t")
            if col == 0:
                ax.set_ylabel("fidelity α_t")
    fig.suptitle("Ding et al. Fig. 3 reproduction (legend read as kϵ: first three columns; as ϵ with k = 10: "
                 "kϵ = 5, 50, 100)")
    fig.tight_layout()
    name = "ding_fig3_quick" if args.quick else "ding_fig3"
    save_figure(fig, name, dpi=120)
    path = write_json(name, {
        "setting": {"k": K, "u0": U0, "g": G, "runs": runs, "utilities": "uniform(0,1)", "S": [100, 10],
                    "curve_length": length},
        "final_fidelity": final, "iterations": iterations,
        "summary": {size: {ke: {"mean": v.mean(), "sd": v.std(), "p5": np.percentile(v, 5), "min": v.min(),
                                "runs_at_least_0.86": int(np.sum(v >= 0.86))} for ke, v in by_ke.items()}
                    for size, by_ke in final.items()},
        "mean_curves": {size: {ke: c.mean(axis=0) for ke, c in by_ke.items()} for size, by_ke in curves.items()},
        "paper": {str(k): v for k, v in PAPER.items()},
        "readings": {reading: {str(legend): legend * factor for legend in LEGEND}
                     for reading, factor in READINGS.items()},
    })
    console.print(f"wrote {path} and {name}.png")


if __name__ == "__main__":
    main()
