"""Tables, the paper's claims checked, and the HTTP overhead of the real-data results."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import stats
from real_data_experiments import EXPERIMENTS, Experiment
from rich.console import Console
from rich.table import Table


def print_diagnosis(diagnosis: dict, console: Console) -> None:
    for key, d in diagnosis.items():
        table = Table(title=f"{key}: S_T (σ_y) by GP-UCB's kernel, {d['runs']} runs; po-gp-ucb at ε = "
                            f"e^{d['log_epsilon']}, r = {d['r']}")
        names = list(next(iter(d["methods"].values())).keys())
        table.add_column("inputs")
        for name in names:
            table.add_column(name)
        table.add_column("fitted runs ending at the lengthscale's lower bound")
        for method, results in d["methods"].items():
            cells = [f"{results[n]['mean']:.3f}±{results[n]['stderr']:.3f}" if n in results else "—" for n in names]
            table.add_row(method, *cells, f"{results['fitted']['runs_at_lower_bound']}/{d['runs']}")
        console.print(table)


def print_sensitivity(sensitivity: dict, console: Console) -> None:
    table = Table(title="σ_min of the paper-preprocessed inputs and the largest r with σ_min ≥ ω (of each table's r) "
                        "at the paper's three table ε; (lo)/(up) = the ARD lengthscale stopped at a bound of its "
                        "search")
    for column in ("dataset", "incomes > $250k", "fit seed, rows", "ARD lengthscales", "σ_min", "paper window",
                   "largest r (paper: 10, 15, 20)", "ε for σ_min = ω at r = 15"):
        table.add_column(column)
    for row in sensitivity["rows"]:
        marks = {"lower": " (lo)", "upper": " (up)", "": ""}
        scales = ", ".join(f"{v:.3g}{marks[b]}" for v, b in zip(row["lengthscales"], row["at_bound"]))
        rs = [str(r["largest_table_r"]) for r in row["per_epsilon"] if r["largest_table_r"] is not None]
        low, high = row["paper_window"]
        table.add_row(row["dataset"], row["income_outliers"] or "", f"{row['seed']}, {row['fit_rows']}", scales,
                      f"{row['sigma_min']:.1f}", f"[{low:.0f}, {high:.0f})", ", ".join(rs),
                      f"e^{row['log_epsilon_needed_at_figure_r']:.2f}")
    console.print(table)


def final(summary: dict) -> tuple[float, float]:
    return summary["mean"][-1], (summary["stderr"] or [0.0])[-1]


def find(results: dict, **match) -> dict | None:
    return next((s for s in results["settings"] if all(s.get(k) == v for k, v in match.items())), None)


def print_results(results: dict, experiment: Experiment, console: Console) -> None:
    T = results["iterations"]
    g = results["guideline"]
    console.rule(f"{experiment.key}: {results['description']} (n = {results['n']}, paper n = {results['paper_n']})")
    low, high = g["paper_window"]
    console.print(
        f"σ_min of the paper-preprocessed inputs = {g['sigma_min']:.1f} (the paper's statements need {low:.1f} ≤ σ_min "
        f"< {high:.1f}); σ_min ≥ ω at r = {experiment.figure_r} needs ε ≥ {g['epsilon_needed_at_figure_r']:.3g} = "
        f"e^{g['log_epsilon_needed_at_figure_r']:.2f}"
    )
    guide = Table(title="largest r with σ_min ≥ ω (the paper's guideline), ours vs the paper's")
    for column in ("ε", f"ω at r={experiment.figure_r}", "ours: of the table's r", "ours: any r ≤ 100", "paper"):
        guide.add_column(column)
    for row in g["per_epsilon"]:
        paper, table_r = row["paper_largest_r"], row["largest_table_r"]
        guide.add_row(f"e^{row['log_epsilon']}", f"{row['omega_at_figure_r']:.0f}",
                      "" if table_r is None else str(table_r),
                      str(row["largest_r"]), "" if paper is None else str(paper))
    console.print(guide)

    non_private = find(results, method="non-private")
    np_final = final(non_private)[0]
    fig = Table(title=f"Fig. 2{'b' if experiment.key == 'loans' else 'c'}-style: S_{T} (σ_y) at r = "
                      f"{experiment.figure_r}; "
                      "* = σ_min ≥ ω")
    for column in ("method", "runs", f"S_{T} ± s.e.", "gap to non-private", "paper gap"):
        fig.add_column(column)
    for s in results["settings"]:
        if s["group"] not in ("baseline", "figure", "gaussian"):
            continue
        m, se = final(s)
        star = "*" if s["method"] == "po-gp-ucb" and not s["lifted"] else ""
        paper = experiment.paper_figure_gaps.get(s["log_epsilon"]) if s["method"] == "po-gp-ucb" else None
        gap = "" if s["method"] == "non-private" else f"{m - np_final:+.3f}"
        fig.add_row(s["label"] + star, str(s["runs"]), f"{m:.3f} ± {se:.3f}", gap,
                    "" if paper is None else f"{paper:+.3f}")
    console.print(fig)

    for a, (rs, paper_values) in experiment.paper_tables.items():
        row = [find(results, method="po-gp-ucb", log_epsilon=a, r=r) for r in rs]
        if not any(row):
            continue
        table = Table(title=f"S_{T} vs r at ε = e^{a} (* = σ_min ≥ ω with our preprocessing; paper: largest r with "
                            f"σ_min ≥ ω is {experiment.paper_largest_r[a]})")
        table.add_column("")
        for r, s in zip(rs, row):
            table.add_column(f"r={r}{'*' if s and not s['lifted'] else ''}")
        table.add_row("ours", *[f"{final(s)[0]:.3f}±{final(s)[1]:.3f}" if s else "—" for s in row])
        table.add_row("runs", *[str(s["runs"]) if s else "" for s in row])
        table.add_row("paper", *[f"{v:.3f}" for v in paper_values])
        console.print(table)


def check_claims(results: dict, experiment: Experiment) -> dict:
    """The paper's qualitative claims on this dataset, each with a verdict (True = reproduces)."""
    claims = {}
    figure = sorted((s for s in results["settings"] if s["group"] == "figure"), key=lambda s: s["log_epsilon"])
    (low, low_se), (high, high_se) = final(figure[0]), final(figure[-1])
    claims["po-gp-ucb: regret at the largest figure epsilon below the smallest by 2 s.e."] = dict(
        holds=high + 2 * math.hypot(low_se, high_se) < low, finals={s["log_epsilon"]: final(s)[0] for s in figure}
    )
    gap = high - final(find(results, method="non-private"))[0]
    claims["po-gp-ucb at the largest figure epsilon at most 0.05 sigma_y worse than non-private"] = dict(
        holds=gap <= 0.05, ours=gap, paper=experiment.paper_figure_gaps.get(figure[-1]["log_epsilon"])
    )
    gaussian = sorted((s for s in results["settings"] if s["method"] == "gaussian"), key=lambda s: s["epsilon"])
    (g_low, g_low_se), (g_high, g_high_se) = final(gaussian[0]), final(gaussian[-1])
    claims["gaussian (certified): regret at the largest epsilon below the smallest by 2 s.e."] = dict(
        holds=g_high + 2 * math.hypot(g_low_se, g_high_se) < g_low, finals={s["epsilon"]: final(s)[0] for s in gaussian}
    )
    random_final = final(find(results, method="random"))[0]
    claims["gaussian at the largest epsilon beats random search"] = dict(holds=g_high < random_final, ours=g_high,
                                                                           random=random_final)
    for a, (rs, paper) in experiment.paper_tables.items():
        row = [find(results, method="po-gp-ucb", log_epsilon=a, r=r) for r in rs]
        if all(row):
            name = f"table eps=e^{a}: the paper's largest admissible r below every r its table shows worse (paired)"
            claims[name] = guideline_verdict(rs, row, paper, experiment.paper_largest_r[a])
    return claims


