"""``pobo-modeler dp-tune``: Ding et al.'s constant-overhead private hyperparameter selection on the curator.

Submits a ``dp-tune`` job: the curator holds out ``--test-fraction`` of its rows, splits the others into
k parts, scores every candidate DP-SGD logistic regression on each part, selects one with the capped
elastic-step sparse vector, trains it by DP-SGD on all non-held-out rows and releases its held-out
accuracy beside the majority-class baseline (Laplace). The job costs
max_iterations · ϵ + final ε + evaluation ε (and the final δ), whatever the number of candidates.
Candidates are the Cartesian product of the grid options, or a JSON list in --candidates.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from modeler_client.client import ModelerClient
from modeler_client.commands.common import connects, console, err_console, reports_api_errors
from modeler_client.commands.jobs import (
    Dataset,
    LabelColumn,
    Poll,
    Release,
    RequestId,
    Wait,
    check_label_column,
    job_dataset,
    job_params,
    run_job,
)
from shared.api.jobs import DpTuneParams, DpTuneResult
from shared.api.schemas import JobOut


def _numbers(text: str, kind: type) -> list:
    return [kind(part) for part in text.split(",") if part.strip()]


def _candidate_file(path: Path) -> list:
    try:
        grid = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        err_console.print(f"[bold red]error[/]: --candidates {path}: {exc}")
        raise typer.Exit(2) from None
    if not isinstance(grid, list) or not grid or not all(isinstance(c, dict) for c in grid):
        err_console.print(f"[bold red]error[/]: --candidates {path} must hold a non-empty JSON list of objects")
        raise typer.Exit(2)
    return grid


@reports_api_errors
@connects
def dp_tune(
    client: ModelerClient,
    label_column: LabelColumn,
    release: Release = None,
    dataset: Dataset = None,
    learning_rates: Annotated[str, typer.Option(help="Comma-separated DP-SGD learning rates.")] = "0.05,0.2,1.0",
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.")] = "64,256",
    epochs: Annotated[str, typer.Option(help="Comma-separated epoch counts.")] = "2,5",
    clip_norms: Annotated[str, typer.Option(help="Comma-separated per-example clipping norms.")] = "1.0",
    optimizer: Annotated[str, typer.Option(help="sgd or adam.")] = "sgd",
    candidates: Annotated[Path | None, typer.Option(help="JSON list of candidates (replaces the grid "
                                                    "options).")] = None,
    k: Annotated[int, typer.Option(help="Parts of the training rows (utility sensitivity 1/k).")] = 10,
    epsilon: Annotated[float, typer.Option(help="ϵ of one sparse-vector iteration.")] = 0.1,
    max_iterations: Annotated[int, typer.Option(help="Hard cap: the selection costs max_iterations · ϵ.")] = 20,
    u0: Annotated[float, typer.Option(help="Starting utility level u₀ in [0, 1).")] = 0.5,
    g: Annotated[float, typer.Option(help="Utility granularity g.")] = 0.01,
    final_epsilon: Annotated[float, typer.Option(help="ε of the final DP-SGD training.")] = 1.0,
    final_delta: Annotated[float, typer.Option(help="δ of the final DP-SGD training.")] = 1e-5,
    evaluation_epsilon: Annotated[float, typer.Option(help="ε of the held-out accuracy and baseline.")] = 0.1,
    test_fraction: Annotated[float, typer.Option(help="Share of rows held out to score the model (0.05–0.5).")] = 0.2,
    poll: Poll = 0.5,
    wait: Wait = 3600.0,
    request_id: RequestId = None,
) -> None:
    """Private hyperparameter selection and a DP-SGD logistic regression, at a cost independent of the grid size."""
    if candidates is not None:
        grid = _candidate_file(candidates)
    else:
        grid = [
            {"learning_rate": lr, "batch_size": b, "epochs": e, "clip_norm": c, "optimizer": optimizer}
            for lr, b, e, c in itertools.product(
                _numbers(learning_rates, float), _numbers(batch_sizes, int), _numbers(epochs, int),
                _numbers(clip_norms, float),
            )
        ]
    dataset_id = job_dataset(client, release, dataset)
    check_label_column(client, release, label_column)
    params = job_params(DpTuneParams, label_column=label_column, candidates=grid, k=k, epsilon=epsilon, u0=u0, g=g,
                        max_iterations=max_iterations, final_epsilon=final_epsilon, final_delta=final_delta,
                        evaluation_epsilon=evaluation_epsilon, test_fraction=test_fraction)
    console.print(f"{len(grid)} candidates; the selection costs {max_iterations} × {epsilon:g} whatever their number")
    console.print(result_table(run_job(client, "dp-tune", dataset_id, params, poll=poll, wait=wait,
                                       request_id=request_id), params))


def result_table(job: JobOut, params: DpTuneParams) -> Table:
    """The released numbers, and the charge split as the ledger took it (from the parameters: the final
    training is charged even when no candidate passed and it did not run)."""
    result, grid = DpTuneResult.model_validate(job.result), params.candidates
    held_out, model, selected = result.held_out, result.model, result.selected
    table = Table(title=f"dp-tune job {job.id}: released", show_header=False)
    table.add_row("selected candidate",
                  "none passed the threshold" if selected is None else f"#{selected}: {grid[selected].model_dump()}")
    table.add_row("sparse-vector iterations", f"{result.iterations} of at most {result.max_iterations}"
                  + (" (stopped by the cap)" if result.truncated else ""))
    accuracy = "no model" if held_out.accuracy is None else f"{held_out.accuracy:.3f}"
    table.add_row("held-out accuracy", f"{accuracy} against the majority-class baseline "
                  f"{held_out.majority_baseline:.3f} on {held_out.rows} rows (Laplace noise scale "
                  f"{held_out.noise_scale:.3g} on each)")
    table.add_row("privacy cost", f"ε = {job.epsilon:g} = selection {result.selection_epsilon:g} + final training "
                  f"{params.final_epsilon:g}{'' if model else ' (charged, not run)'} + held-out evaluation "
                  f"{held_out.epsilon:g}; δ = {job.delta:g}")
    if model:
        table.add_row("model", f"{len(model.coef)} coefficients, noise multiplier {model.noise_multiplier:.3g}, "
                      f"on {model.features} (in the job's result)")
    return table


def register(app: typer.Typer) -> None:
    app.command("dp-tune")(dp_tune)
