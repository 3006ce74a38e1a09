"""How good the modeler's default is, beside BoTorch: simple regret after T = 10, 25, 50 queries on a broad suite
(five real tables, the paper's synthetic GP and six standard test functions in d = 2–8 on discrete candidate sets
of 2,000–8,000 points), the time a step takes, and how often a hyperparameter fit ends at a bound of its box.

Every method sees the same candidates (the table's features under its public bounds scaling: a box of ℓ2
diameter 1, what a certified release at ε → ∞ would release), the same 5 uniformly random initial rows per seed,
and noise-free answers (a column evaluator), non-private. Methods:

* ``random``: distinct uniformly random rows;
* ``pobo fixed``: GP-UCB (Algorithm 2's β_t, δ' = 0.025) with an isotropic SE kernel fitted by maximum
  likelihood on 500 labelled rows the run never queries (an oracle no practitioner has: the reproductions' fixed
  mode);
* ``pobo default``: the modeler's own surrogate as ``pobo-modeler run`` builds it from the release's metadata
  (:class:`modeler_client.surrogate.Surrogate`: MAP fit under BoTorch's priors after every answer, log expected
  improvement, no row asked twice because the answers repeat);
* ``pobo paper UCB``: the same surrogate picking by Algorithm 2's GP-UCB (``--acquisition paper-ucb``);
* ``BoTorch default``: ``SingleTaskGP`` (inputs normalised to the candidates' box, outcomes standardised, its
  default priors, ``fit_gpytorch_mll``) with ``LogExpectedImprovement``, maximised over the unqueried rows by
  ``optimize_acqf_discrete`` (:class:`modeler_client.adapters.botorch_discrete.BoTorchProposer`, ``"ei"``);
* ``BoTorch + UCB β_t``: the same model with ``UpperConfidenceBound`` at pobo's β_t (``"ucb"``);
* ``pobo default q=5`` and ``BoTorch qLogNEI q=5``: batches as a lab measures them, T = 50 in batches of 5 after
  the same initial rows: the modeler's default with ``--batch 5`` (its picks conditioned on the pending ones by
  GP-BUCB's hallucinated answers) against ``qLogNoisyExpectedImprovement`` (``"nei"``) over the same candidates.

The suite's summary: per problem, each method's regret normalised by random search's mean regret at the same T
(1 = no better than random), averaged over the problems every method ran; and the paired difference pobo default −
BoTorch default per problem over the shared seeds, mean ± s.e., with the one-sided claim "pobo default ≤ BoTorch
default + 1 s.e.".

Simple regret is (best value − best found) / the table's standard deviation of the objective, mean ± standard
error over the seeds; a step's time is the method's own (fit and pick, no answer); "at a bound" is the share of
fits whose lengthscale or noise ended within 0.1 % of its box (pobo: :attr:`FittedHyperparameters.at_bound`;
BoTorch: its constraints 0.025 and 1e-4).

``--through-service`` runs the product's own path instead: a real curator on loopback (``LocalCurator``), every
run on a fresh registration (so a fresh secret row order) with a certified ``gaussian`` release at ε = 10⁶, and
``pobo-modeler run -T 50`` with its defaults in a subprocess.

    nice -n 10 .venv/bin/python benchmarks/bo_quality.py [--quick] [--seeds 30] [--problems diabetes levy-6d ...]
    nice -n 10 .venv/bin/python benchmarks/bo_quality.py --through-service [--runs 12]

Runs go seed by seed, each appended to ``<name>_<date>_<commit>.jsonl`` (never overwritten) as it ends (its
first line: the command, commit, date and machine), so a study cut short still has every method on its first
seeds; paired contrasts use the seeds both methods ran. A long study may run as parts (e.g. ``--methods`` split
over processes, each with its ``--name``);
``--seeds 0 --combine a.jsonl b.jsonl …`` then writes ``<name>_<date>_<commit>.{json,txt}`` from them.

BoTorch comes from the optional extra (``make install-botorch``); without it its columns are skipped with a
sentence saying so. Tables that need ../shared/data are skipped with the reason when it is absent.
"""

from __future__ import annotations

import argparse
import gzip
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

