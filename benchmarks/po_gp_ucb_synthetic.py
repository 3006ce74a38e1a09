"""Reproduce PO-GP-UCB's synthetic experiments (Kharkovskii, Dai & Low 2020): Fig. 2a, Tables 1–3, and
Branin-Hoo (Appendix A; its settings are not in our copy of the paper, so ours are stated below).

Every PO-GP-UCB run releases Z with Algorithm 1 (``shared.releases.po_gp_ucb_release``; NOT differentially
private, see docs/design.md §4) with its own projection matrix M, then runs GP-UCB (``shared.gp.ucb.run_gp_ucb``,
Algorithm 2, δ' = δ_ucb / 2 = 0.025) on Z for T = 50 queries, the first 5 uniformly random ("initialisations"),
observations f + N(0, σ_n²). Run i uses the same initial points and noise stream in every configuration.
Non-private GP-UCB is the same engine on the original inputs. One GP draw (seed 0) is used for all runs, as
the paper's "50 random runs, each with a different set of initializations" reads.

Hyperparameters (``--hyperparameters``): ``fixed`` (default) gives GP-UCB the generating SE hyperparameters
in the units of the original inputs (Branin: an ML fit on 200 random rows of the original inputs), applied
unchanged to Z, the kernel Theorem 3 analyses; ``fitted`` refits them on the observations every 5 queries with
the GP engine's default fit (MAP under BoTorch's priors, lengthscales in units of the candidates' extent; closer to
the paper's "learned using maximum likelihood"; a fit in the extent's units is scale-equivariant, so it absorbs
the lift whenever the lift is isotropic, as it is on a square grid).

Inputs: the paper's stated normalisation, the centred grid scaled to a maximal norm of 25 (σ_min ≈ 1,031;
``shared.datasets.synthetic``). The paper states l = 1.25 but not the grid's extent; ``--extent A`` draws f with
l = 1.25 on the grid of [−A, A]² (default 5). After the normalisation only the ratio A / l matters, so the crossing
points do not depend on it, but how many lengthscales the grid spans sets how hard the function is.
``--extent-sweep`` runs only non-private GP-UCB (the generating hyperparameters) over several A, to find the
extent at which it reaches the paper's level. With Blocki et al.'s ω (``shared.releases.omega``) the paper's crossing
points hold there; the benchmark prints them beside the paper's, and the literal extraction's for contrast.

    .venv/bin/python benchmarks/po_gp_ucb_synthetic.py [--quick] [--runs N] [--hyperparameters fitted] [--extent A]
    .venv/bin/python benchmarks/po_gp_ucb_synthetic.py --extent-sweep [--runs N]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import harness  # one BLAS thread and the repository on sys.path, before numpy loads
import numpy as np
import stats
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from shared.datasets.synthetic import (
    SYNTHETIC_DOMAIN,
    Problem,
    branin_problem,
    kronecker_factor_error,
    synthetic_gp_problem,
)
from shared.gp.kernels import SquaredExponential
from shared.gp.regression import fit_hyperparameters
from shared.gp.ucb import run_gp_ucb
from shared.regret import best_so_far
from shared.releases import largest_r, omega, po_gp_ucb_release
from shared.releases.po_gp_ucb import centred_gram

SYNTHETIC_HALF_WIDTH = SYNTHETIC_DOMAIN[1]  # the grid the GP is drawn on is [−5, 5]²
R_MAX = 50  # the largest r any table tries
T = 50
N_INIT = 5
DELTA = 1e-5
DELTA_UCB = 0.05
FIG2A_R = 10
FIG2A_LOG_EPSILONS = (0.0, 0.3, 0.6, 0.9, 1.1)
PAPER_LENGTHSCALE = 1.25
DEFAULT_EXTENT = 5.0  # the half-width A of the grid [−A, A]² f is drawn on, in the units of l
SWEEP_EXTENTS = (5.0, 4.5, 4.0, 3.0, 2.0, 1.0)
PAPER_NON_PRIVATE_S50 = 0.003  # Table 3's unlifted r = 15, 20 (0.003, 0.002) less the gap at the crossing (Fig. 2a)

# ---- The paper's numbers (Kharkovskii, Dai & Low 2020, §4), copied from its text ----
PAPER_TABLES = {  # log ε → (r values, S_50), synthetic GP dataset, Tables 1–3
    1.1: ((3, 6, 8, 10, 15, 20), (0.073, 0.038, 0.018, 0.014, 0.118, 0.137)),
    1.3: ((3, 9, 12, 15, 20, 30), (0.091, 0.009, 0.019, 0.008, 0.127, 0.134)),
    1.5: ((5, 10, 15, 20, 30, 50), (0.05, 0.021, 0.003, 0.002, 0.094, 0.142)),
}
PAPER_LARGEST_R = {1.1: 10, 1.3: 15, 1.5: 20}  # largest r with σ_min ≥ ω, as the paper states
PAPER_FIG2A_GAP = {1.1: 0.011, 0.9: 0.069, 0.0: 0.099}  # S_50(PO-GP-UCB) − S_50(non-private), in σ_y


@dataclass(frozen=True)
class Setting:
    hyperparameters: str
    runs: int
    ard: bool | None = None  # fitted: one lengthscale per coordinate at every r (True) or the engine's default (None)


def gp_options(problem: Problem, setting: Setting, cache: dict) -> dict:
    """Options for GP-UCB: the fixed hyperparameters (and the refit schedule when ``fitted``)."""
    if problem.name not in cache:
        if problem.lengthscale is not None:
            kernel = SquaredExponential(problem.lengthscale, problem.signal_std**2)
            noise, mean = problem.noise_variance, 0.0
        else:
            rows = np.random.default_rng(0).choice(len(problem.X), 200, replace=False)
            fit = fit_hyperparameters(problem.X[rows], problem.f[rows], n_restarts=2, rng=0)
            kernel, noise, mean = fit.kernel, max(fit.noise_variance, problem.noise_variance), fit.prior_mean
        cache[problem.name] = dict(kernel=kernel, noise_variance=noise, prior_mean=mean)
    options = dict(cache[problem.name], delta=DELTA_UCB / 2, n_init=N_INIT, acquisition=harness.PAPER_ACQUISITION)
    if setting.hyperparameters == "fitted":
        options |= dict(refit_every=5, n_restarts=1, ard=setting.ard)
    return options


def regret_curve(problem: Problem, candidates: np.ndarray, run: int, options: dict) -> np.ndarray:
    result = run_gp_ucb(
        candidates, problem.f, T, noise_std=math.sqrt(problem.noise_variance), rng=np.random.default_rng(run), **options
    )
    return problem.simple_regret(best_so_far(result.values, "maximize"))


def run_config(problem, setting, options, log_epsilon, r, progress, task) -> dict:
    """``setting.runs`` runs of PO-GP-UCB at (ε = e^log_epsilon, r), or non-private GP-UCB when r is None."""
    curves = []
    release = None
    for run in range(setting.runs):
        if r is None:
            candidates = problem.X
        else:
            seed = (run, r, round(100 * log_epsilon), 7)
            release = po_gp_ucb_release(problem.X, math.exp(log_epsilon), DELTA, r, rng=np.random.default_rng(seed))
            candidates = release.Z
        curves.append(regret_curve(problem, candidates, run, options))
        progress.advance(task)
    curves = np.array(curves)
    summary = dict(
        log_epsilon=log_epsilon,
        r=r,
        mean=curves.mean(0).tolist(),
        stderr=(curves.std(0, ddof=1) / math.sqrt(len(curves))).tolist() if len(curves) > 1 else None,
        final=curves[:, -1].tolist(),
    )
    if release is not None:
        summary |= dict(omega=release.omega, sigma_min=release.sigma_min, lifted=release.lifted)
    return summary


def s50(config: dict) -> tuple[float, float]:
    return config["mean"][-1], (config["stderr"] or [0.0])[-1]


def figure_experiment(problem, setting, cache, progress, label) -> dict:
    options = gp_options(problem, setting, cache)
    task = progress.add_task(f"{label}: Fig. 2a", total=setting.runs * (len(FIG2A_LOG_EPSILONS) + 1))
    configs = [run_config(problem, setting, options, e, FIG2A_R, progress, task) for e in FIG2A_LOG_EPSILONS]
    non_private = run_config(problem, setting, options, math.inf, None, progress, task)
    return dict(problem=problem.name, r=FIG2A_R, configs=configs, non_private=non_private)


def table_experiment(problem, setting, cache, progress, label) -> dict:
    options = gp_options(problem, setting, cache)
    tables = {}
    for log_epsilon, (rs, _) in PAPER_TABLES.items():
        task = progress.add_task(f"{label}: table ε = e^{log_epsilon}", total=setting.runs * len(rs))
        tables[str(log_epsilon)] = [run_config(problem, setting, options, log_epsilon, r, progress, task) for r in rs]
    return tables


def check_claims(figure: dict, tables: dict | None, crossing: dict | None, console: Console,
                 paper_gap: float | None) -> dict:
    """The paper's qualitative claims, each with a verdict (True = reproduces)."""
    claims = {}
    if crossing is not None:
        statements = [row["table_r_blocki"] == row["paper"] for row in crossing["tables"].values()]
        statements += [row["blocki"] == row["paper"] for row in crossing["figure"].values()]
        crossing_claim = ("crossing points: largest r of each table with sigma_min >= omega, "
                          "and which Fig. 2a eps have it")
        claims[crossing_claim] = dict(
            holds=all(statements), statements_that_hold=f"{sum(statements)}/{len(statements)}"
        )
    finals = [s50(c) for c in figure["configs"]]
    increases = [
        (figure["configs"][i]["log_epsilon"], figure["configs"][i + 1]["log_epsilon"])
        for i in range(len(finals) - 1)
        if finals[i + 1][0] - finals[i][0] > 2 * math.hypot(finals[i][1], finals[i + 1][1])
    ]
    (first, first_se), (last, last_se) = finals[0], finals[-1]
    claims["regret falls as epsilon grows (largest-eps S_50 below smallest-eps by 2 s.e., no significant rise)"] = dict(
        holds=not increases and last + 2 * math.hypot(first_se, last_se) < first,
        significant_increases=increases,
        s50=[f[0] for f in finals],
    )
    gap = finals[-1][0] - s50(figure["non_private"])[0]
    claims["small gap to non-private at largest epsilon (at most 0.05 sigma_y)"] = dict(holds=gap <= 0.05, ours=gap,
                                                                                        paper=paper_gap)
    for log_epsilon, configs in (tables or {}).items():
        rs, paper = PAPER_TABLES[float(log_epsilon)]
        stated = PAPER_LARGEST_R[float(log_epsilon)]
        verdict = stats.ordering_verdict({c["r"]: c["final"] for c in configs}, stated, dict(zip(rs, paper)))
        name = f"table eps=e^{log_epsilon}: the paper's largest admissible r below every r its table shows worse"
        claims[name] = dict(
            holds={"reproduces": True, "does not reproduce": False}.get(verdict["verdict"]),
            verdict=verdict["verdict"], reason=verdict["reason"], claimed_best_r=stated,
            largest_r_in_table_with_sigma_min_ge_omega=max((c["r"] for c in configs if not c["lifted"]), default=None),
            contrasts={c["setting"]: dict(difference=c["mean_difference"], p_holm=c["p_holm"], power=c["power"])
                       for c in verdict["contrasts"]})
    for name, verdict in claims.items():
        holds = verdict["holds"]
        mark = ("[yellow]untestable (power stated)[/yellow]" if holds is None else "[green]reproduces[/green]" if holds
                else "[red]does NOT reproduce[/red]")
        details = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in verdict.items() if k != "holds"}
        console.print(f"  {mark}: {name} {details}")
    return claims


