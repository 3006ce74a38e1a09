"""What the certified path buys: simple regret of GP-UCB vs ε for each ``gaussian`` release variant and modeler.

Everything runs in-process (no HTTP): per run the curator's secret row permutation, the release
(:func:`shared.releases.gaussian_release`, seeded research noise: the distribution of the safe sampler,
which the tests check), and the modeler's own surrogate (:class:`modeler_client.surrogate.Surrogate`, the
code ``pobo-modeler run`` drives) for T = 50 queries. Run i shares its permutation, release noise and
evaluator noise across variants; on the synthetic GP run i also draws its own f (seed i): one fixed draw
(seed 0, kept in regret_vs_epsilon_single_function.json) has a broad decoy hill near the box's edge 1.49 σ
below a narrow peak that covers 1.5% of the rows, so a modeler exploiting weak information locks onto the
decoy and "loses to random search"; the mean over functions is the honest figure (random search: the mean of
its exact expectations).
Simple regret S_T = (max f − best f queried)/σ, σ the prior std of the synthetic GP and the std of f over the
table otherwise; mean ± standard error over the runs.

Baselines in every table: **random search** (the exact expectation over T distinct rows) and **non-private**
GP-UCB on the publicly scaled inputs. Variants, at ε = 0.5 … 1,024 (δ = 1e-5):

- ``identity · expected-SE``: the default release at r = d (Z = X_s + N(0, σ²I), sensitivity 1) and the
  default modeler (expected-SE kernel under the public input noise, fitted by marginal likelihood), no
  repeated rows. ``… · requery`` allows repeats (Algorithm 2 as published); ``identity · plain SE`` ignores
  the input noise; ``identity · box-posterior SE`` gives each row its posterior under the public box
  [0, W]^d (a truncated normal) instead of the flat prior; ``JL r=d (square)`` releases Z = X_s M + noise with a square
  Gaussian M (d × d) instead of the identity.
- ``private y ρ``: the default release with private measurements (clip to the problem's public [a, b], a
  share ρ of μ²): every answer is the memoised ỹ; the modeler's noise floor is the public σ_y.
- for d ≥ 3: ``PCA k`` (DP-PCA with 20% of μ², rows clipped to the public box's largest norm), ``Haar r=k``
  and ``JL r=k``, k = min(3, d − 1).

``forecast``: the planner (:mod:`shared.algorithms.planner`) for the default setting, on synthetic stand-in data of the
same n, d and public box (10 runs), and its bound "at most N× random search per query".

Problems (public scaling; the neighbouring step is ℓ2 ≤ 1 after it): the synthetic GP on its 100 × 100 grid
with each axis's domain [−5, 5] mapped to [0, W], W = 10 (a record hidden within a tenth of each feature's
range) and W = 1; Branin-Hoo with W = 1; scikit-learn's diabetes (442 × 10, public clinical bounds, unit
diameter: a whole record); the loans (36,000 × 3) and the properties (1,490 × 2) with their unit-diameter
public bounds (skipped with a message when the data directory is absent). Private-y clips are public
choices that keep the region worth finding: synthetic [−3, 3] (±3 prior std), Branin [−60, 0] (negated),
diabetes [0, 400], loans [−0.6, 0.6] (log(1 + ROI)), properties [−11, −8.5] (negated log price per m²).

    nice -n 10 .venv/bin/python benchmarks/regret_vs_epsilon.py [--quick] [--problems synthetic-W10 ...]
        [--runs N] [--epsilons 0.5 1 ...] [--forecast-runs N]    # results merge into one JSON per mode
    nice -n 10 .venv/bin/python benchmarks/regret_vs_epsilon.py --sampler-cost
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from modeler_client.runfile import RunSettings
from modeler_client.surrogate import Surrogate
from shared.algorithms.planner import ReleaseSetting, half_gap_epsilon, plan, random_search_regret
from shared.api.scaling import apply_scaling, unit_diameter_bounds
from shared.api.schemas import ReleaseOut, ScalingSpec
from shared.datasets import diabetes as diabetes_bounds
from shared.datasets.paths import DatasetUnavailable
from shared.datasets.synthetic import (
    BRANIN_DOMAIN,
    SYNTHETIC_DOMAIN,
    branin_problem,
    grid,
    synthetic_gp_problem,
    synthetic_gp_values,
)
from shared.dp.noise import SeededNoise, noise_source
from shared.releases import PcaOption, gaussian_release
from shared.releases.measurements import MeasurementOption

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0)
DELTA = 1e-5
T = 50
PCA_SHARE = 0.2
MEASUREMENT_SHARES = (0.5, 0.8)
DEFAULT = "identity · expected-SE"


@dataclass(frozen=True)
class Problem:
    """A table in maximisation orientation: raw features, values, public scaling and private-y clip."""

    name: str
    raw: np.ndarray
    values: np.ndarray
    scaling: ScalingSpec
    clip: tuple[float, float]
    regret_unit: float
    evaluator_noise_std: float = 0.0
    draw: Callable[[int], np.ndarray] | None = None

    @property
    def width(self) -> float:
        return self.scaling.width

    def run_values(self, run: int) -> np.ndarray:
        """f for run ``run``: the table's values, or a fresh draw (the synthetic GP's seed is the run)."""
        return self.values if self.draw is None else self.draw(run)


@dataclass(frozen=True)
class Variant:
    """A release (projection, r, PCA, private-y share) and how the modeler treats it."""

    name: str
    projection: str = "auto"
    r: int | None = None
    pca: bool = False
    measurement_share: float | None = None
    input_noise: str = "auto"
    requery: bool = False
    box_posterior: bool = False

    def release_key(self) -> tuple:
        return (self.projection, self.r, self.pca, self.measurement_share)


def bounds_scaling(domain, width: float) -> ScalingSpec:
    return ScalingSpec(kind="bounds", lower=[lo for lo, _ in domain], upper=[hi for _, hi in domain], width=width)


def synthetic(width: float, size: int) -> Problem:
    p = synthetic_gp_problem(0, size=size)
    domain = (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN)
    return Problem(f"synthetic-W{width:g}", grid(size, domain), p.f, bounds_scaling(domain, width), (-3.0, 3.0),
                   p.signal_std, math.sqrt(p.noise_variance),
                   draw=lambda run: np.asarray(synthetic_gp_values(run, size)))


def branin(size: int) -> Problem:
    p = branin_problem(size=size)
    return Problem("branin-W1", grid(size, BRANIN_DOMAIN), p.f, bounds_scaling(BRANIN_DOMAIN, 1.0), (-60.0, 0.0),
                   p.signal_std, math.sqrt(p.noise_variance))


def diabetes(_size: int) -> Problem:
    from sklearn.datasets import load_diabetes

    data = load_diabetes(scaled=False)
    scaling = ScalingSpec(kind="bounds", lower=list(diabetes_bounds.PUBLIC_LOWER),
                          upper=list(diabetes_bounds.PUBLIC_UPPER), width=1 / math.sqrt(10))
    return Problem("diabetes", data.data, data.target.astype(float), scaling, (0.0, 400.0), float(data.target.std()))


def from_real_table(table, name: str, clip: tuple[float, float]) -> Problem:
    """A real table with its public bounds boxed to diameter 1 (one step is a whole record), as it is registered."""
    values = table.objective if table.goal == "maximize" else -table.objective
    scaling = unit_diameter_bounds(table.public_lower, table.public_upper)
    return Problem(name, table.features, values, scaling, clip, float(values.std()))


def loans(_size: int) -> Problem:
    from shared.datasets.lendingclub import load_lendingclub

    return from_real_table(load_lendingclub(n=36_000, seed=0), "loans", (-0.6, 0.6))


def properties(_size: int) -> Problem:
    from shared.datasets.sg_property import load_sg_property

    return from_real_table(load_sg_property(), "property", (-11.0, -8.5))


PROBLEMS: dict[str, Callable[[int], Problem]] = {
    "synthetic-W10": lambda size: synthetic(10.0, size),
    "synthetic-W1": lambda size: synthetic(1.0, size),
    "branin-W1": branin,
    "diabetes": diabetes,
    "loans": loans,
    "property": properties,
}


def variants(problem: Problem) -> list[Variant]:
    d = problem.raw.shape[1]
    out = [Variant(DEFAULT), Variant("identity · plain SE", input_noise="ignore"),
           Variant("identity · box-posterior SE", box_posterior=True)]
    if problem.name == "synthetic-W10":
        out += [Variant(f"{DEFAULT} · requery", requery=True), Variant("JL r=d (square)", projection="jl", r=d)]
    out += [Variant(f"private y ρ={share:g}", measurement_share=share) for share in MEASUREMENT_SHARES]
    if d >= 3:
        k = min(3, d - 1)
        out += [Variant(f"PCA k={k}", projection="pca", r=k, pca=True), Variant(f"Haar r={k}", projection="haar", r=k),
                Variant(f"JL r={k}", projection="jl", r=k)]
    return out


def release_metadata(n: int, dim: int, noise_std: float | None) -> ReleaseOut:
    """What the modeler's client would download as the release's metadata."""
    return ReleaseOut(id=1, dataset_id=1, mechanism="gaussian", certified=True, epsilon=1.0, delta=DELTA, n=n,
                      dim=dim, noise_std=noise_std, created_at=datetime.now(UTC))


def modeler_regret(Z, noise_std, answers, values, unit, *, input_noise="auto", requery=False,
                   measurement_noise_std=None, public_box_width=None, seed=0) -> float:
    """The modeler's surrogate driven exactly as modeler_client.loop does, with in-process answers."""
    settings = RunSettings(iterations=T, input_noise=input_noise, seed=seed, acquisition="paper-ucb")
    surrogate = Surrogate(Z, release_metadata(len(Z), Z.shape[1], noise_std), settings, requery=requery,
                          measurement_noise_std=measurement_noise_std, public_box_width=public_box_width)
    indices: list[int] = []
    for _ in range(T):
        surrogate.update(indices, answers[indices])
        indices.append(surrogate.suggest())
    return float((values.max() - values[indices].max()) / unit)