from modeler_client.batch import GPBUCBProposer
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
BATCH = 5
METHODS = ("random", "pobo fixed", "pobo default", "pobo paper UCB", "BoTorch default", "BoTorch + UCB β_t",
           "pobo default q=5", "BoTorch qLogNEI q=5")
BOTORCH_METHODS = {"BoTorch default": "ei", "BoTorch + UCB β_t": "ucb", "BoTorch qLogNEI q=5": "nei"}
DEFAULT_METHODS = ("random", "pobo default", "pobo paper UCB", "BoTorch default", "BoTorch + UCB β_t")
# Standard functions: (function, dimension, candidates); the candidate set is fixed per problem (seed 0).
STANDARD_FUNCTIONS = {
    "branin-2d": ("branin", 2, 2000),
    "hartmann3-3d": ("hartmann3", 3, 3000),
    "rosenbrock-4d": ("rosenbrock", 4, 4000),
    "ackley-5d": ("ackley", 5, 5000),
    "levy-6d": ("levy", 6, 6000),
    "styblinski-tang-8d": ("styblinski-tang", 8, 8000),
}
REAL_TABLES = ("diabetes", "loans", "property", "wine", "randhie")
SUITE = (*REAL_TABLES, "synthetic", *STANDARD_FUNCTIONS)


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
    if name in STANDARD_FUNCTIONS:
        from shared.datasets.benchmark_functions import candidate_table

        problem = from_table(candidate_table(*STANDARD_FUNCTIONS[name]), name)
        return lambda seed: problem
    if name == "wine":
        from shared.datasets.wine import load_wine as load
    elif name == "randhie":
        from shared.datasets.randhie import load_randhie as load
    elif name == "diabetes":
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


def run_pobo_default(problem: Problem, seed: int, T: int, fixed_fit=None, acquisition: str = "logei") -> Run:
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
            count_fit(run, surrogate.ucb.last_fit.at_bound)
        run.indices.append(i)
    return run


def run_pobo_batch(problem: Problem, seed: int, T: int, fixed_fit=None) -> Run:
    """``pobo-modeler run --batch 5`` in-process: the batch proposer of :func:`modeler_client.batch.run_batched`."""
    release = local_release(problem, T)
    settings = RunSettings(iterations=T, seed=seed, batch=BATCH)
    run = Run(initial_rows(problem, seed), [])
    proposer = GPBUCBProposer(problem.X, release, settings,
                              on_refit=lambda surrogate: count_fit(run, surrogate.ucb.last_fit.at_bound))
    return ask_tell(run, proposer, problem, T, BATCH)


def ask_tell(run: Run, proposer, problem: Problem, T: int, q: int, after_ask: Callable[[], None] = lambda: None) -> Run:
    """Tell ``proposer`` the run's initial rows, then ask for q rows at a time (timed) and tell their answers, until
    T rows; ``after_ask`` runs after each ask (e.g. to read the model just fitted)."""
    for i in run.indices:
        proposer.tell(i, problem.y[i])
    while len(run.indices) < T:
        start = time.perf_counter()
        picks = proposer.ask(min(q, T - len(run.indices)), [])
        run.seconds.append(time.perf_counter() - start)
        after_ask()
        for i in picks:
            proposer.tell(i, problem.y[i])
        run.indices.extend(picks)
    return run


def count_fit(run: Run, at_bound: tuple[str, ...]) -> None:
    run.fits += 1
    run.at_bound += bool(at_bound)
    run.lengthscale_at_bound += "lengthscale" in at_bound
    run.noise_at_bound += "noise_variance" in at_bound


def run_botorch(acquisition: str, batch: int = 1) -> Callable[..., Run]:
    def run_one(problem: Problem, seed: int, T: int, fixed_fit=None) -> Run:
        from modeler_client.adapters.botorch_discrete import BoTorchProposer

        proposer = BoTorchProposer(problem.X, acquisition=acquisition, ucb_delta=UCB_DELTA, seed=seed)
        run = Run(initial_rows(problem, seed), [])

        def at_bound() -> None:
            lengthscale = proposer.model.covar_module.lengthscale.detach().numpy()
            noise = float(proposer.model.likelihood.noise.detach().numpy().ravel()[0])
            low_ls = bool(np.any(lengthscale <= BOTORCH_FLOORS[0] * 1.001))
            low_noise = noise <= BOTORCH_FLOORS[1] * 1.001
            count_fit(run, ("lengthscale",) * low_ls + ("noise_variance",) * low_noise)

        return ask_tell(run, proposer, problem, T, batch, at_bound)

    return run_one


