"""pobo's default surrogate with one choice changed at a time (the lengthscale prior's centre, the noise prior's
centre, the acquisition and GP-UCB's exploration weight, ARD), scored against the bar of a ``bo_quality.py`` study.

Each variant runs ``bo_quality.run_pobo_default`` (the modeler's own surrogate, the study's candidates, initial
rows and seeds) with the module-level choice swapped in the worker process:

* ``centre c``: the lengthscale prior LogNormal(√2 + ½ log d + c, √3) (c = 0 is BoTorch's; the fit maximises the
  density of l̃, whose mode is e⁻³ × the median, so c = +3 puts the maximum at BoTorch's median), the random
  restarts drawn around the shifted centre;
* ``noise c``: the noise prior LogNormal(c, 1) on σ̃_n² (default −4, BoTorch's);
* ``paper UCB``: Algorithm 2's GP-UCB (``--acquisition paper-ucb``) instead of LogEI; ``β_t × s`` with it:
  μ + √(s β_t) σ (Srinivas et al. 2010 scaled β_t by 1/5 in their experiments);
* ``ARD up to d = k``: one lengthscale per coordinate only while d ≤ k (default 16), isotropic above;
* ``multi-start at t ≤ 5 and every 10th``: fewer refits from every start (the default: t ≤ 10 and every 5th).

With ``--bar`` (a ``bo_quality.py`` summary, ``results/bo_quality_<date>_<commit>.json``) each cell is marked
where it misses the better BoTorch configuration's mean + 1 s.e. on the same problem and T; every variant is also
shown beside the default, paired by seed.

    nice -n 5 .venv/bin/python benchmarks/bo_quality_variants.py [--seeds 20] [--first-seed 0]
        [--variants default "paper UCB" ...] [--problems diabetes levy-6d ...] [--bar results/bo_quality_….json]

Two worker processes; results in ``results/bo_quality_variants_<date>_<commit>.json`` (never overwritten).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: I001  (one BLAS thread, before numpy loads)
import numpy as np

import bo_quality
import modeler_client.surrogate as surrogate
import shared.gp.regression as regression
import shared.gp.ucb as ucb

PROBLEMS = bo_quality.SUITE


@dataclass(frozen=True)
class Variant:
    lengthscale_centre: float = 0.0
    noise_centre: float = -4.0
    beta_scale: float = 1.0
    ard_max_dim: int = ucb.ARD_MAX_DIM
    acquisition: str = "logei"
    fewer_full_fits: bool = False

    def apply(self) -> None:
        """Swap the choices into this worker's modules (each worker runs one variant at a time)."""
        variant = self

        def dim_scaled(cls, dim: int) -> regression.HyperparameterPrior:
            return cls(regression.LogNormal(math.sqrt(2.0) + 0.5 * math.log(dim) + variant.lengthscale_centre,
                                            math.sqrt(3.0)),
                       regression.LogNormal(variant.noise_centre, 1.0))

        regression.HyperparameterPrior.dim_scaled = classmethod(dim_scaled)
        ucb.gp_ucb_beta = lambda t, n, delta: variant.beta_scale * BETA(t, n, delta)
        ucb.ARD_MAX_DIM = self.ard_max_dim
        surrogate.full_fit_due = (lambda t: t <= 5 or t % 10 == 0) if self.fewer_full_fits else FULL_FIT_DUE


BETA, FULL_FIT_DUE = ucb.gp_ucb_beta, surrogate.full_fit_due
VARIANTS = {
    "default": Variant(),
    "noise −3": Variant(noise_centre=-3.0),
    "noise −2": Variant(noise_centre=-2.0),
    "centre +1.5": Variant(lengthscale_centre=1.5),
    "centre +3": Variant(lengthscale_centre=3.0),
    "centre +3, noise −2": Variant(lengthscale_centre=3.0, noise_centre=-2.0),
    "paper UCB": Variant(acquisition="paper-ucb"),
    "paper UCB, β_t × 0.5": Variant(acquisition="paper-ucb", beta_scale=0.5),
    "paper UCB, β_t × 0.2": Variant(acquisition="paper-ucb", beta_scale=0.2),
    "paper UCB, β_t × 0.1": Variant(acquisition="paper-ucb", beta_scale=0.1),
    "ARD up to d = 8": Variant(ard_max_dim=8),
    "multi-start at t ≤ 5 and every 10th": Variant(fewer_full_fits=True),
}

_problems: dict = {}


def run_one(job: tuple[str, str, int]) -> dict:
    variant, name, seed = job
    VARIANTS[variant].apply()
    if name not in _problems or name == "synthetic":  # the synthetic function is another draw per seed
        _problems[name] = bo_quality.loader(name)(seed)
    problem = _problems[name]
    T = max(bo_quality.HORIZONS)
    run = bo_quality.run_pobo_default(problem, seed, T, acquisition=VARIANTS[variant].acquisition)
    regret = problem.regret(run.indices)
    return dict(variant=variant, problem=name, seed=seed, regret={str(h): float(regret[h - 1])
                                                                  for h in bo_quality.HORIZONS},
                fits=run.fits, at_bound=run.at_bound, seconds_per_step=float(np.mean(run.seconds)))