def crossing_points(X: np.ndarray) -> dict:
    """Where σ_min ≥ ω holds, beside the paper's statements: per table ε the largest r the table tries with
    σ_min ≥ ω and ``largest_r`` over every r ≤ R_MAX, with Blocki's ω and with the literal extraction; and
    which of Fig. 2a's ε have σ_min ≥ ω at its r (the paper: only the largest)."""
    sigma_min = centred_gram(X).sigma_min

    def admissible(log_epsilon: float, r: int, form: str) -> bool:
        return sigma_min >= omega(math.exp(log_epsilon), DELTA, r, form=form)

    tables = {}
    for log_epsilon, (rs, _) in PAPER_TABLES.items():
        row = dict(paper=PAPER_LARGEST_R[log_epsilon], any_r_blocki=largest_r(X, math.exp(log_epsilon), DELTA, R_MAX))
        for form in ("blocki", "literal"):
            row[f"table_r_{form}"] = max((r for r in rs if admissible(log_epsilon, r, form)), default=0)
        tables[str(log_epsilon)] = row
    figure = {str(a): dict(blocki=admissible(a, FIG2A_R, "blocki"), literal=admissible(a, FIG2A_R, "literal"),
                           paper=a == max(FIG2A_LOG_EPSILONS)) for a in FIG2A_LOG_EPSILONS}
    return dict(sigma_min=sigma_min, tables=tables, figure=figure)


