"""PO-GP-UCB's real-world experiments (Kharkovskii, Dai & Low 2020, §4: Fig. 2b/2c, Tables 4–9) run the way
users run pobo: a live curator service holds the data, the modeler client queries it over HTTP.

Setup. ``pobo-curator serve`` starts in a subprocess on a free loopback port (temporary data directory,
embedded SQLite, ``POBO_MODE=research`` so releases can be seeded and ``POBO_ALLOW_UNCERTIFIED_MECHANISMS=true``,
both set explicitly: the server's defaults are production and certified-only). Each dataset is written with
``RealTable.write_csv`` and uploaded twice, each with its scaling spelled out:

* ``<name>-paper-inputs``: the paper's preprocessed inputs (``shared.datasets.paper_preprocessing``: ARD
  lengthscales fitted by maximum likelihood on a seeded subsample, inputs divided by them, centred and
  scaled to a maximal norm of 25 — data-dependent, see that module), for the uncertified ``po-gp-ucb``;
* ``<name>``: the original features with the table's PUBLIC scaling (unit-diameter bounds), for the
  certified ``gaussian`` release (dim "auto" = d, the server's default).

Column evaluator on the (log-transformed) objective, no measurement noise, the table's goal.

Methods (T = 50 loans, 100 property; the first ``N_INIT`` = 5 queries are uniformly random rows — run i
uses the same initial rows in every setting — and count towards T):

* ``po-gp-ucb`` at ε = e^a: Fig. 2b/2c at r = 15 over the ε the paper's text names, and Tables 4–9 (r varied
  at three ε). Every run is its own release (its own projection matrix M) and its own key and session.
* ``gaussian`` at ε ∈ {0.5, 1, 2, 4, 8, 16} with the paper's δ.
* non-private GP-UCB: the same modeler loop in-process on the paper-preprocessed inputs (Algorithm 1's X,
  before any projection), as the paper's baseline; ``non-private-public-scaling``: the same on the
  publicly scaled features (what ``gaussian`` releases, without noise or projection); random search:
  uniformly random distinct rows.

The modeler is ``modeler_client``'s loop (``RemoteGPUCB``: GP-UCB with β_t of Algorithm 2, δ' = 0.025 =
δ_ucb/2, SE kernel, hyperparameters by the modeler's default fit every ``REFIT_EVERY`` answers). Simple
regret S_t = |best possible − best found after t| / σ_y, σ_y the standard deviation of the objective over
the table (the paper's unit). HTTP overhead: on a few releases per dataset the same loop also runs
in-process on the same Z, release metadata and seed (it must pick the same rows); wall time per iteration
of both is reported.

    nice -n 10 .venv/bin/python benchmarks/real_data.py [--quick] [--runs 20] [--table-runs N]

The code: real_data_experiments.py (the paper's numbers, settings, plan), real_data_run.py (curator, releases,
runs, side studies), real_data_report.py (tables, claims, HTTP overhead), real_data_plot.py (the figure);
this file is the command line.
"""


from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, also when loaded by path (tests)

import harness  # noqa: I001  (one BLAS thread, inherited by the curator subprocess, before numpy loads)

import argparse
import dataclasses
import json
import tempfile
import math
import time

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from real_data_experiments import (
    CROSSING_RS,
    EXPERIMENTS,
    GAUSSIAN_EPSILONS,
    N_INIT,
    PROPERTY,
    REFIT_EVERY,
    Plan,
    Setting,
    initial_rows,
    seed_of,
)
from modeler_client.runfile import RunSettings
from shared.datasets.paper_preprocessing import fit_paper_preprocessing
from shared.regret import best_so_far, simple_regret
from shared.releases import po_gp_ucb_release
from real_data_plot import plot
from real_data_report import (
    check_claims,
    http_overhead,
    print_claims,
    print_diagnosis,
    print_overhead,
    print_results,
    print_sensitivity,
    report_crossing,
)
from real_data_run import (
    benchmark_curator,
    crossing_epsilon,
    diagnose,
    in_process_loop,
    in_process_metadata,
    prepare_dataset,
    run_dataset,
    sigma_min_sensitivity,
)

