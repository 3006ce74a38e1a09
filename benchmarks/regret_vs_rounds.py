"""Batches for slow labs: simple regret against the number of *rounds* (round trips to the lab) for GP-BUCB
with q = 1, 5, 10 queries per round, beside random search with the same q.

Everything runs in-process on the code ``pobo-modeler run --batch q`` drives: per run the curator's secret row
permutation and a certified ``gaussian`` release (identity projection, r = d, seeded research noise, the
helpers of ``benchmarks/regret_vs_epsilon.py``), then the modeler's :class:`modeler_client.batch.GPBUCBProposer`
(the GP-UCB loop's surrogate with the release-driven defaults: expected-SE kernel under the public input noise,
fitted hyperparameters, no repeated rows) asked for q rows per round, every answer told before the next round. Simple
regret after round k is S = (max f − best f queried) / σ; mean ± standard error over the runs. Random search with q per
round is the exact expectation over k·q distinct rows. The synthetic GP draws its f per run (seed = run), as
``regret_vs_epsilon.py`` does.

Methods: ``GP-BUCB q`` (the batch β of Desautels et al. 2014, exp(2C) β_t with C the conditional information of
the pending picks) and ``GP-BUCB q plain β`` (β_t alone) for q > 1.

Problems: the synthetic GP (``synthetic-W10``: the 100 × 100 grid, each axis mapped to [0, 10], ε = 16, where the
private GP-UCB closes half the gap to the non-private one) and the Singapore properties (``property``, 1,490 × 2,
unit-diameter public bounds, ε = 64; skipped when /work/shared/data is absent).

    nice -n 10 .venv/bin/python benchmarks/regret_vs_rounds.py [--quick] [--runs N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from regret_vs_epsilon import DEFAULT, PROBLEMS, Variant, make_release, release_metadata
from rich.console import Console
from rich.table import Table

from modeler_client.batch import GPBUCBProposer, Proposer, RandomProposer
from modeler_client.runfile import RunSettings
from shared.algorithms.planner import random_search_regret
from shared.api.scaling import apply_scaling
from shared.datasets.paths import DatasetUnavailable

RESULTS = Path(__file__).resolve().parent / "results"
BATCH_SIZES = (1, 5, 10)
EPSILON = {"synthetic-W10": 16.0, "property": 64.0}


def methods() -> list[tuple[str, int, str]]:
    """(name, q, batch β) of every GP-BUCB variant."""
    out = [(f"GP-BUCB q={q}", q, "desautels") for q in BATCH_SIZES]
    return out + [(f"GP-BUCB q={q} plain β", q, "plain") for q in BATCH_SIZES if q > 1]


def regret_by_round(proposer: Proposer, q: int, rounds: int, answers: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Ask q rows per round, tell their answers; (max f − best f so far) after each round."""
    best = -np.inf
    out = np.empty(rounds)
    for k in range(rounds):
        for index in proposer.ask(q, []):
            proposer.tell(index, float(answers[index]))
            best = max(best, values[index])
        out[k] = values.max() - best
    return out


