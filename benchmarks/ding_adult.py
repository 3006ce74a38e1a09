"""Ding et al. on UCI Adult: Algorithm 1 against naive composition and random search.

Data: ``shared.datasets.adult.load_adult`` — the 32,561 training rows are the private training set; the
test file is split in half into a public validation set (the paper's D_valid: every part's model and
every baseline is scored on it) and a test set that reports accuracy.

Candidates |S|: DP-SGD logistic regression hyperparameters (learning rate × clip norm × batch × epochs).
* ours: per-part Train (line 5's non-private option) on k parts, the capped selection at ϵ per iteration,
  then DP-SGD on all rows with the selected candidate at (ε_final, δ). Cost: cap·ϵ + ε_final.
* naive composition: every candidate trained by DP-SGD at (ε_final, δ) (the same per-candidate accuracy
  target), the best on validation kept. Cost: |S|·ε_final (basic composition), δ·|S|.
* random search at ours' total ε: K random candidates, each at (cap·ϵ + ε_final)/K, best on validation.
Noise: seeded research sources throughout (a benchmark, not a release).

    .venv/bin/python benchmarks/ding_adult.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from ding_common import console
from harness import save_figure, write_json
from rich.progress import track
from rich.table import Table

from shared.algorithms.ding.dptune import PrivateLogisticRegression, tune_and_train
from shared.datasets.adult import load_adult
from shared.dp.noise import noise_source

FINAL_EPSILON, DELTA = 1.0, 1e-5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 candidates, 1 repetition")
    args = parser.parse_args()
    lrs, clips = ((0.3, 3.0, 30.0), (1.0,)) if args.quick else ((0.1, 0.3, 1.0, 3.0, 10.0, 30.0), (0.1, 1.0))
    batches, epochs = (256,), ((1, 3) if args.quick else (1, 3))
    candidates = [PrivateLogisticRegression(learning_rate=lr, batch_size=b, epochs=e, clip_norm=c)
                  for lr, c, b, e in itertools.product(lrs, clips, batches, epochs)]
    repetitions = 1 if args.quick else 3
    k, per_iteration, u0, g, cap = 100, 0.05, 0.7, 0.01, 40  # kϵ = 5 (the paper's k ≥ 5/ϵ)

    X, y = load_adult("train")
    X_rest, y_rest = load_adult("test")
    half = len(y_rest) // 2
    validation, test = (X_rest[:half], y_rest[:half]), (X_rest[half:], y_rest[half:])
    total = cap * per_iteration + FINAL_EPSILON

    def train(candidate, epsilon, seed):
        model = candidate.private_learner(len(y), epsilon, DELTA / 1.0)
        return model.fit(X, y, noise_source(seed), rng=np.random.default_rng(seed))

    rows: dict[str, list[float]] = {"ours": [], "naive": [], "random K=1": [], "random K=3": [], "random K=10": []}
    iterations, selected = [], []
    naive_models = [train(c, FINAL_EPSILON, 500 + i) for i, c in enumerate(track(candidates, description="naive"))]
    naive_val = [m.score(*validation) for m in naive_models]
    rows["naive"].append(naive_models[int(np.argmax(naive_val))].score(*test))
    for rep in track(range(repetitions), description="ours / random search"):
        rng = np.random.default_rng(rep)
        tuned = tune_and_train(X, y, candidates, k=k, epsilon=per_iteration, u0=u0, g=g, max_iterations=cap,
                               final_epsilon=FINAL_EPSILON, final_delta=DELTA, noise=noise_source(100 + rep),
                               rng=rng, validation=validation, private_parts=False)
        rows["ours"].append(tuned.model.score(*test) if tuned.model is not None else float("nan"))
        iterations.append(tuned.selection.iterations)
        selected.append(tuned.selection.index)
        for K in (1, 3, 10):
            picks = rng.choice(len(candidates), size=min(K, len(candidates)), replace=False)
            models = [train(candidates[i], total / len(picks), 1000 * rep + int(i)) for i in picks]
            best = models[int(np.argmax([m.score(*validation) for m in models]))]
            rows[f"random K={K}"].append(best.score(*test))

    costs = {"ours": total, "naive": len(candidates) * FINAL_EPSILON, "random K=1": total, "random K=3": total,
             "random K=10": total}
    table = Table(title=f"UCI Adult, DP-SGD logistic regression, |S| = {len(candidates)}, δ = {DELTA} per training "
                        f"(k = {k}, ϵ = {per_iteration}, cap = {cap}, u0 = {u0}, g = {g})")
    for column in ("method", "test accuracy (mean ± sd)", "total ε"):
        table.add_column(column)
    for name, values in rows.items():
        table.add_row(name, f"{np.nanmean(values):.4f} ± {np.nanstd(values):.4f}", f"{costs[name]:.2f}")
    console.print(table)
    console.print(f"ours: realised iterations {iterations} (cap {cap}); selected {selected}; "
                  f"best naive validation accuracy {max(naive_val):.4f} by candidate {int(np.argmax(naive_val))}")
    name = "ding_adult_quick" if args.quick else "ding_adult"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name_, values in rows.items():
        ax.errorbar(costs[name_], np.nanmean(values), yerr=np.nanstd(values), marker="o", capsize=3, label=name_)
    ax.set_xscale("log")
    ax.set_xlabel("total ε")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, name, dpi=120)
    path = write_json(name, {
        "setting": {"S": len(candidates), "k": k, "epsilon_per_iteration": per_iteration, "cap": cap, "u0": u0,
                    "g": g, "final_epsilon": FINAL_EPSILON, "delta": DELTA, "repetitions": repetitions},
        "candidates": [c.__dict__ for c in candidates], "accuracy": rows, "total_epsilon": costs,
        "iterations": iterations, "selected": selected, "naive_validation_accuracy": naive_val,
    })
    console.print(f"wrote {path} and {name}.png")


if __name__ == "__main__":
    main()