def print_crossing(crossing: dict, console: Console, label: str) -> None:
    table = Table(title=f"{label}: largest r with σ_min ≥ ω (σ_min = {crossing['sigma_min']:.1f}, δ = {DELTA:g})")
    for column in ("ε", "paper", "ours: of the table's r", f"ours: any r ≤ {R_MAX}", "literal ω: of the table's r"):
        table.add_column(column)
    for a, row in crossing["tables"].items():
        table.add_row(f"e^{a}", str(row["paper"]), str(row["table_r_blocki"]), str(row["any_r_blocki"]),
                      str(row["table_r_literal"]))
    console.print(table)
    figure = Table(title=f"{label}: Fig. 2a, σ_min ≥ ω at r = {FIG2A_R}?")
    for column in ("ε", "paper", "ours", "literal ω"):
        figure.add_column(column)
    for a, row in crossing["figure"].items():
        figure.add_row(f"e^{a}", str(row["paper"]), str(row["blocki"]), str(row["literal"]))
    console.print(figure)


def print_figure(figure: dict, console: Console, title: str, paper_gaps: dict) -> None:
    table = Table(title=title)
    for column in ("ε", "σ_min", "ω", "lifted", "S_10", "S_25", "S_50 ± s.e.", "gap to non-private", "paper gap"):
        table.add_column(column)
    np_s50 = s50(figure["non_private"])[0]
    for c in figure["configs"]:
        m, se = s50(c)
        paper = paper_gaps.get(c["log_epsilon"])
        table.add_row(
            f"e^{c['log_epsilon']}", f"{c['sigma_min']:.0f}", f"{c['omega']:.0f}", str(c["lifted"]),
            f"{c['mean'][9]:.3f}", f"{c['mean'][24]:.3f}", f"{m:.3f} ± {se:.3f}", f"{m - np_s50:+.3f}",
            "" if paper is None else f"{paper:+.3f}",
        )
    n = figure["non_private"]
    table.add_row("non-private", "", "", "", f"{n['mean'][9]:.3f}", f"{n['mean'][24]:.3f}",
                  f"{np_s50:.3f} ± {s50(n)[1]:.3f}", "", "")
    console.print(table)