def run_problem(name: str, size: int, runs: int, rounds: int, console: Console) -> dict:
    problem = PROBLEMS[name](size)
    X_all = apply_scaling(problem.raw, problem.scaling)
    n, d = X_all.shape
    epsilon = EPSILON[name]
    curves: dict[str, list[np.ndarray]] = {m: [] for m, _, _ in methods()}
    seconds: dict[str, float] = dict.fromkeys(curves, 0.0)
    random_runs: list[np.ndarray] = []
    started = time.monotonic()
    for run in range(runs):
        rng = np.random.default_rng([run, 17])
        order = rng.permutation(n)  # the curator's secret row permutation
        X, values = X_all[order], problem.run_values(run)[order]  # the synthetic GP draws its f per run
        random_runs.append(values)
        measured = values + problem.evaluator_noise_std * rng.standard_normal(n)  # memoised evaluator noise
        release = make_release(problem, X, measured, Variant(DEFAULT), epsilon, seed=[run, 0, 0])
        metadata = release_metadata(n, d, release.noise_std)
        for method, q, batch_beta in methods():
            settings = RunSettings(iterations=q * rounds, batch=q, batch_beta=batch_beta, seed=run,
                                   acquisition="paper-ucb")
            clock = time.monotonic()
            proposer = GPBUCBProposer(release.Z, metadata, settings)
            curves[method].append(regret_by_round(proposer, q, rounds, measured, values) / problem.regret_unit)
            seconds[method] += time.monotonic() - clock
        console.print(f"  {name}: run {run + 1}/{runs} ({time.monotonic() - started:.0f} s)")
    rows = []
    for method, q, batch_beta in methods():
        regret = np.array(curves[method])
        rows.append({"method": method, "q": q, "batch_beta": batch_beta, "runs": runs,
                     "mean": regret.mean(axis=0).tolist(),
                     "stderr": (regret.std(axis=0, ddof=1) / math.sqrt(runs)).tolist() if runs > 1 else [0.0] * rounds,
                     "seconds_per_round": seconds[method] / (runs * rounds)})
    for q in BATCH_SIZES:
        rows.append({"method": f"random q={q}", "q": q, "runs": None,
                     "mean": [np.mean([random_search_regret(v, min(k * q, n)) for v in random_runs])
                              / problem.regret_unit for k in range(1, rounds + 1)]})
    return {"n": n, "d": d, "epsilon": epsilon, "rounds": rounds, "rows": rows}


def optimisers(n: int, seed: int) -> dict[str, Callable[[np.ndarray, object, RunSettings], Proposer]]:
    """Every optimiser of the comparison whose extra is installed: name → factory(Z, metadata, settings)."""
    out: dict[str, Callable] = {
        "pobo GP-UCB": lambda Z, metadata, settings: GPBUCBProposer(Z, metadata, settings),
        "random": lambda Z, metadata, settings: RandomProposer(n, seed),
    }
    try:
        from modeler_client.adapters.botorch_discrete import BoTorchProposer

        out["BoTorch qUCB"] = lambda Z, metadata, settings: BoTorchProposer(Z, acquisition="ucb", seed=seed)
        out["BoTorch qLogEI"] = lambda Z, metadata, settings: BoTorchProposer(Z, acquisition="ei", seed=seed)
    except ImportError:
        pass
    try:
        import optuna

        from modeler_client.adapters.optuna_study import OptunaProposer

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        out["Optuna TPE"] = lambda Z, metadata, settings: OptunaProposer(Z, seed=seed)
    except ImportError:
        pass
    return out


def compare_optimisers(name: str, size: int, runs: int, rounds: int, q: int, console: Console) -> dict:
    """Our engine, BoTorch and Optuna on the same releases: regret after each round and seconds per round."""
    problem = PROBLEMS[name](size)
    X_all = apply_scaling(problem.raw, problem.scaling)
    n, d = X_all.shape
    curves: dict[str, list[np.ndarray]] = {}
    seconds: dict[str, float] = {}
    for run in range(runs):
        rng = np.random.default_rng([run, 17])
        order = rng.permutation(n)
        X, values = X_all[order], problem.run_values(run)[order]
        measured = values + problem.evaluator_noise_std * rng.standard_normal(n)
        release = make_release(problem, X, measured, Variant(DEFAULT), EPSILON[name], seed=[run, 0, 0])
        metadata = release_metadata(n, d, release.noise_std)
        settings = RunSettings(iterations=q * rounds, batch=q, seed=run, acquisition="paper-ucb")
        for method, factory in optimisers(n, run).items():
            clock = time.monotonic()
            proposer = factory(release.Z, metadata, settings)
            regret = regret_by_round(proposer, q, rounds, measured, values) / problem.regret_unit
            curves.setdefault(method, []).append(regret)
            seconds[method] = seconds.get(method, 0.0) + time.monotonic() - clock
        console.print(f"  {name} comparison: run {run + 1}/{runs}")
    rows = [{"method": method, "q": q, "runs": runs, "mean": np.mean(c, axis=0).tolist(),
             "stderr": (np.std(c, axis=0, ddof=1) / math.sqrt(runs)).tolist() if runs > 1 else [0.0] * rounds,
             "seconds_per_round": seconds[method] / (runs * rounds)} for method, c in curves.items()]
    return {"n": n, "d": d, "epsilon": EPSILON[name], "rounds": rounds, "q": q, "rows": rows}