def guideline_verdict(rs: Sequence[int], row: Sequence[dict], paper: Sequence[float], stated_r: int) -> dict:
    """The paper's r guideline on one row of an r table by ``stats.ordering_verdict``: the r the paper states is the
    largest with σ_min ≥ ω is claimed best, each r the paper's own row shows worse is a one-sided paired contrast
    (run i of every r shares its initial rows), Holm over the row. ``holds``: True (reproduces), False (does not
    reproduce) or None (untestable, with the power against the paper's differences)."""
    verdict = stats.ordering_verdict({r: s["final"] for r, s in zip(rs, row)}, stated_r, dict(zip(rs, paper)))
    holds = {"reproduces": True, "does not reproduce": False}.get(verdict["verdict"])
    return dict(holds=holds, verdict=verdict["verdict"], reason=verdict["reason"], claimed_best_r=stated_r,
                admissible_rs=[r for r, s in zip(rs, row) if not s["lifted"]],
                contrasts={c["setting"]: dict(difference=c["mean_difference"], p_holm=c["p_holm"], power=c["power"])
                           for c in verdict["contrasts"]})


def print_claims(claims: dict, console: Console) -> None:
    for name, verdict in claims.items():
        holds = verdict["holds"]
        mark = ("[yellow]untestable (power stated)[/]" if holds is None
                else "[green]reproduces[/]" if holds else "[red]does NOT reproduce[/]")
        details = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in verdict.items() if k != "holds"}
        console.print(f"  {mark}: {name} {details}")