def print_tables(tables: dict, console: Console, label: str) -> None:
    for log_epsilon, configs in tables.items():
        rs, paper = PAPER_TABLES[float(log_epsilon)]
        table = Table(title=f"{label}: S_50 vs r at ε = e^{log_epsilon} (* = σ_min ≥ ω)")
        table.add_column("")
        for r, c in zip(rs, configs):
            table.add_column(f"r={r}{'' if c['lifted'] else '*'}")
        table.add_row("ours", *[f"{s50(c)[0]:.3f}±{s50(c)[1]:.3f}" for c in configs])
        table.add_row("paper",
                      *[f"{v:.3f}{'*' if r <= PAPER_LARGEST_R[float(log_epsilon)] else ''}" for r, v in zip(rs, paper)])
        console.print(table)


def plot(results: dict, stem: str, quick: bool) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = [(k, v) for k, v in results["experiments"].items() if "figure" in v]
    fig, axes = plt.subplots(2, len(figures), figsize=(5.5 * len(figures), 8.5), squeeze=False)
    for col, (name, experiment) in enumerate(figures):
        ax = axes[0, col]
        iterations = np.arange(1, T + 1)
        for c in experiment["figure"]["configs"]:
            ax.plot(iterations, c["mean"], label=f"ε=e^{c['log_epsilon']}{' (σ_min≥ω)' if not c['lifted'] else ''}")
        ax.plot(iterations, experiment["figure"]["non_private"]["mean"], "k--", label="non-private GP-UCB")
        ax.set(title=f"{name} (r={FIG2A_R})", xlabel="iteration", ylabel="simple regret / σ_y", yscale="log")
        ax.legend(fontsize=8)
        ax = axes[1, col]
        for log_epsilon, configs in experiment.get("tables", {}).items():
            rs = [c["r"] for c in configs]
            line = ax.errorbar(rs, [s50(c)[0] for c in configs], yerr=[s50(c)[1] for c in configs], marker="o",
                               label=f"ours ε=e^{log_epsilon}")
            ax.plot(*PAPER_TABLES[float(log_epsilon)], ls=":", marker="x", color=line[0].get_color(),
                    label=f"paper ε=e^{log_epsilon}")
        ax.set(title=f"{name}: S_50 vs r (Tables 1–3)", xlabel="r", ylabel="S_50 / σ_y")
        if experiment.get("tables"):
            ax.legend(fontsize=8)
        else:
            ax.set_visible(False)
    fig.tight_layout()
    return str(harness.save_figure(fig, stem, quick=quick))