def run_problem(problem: Problem, epsilons, runs: int, console: Console, only: list[str] | None = None) -> dict:
    X_all = apply_scaling(problem.raw, problem.scaling)
    n, d = X_all.shape
    rows: dict[tuple[str, float | None], list[float]] = {}
    random_search = []
    started = time.monotonic()
    chosen = [v for v in variants(problem) if only is None or v.name in only]
    for run in range(runs):
        rng = np.random.default_rng([run, 13])
        order = rng.permutation(n)  # the curator's secret row permutation
        X, values = X_all[order], problem.run_values(run)[order]
        random_search.append(random_search_regret(values, T) / problem.regret_unit)
        measured = values + problem.evaluator_noise_std * rng.standard_normal(n)  # memoised evaluator noise
        rows.setdefault(("non-private", None), []).append(
            modeler_regret(X, None, measured, values, problem.regret_unit, seed=run))
        for j, epsilon in enumerate(epsilons):
            releases = {}
            for variant in chosen:
                key = variant.release_key()
                if key not in releases:
                    releases[key] = make_release(problem, X, measured, variant, epsilon, seed=[run, j, len(releases)])
                release = releases[key]
                private_y = release.measurements
                rows.setdefault((variant.name, epsilon), []).append(modeler_regret(
                    release.Z, release.noise_std, measured if private_y is None else private_y.values, values,
                    problem.regret_unit, input_noise=variant.input_noise, requery=variant.requery,
                    measurement_noise_std=None if private_y is None else private_y.noise_std,
                    public_box_width=problem.width if variant.box_posterior else None, seed=run))
        console.print(f"  {problem.name}: run {run + 1}/{runs} done ({time.monotonic() - started:.0f} s)")
    return {
        "n": n, "d": d, "width": problem.width, "clip": problem.clip, "runs": runs,
        "random_search": float(np.mean(random_search)), "functions": "one per run" if problem.draw else "the table's",
        "rows": [{"method": m, "epsilon": e, "runs": len(v), "mean_regret": float(np.mean(v)),
                  "stderr": float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0}
                 for (m, e), v in rows.items()],
    }


