"""How good the modeler's default is, beside BoTorch: simple regret after T = 10, 25, 50 queries on real tables
and the synthetic GP, the time a step takes, and how often a hyperparameter fit ends at a bound of its box.

Every method sees the same candidates (the table's features under its public bounds scaling: a box of ℓ2
diameter 1, what a certified release at ε → ∞ would release), the same 5 uniformly random initial rows per seed,
and noise-free answers (a column evaluator), non-private. Methods:

* ``random``: distinct uniformly random rows;
* ``pobo fixed``: GP-UCB (Algorithm 2's β_t, δ' = 0.025) with an isotropic SE kernel fitted by maximum
  likelihood on 500 labelled rows the run never queries (an oracle no practitioner has: the reproductions' fixed
  mode);
* ``pobo default``: the modeler's own surrogate as ``pobo-modeler run`` builds it from the release's metadata
  (:class:`modeler_client.surrogate.Surrogate`: MAP fit under BoTorch's priors after every answer, GP-UCB, no row
  asked twice because the answers repeat);
* ``pobo + LogEI``: the same surrogate picking by log expected improvement (``--acquisition logei``);
* ``BoTorch default``: ``SingleTaskGP`` (inputs normalised to the candidates' box, outcomes standardised, its
  default priors, ``fit_gpytorch_mll``) with ``LogExpectedImprovement``, maximised over the unqueried rows by
  ``optimize_acqf_discrete`` (:class:`modeler_client.adapters.botorch_discrete.BoTorchProposer`, ``"ei"``);
* ``BoTorch + UCB β_t``: the same model with ``UpperConfidenceBound`` at pobo's β_t (``"ucb"``).

Simple regret is (best value − best found) / the table's standard deviation of the objective, mean ± standard
error over the seeds; a step's time is the method's own (fit and pick, no answer); "at a bound" is the share of
fits whose lengthscale or noise ended within 0.1 % of its box (pobo: :attr:`FittedHyperparameters.at_bound`;
BoTorch: its constraints 0.025 and 1e-4).

``--through-service`` runs the product's own path instead: a real curator on loopback (``LocalCurator``), every
run on a fresh registration (so a fresh secret row order) with a certified ``gaussian`` release at ε = 10⁶, and
``pobo-modeler run -T 50`` with its defaults in a subprocess.

    nice -n 10 .venv/bin/python benchmarks/bo_quality.py [--quick] [--seeds 20] [--problems diabetes loans ...]
    nice -n 10 .venv/bin/python benchmarks/bo_quality.py --through-service [--runs 12]

Runs go seed by seed, each appended to ``<name>.jsonl`` as it ends (its first line: the command, commit, date and
machine), so a study cut short still has every method on its first seeds; the summary pairs methods on the seeds
all of them ran. A long study may run as parts (e.g. ``--methods`` split over processes, each with its ``--name``);
``--seeds 0 --combine a.jsonl b.jsonl …`` then writes ``bo_quality.{json,txt}`` from them.

BoTorch comes from the optional extra (``make install-botorch``); without it its columns are skipped with a
sentence saying so. Tables that need /work/shared/data are skipped with the reason when it is absent.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import harness  # one BLAS thread, before numpy loads
import numpy as np

from modeler_client.runfile import RunRecord, RunSettings
from modeler_client.surrogate import Surrogate, release_options
from shared.api.scaling import apply_scaling, unit_diameter_bounds
from shared.api.schemas import NeighbouringStep, ReleaseOut
from shared.datasets.paths import DatasetUnavailable
from shared.datasets.tables import RealTable
from shared.gp.regression import fit_hyperparameters
from shared.gp.ucb import GPUCB

N_INIT = 5
HORIZONS = (10, 25, 50)
UCB_DELTA = 0.025
FIXED_FIT_ROWS = 500
SERVICE_EPSILON = 1e6
# SingleTaskGP's lengthscale and noise constraints (botorch.models.utils.gpytorch_modules)
BOTORCH_FLOORS = (2.5e-2, 1e-4)
METHODS = ("random", "pobo fixed", "pobo default", "pobo + LogEI", "BoTorch default", "BoTorch + UCB β_t")
BOTORCH_METHODS = {"BoTorch default": "ei", "BoTorch + UCB β_t": "ucb"}


@dataclass(frozen=True)
class Problem:
    """Candidates X (the publicly scaled features) and values y oriented so that larger is better."""

    name: str
    X: np.ndarray
    y: np.ndarray
    table: RealTable

    @property
    def unit(self) -> float:
        return float(np.std(self.y))

    def regret(self, indices: list[int]) -> np.ndarray:
        return (self.y.max() - np.maximum.accumulate(self.y[indices])) / self.unit


def from_table(table: RealTable, name: str) -> Problem:
    X = apply_scaling(table.features, unit_diameter_bounds(table.public_lower, table.public_upper))
    return Problem(name, X, -table.objective if table.goal == "minimize" else table.objective, table)


def synthetic_table(seed: int) -> RealTable:
    """The paper's synthetic GP (a fresh draw per seed) on a 60 × 60 grid, as the demo registers it."""
    from shared.datasets.synthetic import synthetic_gp_problem

    p = synthetic_gp_problem(seed=seed, size=60)
    return RealTable("synthetic-gp", p.X, ("x1", "x2"), np.asarray(p.f), "f", "maximize",
                     tuple(p.X.min(axis=0)), tuple(p.X.max(axis=0)), "f ~ GP(0, SE) on a grid")