__all__ = ["PROPERTY", "Plan", "Setting", "benchmark_curator", "prepare_dataset", "run_dataset"]  # used by tests


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_quick(parser, "2 runs, the extremes of each sweep, one r table")
    parser.add_argument("--runs", type=int, help="runs per figure, baseline and gaussian setting (default 20; quick 2)")
    parser.add_argument("--table-runs", type=int, help="runs per r-table setting (default: --runs; 0: no r tables)")
    parser.add_argument("--timing-runs", type=int, default=2,
                        help="runs per figure/gaussian setting also timed in-process")
    parser.add_argument("--datasets", nargs="+", choices=sorted(EXPERIMENTS), default=["loans", "property"])
    parser.add_argument("--workers", type=int, default=2, help="runs in flight at once (threads; results unchanged)")
    parser.add_argument("--crossing", action="store_true",
                        help="only the r guideline at the ε where OUR inputs cross σ_min = ω at r = 15 (--table-runs "
                             "runs)")
    parser.add_argument("--name",
                        help="results file stem (default real_data, or real_data_fitted with fitted hyperparameters)")
    parser.add_argument("--replot", type=Path, help="only redraw the PNG beside this saved JSON, then exit")
    parser.add_argument("--report", type=Path,
                        help="only print the tables of this saved JSON and check the paper's claims again (the JSON's "
                             "claims are rewritten), then exit")
    parser.add_argument("--baselines-into", type=Path,
                        help="only re-run the in-process baselines (non-private, public scaling, random) with --runs "
                             "and the saved run's own plan, replace them in this saved JSON and check its claims again")
    parser.add_argument("--fit-rows", type=int, help="rows for the ARD lengthscale fit (default 500; quick 200)")
    parser.add_argument("--hyperparameters", choices=["fixed", "fitted"], default="fixed",
                        help="po-gp-ucb and non-private GP-UCB: the preprocessing's ML fit held fixed (default), or "
                             "refitted by the modeler's loop (public-scaling and gaussian runs always refit)")
    parser.add_argument("--ard", action="store_true",
                        help="fitted runs: one lengthscale per released coordinate at every r (default: per coordinate "
                             "up to r = 16, one shared beyond), so an r table compares one kernel family")
    parser.add_argument("--table", type=float, metavar="LOG_EPSILON",
                        help="only this r table's po-gp-ucb settings (--rs, default all its r) with --table-runs runs, "
                             "each setting written to its own results file named by date and commit as it finishes")
    parser.add_argument("--rs", type=int, nargs="+", help="with --table: only these r")
    parser.add_argument("--in-process", action="store_true",
                        help="with --table: release and run in-process (no curator; the same seeds and initial file "
                             "rows, Z in the file's row order), for a machine too loaded to serve HTTP")
    parser.add_argument("--diagnose", action="store_true",
                        help="only why the non-private baseline lost: S_T by kernel, in-process (--runs runs)")
    parser.add_argument("--sensitivity", action="store_true",
                        help="only σ_min of the preprocessed inputs under the paper's open choices (no GP-UCB)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    print("acquisition: paper-ucb (Algorithm 2's GP-UCB at its β_t, as the paper ran it)")
    if args.replot:
        plot(json.loads(args.replot.read_text())["datasets"], args.replot.with_suffix(".png"))
        return
    console = Console(width=max(Console().width, 150))  # tables stay readable in a log file
    if args.report:
        saved = json.loads(args.report.read_text())
        for key, results in saved["datasets"].items():
            print_results(results, EXPERIMENTS[key], console)
            saved["claims"][key] = check_claims(results, EXPERIMENTS[key])
            print_claims(saved["claims"][key], console)
        args.report.write_text(json.dumps(saved, indent=1) + "\n")
        return
    if args.sensitivity:
        sensitivity = sigma_min_sensitivity(console)
        print_sensitivity(sensitivity, console)
        harness.write_json("real_data_sensitivity", sensitivity)
        return
    saved = json.loads(args.baselines_into.read_text()) if args.baselines_into else None
    if saved is not None:  # the saved run's plan, so the baselines are run as its other settings were
        args.datasets, args.hyperparameters = list(saved["datasets"]), saved["plan"]["hyperparameters"]
        args.fit_rows, args.timing_runs = saved["plan"]["fit_rows"], 0
        args.runs = args.runs or saved["plan"]["figure_runs"]
    runs = args.runs or (2 if args.quick else 20)
    plan = Plan(
        figure_runs=runs,
        table_runs=runs if args.table_runs is None else args.table_runs,
        gaussian_runs=runs,
        timing_runs=min(args.timing_runs, runs),
        fit_rows=args.fit_rows or (200 if args.quick else 500),
        workers=args.workers,
        quick=args.quick,
        hyperparameters=args.hyperparameters,
        ard=True if args.ard else None,
    )
    if args.table is not None:
        harness.commit_stamp()
        (run_table_in_process if args.in_process else run_table)(args, plan, console)
        return
    started = time.perf_counter()
    all_results, claims, diagnosis = {}, {}, {}
    with (tempfile.TemporaryDirectory(prefix="pobo-real-data-") as tmp,
          benchmark_curator(Path(tmp) / "curator") as curator):
        console.log(f"curator at {curator.url} (research mode, uncertified mechanisms enabled, SQLite in {tmp})")
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for key in args.datasets:
                experiment = EXPERIMENTS[key]
                ctx = prepare_dataset(experiment, experiment.load(), curator, curator.data_dir, plan, console)
                if args.diagnose:
                    diagnosis[key] = diagnose(ctx, runs, console)
                    continue
                only = ([Setting("po-gp-ucb", "crossing", plan.table_runs, log_epsilon=crossing_epsilon(ctx), r=r)
                         for r in CROSSING_RS] if args.crossing
                        else [s for s in plan.settings(experiment) if s.group == "baseline"] if saved else None)
                all_results[key] = run_dataset(ctx, plan, progress, console, settings=only)
    if saved is not None:
        replace_baselines(saved, all_results, harness.command_line(), console)
        args.baselines_into.write_text(json.dumps(saved, indent=1) + "\n")
        console.print(f"wrote {args.baselines_into}")
        return
    if args.diagnose:
        print_diagnosis(diagnosis, console)
        harness.write_json("real_data_diagnosis", dict(datasets=diagnosis))
        return
    if args.crossing:
        claims = report_crossing(all_results, console)
        harness.write_json("real_data_crossing", dict(n_init=N_INIT, refit_every=REFIT_EVERY, claims=claims,
                                                      datasets=all_results))
        return
    for key, results in all_results.items():
        print_results(results, EXPERIMENTS[key], console)
        claims[key] = check_claims(results, EXPERIMENTS[key])
        print_claims(claims[key], console)
    overhead = http_overhead(all_results)
    print_overhead(overhead, console)
    wall = time.perf_counter() - started
    console.print(f"total wall time {wall / 60:.1f} min")
    name = args.name or ("real_data_fitted" if plan.hyperparameters == "fitted" else "real_data")
    out = dict(plan=dataclasses.asdict(plan), wall_seconds=wall, n_init=N_INIT, refit_every=REFIT_EVERY,
               gaussian_epsilons=GAUSSIAN_EPSILONS, http_overhead=overhead, claims=claims, datasets=all_results)
    path = harness.write_json(name, out, quick=args.quick)
    plot(all_results, harness.result_path(name, "png", quick=args.quick))
    console.print(f"wrote {path} and its .png")


def run_table_in_process(args: argparse.Namespace, plan: Plan, console: Console) -> None:
    """``--table --in-process``: each (dataset, r) released with ``po_gp_ucb_release`` on the paper's inputs in file
    order, seeded as the service's release of that setting and run (``seed_of``), then the modeler's loop in-process
    from the run's initial file rows; saved per setting like :func:`run_table`."""
    for key in args.datasets:
        experiment = EXPERIMENTS[key]
        table = experiment.load()
        preprocessing = fit_paper_preprocessing(table.features, table.objective, fit_rows=plan.fit_rows, seed=0)
        X = preprocessing.transform(table.features)
        y = table.objective
        goal, sd = table.goal, float(np.std(y))
        best = float(y.max() if goal == "maximize" else y.min())
        iterations = plan.iterations or experiment.iterations
        settings = RunSettings(iterations=iterations, optimum=best, signal_std=sd,
                               acquisition=harness.PAPER_ACQUISITION, ard=plan.ard)
        for r in args.rs or experiment.paper_tables[args.table][0]:
            started, finals, curves, releases = time.perf_counter(), [], [], []
            for run in range(plan.table_runs):
                seed = seed_of(key, "po-gp-ucb", args.table, None, r, run)
                release = po_gp_ucb_release(X, math.exp(args.table), experiment.delta, r, np.random.default_rng(seed))
                indices, _, _ = in_process_loop(release.Z, in_process_metadata(table.n, r, goal), settings, y,
                                                initial_rows(table.n, run))
                curve = simple_regret(best_so_far(y[indices], goal), best, sd)
                curves.append(curve)
                finals.append(float(curve[-1]))
                releases.append(dict(omega=float(release.omega), sigma_min=float(release.sigma_min),
                                     lifted=bool(release.lifted)))
            curves = np.array(curves)
            summary = dict(method="po-gp-ucb", group="table", label=f"po-gp-ucb ε=e^{args.table} r={r}",
                           log_epsilon=args.table, epsilon=math.exp(args.table), r=r, runs=plan.table_runs,
                           mean=curves.mean(0).tolist(),
                           stderr=(curves.std(0, ddof=1) / math.sqrt(len(curves))).tolist(), final=finals,
                           omega=releases[0]["omega"], sigma_min=releases[0]["sigma_min"],
                           lifted=releases[0]["lifted"], path="in-process")
            console.log(f"{key}: e^{args.table} r={r}: S_T = {np.mean(finals):.3f} ({plan.table_runs} runs)")
            name = f"real_data_{key}_e{args.table}_r{r}{'_ard' if plan.ard else ''}_inprocess"
            path = harness.write_dated_json(name, dict(
                plan=dataclasses.asdict(plan), wall_seconds=time.perf_counter() - started, n_init=N_INIT,
                refit_every=REFIT_EVERY, dataset_key=key, settings=settings.model_dump(mode="json"),
                datasets={key: dict(dataset=table.name, n=table.n, iterations=iterations, settings=[summary])}))
            console.print(f"wrote {path}")


def run_table(args: argparse.Namespace, plan: Plan, console: Console) -> None:
    """``--table``: each (dataset, r) of one r table run on its own and saved at once (``harness.write_dated_json``),
    so settings that finish are kept whatever happens to the others."""
    harness.commit_stamp()  # the commit the run starts from names its files
    with (tempfile.TemporaryDirectory(prefix="pobo-real-data-") as tmp,
          benchmark_curator(Path(tmp) / "curator") as curator):
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for key in args.datasets:
                experiment = EXPERIMENTS[key]
                if args.table not in experiment.paper_tables:
                    raise SystemExit(f"{key} has no r table at log ε = {args.table}; its tables are at "
                                     f"{sorted(experiment.paper_tables)}")
                ctx = prepare_dataset(experiment, experiment.load(), curator, curator.data_dir, plan, console)
                rs = args.rs or experiment.paper_tables[args.table][0]
                for r in rs:
                    setting = Setting("po-gp-ucb", "table", plan.table_runs, log_epsilon=args.table, r=r)
                    started = time.perf_counter()
                    results = run_dataset(ctx, plan, progress, console, settings=[setting])
                    name = f"real_data_{key}_e{args.table}_r{r}{'_ard' if plan.ard else ''}"
                    path = harness.write_dated_json(name, dict(
                        plan=dataclasses.asdict(plan), wall_seconds=time.perf_counter() - started, n_init=N_INIT,
                        refit_every=REFIT_EVERY, dataset_key=key, datasets={key: results}))
                    console.print(f"wrote {path}")


def replace_baselines(saved: dict, fresh: dict, command: str, console: Console) -> None:
    """The baseline settings of ``fresh`` in place of the saved ones; the claims checked again and printed."""
    for key, results in fresh.items():
        kept = [s for s in saved["datasets"][key]["settings"] if s["group"] != "baseline"]
        saved["datasets"][key]["settings"] = [*results["settings"], *kept]
        print_results(saved["datasets"][key], EXPERIMENTS[key], console)
        saved["claims"][key] = check_claims(saved["datasets"][key], EXPERIMENTS[key])
        print_claims(saved["claims"][key], console)
    saved["baselines_command"] = command


if __name__ == "__main__":
    main()