def make_release(problem: Problem, X, measured, variant: Variant, epsilon: float, seed):
    noise_rng, projection_rng = np.random.default_rng(seed).spawn(2)
    d = X.shape[1]
    measurements = (None if variant.measurement_share is None
                    else MeasurementOption(problem.clip, variant.measurement_share))
    pca = PcaOption(PCA_SHARE, problem.width * math.sqrt(d)) if variant.pca else None
    return gaussian_release(X, epsilon, DELTA, variant.r or d, projection_rng, noise=SeededNoise(noise_rng),
                            projection=variant.projection, pca=pca, y=measured if measurements else None,
                            measurements=measurements)


def forecast(result: dict, epsilons, runs: int) -> dict:
    setting = ReleaseSetting(n=result["n"], d=result["d"], width=result["width"], delta=DELTA)
    planned = plan(setting, list(epsilons), simulate_runs=runs, queries=T)
    return {
        "runs": runs, "random_search": planned.random_search_regret, "non_private": planned.non_private_regret,
        "bound_covers": planned.bound_covers,
        "rows": [{"epsilon": r.epsilon, "mu": r.mu, "noise_to_spread": r.noise_to_spread,
                  "random_search_multiple": r.random_search_multiple, "regret": r.regret, "stderr": r.regret_stderr}
                 for r in planned.rows],
    }