def report_crossing(all_results: dict, console: Console) -> dict:
    """The r table at our own crossing ε (``--crossing``): printed and checked; returns the claims."""
    claims = {}
    for key, results in all_results.items():
        row = sorted(results["settings"], key=lambda s: s["r"])
        rs = [s["r"] for s in row]
        a = row[0]["log_epsilon"]
        table = Table(title=f"{key}: S_{results['iterations']} vs r at ε = e^{a}, where our inputs reach σ_min = ω at "
                            f"r = {EXPERIMENTS[key].figure_r} (* = σ_min ≥ ω)")
        table.add_column("")
        for s in row:
            table.add_column(f"r={s['r']}{'' if s['lifted'] else '*'}")
        table.add_row("ours", *[f"{final(s)[0]:.3f}±{final(s)[1]:.3f}" for s in row])
        table.add_row("runs", *[str(s["runs"]) for s in row])
        console.print(table)
        claim = f"e^{a}: the largest r with sigma_min >= omega at or near the lowest regret"
        claims[key] = {claim: guideline_verdict(rs, row)}
        print_claims(claims[key], console)
    return claims


def http_overhead(all_results: dict) -> dict:
    """Per-iteration wall time over HTTP vs in-process on the same releases."""
    out = {}
    for key, results in all_results.items():
        timed = [r for s in results["settings"] for r in s["releases"] if "http_seconds_per_iteration" in r]
        if not timed:
            continue
        http = np.array([r["http_seconds_per_iteration"] for r in timed])
        local = np.array([r["in_process_seconds_per_iteration"] for r in timed])
        out[key] = dict(
            releases=len(timed),
            http_ms=1e3 * float(http.mean()),
            in_process_ms=1e3 * float(local.mean()),
            overhead_ms=1e3 * float((http - local).mean()),
            ratio=float(http.mean() / local.mean()),
            same_rows=all(r["same_rows"] for r in timed),
        )
    return out


def print_overhead(overhead: dict, console: Console) -> None:
    table = Table(title="Wall time per GP-UCB iteration: over HTTP vs the same loop in-process (same release, same "
                        "seed)")
    for column in ("dataset", "releases", "HTTP ms", "in-process ms", "overhead ms", "ratio", "same rows picked"):
        table.add_column(column)
    for key, o in overhead.items():
        table.add_row(key, str(o["releases"]), f"{o['http_ms']:.1f}", f"{o['in_process_ms']:.1f}",
                      f"{o['overhead_ms']:.1f}", f"{o['ratio']:.2f}", str(o["same_rows"]))
    console.print(table)