RUNNERS = {"random": run_random, "pobo fixed": run_pobo_fixed, "pobo default": run_pobo_default,
           "pobo paper UCB": lambda *args: run_pobo_default(*args, acquisition="paper-ucb"),
           "pobo default q=5": run_pobo_batch,
           "BoTorch default": run_botorch("ei"), "BoTorch + UCB β_t": run_botorch("ucb"),
           "BoTorch qLogNEI q=5": run_botorch("nei", batch=BATCH)}


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
    """Per method, over the seeds it ran: regret mean ± s.e. at each T (and per seed, for paired contrasts), time a
    step, the share of fits at a bound, rows asked twice."""
    out = {}
    for method in METHODS:
        runs = sorted((line for line in lines if line["method"] == method), key=lambda line: line["seed"])
        if not runs:
            continue
        regrets = np.array([line["regret"][:T] for line in runs])
        fits = sum(line["fits"] for line in runs)
        steps = [s for line in runs for s in line["seconds"]]
        at_bound = {key: sum(line[key] for line in runs) / fits if fits else None
                    for key in ("at_bound", "lengthscale_at_bound", "noise_at_bound")}
        out[method] = dict(
            seeds=[line["seed"] for line in runs],
            regret={str(h): mean_se(regrets[:, h - 1]) for h in HORIZONS if h <= T},
            regret_per_seed={str(h): regrets[:, h - 1].tolist() for h in HORIZONS if h <= T},
            seconds_per_step=float(np.mean(steps)) if steps else None,
            fits=fits, **at_bound,
            repeated_queries=float(np.mean([len(line["indices"]) - len(set(line["indices"])) for line in runs])),
        )
    return out


def paired(summary: dict, a: str, b: str, h: str) -> dict | None:
    """a − b at T = h over the seeds both ran: mean, s.e., seeds, and whether mean ≤ 1 s.e. (the one-sided claim
    "a is no worse than b by more than one standard error of the paired difference")."""
    if a not in summary or b not in summary or h not in summary[a]["regret"]:
        return None
    by_seed = [dict(zip(summary[m]["seeds"], summary[m]["regret_per_seed"][h])) for m in (a, b)]
    seeds = sorted(set(by_seed[0]) & set(by_seed[1]))
    if len(seeds) < 2:
        return None
    mean, se = mean_se([by_seed[0][s] - by_seed[1][s] for s in seeds])
    return dict(difference=mean, se=se, seeds=len(seeds), holds=mean <= se)


CLAIMS = (("pobo default", "BoTorch default"), ("pobo default q=5", "BoTorch qLogNEI q=5"))


def verdict(summary: dict) -> dict:
    """Per claim (pobo's default against BoTorch's, one pick and batches of 5) at T = 25 and 50: the paired
    difference and whether it is ≤ 1 s.e.; the time a step, BoTorch's over pobo's."""
    checks = {}
    for ours, theirs in CLAIMS:
        for h in ("25", "50"):
            contrast = paired(summary, ours, theirs, h)
            if contrast:
                checks[f"{ours} − {theirs}, T = {h}"] = contrast
        if ours in summary and theirs in summary and summary[ours]["seconds_per_step"]:
            checks[f"{theirs} / {ours}, time a step"] = dict(
                ratio=summary[theirs]["seconds_per_step"] / summary[ours]["seconds_per_step"])
    return checks


def normalised(results: dict, methods: tuple[str, ...], h: str) -> dict | None:
    """Each method's regret at T = h over random search's on the same problem (1: no better than random), per
    problem and averaged over the problems where every one of ``methods`` and random ran."""
    problems = [name for name, r in results.items()
                if all(m in r["methods"] and h in r["methods"][m]["regret"] for m in ("random", *methods))]
    if not problems:
        return None
    per_problem = {name: {m: results[name]["methods"][m]["regret"][h][0]
                          / max(results[name]["methods"]["random"]["regret"][h][0], 1e-12) for m in methods}
                   for name in problems}
    return dict(problems=problems, per_problem=per_problem,
                mean={m: float(np.mean([per_problem[p][m] for p in problems])) for m in methods})