def merged(earlier: dict | None, result: dict, command: str) -> dict:
    """``result`` with the rows of methods it did not run kept from ``earlier`` (a run of other variants)."""
    result["commands"] = [command]
    if earlier is None:
        return result
    ran = {(r["method"], r["epsilon"]) for r in result["rows"]}
    result["rows"] = [r for r in earlier["rows"] if (r["method"], r["epsilon"]) not in ran] + result["rows"]
    result["commands"] = earlier.get("commands", []) + [command]
    if "forecast" not in result and "forecast" in earlier:
        result["forecast"] = earlier["forecast"]
    return result


def half_gap(result: dict, method: str) -> float | None:
    """The smallest ε from which on ``method``'s mean regret stays at most halfway from random to non-private."""
    non_private = next(r["mean_regret"] for r in result["rows"] if r["method"] == "non-private")
    rows = [r for r in result["rows"] if r["method"] == method]
    return half_gap_epsilon([r["epsilon"] for r in rows], [r["mean_regret"] for r in rows], result["random_search"],
                            non_private)


def print_problem(console: Console, name: str, result: dict) -> None:
    epsilons = sorted({r["epsilon"] for r in result["rows"] if r["epsilon"] is not None})
    non_private = next(r for r in result["rows"] if r["method"] == "non-private")
    target = 0.5 * (result["random_search"] + non_private["mean_regret"])
    table = Table(title=f"{name} (n = {result['n']}, d = {result['d']}, width {result['width']:.3g}): simple regret "
                        f"S_{T} / σ, mean ± s.e. of {result['runs']} runs; random search {result['random_search']:.3f} "
                        f"(exact), non-private {non_private['mean_regret']:.3f} ± {non_private['stderr']:.3f}, "
                        f"half gap {target:.3f}")
    table.add_column("method")
    for e in epsilons:
        table.add_column(f"ε={e:g}", justify="right")
    table.add_column("half gap at ε", justify="right")
    for method in dict.fromkeys(r["method"] for r in result["rows"] if r["epsilon"] is not None):
        cells = {r["epsilon"]: f"{r['mean_regret']:.3f}±{r['stderr']:.3f}"
                 for r in result["rows"] if r["method"] == method}
        runs = {r["runs"] for r in result["rows"] if r["method"] == method}
        label = method if runs == {result["runs"]} else f"{method} ({'/'.join(map(str, sorted(runs)))} runs)"
        table.add_row(label, *[cells.get(e, "") for e in epsilons], _epsilon_or_dash(half_gap(result, method)))
    if "forecast" in result:
        f = result["forecast"]
        by_e = {r["epsilon"]: r for r in f["rows"]}
        table.add_row(f"forecast ({f['runs']} stand-in runs)",
                      *[f"{by_e[e]['regret']:.3f}±{by_e[e]['stderr']:.3f}" if e in by_e else "" for e in epsilons],
                      _epsilon_or_dash(half_gap_epsilon(list(by_e), [r["regret"] for r in by_e.values()],
                                                        f["random_search"], f["non_private"])))
        table.add_row("bound: × random search", *[f"{by_e[e]['random_search_multiple']:.3g}" if e in by_e else ""
                                                 for e in epsilons], "")
        table.add_row("noise / spread", *[f"{by_e[e]['noise_to_spread']:.3g}" if e in by_e else "" for e in epsilons],
                      "")
    console.print(table)