def loader(name: str) -> Callable[[int], Problem]:
    """The problem of ``name`` for a seed (only the synthetic GP changes with it)."""
    if name == "synthetic":
        return lambda seed: from_table(synthetic_table(seed), name)
    if name == "diabetes":
        from shared.datasets.diabetes import load_diabetes as load
    elif name == "loans":
        from shared.datasets.lendingclub import load_lendingclub

        def load() -> RealTable:
            return load_lendingclub(n=36_000, seed=0)
    elif name == "property":
        from shared.datasets.sg_property import load_sg_property as load
    else:
        raise ValueError(f"unknown problem {name!r}")
    problem = from_table(load(), name)
    return lambda seed: problem


def local_release(problem: Problem, iterations: int) -> ReleaseOut:
    """What a certified identity release of the publicly scaled table states, without noise (ε → ∞)."""
    n, d = problem.X.shape
    step = NeighbouringStep(scaling_kind="bounds", clipped=True, box_diameter=1.0, whole_record=True, features=[],
                            summary="a whole record")
    return ReleaseOut(id=0, dataset_id=0, mechanism="gaussian", certified=False, epsilon=math.inf, delta=0.0, n=n,
                      dim=d, projection="identity", neighbouring_step=step, goal="maximize", answers_repeat=True,
                      created_at=datetime.now(UTC))


def initial_rows(problem: Problem, seed: int) -> list[int]:
    return [int(i) for i in np.random.default_rng([seed, 7]).choice(len(problem.y), N_INIT, replace=False)]


@dataclass
class Run:
    indices: list[int]
    seconds: list[float]  # per step after the initial rows
    fits: int = 0
    at_bound: int = 0
    lengthscale_at_bound: int = 0
    noise_at_bound: int = 0


def run_random(problem: Problem, seed: int, T: int, fixed_fit=None) -> Run:
    initial = initial_rows(problem, seed)
    rest = np.setdiff1d(np.arange(len(problem.y)), initial)
    picks = np.random.default_rng([seed, 8]).choice(rest, T - N_INIT, replace=False)
    return Run([*initial, *map(int, picks)], [])