def suite_summary(results: dict) -> dict:
    """The suite's mean normalised regret for one pick and for batches, and how many problems each claim holds on."""
    single = ("pobo default", "pobo paper UCB", "BoTorch default", "BoTorch + UCB β_t")
    out = {}
    for h in ("10", "25", "50"):
        out[f"T = {h}"] = normalised(results, tuple(m for m in single if all(
            m in r["methods"] for r in results.values() if "BoTorch default" in r["methods"])), h)
        out[f"T = {h}, q = {BATCH}"] = normalised(results, ("pobo default q=5", "BoTorch qLogNEI q=5"), h)
    for claim in (f"{a} − {b}, T = {h}" for a, b in CLAIMS for h in ("25", "50")):
        verdicts = [r["verdict"][claim]["holds"] for r in results.values() if claim in r["verdict"]]
        out[claim] = dict(problems=len(verdicts), holds_on=sum(verdicts))
    return out


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


def read_text(path: Path) -> str:
    """A runs file's text; a finished part over 1 MB is kept gzipped (``.jsonl.gz``)."""
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def read_runs(runs_files: list[Path]) -> tuple[list[dict], list[dict]]:
    """The runs of every file and each file's first line: the command, commit, date and machine of its part. A run
    of the same (problem, method, seed) in a later file replaces an earlier one (a part re-run at a newer commit)."""
    lines = [json.loads(text) for path in runs_files for text in read_text(Path(path)).splitlines() if text]
    runs = {(line["problem"], line["method"], line["seed"]): line for line in lines if "problem" in line}
    return list(runs.values()), [line for line in lines if "problem" not in line]


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
             f"{'method':22s}" + "".join(f"{'T = ' + str(h):>18s}" for h in HORIZONS)
             + f"{'ms/step':>10s}{'at bound':>10s}{'seeds':>7s}"]
    for method, s in result["methods"].items():
        cells = "".join(f"{s['regret'][str(h)][0]:>10.3f} ± {s['regret'][str(h)][1]:.3f}" if str(h) in s["regret"]
                        else f"{'':>18s}" for h in HORIZONS)
        ms = f"{1e3 * s['seconds_per_step']:>10.1f}" if s["seconds_per_step"] is not None else f"{'':>10s}"
        bound = f"{100 * s['at_bound']:>9.1f}%" if s["at_bound"] is not None else f"{'':>10s}"
        lines.append(f"{method:22s}{cells}{ms}{bound}{len(s['seeds']):>7d}")
    for claim, check in result.get("verdict", {}).items():
        if "ratio" in check:
            lines.append(f"  {claim}: {check['ratio']:.1f}×")
        else:
            lines.append(f"  {claim}: {check['difference']:+.3f} ± {check['se']:.3f} over {check['seeds']} seeds"
                         f" ({'≤' if check['holds'] else '>'} 1 s.e.)")
    return "\n".join(lines)


def suite_table(suite: dict) -> str:
    """The suite's mean normalised regret per T, and on how many problems each claim holds."""
    lines = ["suite: regret / random search's regret on the same problem, averaged over the problems"]
    for key, value in suite.items():
        if value is None:
            continue
        if "mean" in value:
            cells = ", ".join(f"{m} {v:.3f}" for m, v in value["mean"].items())
            lines.append(f"  {key} ({len(value['problems'])} problems): {cells}")
        else:
            lines.append(f"  {key}: holds on {value['holds_on']} of {value['problems']} problems")
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