def _epsilon_or_dash(epsilon: float | None) -> str:
    return "—" if epsilon is None else f"{epsilon:g}"


def sampler_cost(console: Console, n: int, r: int, d: int = 20) -> dict:
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
    parser.add_argument("--quick", action="store_true", help="40 × 40 grids, 3 runs, 4 ε, 3 forecast runs")
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS), default=list(PROBLEMS))
    parser.add_argument("--runs", type=int, default=None, help="runs per setting (default 20)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=None)
    parser.add_argument("--variants", nargs="*", default=None,
                        help="only these variants (names as printed; none: the baselines and the forecast only); "
                             "their rows replace earlier ones, others are kept")
    parser.add_argument("--forecast-runs", type=int, default=None, help="planner stand-in runs (default 10)")
    parser.add_argument("--out", type=Path, default=None,
                        help="results JSON (default results/regret_vs_epsilon[_quick].json)")
    parser.add_argument("--sampler-cost", action="store_true", help="only time the safe sampler against numpy")
    parser.add_argument("--sampler-rows", type=int, default=1_000_000, help="n for --sampler-cost (r = 20)")
    args = parser.parse_args()
    print("acquisition: paper-ucb (Algorithm 2's GP-UCB at its β_t, as the paper ran it)")
    console = Console(width=None if sys.stdout.isatty() else 240)  # logs of background runs keep whole tables
    command = "nice -n 10 .venv/bin/python benchmarks/regret_vs_epsilon.py " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    if args.sampler_cost:
        out = {"command": command, **sampler_cost(console, n=args.sampler_rows, r=20)}
        (RESULTS / "regret_vs_epsilon_sampler_cost.json").write_text(json.dumps(out, indent=2))
        return
    size, runs, epsilons, forecast_runs = ((40, 3, (1.0, 16.0, 256.0, 1024.0), 3) if args.quick
                                           else (100, 20, EPSILONS, 10))
    runs, epsilons = args.runs or runs, tuple(args.epsilons or epsilons)
    forecast_runs = args.forecast_runs if args.forecast_runs is not None else forecast_runs
    path = args.out or RESULTS / f"regret_vs_epsilon{'_quick' if args.quick else ''}.json"
    for name in args.problems:
        try:
            problem = PROBLEMS[name](size)
        except DatasetUnavailable as missing:
            console.print(f"[yellow]skipping {name}: {missing}[/]")
            continue
        console.print(f"{name}: {runs} runs × {len(epsilons)} ε")
        result = run_problem(problem, epsilons, runs, console, args.variants)
        if forecast_runs:
            result["forecast"] = forecast(result, epsilons, forecast_runs)
        saved = save(path, name, result, command)
        print_problem(console, name, saved["problems"][name])
    if path.exists():
        plot(json.loads(path.read_text())["problems"], path.with_suffix(".png"))


def save(path: Path, name: str, result: dict, command: str) -> dict:
    """Merge one problem's result into the JSON as it is now (other invocations may have written since)."""
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved.setdefault("problems", {})
    saved["problems"][name] = merged(saved["problems"].get(name), result, command)
    saved |= {"T": T, "delta": DELTA, "pca_share": PCA_SHARE}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(saved, indent=2))
    partial.replace(path)
    return saved


def plot(problems: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(problems), figsize=(5.5 * len(problems), 4.5), squeeze=False)
    for ax, (name, result) in zip(axes[0], problems.items()):
        for method in dict.fromkeys(r["method"] for r in result["rows"]):
            sel = [r for r in result["rows"] if r["method"] == method]
            if sel[0]["epsilon"] is None:
                ax.axhline(sel[0]["mean_regret"], color="k", ls="--", label=method)
                continue
            ax.errorbar([r["epsilon"] for r in sel], [r["mean_regret"] for r in sel], [r["stderr"] for r in sel],
                        marker="o", ms=3, capsize=2, label=method)
        ax.axhline(result["random_search"], color="grey", ls=":", label="random search")
        if "forecast" in result:
            f = result["forecast"]["rows"]
            ax.plot([r["epsilon"] for r in f], [r["regret"] for r in f], "k-.", label="planner forecast")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ε (δ = 1e-5)")
        ax.set_ylabel(f"simple regret S_{T} / σ")
        ax.set_title(name)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