def fixed_fit(problem: Problem):
    """Isotropic SE by maximum likelihood on 500 labelled rows (seeded): the oracle kernel of ``pobo fixed``."""
    rows = np.random.default_rng(11).choice(len(problem.y), min(FIXED_FIT_ROWS, len(problem.y)), replace=False)
    return fit_hyperparameters(problem.X[rows], problem.y[rows], n_restarts=3, rng=0)


def run_pobo_fixed(problem: Problem, seed: int, T: int, fixed_fit=None) -> Run:
    engine = GPUCB(problem.X, kernel=fixed_fit.kernel, noise_variance=fixed_fit.noise_variance,
                   prior_mean=fixed_fit.prior_mean, delta=UCB_DELTA, requery=False, reserve=T)
    run = Run(initial_rows(problem, seed), [])
    for i in run.indices:
        engine.observe(i, problem.y[i])
    while len(run.indices) < T:
        start = time.perf_counter()
        i = engine.suggest()
        engine.observe(i, problem.y[i])
        run.seconds.append(time.perf_counter() - start)
        run.indices.append(i)
    return run


def run_pobo_default(problem: Problem, seed: int, T: int, fixed_fit=None, acquisition: str = "ucb") -> Run:
    """The modeler's loop (``RemoteGPUCB.run``) in-process: the same surrogate built from the same metadata."""
    release = local_release(problem, T)
    settings = RunSettings(iterations=T, seed=seed, acquisition=acquisition)
    surrogate = Surrogate(problem.X, release, settings, **release_options(release, settings))
    run = Run(initial_rows(problem, seed), [])
    while len(run.indices) < T:
        start = time.perf_counter()
        refitted = surrogate.update(run.indices, problem.y[run.indices]) and surrogate.ucb.last_fit is not None
        i = surrogate.suggest()
        run.seconds.append(time.perf_counter() - start)
        if refitted:
            bounds = surrogate.ucb.last_fit.at_bound
            run.fits += 1
            run.at_bound += bool(bounds)
            run.lengthscale_at_bound += "lengthscale" in bounds
            run.noise_at_bound += "noise_variance" in bounds
        run.indices.append(i)
    return run


def run_botorch(acquisition: str) -> Callable[..., Run]:
    def run_one(problem: Problem, seed: int, T: int, fixed_fit=None) -> Run:
        from modeler_client.adapters.botorch_discrete import BoTorchProposer

        proposer = BoTorchProposer(problem.X, acquisition=acquisition, ucb_delta=UCB_DELTA, seed=seed)
        run = Run(initial_rows(problem, seed), [])
        for i in run.indices:
            proposer.tell(i, problem.y[i])
        while len(run.indices) < T:
            start = time.perf_counter()
            (i,) = proposer.ask(1, [])
            run.seconds.append(time.perf_counter() - start)
            lengthscale = proposer.model.covar_module.lengthscale.detach().numpy()
            noise = float(proposer.model.likelihood.noise.detach().numpy().ravel()[0])
            low_ls = bool(np.any(lengthscale <= BOTORCH_FLOORS[0] * 1.001))
            low_noise = noise <= BOTORCH_FLOORS[1] * 1.001
            run.fits += 1
            run.at_bound += low_ls or low_noise
            run.lengthscale_at_bound += low_ls
            run.noise_at_bound += low_noise
            proposer.tell(i, problem.y[i])
            run.indices.append(i)
        return run

    return run_one


RUNNERS = {"random": run_random, "pobo fixed": run_pobo_fixed, "pobo default": run_pobo_default,
           "pobo + LogEI": lambda *args: run_pobo_default(*args, acquisition="logei"),
           **{name: run_botorch(acq) for name, acq in BOTORCH_METHODS.items()}}


def botorch_missing() -> str | None:
    try:
        import botorch  # noqa: F401
    except ImportError:
        return "BoTorch is not installed (pip install 'pobo[botorch]' or make install-botorch): its columns are skipped"
    return None


