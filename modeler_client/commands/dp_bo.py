"""``pobo-modeler dp-bo``: ask the curator for Kusner et al.'s private best hyperparameter and accuracy.

Submits a ``dp-bo`` job (logistic regression on the curator's table, GP-UCB over a public grid of log10 λ,
then λ̃ by the exponential mechanism and ṽ by the Laplace mechanism, over accuracies clipped to [0, 1] with
sensitivities of at least 1), waits with a progress bar and prints the two released numbers. The job
costs the dataset (2ε, 2δ); ṽ's noise scale is at least 1/ε, so ṽ is informative only at large ε.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
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
from shared.api.jobs import DpBoParams, DpBoResult
from shared.api.schemas import JobOut


@reports_api_errors
@connects
def dp_bo(
    client: ModelerClient,
    label_column: LabelColumn,
    release: Release = None,
    dataset: Dataset = None,
    epsilon: Annotated[float, typer.Option(help="ε of each release (the job costs 2ε).")] = 1.0,
    delta: Annotated[float, typer.Option(help="δ of each release (the job costs 2δ).")] = 1e-6,
    iterations: Annotated[int, typer.Option(help="T, the GP-UCB steps on the curator.")] = 20,
    log10_lambda_min: Annotated[float, typer.Option(help="Smallest log10 λ of the public grid.")] = -6.0,
    log10_lambda_max: Annotated[float, typer.Option(help="Largest log10 λ of the public grid.")] = 0.0,
    grid_points: Annotated[int, typer.Option(help="Points of the public grid Λ.")] = 25,
    validation_fraction: Annotated[float, typer.Option(help="Share of rows in the validation part.")] = 0.5,
    poll: Poll = 0.5,
    wait: Wait = 3600.0,
    request_id: RequestId = None,
) -> None:
    """Private best regularisation λ̃ and validation accuracy ṽ of logistic regression on the curator's data."""
    if grid_points < 2 or not log10_lambda_max > log10_lambda_min:
        err_console.print("[bold red]error[/]: the grid needs --grid-points >= 2 and "
                          "--log10-lambda-max > --log10-lambda-min")
        raise typer.Exit(2)
    dataset_id = job_dataset(client, release, dataset)
    check_label_column(client, release, label_column)
    params = job_params(DpBoParams, label_column=label_column, epsilon=epsilon, delta=delta, iterations=iterations,
                        log10_lambda=np.linspace(log10_lambda_min, log10_lambda_max, grid_points).tolist(),
                        validation_fraction=validation_fraction)
    job = run_job(client, "dp-bo", dataset_id, params, poll=poll, wait=wait, request_id=request_id)
    console.print(result_table(job))
    if (note := noise_note(DpBoResult.model_validate(job.result))) is not None:
        console.print(f"[yellow]{note}[/]", highlight=False)


NOISY = 0.25
"""ṽ is called mostly noise when its noise's standard deviation passes a quarter of an accuracy's range [0, 1]."""


def noise_note(result: DpBoResult) -> str | None:
    """A plain sentence when ṽ's Laplace noise (standard deviation √2·b) swamps what an accuracy can say."""
    std = math.sqrt(2.0) * result.value_noise_scale
    if std <= NOISY:
        return None
    return (f"ṽ = {result.validation_accuracy:.3g} is mostly noise: its noise has standard deviation {std:.2g}, "
            f"{'more than the whole' if std > 1 else 'a large part of the'} range of an accuracy (0 to 1), so it says "
            f"little about the true accuracy. Its noise shrinks as 1/ε: --epsilon {result.epsilon * std / NOISY:.2g} "
            f"or more brings it under {NOISY}. λ̃ is chosen by a separate mechanism and may still be useful.")


def result_table(job: JobOut) -> Table:
    result = DpBoResult.model_validate(job.result)
    table = Table(title=f"dp-bo job {job.id}: released", show_header=False)
    table.add_row("λ̃ (private best regularisation)", f"{result.lambda_:.3g}  (log10 λ = {result.log10_lambda:g})")
    table.add_row("ṽ (private best validation accuracy)", f"{result.validation_accuracy:.3g}")
    table.add_row("privacy cost", f"ε = {result.epsilon:g}, δ = {result.delta:g}")
    table.add_row("sensitivities", f"λ̃: {result.selection_sensitivity:.4g}, ṽ: {result.value_sensitivity:.4g}")
    table.add_row("noise scale of ṽ", f"{result.value_noise_scale:.3g} (Laplace; standard deviation "
                                      f"{math.sqrt(2.0) * result.value_noise_scale:.3g})")
    table.add_row("guarantee", result.guarantee)
    return table


def register(app: typer.Typer) -> None:
    app.command("dp-bo")(dp_bo)