def markdown(payload: dict) -> str:
    """The study as docs/modeler_quality.md shows it (``make report``): one table per problem (regret mean ± s.e.,
    seeds, ms a step, fits at a bound), the paired contrasts of the claims, and the suite's mean normalised regret."""
    def cell(value: list[float] | None) -> str:
        return f"{value[0]:.3f} ± {value[1]:.3f}" if value else "—"

    out = ["Regret in units of the objective's standard deviation, mean ± s.e. over the seeds."]
    for name, result in payload["results"].items():
        out += ["", f"**{name}** ({result['n']:,} × {result['d']})", "",
                "| method | seeds | T = 10 | T = 25 | T = 50 | ms a step | fits at a bound |",
                "|---|---|---|---|---|---|---|"]
        for method, m in result["methods"].items():
            ms = f"{1e3 * m['seconds_per_step']:.1f}" if m["seconds_per_step"] is not None else "—"
            bound = f"{100 * m['at_bound']:.1f} %" if m["at_bound"] is not None else "—"
            out.append(f"| {method} | {len(m['seeds'])} | " + " | ".join(cell(m["regret"].get(str(h)))
                                                                          for h in HORIZONS) + f" | {ms} | {bound} |")
        for claim, check in result["verdict"].items():
            if "ratio" in check:
                out.append(f"\n{claim}: {check['ratio']:.1f}×.")
            else:
                out.append(f"\n{claim}: {check['difference']:+.3f} ± {check['se']:.3f} over {check['seeds']} paired "
                           f"seeds, {'within' if check['holds'] else '**more than**'} 1 s.e.")
    out += ["", "**The suite**: each method's mean regret over random search's on the same problem (1: no better "
            "than random), averaged over the problems every method of the row ran.", "",
            "| T | problems | " + " | ".join(SUITE_COLUMNS) + " |", "|---|---|" + "---|" * len(SUITE_COLUMNS)]
    for key, value in payload["suite"].items():
        if value is not None and "mean" in value:
            out.append(f"| {key.removeprefix('T = ')} | {len(value['problems'])} | "
                       + " | ".join(f"{value['mean'][m]:.3f}" if m in value["mean"] else "—" for m in SUITE_COLUMNS)
                       + " |")
    out.append("")
    for key, value in payload["suite"].items():
        if value is not None and "holds_on" in value:
            out.append(f"* {key}: within 1 s.e. on {value['holds_on']} of {value['problems']} problems")
    return "\n".join(out) + "\n"


SUITE_COLUMNS = ("pobo default", "pobo paper UCB", "BoTorch default", "BoTorch + UCB β_t", "pobo default q=5",
                 "BoTorch qLogNEI q=5")


def write_text(name: str, payload: dict, quick: bool) -> None:
    """``<name>.txt``: every part's command and commit, then one table per problem."""
    text = "\n\n".join([*(table(n, r) for n, r in payload["results"].items()), suite_table(payload["suite"])])
    header = "\n".join(f"{p['command']}\n  {p['date']} commit {p['commit']}" for p in payload["parts"])
    harness.result_path(name, "txt", quick=quick).write_text(f"{header}\n\n{text}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_quick(parser, "3 seeds, T = 25, diabetes and the synthetic GP")
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed … first-seed + seeds − 1")
    parser.add_argument("-T", type=int, default=max(HORIZONS))
    parser.add_argument("--problems", nargs="+", default=list(SUITE), choices=SUITE)
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=METHODS)
    parser.add_argument("--through-service", action="store_true", help="pobo-modeler run against a real curator")
    parser.add_argument("--runs", type=int, default=12, help="--through-service: fresh registrations per problem")
    parser.add_argument("--name", default=None, help="results file name before its date and commit "
                                                      "(default bo_quality[_service])")
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
        name = harness.dated_name(args.name or "bo_quality_service")
        through_service(args, lambda payload: harness.write_json(
            name, payload | stamp | dict(wall_seconds=time.perf_counter() - start), quick=args.quick))
        print(harness.result_path(name, "json", quick=args.quick).read_text())
        return
    name = harness.dated_name(args.name or "bo_quality")
    runs_file = harness.result_path(name, "jsonl", quick=args.quick)
    if args.seeds and runs_file.exists():
        raise SystemExit(f"{runs_file} exists: results are never overwritten; give another --name")
    if args.seeds:
        runs_file.write_text(json.dumps(stamp) + "\n")
        study(args, runs_file)
    lines, parts = read_runs([*args.combine, runs_file] if args.seeds else args.combine)
    results = results_of(lines, args.T)
    payload = dict(results=results, suite=suite_summary(results), parts=parts, n_init=N_INIT, ucb_delta=UCB_DELTA,
                   botorch=botorch_missing() or "installed", wall_seconds=time.perf_counter() - start)
    print(harness.write_json(name, payload, quick=args.quick))
    write_text(name, payload, args.quick)
    for problem, result in payload["results"].items():
        print(table(problem, result))
    print(suite_table(payload["suite"]))


if __name__ == "__main__":
    main()