def gp_problem(extent: float, seed: int = 0) -> Problem:
    """The synthetic GP draw ``seed`` with l = 1.25 on [−extent, extent]²: the same draw as l = 1.25 · 5 / extent on
    [−5, 5]²."""
    return synthetic_gp_problem(seed, lengthscale=PAPER_LENGTHSCALE * SYNTHETIC_HALF_WIDTH / extent)


def extent_sweep_over_draws(runs: int, seeds: list[int], console: Console) -> dict:
    """Non-private GP-UCB's S_50 (generating hyperparameters) for each grid extent of ``SWEEP_EXTENTS`` on each GP draw
    of ``seeds``: the extent chosen over several draws is the largest (the hardest function) whose mean over draws is
    at most 2 standard errors above the paper's non-private level (``PAPER_NON_PRIVATE_S50``)."""
    setting, rows = Setting("fixed", runs), {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as progress:
        task = progress.add_task("extent sweep over draws", total=runs * len(SWEEP_EXTENTS) * len(seeds))
        for extent in SWEEP_EXTENTS:
            per_draw = {}
            for seed in seeds:
                problem = gp_problem(extent, seed)
                config = run_config(problem, setting, gp_options(problem, setting, {}), math.inf, None, progress, task)
                per_draw[str(seed)] = dict(zip(("s50", "stderr"), s50(config)), final=config["final"])
            means = [d["s50"] for d in per_draw.values()]
            rows[str(extent)] = dict(mean_over_draws=float(np.mean(means)),
                                     stderr_over_draws=float(np.std(means, ddof=1) / math.sqrt(len(means))),
                                     draws=per_draw)
    at_level = [e for e in rows if rows[e]["mean_over_draws"] - PAPER_NON_PRIVATE_S50
                <= 2 * rows[e]["stderr_over_draws"] + 1e-12]
    chosen = max(at_level, key=float, default=min(rows, key=lambda e: rows[e]["mean_over_draws"]))
    table = Table(title=f"non-private GP-UCB, S_50 / σ_y by grid extent, mean over {len(seeds)} GP draws ({runs} runs "
                        f"each); paper ≈ {PAPER_NON_PRIVATE_S50}")
    for column in ("A", "mean over draws ± s.e.", "per draw"):
        table.add_column(column)
    for extent, row in rows.items():
        table.add_row(extent, f"{row['mean_over_draws']:.4f} ± {row['stderr_over_draws']:.4f}",
                      " ".join(f"{d['s50']:.3f}" for d in row["draws"].values()))
    console.print(table)
    console.print(f"largest extent at the paper's non-private level over the draws: A = {chosen}")
    return dict(runs=runs, seeds=seeds, lengthscale=PAPER_LENGTHSCALE, paper_non_private_s50=PAPER_NON_PRIVATE_S50,
                chosen_extent=float(chosen), extents=rows)


def extent_sweep(runs: int, console: Console) -> dict:
    """Non-private GP-UCB's S_50 (generating hyperparameters) for each grid extent of ``SWEEP_EXTENTS``."""
    setting, rows = Setting("fixed", runs), {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as progress:
        task = progress.add_task("extent sweep", total=runs * len(SWEEP_EXTENTS))
        for extent in SWEEP_EXTENTS:
            problem = gp_problem(extent)
            config = run_config(problem, setting, gp_options(problem, setting, {}), math.inf, None, progress, task)
            rows[str(extent)] = dict(zip(("s50", "stderr"), s50(config)), final=config["final"])
    table = Table(title=f"non-private GP-UCB, S_50 / σ_y by grid extent [−A, A]² at l = {PAPER_LENGTHSCALE} "
                        f"({runs} runs); paper ≈ {PAPER_NON_PRIVATE_S50}")
    for column in ("A", "lengthscales per side (2A / l)", "S_50 ± s.e.", "runs that found the maximum"):
        table.add_column(column)
    for extent, row in rows.items():
        table.add_row(extent, f"{2 * float(extent) / PAPER_LENGTHSCALE:.1f}", f"{row['s50']:.4f} ± {row['stderr']:.4f}",
                      f"{sum(v == 0.0 for v in row['final'])}/{runs}")
    console.print(table)
    return dict(runs=runs, lengthscale=PAPER_LENGTHSCALE, paper_non_private_s50=PAPER_NON_PRIVATE_S50, extents=rows)


def run_table(args: argparse.Namespace, setting: Setting, console: Console) -> None:
    """``--table``: one r table of the synthetic GP (every r, ``setting.runs`` paired runs) in its own results file."""
    harness.commit_stamp()  # the commit the run starts from names its files
    if args.table not in PAPER_TABLES:
        raise SystemExit(f"no r table at log ε = {args.table}; the tables are at {sorted(PAPER_TABLES)}")
    problem = gp_problem(args.extent, args.function_seed)
    options = gp_options(problem, setting, {})
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        rs = PAPER_TABLES[args.table][0]
        task = progress.add_task(f"table ε = e^{args.table}", total=setting.runs * len(rs))
        configs = [run_config(problem, setting, options, args.table, r, progress, task) for r in rs]
    print_tables({str(args.table): configs}, console, "synthetic GP")
    name = (f"po_gp_ucb_synthetic_table_e{args.table}_{setting.hyperparameters}{'_ard' if setting.ard else ''}"
            f"_A{args.extent:g}_f{args.function_seed}")
    path = harness.write_dated_json(name, dict(
        settings=dict(T=T, n_init=N_INIT, delta=DELTA, delta_ucb=DELTA_UCB, runs=setting.runs,
                      hyperparameters=setting.hyperparameters, ard=setting.ard, extent=args.extent,
                      function_seed=args.function_seed, lengthscale=PAPER_LENGTHSCALE,
                      acquisition=harness.PAPER_ACQUISITION),
        sigma_min=centred_gram(problem.X).sigma_min, crossing=crossing_points(problem.X),
        tables={str(args.table): configs}, seconds=time.perf_counter() - started))
    console.print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_quick(parser, "5 runs per configuration, to try things out")
    parser.add_argument("--runs", type=int, help="runs per configuration (default 50, or 5 with --quick)")
    parser.add_argument("--hyperparameters", choices=["fixed", "fitted"], default="fixed")
    parser.add_argument("--no-branin", action="store_true")
    parser.add_argument("--out", default="po_gp_ucb_synthetic", help="file name stem under benchmarks/results/")
    parser.add_argument("--extent", type=float, default=DEFAULT_EXTENT,
                        help="half-width A of the grid [−A, A]² the GP (l = 1.25) is drawn on")
    parser.add_argument("--extent-sweep", action="store_true", help="only non-private GP-UCB over several extents")
    parser.add_argument("--draws", type=int, nargs="+", metavar="SEED",
                        help="with --extent-sweep: on each of these GP draws, saved to a results file named by date "
                             "and commit")
    parser.add_argument("--ard", action="store_true",
                        help="fitted: one lengthscale per coordinate at every r (default: per coordinate up to r = 16)")
    parser.add_argument("--table", type=float, metavar="LOG_EPSILON",
                        help="only this r table of the synthetic GP, saved to a results file named by date and commit")
    parser.add_argument("--function-seed", type=int, default=0, help="which GP draw (default 0)")
    parser.add_argument("--report", type=Path,
                        help="only check the paper's claims again on this saved JSON (rewritten)")
    args = parser.parse_args()
    if args.report:
        saved, console = json.loads(args.report.read_text()), Console(width=150)
        for label, experiment in saved["experiments"].items():
            console.rule(label)
            paper_gap = PAPER_FIG2A_GAP.get(FIG2A_LOG_EPSILONS[-1]) if label.startswith("synthetic") else None
            experiment["claims"] = check_claims(experiment["figure"], experiment.get("tables"),
                                                experiment.get("crossing"), console, paper_gap)
        args.report.write_text(json.dumps(saved, indent=1) + "\n")
        return
    setting = Setting(args.hyperparameters, args.runs or (5 if args.quick else 50), True if args.ard else None)
    console = Console(width=150)
    if args.table is not None:
        run_table(args, setting, console)
        return
    if args.extent_sweep and args.draws:
        harness.commit_stamp()
        sweep = extent_sweep_over_draws(setting.runs, args.draws, console)
        console.print(f"wrote {harness.write_dated_json('po_gp_ucb_synthetic_extent_draws', sweep)}")
        return
    if args.extent_sweep:
        sweep = extent_sweep(setting.runs, console)
        console.print(f"wrote {harness.write_json('po_gp_ucb_synthetic_extent', sweep, quick=args.quick)}")
        return
    problems = {"synthetic-gp/max-norm-25": (gp_problem(args.extent), True)}
    if not args.no_branin:
        problems["branin-hoo/max-norm-25"] = (branin_problem(), False)
    results = dict(
        settings=dict(
            T=T, n_init=N_INIT, delta=DELTA, delta_ucb=DELTA_UCB, gp_ucb_delta_prime=DELTA_UCB / 2, fig2a_r=FIG2A_R,
            runs=setting.runs, hyperparameters=setting.hyperparameters, function_seed=0, extent=args.extent,
            lengthscale=PAPER_LENGTHSCALE,
            kronecker_factor_error=kronecker_factor_error(),
        ),
        paper=dict(tables=PAPER_TABLES, largest_r=PAPER_LARGEST_R, fig2a_gap=PAPER_FIG2A_GAP),
        experiments={},
    )
    cache: dict = {}
    started = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        for label, (problem, with_tables) in problems.items():
            sigma_min = centred_gram(problem.X).sigma_min
            experiment = dict(sigma_min=sigma_min, figure=figure_experiment(problem, setting, cache, progress, label))
            if with_tables:
                experiment["crossing"] = crossing_points(problem.X)
                experiment["tables"] = table_experiment(problem, setting, cache, progress, label)
            results["experiments"][label] = experiment
    results["seconds"] = time.perf_counter() - started

    for label, experiment in results["experiments"].items():
        console.rule(f"{label}: σ_min = {experiment['sigma_min']:.1f}")
        paper_gaps = PAPER_FIG2A_GAP if label.startswith("synthetic") else {}  # no Branin numbers in our copy
        print_figure(experiment["figure"], console, f"{label}: Fig. 2a, simple regret / σ_y ({setting.runs} runs)",
                     paper_gaps)
        if "tables" in experiment:
            print_crossing(experiment["crossing"], console, label)
            print_tables(experiment["tables"], console, label)
        console.print("The paper's claims:")
        paper_gap = paper_gaps.get(FIG2A_LOG_EPSILONS[-1])
        experiment["claims"] = check_claims(
            experiment["figure"], experiment.get("tables"), experiment.get("crossing"), console, paper_gap
        )

    path = harness.write_json(args.out, results, quick=args.quick)
    console.print(f"wrote {path} and {plot(results, args.out, args.quick)} in {results['seconds']:.0f} s")


if __name__ == "__main__":
    main()
