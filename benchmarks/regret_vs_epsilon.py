"""What the certified release costs: simple regret of GP-UCB vs ε for ``gaussian``, ``po-gp-ucb`` and no privacy.

Problems (``shared.datasets.synthetic``): the synthetic GP grid (seed 0) and Branin-Hoo, T = 50 queries, the
first 5 uniformly random, observations f + N(0, σ_n²); simple regret S_T = (max f − best f queried) / σ_y,
averaged over runs (run i shares its initial points and observation noise across methods).

- ``non-private``: GP-UCB on the inputs themselves, hyperparameters refitted by marginal likelihood every 5 queries.
- ``po-gp-ucb``: Algorithm 1 of Kharkovskii et al. (NOT DP; the problems' own normalisation), r = 10, refitted.
- ``gaussian W``: the certified release (δ = 1e-5, r = 10) of the inputs under the PUBLIC scaling
  "bounds": each feature's known domain (synthetic [−5, 5], Branin [−5, 10] × [0, 15]) mapped to [0, W].
  The neighbouring relation is "one row moves by ℓ2 ≤ 1 after scaling", so W = 1 hides a record anywhere in
  (most of) the domain, and W = 10 only within a tenth of each feature's range — weaker, and said so.
  Modeler variants (the noise std is public): ``fitted`` (plain SE on Z, refitted by marginal likelihood),
  and on the synthetic GP, where the generating lengthscale is known, ``corrected`` (SE on noise-debiased
  distances, ``shared.noisy_inputs.NoiseCorrectedKernel``) beside ``naive`` (the same SE on raw Z distances).
- The releases in this benchmark draw their noise from the seeded research source (reproducible; the same
  distribution as the floating-point-safe source, which the tests check); ``--sampler-cost`` measures the
  safe sampler against numpy on one gaussian release.

    nice .venv/bin/python benchmarks/regret_vs_epsilon.py [--quick] [--runs N] [--sampler-cost]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shared.datasets.synthetic import BRANIN_DOMAIN, SYNTHETIC_DOMAIN, branin_problem, grid, synthetic_gp_problem
from shared.kernels import SquaredExponential
from shared.noise import noise_source
from shared.noisy_inputs import NoiseCorrectedKernel
from shared.projection import gaussian_release, po_gp_ucb_release
from shared.scaling import apply_scaling
from shared.schemas import ScalingSpec
from shared.ucb import run_gp_ucb

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
DELTA = 1e-5
DELTA_UCB = 0.05
R = 10
T = 50
N_INIT = 5
WIDTHS = (1.0, 10.0)


def problems(size: int):
    synthetic = synthetic_gp_problem(0, size=size)
    domain = (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN)
    # generating lengthscale 1.25 in raw units; the bounds scaling maps a 10-wide axis to W
    yield "synthetic-gp", synthetic, grid(size, domain), domain, 1.25 / 10.0
    yield "branin-hoo", branin_problem(size=size), grid(size, BRANIN_DOMAIN), BRANIN_DOMAIN, None


def scaling(domain, width: float) -> ScalingSpec:
    return ScalingSpec(kind="bounds", lower=[lo for lo, _ in domain], upper=[hi for _, hi in domain], width=width)


def regret(problem, candidates, run: int, **options) -> float:
    if "kernel" not in options:  # fitted: a public starting guess, refitted every 5 queries
        span = float(np.max(np.ptp(candidates, axis=0)))
        options |= dict(lengthscale=0.2 * span, signal_variance=float(np.var(problem.f)), refit_every=5)
    result = run_gp_ucb(
        candidates, problem.f, T, noise_std=float(np.sqrt(problem.noise_variance)), rng=1000 + run,
        noise_variance=options.pop("noise_variance", problem.noise_variance), delta=DELTA_UCB, n_init=N_INIT,
        **options,
    )
    return float(problem.simple_regret(result.values.max()))


def configurations(name, problem, raw, domain, unit_lengthscale):
    """(method, ε, candidates-builder) for every run; builders take the run index."""
    yield "non-private", None, lambda run: (apply_scaling(raw, scaling(domain, 1.0)), {})
    for epsilon in EPSILONS:
        yield "po-gp-ucb", epsilon, lambda run, e=epsilon: (po_gp_ucb_release(problem.X, e, DELTA, R, run).Z, {})
        for width in WIDTHS:
            def gaussian(run, e=epsilon, w=width):
                release = gaussian_release(apply_scaling(raw, scaling(domain, w)), e, DELTA, R, run, noise=noise_source(run))
                return release.Z, {"noise_std": release.noise_std, "width": w}
            yield f"gaussian W={width:g} fitted", epsilon, gaussian
            if unit_lengthscale is not None and width == max(WIDTHS):
                yield f"gaussian W={width:g} corrected", epsilon, gaussian
                yield f"gaussian W={width:g} naive", epsilon, gaussian


def run_method(method, problem, candidates, info, unit_lengthscale, run):
    if method.endswith("corrected") or method.endswith("naive"):
        base = SquaredExponential(unit_lengthscale * info["width"], 1.0)
        kernel = NoiseCorrectedKernel(base, info["noise_std"]) if method.endswith("corrected") else base
        return regret(problem, candidates, run, kernel=kernel, jitter=1e-6)
    return regret(problem, candidates, run)


def sampler_cost(console: Console, n: int, r: int, d: int = 5) -> dict:
    X = np.random.default_rng(0).uniform(size=(n, d))
    timings = {}
    for label, noise in (("numpy (seeded, NOT floating-point-safe)", noise_source(0)), ("OpenDP (safe)", None)):
        start = time.process_time()
        gaussian_release(X, 1.0, DELTA, r, 0, noise=noise)
        timings[label] = time.process_time() - start
    ratio = timings["OpenDP (safe)"] / timings["numpy (seeded, NOT floating-point-safe)"]
    per_sample = timings["OpenDP (safe)"] / (n * r)
    console.print(f"gaussian_release n={n} r={r}: {timings}; OpenDP/numpy = {ratio:.0f}×; "
                  f"{per_sample * 1e6:.1f} µs per safe sample; {timings['OpenDP (safe)'] / 60:.1f} CPU minutes")
    return {"n": n, "r": r, "cpu_seconds": timings, "ratio_opendp_over_numpy": ratio,
            "opendp_us_per_sample": per_sample * 1e6, "opendp_cpu_minutes": timings["OpenDP (safe)"] / 60}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 × 40 grids, 2 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--sampler-cost", action="store_true", help="only time the safe sampler against numpy")
    parser.add_argument("--sampler-rows", type=int, default=1_000_000, help="n for --sampler-cost (r = 20)")
    args = parser.parse_args()
    console = Console()
    command = "nice .venv/bin/python benchmarks/regret_vs_epsilon.py " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    if args.sampler_cost:
        out = {"command": command, **sampler_cost(console, n=args.sampler_rows, r=20)}
        (RESULTS / "regret_vs_epsilon_sampler_cost.json").write_text(json.dumps(out, indent=2))
        return
    size, runs = (40, 2) if args.quick else (100, 5)
    runs = args.runs or runs
    jobs = [(name, p, raw, dom, ls, *c) for name, p, raw, dom, ls in problems(size) for c in configurations(name, p, raw, dom, ls)]
    results: dict[tuple[str, str, float | None], list[float]] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("GP-UCB runs", total=len(jobs) * runs)
        for name, problem, raw, domain, unit_ls, method, epsilon, build in jobs:
            for run in range(runs):
                candidates, info = build(run)
                results.setdefault((name, method, epsilon), []).append(
                    run_method(method, problem, candidates, info, unit_ls, run)
                )
                bar.advance(task)

    rows = [
        {"problem": n, "method": m, "epsilon": e, "mean_regret": float(np.mean(v)),
         "stderr": float(np.std(v) / np.sqrt(len(v))), "runs": len(v)}
        for (n, m, e), v in results.items()
    ]
    for name in dict.fromkeys(r["problem"] for r in rows):
        table = Table(title=f"{name}: simple regret S_{T} (mean ± s.e., {runs} runs; paper: no such table)")
        table.add_column("method")
        for e in EPSILONS:
            table.add_column(f"ε={e:g}", justify="right")
        for method in dict.fromkeys(r["method"] for r in rows if r["problem"] == name):
            cells = {r["epsilon"]: f"{r['mean_regret']:.3f}±{r['stderr']:.3f}" for r in rows if r["problem"] == name and r["method"] == method}
            table.add_row(method, *([cells[None]] * len(EPSILONS) if None in cells else [cells[e] for e in EPSILONS]))
        console.print(table)
    suffix = "_quick" if args.quick else ""
    (RESULTS / f"regret_vs_epsilon{suffix}.json").write_text(
        json.dumps({"command": command, "T": T, "r": R, "delta": DELTA, "widths": WIDTHS, "rows": rows}, indent=2)
    )
    plot(rows, RESULTS / f"regret_vs_epsilon{suffix}.png")


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["problem"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5))
    for ax, name in zip(np.atleast_1d(axes), names):
        for method in dict.fromkeys(r["method"] for r in rows if r["problem"] == name):
            sel = [r for r in rows if r["problem"] == name and r["method"] == method]
            if sel[0]["epsilon"] is None:
                ax.axhline(sel[0]["mean_regret"], color="k", ls="--", label=method)
                continue
            ax.errorbar([r["epsilon"] for r in sel], [r["mean_regret"] for r in sel], [r["stderr"] for r in sel],
                        marker="o", capsize=3, label=method)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ε (δ = 1e-5)")
        ax.set_ylabel(f"simple regret S_{T} / σ_y")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