def print_problem(console: Console, name: str, result: dict, shown=(1, 2, 3, 5, 10, 15, 20)) -> None:
    rounds = [k for k in shown if k <= result["rounds"]]
    table = Table(title=f"{name} (n={result['n']}, d={result['d']}, gaussian identity ε={result['epsilon']:g}): "
                        "simple regret / σ after k rounds")
    table.add_column("method")
    for k in rounds:
        table.add_column(f"k={k}", justify="right")
    table.add_column("s / round", justify="right")
    for row in result["rows"]:
        cells = [f"{row['mean'][k - 1]:.3f}" + (f" ± {row['stderr'][k - 1]:.3f}" if "stderr" in row else "")
                 for k in rounds]
        timing = f"{row['seconds_per_round']:.2f}" if "seconds_per_round" in row else ""
        table.add_row(row["method"], *cells, timing)
    console.print(table)


def plot(problems: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(problems), figsize=(6.0 * len(problems), 4.5), squeeze=False)
    colours = {q: c for q, c in zip(BATCH_SIZES, ("C0", "C1", "C2"))}
    for ax, (name, result) in zip(axes[0], problems.items()):
        k = np.arange(1, result["rounds"] + 1)
        by_q = len({row["q"] for row in result["rows"]}) > 1  # the batch table; the comparison has one q
        for i, row in enumerate(result["rows"]):
            style = ":" if row["method"].startswith("random") else "--" if "plain" in row["method"] else "-"
            colour = colours[row["q"]] if by_q else f"C{i}"
            mean = np.array(row["mean"])
            ax.plot(k, mean, style, color=colour, label=row["method"])
            if "stderr" in row:
                ax.fill_between(k, mean - row["stderr"], mean + row["stderr"], color=colour, alpha=0.12)
        # Regret 0 (optimum found) cannot be drawn on a log axis; the floor stands for it.
        ax.set_ylim(bottom=1e-3)
        ax.set(xlabel="rounds (requests to the lab)", ylabel="simple regret / σ", yscale="log",
               title=f"{name}: gaussian identity release, ε = {result['epsilon']:g}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 × 40 grid, 3 runs, 8 rounds")
    parser.add_argument("--problems", nargs="+", choices=list(EPSILON), default=list(EPSILON))
    parser.add_argument("--runs", type=int, default=None, help="runs per method (default 10)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default 15)")
    parser.add_argument("--compare", action="store_true",
                        help="our engine vs BoTorch vs Optuna (installed extras) on the same releases, q = --q")
    parser.add_argument("--q", type=int, default=1, help="rows per round in --compare")
    args = parser.parse_args()
    print("acquisition: paper-ucb (Algorithm 2's GP-UCB at its β_t, as the paper ran it)")
    console = Console(width=None if sys.stdout.isatty() else 200)
    size, runs, rounds = (40, 3, 8) if args.quick else (100, 10, 15)
    runs, rounds = args.runs or runs, args.rounds or rounds
    command = "nice -n 10 .venv/bin/python benchmarks/regret_vs_rounds.py " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    stem = "regret_vs_rounds" + (f"_compare_q{args.q}" if args.compare else "") + ("_quick" if args.quick else "")
    path = RESULTS / f"{stem}.json"
    saved = json.loads(path.read_text()) if path.exists() else {"problems": {}}
    for name in args.problems:
        try:
            if args.compare:
                result = compare_optimisers(name, size, runs, rounds, args.q, console)
            else:
                result = run_problem(name, size, runs, rounds, console)
        except DatasetUnavailable as missing:
            console.print(f"[yellow]skipping {name}: {missing}[/]")
            continue
        saved["problems"][name] = {**result, "command": command}
        path.write_text(json.dumps(saved, indent=2))
        print_problem(console, name, result)
    if saved["problems"]:
        plot(saved["problems"], path.with_suffix(".png"))


if __name__ == "__main__":
    main()
