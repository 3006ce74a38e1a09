"""Ding et al., Fig. 3: fidelity α_t = u_{s*(t)} / u* over the iterations t of Algorithm 1.

The paper plots 8 runs for kϵ ∈ {0.5, 5, 10} and states: at kϵ = 0.5 a reasonable fidelity is unlikely;
at kϵ = 5 or 10 α_t converges towards 1 rapidly. It does not give |S|, u₀ or g for this figure. We use
Fig. 4's utilities (|S| = 100, uniform on (0, 1)), u₀ = 0, g = 0.01, k = 10, uncapped; and, to show what
the number of candidates does, |S| = 10. α_t = 0 while nothing has been selected; after the loop stops
α keeps its final value.

    .venv/bin/python benchmarks/ding_fig3.py [--quick]
"""

from __future__ import annotations

import argparse

import numpy as np
from ding_common import RESULTS, console, replicate_columns, write_json
from rich.table import Table

from shared.dptune import constant_overhead_select
from shared.noise import noise_source

K, U0, G = 10, 0.0, 0.01
K_EPSILONS = (0.5, 5.0, 10.0)
PAPER = {0.5: "unlikely to reach a reasonable fidelity", 5.0: "converges towards 1", 10.0: "converges towards 1"}


def fidelity_curve(utilities: np.ndarray, k_epsilon: float, seed: int, length: int) -> np.ndarray:
    result = constant_overhead_select(replicate_columns(utilities, K), epsilon=k_epsilon / K, u0=U0, g=G,
                                      max_iterations=100_000, rng=noise_source(seed))
    curve, current = np.zeros(length), 0.0
    for t in range(length):
        if t < len(result.history) and result.history[t].accepted is not None:
            current = utilities[result.history[t].accepted] / utilities.max()
        curve[t] = current
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per setting")
    args = parser.parse_args()
    runs, length = (3 if args.quick else 8), 60
    curves: dict[str, dict[str, np.ndarray]] = {}
    for size in (100, 10):
        utilities = np.random.default_rng(size).uniform(size=size)
        curves[str(size)] = {
            str(ke): np.array([fidelity_curve(utilities, ke, 31 * run + size, length) for run in range(runs)])
            for ke in K_EPSILONS
        }
    table = Table(title=f"Fig. 3: final fidelity α_T = u_s*/u* ({runs} runs; u0 = {U0}, g = {G}, k = {K})")
    for column in ("kϵ", "|S| = 100: α_T mean ± sd (min)", "|S| = 10: α_T mean ± sd (min)", "paper (Fig. 3)"):
        table.add_column(column)
    for ke in K_EPSILONS:
        cells = []
        for size in ("100", "10"):
            final = curves[size][str(ke)][:, -1]
            cells.append(f"{final.mean():.2f} ± {final.std():.2f} ({final.min():.2f})")
        table.add_row(str(ke), *cells, PAPER[ke])
    console.print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(11, 6), sharex=True, sharey=True)
    for row, size in enumerate(("100", "10")):
        for col, ke in enumerate(K_EPSILONS):
            ax = axes[row, col]
            for curve in curves[size][str(ke)]:
                ax.plot(np.arange(1, length + 1), curve, linewidth=1)
            ax.set_title(f"|S| = {size}, kϵ = {ke}", fontsize=9)
            ax.set_ylim(0, 1.05)
            if row == 1:
                ax.set_xlabel("iteration t")
            if col == 0:
                ax.set_ylabel("fidelity α_t")
    fig.suptitle("Ding et al. Fig. 3 reproduction")
    fig.tight_layout()
    name = "ding_fig3_quick" if args.quick else "ding_fig3"
    fig.savefig(RESULTS / f"{name}.png", dpi=120)
    path = write_json(name, {
        "setting": {"k": K, "u0": U0, "g": G, "runs": runs, "utilities": "uniform(0,1)", "S": [100, 10]},
        "final_fidelity": {size: {ke: c[:, -1] for ke, c in by_ke.items()} for size, by_ke in curves.items()},
        "curves": curves, "paper": {str(k): v for k, v in PAPER.items()},
    })
    console.print(f"wrote {path} and {name}.png")


if __name__ == "__main__":
    main()