def mean_se(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


def summarise(lines: list[dict], T: int) -> dict:
    """Per method: regret mean ± s.e. at each T over the seeds every method of the problem ran (paired), time a
    step, the share of fits at a bound, rows asked twice."""
    seeds = set.intersection(*({line["seed"] for line in lines if line["method"] == m}
                               for m in {line["method"] for line in lines}))
    out = {}
    for method in METHODS:
        runs = sorted((line for line in lines if line["method"] == method and line["seed"] in seeds),
                      key=lambda line: line["seed"])
        if not runs:
            continue
        regrets = np.array([line["regret"][:T] for line in runs])
        fits = sum(line["fits"] for line in runs)
        steps = [s for line in runs for s in line["seconds"]]
        at_bound = {key: sum(line[key] for line in runs) / fits if fits else None
                    for key in ("at_bound", "lengthscale_at_bound", "noise_at_bound")}
        out[method] = dict(
            seeds=len(runs),
            regret={str(h): mean_se(regrets[:, h - 1]) for h in HORIZONS if h <= T},
            regret_per_seed={str(h): regrets[:, h - 1].tolist() for h in HORIZONS if h <= T},
            seconds_per_step=float(np.mean(steps)) if steps else None,
            fits=fits, **at_bound,
            repeated_queries=float(np.mean([len(line["indices"]) - len(set(line["indices"])) for line in runs])),
        )
    return out


def verdict(summary: dict) -> dict | None:
    """The claim: pobo default's mean regret ≤ the better BoTorch configuration's + 1 s.e. at T = 25 and 50, at
    ≥ 10× less time a step, with ≤ 5 % of fits at a bound."""
    botorch = [m for m in BOTORCH_METHODS if m in summary]
    if not botorch or "pobo default" not in summary:
        return None
    pobo = summary["pobo default"]
    checks = {}
    for h in ("25", "50"):
        if h not in pobo["regret"]:
            continue
        best = min(botorch, key=lambda m: summary[m]["regret"][h][0])
        mean, se = summary[best]["regret"][h]
        checks[f"regret_T{h}"] = dict(pobo=pobo["regret"][h][0], botorch_best=best, bound=mean + se,
                                      holds=pobo["regret"][h][0] <= mean + se)
        paired = np.subtract(pobo["regret_per_seed"][h], summary[best]["regret_per_seed"][h])
        checks[f"regret_T{h}"]["paired_difference"] = mean_se(paired)
    fastest_botorch = min(summary[m]["seconds_per_step"] for m in botorch)
    ratio = fastest_botorch / pobo["seconds_per_step"]
    checks["speed"] = dict(ratio=ratio, holds=ratio >= 10)
    checks["at_bound"] = dict(share=pobo["at_bound"], holds=pobo["at_bound"] <= 0.05)
    checks["holds"] = all(c["holds"] for c in checks.values())
    return checks


def study(args: argparse.Namespace, runs_file: Path) -> None:
    """Every (seed, problem, method) run, seed by seed so that a study cut short has every method on its first seeds;
    each run is appended to ``runs_file`` as one JSON line the moment it ends."""
    missing = botorch_missing()
    methods = [m for m in args.methods if not (missing and m in BOTORCH_METHODS)]
    if missing:
        print(missing)
    loaders, fixed = {}, {}
    for name in args.problems:
        try:
            loaders[name] = loader(name)
        except DatasetUnavailable as exc:
            print(f"{name}: skipped ({exc})")
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for name, load in loaders.items():
            problem = load(seed)
            if "pobo fixed" in methods and (name == "synthetic" or name not in fixed):
                fixed[name] = fixed_fit(problem)  # the synthetic function is another draw per seed
            for method in methods:
                run = RUNNERS[method](problem, seed, args.T, fixed.get(name))
                line = dict(problem=name, n=len(problem.y), d=problem.X.shape[1], method=method, seed=seed,
                            regret=problem.regret(run.indices).tolist(), **vars(run))
                with runs_file.open("a") as handle:
                    handle.write(json.dumps(line, default=harness._plain) + "\n")
        print(f"seed {seed} done", flush=True)


def read_runs(runs_files: list[Path]) -> tuple[list[dict], list[dict]]:
    """The runs of every file and each file's first line: the command, commit, date and machine of its part."""
    lines = [json.loads(text) for path in runs_files for text in Path(path).read_text().splitlines() if text]
    return [line for line in lines if "problem" in line], [line for line in lines if "problem" not in line]


def results_of(lines: list[dict], T: int) -> dict:
    results = {}
    for name in dict.fromkeys(line["problem"] for line in lines):
        mine = [line for line in lines if line["problem"] == name]
        summary = summarise(mine, T)
        results[name] = dict(n=mine[0]["n"], d=mine[0]["d"], methods=summary, verdict=verdict(summary))
    return results


def table(name: str, result: dict) -> str:
    """A plain-text table of one problem: regret mean ± s.e. per T, ms a step, fits at a bound."""
    lines = [f"{name} ({result['n']} × {result['d']})",
             f"{'method':20s}" + "".join(f"{'T = ' + str(h):>18s}" for h in HORIZONS)
             + f"{'ms/step':>10s}{'at bound':>10s}"]
    for method, s in result["methods"].items():
        cells = "".join(f"{s['regret'][str(h)][0]:>10.3f} ± {s['regret'][str(h)][1]:.3f}" if str(h) in s["regret"]
                        else f"{'':>18s}" for h in HORIZONS)
        ms = f"{1e3 * s['seconds_per_step']:>10.1f}" if s["seconds_per_step"] is not None else f"{'':>10s}"
        bound = f"{100 * s['at_bound']:>9.1f}%" if s["at_bound"] is not None else f"{'':>10s}"
        lines.append(f"{method:20s}{cells}{ms}{bound}")
    if result.get("verdict"):
        lines.append("verdict: " + json.dumps(result["verdict"], default=float))
    return "\n".join(lines)


# --- through the product's own path ------------------------------------------------------------------------------


def service_run(curator, problem: Problem, run: int, T: int, workdir: Path) -> dict:
    """A fresh registration (fresh secret row order), a certified release at ε = 10⁶, ``pobo-modeler run -T``."""
    table = problem.table
    scaling = unit_diameter_bounds(table.public_lower, table.public_upper)
    dataset = curator.register_table(f"{problem.name}-{run}", table.features, list(table.feature_names),
                                     evaluator={"kind": "column", "column": table.objective_name},
                                     budget=(2 * SERVICE_EPSILON, 1e-3),
                                     extra_columns={table.objective_name: table.objective},
                                     scaling=scaling.model_dump(exclude_none=True), goal=table.goal)
    release = curator.create_release(dataset.id, "gaussian", SERVICE_EPSILON, 1e-5, "auto", None)
    key = curator.issue_key([release.id], max_queries=T, name=f"bo-quality-{run}")
    out = workdir / f"{problem.name}-{run}.json"
    command = [str(Path(sys.executable).with_name("pobo-modeler")), "run", "--url", curator.url, "--token", key.token,
               "--release", str(release.id), "-T", str(T), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(harness.REPOSITORY)}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    record = RunRecord.load(out)
    values = np.array([q.value for q in sorted(record.done(), key=lambda q: q.iteration)])
    oriented = -values if table.goal == "minimize" else values
    regret = (problem.y.max() - np.maximum.accumulate(oriented)) / problem.unit
    return dict(regret=regret.tolist(), wall_seconds=wall, elapsed_seconds=record.elapsed_seconds,
                repeated_queries=len(record.queries) - len({q.index for q in record.queries}),
                refits=len(record.hyperparameter_history))


def through_service(args: argparse.Namespace, write: Callable[[dict], None]) -> None:
    """Run by run over the problems, ``write``-ing the summary so far after each (a study cut short keeps its
    first runs of every problem)."""
    from curator_service.testing import LocalCurator

    problems, runs = {}, {}
    for name in args.problems:
        try:
            problems[name] = loader(name)(0)
        except DatasetUnavailable as exc:
            print(f"{name}: skipped ({exc})")
    with tempfile.TemporaryDirectory() as tmp, LocalCurator(Path(tmp) / "curator") as curator:
        for run in range(args.runs):
            for name, problem in problems.items():
                runs.setdefault(name, []).append(service_run(curator, problem, run, args.T, Path(tmp)))
                write(dict(results={n: service_summary(r, args.T) for n, r in runs.items()}, epsilon=SERVICE_EPSILON))
            print(f"run {run} done", flush=True)


def service_summary(runs: list[dict], T: int) -> dict:
    regrets = np.array([r["regret"] for r in runs])
    return dict(
        runs=len(runs),
        regret={str(h): mean_se(regrets[:, h - 1]) for h in HORIZONS if h <= T},
        regret_per_run={str(h): regrets[:, h - 1].tolist() for h in HORIZONS if h <= T},
        seconds_per_run=mean_se([r["elapsed_seconds"] for r in runs]),
        repeated_queries=float(np.mean([r["repeated_queries"] for r in runs])),
        refits=float(np.mean([r["refits"] for r in runs])),
    )


def write_text(name: str, payload: dict, quick: bool) -> None:
    """``<name>.txt``: every part's command and commit, then one table per problem."""
    text = "\n\n".join(table(n, r) for n, r in payload["results"].items())
    header = "\n".join(f"{p['command']}\n  {p['date']} commit {p['commit']}" for p in payload["parts"])
    harness.result_path(name, "txt", quick=quick).write_text(f"{header}\n\n{text}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_quick(parser, "3 seeds, T = 25, diabetes and the synthetic GP")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed … first-seed + seeds − 1")
    parser.add_argument("-T", type=int, default=max(HORIZONS))
    parser.add_argument("--problems", nargs="+", default=["diabetes", "loans", "property", "synthetic"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--through-service", action="store_true", help="pobo-modeler run against a real curator")
    parser.add_argument("--runs", type=int, default=12, help="--through-service: fresh registrations per problem")
    parser.add_argument("--name", default=None, help="results file name (default bo_quality[_service])")
    parser.add_argument("--combine", nargs="+", type=Path, default=[],
                        help="also summarise these runs files (.jsonl) of other parts of the same study "
                             "(with --seeds 0: only summarise them)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.T, args.runs = 3, 25, 2
        args.problems = [p for p in args.problems if p in ("diabetes", "synthetic")] or args.problems
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=harness.REPOSITORY).stdout.strip()
    stamp = dict(command=harness.command_line(), commit=commit, date=datetime.now(UTC).isoformat(timespec="seconds"),
                 machine=platform.node(), cpus=os.cpu_count())
    start = time.perf_counter()
    if args.through_service:
        name = args.name or "bo_quality_service"
        through_service(args, lambda payload: harness.write_json(
            name, payload | stamp | dict(wall_seconds=time.perf_counter() - start), quick=args.quick))
        print(harness.result_path(name, "json", quick=args.quick).read_text())
        return
    name = args.name or "bo_quality"
    runs_file = harness.result_path(name, "jsonl", quick=args.quick)
    if args.seeds:
        runs_file.write_text(json.dumps(stamp) + "\n")
        study(args, runs_file)
    lines, parts = read_runs([*args.combine, runs_file] if args.seeds else args.combine)
    payload = dict(results=results_of(lines, args.T), parts=parts, n_init=N_INIT, ucb_delta=UCB_DELTA,
                   botorch=botorch_missing() or "installed", wall_seconds=time.perf_counter() - start)
    print(harness.write_json(name, payload, quick=args.quick))
    write_text(name, payload, args.quick)
    for problem, result in payload["results"].items():
        print(table(problem, result))


if __name__ == "__main__":
    main()