def loans_subsamples_at_bound(variant: str) -> int:
    """How many of the 10 uniform subsamples of 50 loans in
    ``test_the_default_refit_on_a_loans_subsample_never_collapses_to_the_likelihoods_floor`` end their refit at a bound
    under this variant (the test counts them without a bar)."""
    VARIANTS[variant].apply()
    problem = bo_quality.loader("loans")(0)
    count = 0
    for seed in range(10):
        rows = np.random.default_rng(seed).choice(len(problem.y), 50, replace=False)
        engine = ucb.GPUCB(problem.X, lengthscale=0.1, signal_variance=1.0, noise_variance=1e-6, delta=0.025)
        for i in rows:
            engine.observe(i, problem.table.objective[i])
        engine.rng = np.random.default_rng(0)
        engine.refit()
        count += bool(engine.last_fit.at_bound)
    return count


def bars(path: Path) -> dict[str, dict[str, float]]:
    """The better single-pick BoTorch configuration's mean + 1 s.e. per problem and T in a bo_quality summary."""
    results = json.loads(path.read_text())["results"]
    out = {}
    for problem, result in results.items():
        methods = result["methods"]
        botorch = [m for m in ("BoTorch default", "BoTorch + UCB β_t") if m in methods]
        if botorch:
            out[problem] = {h: min(sum(methods[m]["regret"][h]) for m in botorch) for h in ("25", "50")}
    return out


def summarise(runs: list[dict], bar: dict | None) -> dict:
    """Per variant and problem: mean ± s.e. at T = 25 and 50, paired difference to the default, bound share."""
    out: dict = {}
    for variant in dict.fromkeys(r["variant"] for r in runs):
        out[variant] = {}
        for problem in dict.fromkeys(r["problem"] for r in runs):
            mine = sorted((r for r in runs if r["variant"] == variant and r["problem"] == problem),
                          key=lambda r: r["seed"])
            base = {r["seed"]: r for r in runs if r["variant"] == "default" and r["problem"] == problem}
            if not mine:
                continue
            cell = dict(seeds=len(mine), at_bound=sum(r["at_bound"] for r in mine) / sum(r["fits"] for r in mine),
                        ms_per_step=1000 * float(np.mean([r["seconds_per_step"] for r in mine])))
            for h in ("25", "50"):
                values = [r["regret"][h] for r in mine]
                cell[f"T{h}"] = bo_quality.mean_se(values)
                if base and variant != "default":
                    cell[f"T{h}_minus_default"] = bo_quality.mean_se(
                        [r["regret"][h] - base[r["seed"]]["regret"][h] for r in mine])
                if bar and problem in bar:
                    cell[f"T{h}_meets_bar"] = cell[f"T{h}"][0] <= bar[problem][h] + 1e-12
            out[variant][problem] = cell
    return out


def show(summary: dict) -> None:
    for variant, problems in summary.items():
        cells = []
        for problem, c in problems.items():
            marks = "".join("" if c.get(f"T{h}_meets_bar", True) else f" ✗T{h}" for h in ("25", "50"))
            cells.append(f"{problem} {c['T25'][0]:.3f}/{c['T50'][0]:.3f}{marks} ({100 * c['at_bound']:.1f} %)")
        print(f"{variant:34s} " + " · ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    parser.add_argument("--bar", type=Path, default=None, help="a bo_quality summary (.json) to mark cells against")
    args = parser.parse_args()
    variants = list(dict.fromkeys(["default", *args.variants]))  # the pairing's reference always runs
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    jobs = [(v, p, s) for v in variants for p in args.problems for s in seeds]
    with Pool(2) as pool:
        runs = pool.map(run_one, jobs, chunksize=1)
        subsamples = dict(zip(variants, pool.map(loans_subsamples_at_bound, variants, chunksize=1))) \
            if "loans" in args.problems else {}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=harness.REPOSITORY).stdout.strip()
    stamp = dict(command=harness.command_line(), commit=commit, date=datetime.now(UTC).isoformat(timespec="seconds"),
                 machine=platform.node(), cpus=os.cpu_count())
    part = dict(**stamp, seeds=[seeds.start, seeds.stop - 1],
                summary=summarise(runs, bars(args.bar) if args.bar else None), runs=runs,
                loans_subsamples_at_bound=subsamples)
    path = harness.result_path(harness.dated_name("bo_quality_variants"), "json")
    path.write_text(json.dumps(part, indent=1, default=harness._plain) + "\n")
    show(part["summary"])
    print("loans subsamples of the fit test ending at a bound (of 10):", subsamples)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
