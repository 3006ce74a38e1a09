"""``pobo-modeler dpareto``: a DPareto privacy–utility front of a DP learner on the curator's table.

For trusted analysts holding curator credentials: the front is NOT differentially private (the DPareto
paper's threat model), so the service runs it for the curator role only and charges nothing to the
ledger. Prints the front and saves a plot of every evaluated point with the front; with ``--baseline`` the
curator also evaluates random search or a regular grid over the same domain, whose hypervolume is printed beside
DPareto's and whose points and front are drawn beside DPareto's.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from modeler_client.client import ModelerClient
from modeler_client.commands.common import connects, console, reports_api_errors
from modeler_client.commands.jobs import LabelColumn, Poll, RequestId, Wait, job_params, run_job
from shared.api.jobs import DparetoParams, DparetoPoint, DparetoResult


class Baseline(StrEnum):
    none = "none"
    random = "random"
    grid = "grid"


@reports_api_errors
@connects
def dpareto(
    client: ModelerClient,
    dataset: Annotated[int, typer.Option(help="The dataset id (curator credentials required).")],
    label_column: LabelColumn,
    loss: Annotated[str, typer.Option(help="logistic (logistic regression) or hinge (linear SVM).")] = "logistic",
    optimizer: Annotated[str, typer.Option(help="sgd or adam.")] = "sgd",
    initial_points: Annotated[int, typer.Option(help="k₀ random hyperparameter settings.")] = 8,
    iterations: Annotated[int, typer.Option(help="k HVPoI steps after them.")] = 16,
    max_epochs: Annotated[int, typer.Option(help="Upper end of the epochs range.")] = 64,
    delta: Annotated[float, typer.Option(help="δ at which ε is reported.")] = 1e-5,
    baseline: Annotated[Baseline, typer.Option(
        help="Also evaluate random search or a regular grid over the same domain, to compare the front with.")
    ] = Baseline.none,
    baseline_points: Annotated[int | None, typer.Option(
        help="The baseline's evaluations (random) or the most its grid may have (grid: the finest within it, at "
             "least 32); default: as many as DPareto's, initial points + iterations.")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Research mode only (the server refuses it otherwise): reproducible split and search.")] = None,
    out: Annotated[Path, typer.Option(
        help="Where to save the front plot (PNG); the JSON goes beside it.")] = Path("dpareto.png"),
    poll: Poll = 0.5,
    wait: Wait = 3600.0,
    request_id: RequestId = None,
) -> None:
    """Map the privacy–utility Pareto front of DP-SGD/DP-Adam on a dataset (not DP: trusted analysts only)."""
    params = job_params(DparetoParams, label_column=label_column, loss=loss, optimizer=optimizer,
                        initial_points=initial_points, iterations=iterations, max_epochs=max_epochs, delta=delta,
                        baseline=baseline.value, baseline_points=baseline_points, seed=seed)
    job = run_job(client, "dpareto", dataset, params, poll=poll, wait=wait, request_id=request_id)
    result = DparetoResult.model_validate(job.result)
    console.print(f"[bold yellow]{result.warning}[/]")
    table = Table(title=f"dpareto job {job.id}: front ({len(result.front)} of {len(result.points)} points, "
                        f"hypervolume {result.hypervolume:.3f})")
    for column in ("ε", "error", "epochs", "lot", "learning rate", "σ²", "clip"):
        table.add_column(column)
    for point in result.front:
        q = point.params
        table.add_row(f"{point.epsilon:.3g}", f"{point.error:.3f}", f"{q['epochs']:.0f}", f"{q['lot_size']:.0f}",
                      f"{q['learning_rate']:.3g}", f"{q['noise_variance']:.3g}", f"{q['clip_norm']:.3g}")
    console.print(table)
    if result.baseline != "none":
        console.print(f"hypervolume: DPareto {result.hypervolume:.3f} ({len(result.points)} points), "
                      f"{result.baseline} baseline {result.baseline_hypervolume:.3f} "
                      f"({len(result.baseline_points)} points); larger is better")
    out.with_suffix(".json").write_text(json.dumps(job.result, indent=1))
    save_plot(result, out)
    console.print(f"saved {out} and {out.with_suffix('.json')}")


def save_plot(result: DparetoResult, out: Path) -> None:
    front_figure(result).savefig(out, dpi=110)


def front_figure(result: DparetoResult):
    """Every evaluated setting and the front, DPareto's and (if any) the baseline's in its own marker and colour.
    A bare Figure (no pyplot): no GUI backend, nothing global to close."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4.5))
    ax = fig.subplots()
    draw_search(ax, result.points, result.front, "DPareto", "o", "tab:blue", "tab:red")
    if result.baseline != "none":
        draw_search(ax, result.baseline_points, result.baseline_front, f"{result.baseline} baseline", "x",
                    "tab:gray", "tab:green")
    ax.set_xscale("log")
    ax.set_xlabel(f"ε (δ = {result.delta:g})")
    ax.set_ylabel("held-out error")
    ax.set_title("DPareto front — not DP, trusted analysts only")
    ax.legend()
    fig.tight_layout()
    return fig


def draw_search(ax, points: list[DparetoPoint], front: list[DparetoPoint], name: str, marker: str, colour: str,
                front_colour: str) -> None:
    ax.scatter([p.epsilon for p in points], [p.error for p in points], s=12, alpha=0.5, marker=marker, color=colour,
               label=f"{name}: evaluated settings")
    ax.step([p.epsilon for p in front], [p.error for p in front], where="post", color=front_colour,
            label=f"{name}: Pareto front")


def register(app: typer.Typer) -> None:
    app.command("dpareto")(dpareto)
