"""Where DPareto's HVPoI measures the hypervolume gain: an A/B on the sparse vector technique (§2.2).

"objective": in (ε, error) against the anti-ideal point (10, 1). "transformed": in the surrogates' (log ε,
logit error) against the reference point GPflowOpt estimates from the front there — what the authors' code
(github.com/amzn/differential-privacy-bayesian-optimization, ``dpareto/hypervolume_improvement/harness.py``, with
GPflowOpt's ``HVProbabilityOfImprovement``) does. Both arms run the same seeds, so they start from the same
k₀ random points and are compared seed by seed; the score is the final hypervolume (anti-ideal (10, 1)) as a
fraction of the exact one (the front of a 200 × 200 grid, as ``dpareto_synthetic.py``).

    .venv/bin/python benchmarks/dpareto_hvpoi_space.py [--quick] [--seeds 20] [--iterations 64]
"""

from __future__ import annotations

import argparse
import time

import dpareto_common as common  # imports harness first: one BLAS thread before numpy loads
import harness
import numpy as np
from dpareto_synthetic import fine_grid
from rich.console import Console
from scipy import stats

from shared.algorithms.dpareto.optimizer import HVPOI_SPACES, dpareto
from shared.algorithms.dpareto.problems import svt_problem

K0 = 16


def mean_ci(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t confidence interval."""
    values = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return float(values.mean()), float(values.mean() - half), float(values.mean() + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_quick(parser, "3 seeds, 16 + 16 evaluations, a 60 × 60 exact grid")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=64)
    args = parser.parse_args()
    seeds, iterations, shape = (3, 16, (60, 60)) if args.quick else (args.seeds, args.iterations, (200, 200))
    console = Console()
    problem = svt_problem()
    exact = fine_grid(problem, shape).hypervolume()
    ratios, seconds = {}, {}
    for space in HVPOI_SPACES:
        start = time.process_time()
        with common.progress_bar(space, seeds * (K0 + iterations)) as advance:
            runs = [dpareto(problem, initial_points=K0, iterations=iterations, rng=seed, progress=advance,
                            hvpoi_space=space) for seed in range(seeds)]
        ratios[space] = np.array([r.hypervolume() / exact for r in runs])
        seconds[space] = (time.process_time() - start) / seeds
    difference = ratios["transformed"] - ratios["objective"]
    summary = {space: dict(zip(("mean", "ci_low", "ci_high"), mean_ci(r)), minimum=float(r.min()),
                           seeds_reaching_95=int(np.sum(r >= 0.95)), cpu_seconds_per_run=seconds[space],
                           ratios=r.tolist()) for space, r in ratios.items()}
    summary["transformed_minus_objective"] = dict(zip(("mean", "ci_low", "ci_high"), mean_ci(difference)),
                                                  transformed_better=int(np.sum(difference > 0)),
                                                  objective_better=int(np.sum(difference < 0)))
    console.print(f"SVT, {K0} + {iterations} evaluations, {seeds} seeds; exact HV {exact:.4f} ({shape[0]}×{shape[1]} "
                  "grid)")
    for space in HVPOI_SPACES:
        s = summary[space]
        console.print(f"  {space:12s} HV/exact {s['mean']:.4f} (95% CI {s['ci_low']:.4f}–{s['ci_high']:.4f}), "
                      f"min {s['minimum']:.4f}, {s['seeds_reaching_95']}/{seeds} ≥ 0.95, "
                      f"{s['cpu_seconds_per_run']:.1f} CPU s/run")
    d = summary["transformed_minus_objective"]
    console.print(f"  transformed − objective, paired: {d['mean']:+.4f} (95% CI {d['ci_low']:+.4f} to "
                  f"{d['ci_high']:+.4f}); transformed ahead on {d['transformed_better']}, objective on "
                  f"{d['objective_better']} of {seeds} seeds")
    name = "dpareto_hvpoi_space" + (f"_k{iterations}" if iterations != 64 and not args.quick else "")
    path = harness.write_json(name, {"k0": K0, "k": iterations, "seeds": seeds, "exact_grid": shape,
                                                      "exact_hypervolume": exact, **summary}, quick=args.quick)
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
