"""The real-data figure: simple regret against iterations (Fig. 2b/2c) and S_T against r (Tables 4–9)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from real_data_experiments import EXPERIMENTS, GAUSSIAN_EPSILONS
from real_data_report import final, find


def plot(all_results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(all_results), 3, figsize=(17, 4.6 * len(all_results)), squeeze=False)
    for row, (key, results) in enumerate(all_results.items()):
        experiment = EXPERIMENTS[key]
        T = results["iterations"]
        ax = axes[row, 0]
        for s in results["settings"]:
            if (s["group"] in ("figure", "baseline")
                    or (s["method"] == "gaussian" and s["epsilon"] == max(GAUSSIAN_EPSILONS))):
                mean = np.array(s["mean"])
                style = "--" if s["method"] != "po-gp-ucb" else "-"
                ax.plot(range(1, T + 1), mean, style,
                        label=s["label"] + (" (σ_min≥ω)" if s.get("lifted") is False else ""))
        ax.set(title=f"{key}: simple regret vs iteration (r = {experiment.figure_r})", xlabel="iteration",
               ylabel="simple regret (σ_y)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)

        ax = axes[row, 1]
        for method, xs in (("po-gp-ucb", "epsilon"), ("gaussian", "epsilon")):
            chosen = [s for s in results["settings"]
                      if s["method"] == method and (method == "gaussian" or s["group"] == "figure")]
            chosen.sort(key=lambda s: s[xs])
            ax.errorbar([s[xs] for s in chosen], [final(s)[0] for s in chosen], [final(s)[1] for s in chosen],
                        marker="o", capsize=3,
                        label=f"{method}" + (" (NOT DP)" if method == "po-gp-ucb" else " (certified)"))
        for method, color in (("non-private", "k"), ("non-private-public-scaling", "tab:brown"), ("random", "grey")):
            ax.axhline(final(find(results, method=method))[0], color=color, ls=":", label=method)
        ax.set(title=f"{key}: S_{T} vs ε", xlabel="ε", ylabel=f"S_{T} (σ_y)", xscale="log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)

        ax = axes[row, 2]
        for i, (a, (rs, paper)) in enumerate(experiment.paper_tables.items()):
            chosen = [find(results, method="po-gp-ucb", log_epsilon=a, r=r) for r in rs]
            if not all(chosen):
                continue
            color = f"C{i}"
            ax.errorbar(rs, [final(s)[0] for s in chosen], [final(s)[1] for s in chosen], color=color, marker="o",
                        capsize=3, label=f"ours ε=e^{a}")
            ax.plot(rs, paper, color=color, ls="--", marker="x", label=f"paper ε=e^{a}")
            ax.axvline(experiment.paper_largest_r[a], color=color, ls=":", alpha=0.6)
        ax.set(title=f"{key}: S_{T} vs r (dotted: paper's largest r with σ_min≥ω)", xlabel="r", ylabel=f"S_{T} (σ_y)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
