"""``pobo-modeler dp-bo``: ask the curator for Kusner et al.'s private best hyperparameter and accuracy.

Submits a ``dp-bo`` job (logistic regression on the curator's table, GP-UCB over a public grid of log10 λ,
then λ̃ by the exponential mechanism and ṽ by the Laplace mechanism, over accuracies clipped to [0, 1] with
sensitivities of at least 1), waits with a progress bar and prints the two released numbers. The job
costs the dataset (2ε, 2δ); ṽ's noise scale is at least 1/ε, so ṽ is informative only at large ε.

``--plan`` says all that before anything is charged: the total charge, both sensitivities, ṽ's noise and the
verdict on λ̃ (:func:`shared.algorithms.kusner.dpbo.lambda_verdict`, the console's too), computed from the public
parameters by the job's own functions.
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
from shared.algorithms.kusner.dpbo import (
    SCORE_RANGE,
    LambdaVerdict,
    PlannedNoise,
    lambda_verdict,
    planned_noise,
    validation_size,
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
    plan: Annotated[bool, typer.Option("--plan", help="Only say what the job would charge (2ε, 2δ) and how noisy "
                                       "λ̃ and ṽ would be; submit nothing.")] = False,
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
    if plan:
        rows = client.release(release).n if release is not None else None
        console.print(plan_table(params, rows))
        for sentence in plan_notes(params, rows):
            console.print(f"[yellow]{sentence}[/]", highlight=False)
        console.print("nothing was submitted or charged; run it without --plan to submit the job")
        return
    job = run_job(client, "dp-bo", dataset_id, params, poll=poll, wait=wait, request_id=request_id)
    console.print(result_table(job))
    result = DpBoResult.model_validate(job.result)
    for note in (noise_note(result), verdict_of(result).sentence):
        if note is not None:
            console.print(f"[yellow]{note}[/]", highlight=False)


NOISY = 0.25
"""ṽ is called mostly noise when its noise's standard deviation passes a quarter of an accuracy's range [0, 1]."""


def value_noise_sentence(std: float, epsilon: float, what: str) -> str | None:
    """A plain sentence when ṽ's Laplace noise (standard deviation ``std``) swamps what an accuracy can say;
    ``epsilon`` is the ε of the ṽ release alone (half the job's charge)."""
    if std <= NOISY:
        return None
    return (f"{what} mostly noise: its noise has standard deviation {std:.2g}, "
            f"{'more than the whole' if std > 1 else 'a large part of the'} range of an accuracy (0 to 1), so it says "
            f"little about the true accuracy. Its noise shrinks as 1/ε: --epsilon {epsilon * std / NOISY:.2g} "
            f"or more (charged twice) brings it under {NOISY}.")


def noise_note(result: DpBoResult) -> str | None:
    """:func:`value_noise_sentence` for a released ṽ (the result's ε is the job's total, 2ε)."""
    return value_noise_sentence(math.sqrt(2.0) * result.value_noise_scale, result.epsilon / 2,
                                f"ṽ = {result.validation_accuracy:.3g} is")


def verdict_of(result: DpBoResult) -> LambdaVerdict:
    """The verdict on a released λ̃ (its grid size, when an older result lacks it, taken as the least: 2)."""
    return lambda_verdict(result.selection_sensitivity, result.epsilon / 2, result.grid_size or 2)


def planned(params: DpBoParams, rows: int | None) -> PlannedNoise:
    """The job's noise from its parameters; without the table's row count (``--dataset``), the range floor's."""
    m = validation_size(rows, params.validation_fraction) if rows is not None else None
    noise = planned_noise(params.log10_lambda, epsilon=params.epsilon, delta=params.delta,
                          iterations=params.iterations, validation_size=m or 1, lengthscale=params.lengthscale,
                          signal_std=params.signal_std, noise_std=params.noise_std,
                          dataset_kernel=params.dataset_kernel, value_range=SCORE_RANGE)
    if m is None and params.dataset_kernel is None:  # the default k₁ needs m: state the floor, a lower bound
        floor = SCORE_RANGE[1] - SCORE_RANGE[0]
        noise = PlannedNoise(floor, floor, floor / params.epsilon, noise.total_epsilon, noise.total_delta,
                             noise.info_gain)
    return noise


def plan_table(params: DpBoParams, rows: int | None) -> Table:
    noise = planned(params, rows)
    at_least = "at least " if rows is None and params.dataset_kernel is None else ""
    table = Table(title="dp-bo plan: nothing is charged", show_header=False)
    table.add_row("total charged to the dataset", f"[bold]ε = {noise.total_epsilon:g}, δ = {noise.total_delta:g}[/] "
                  f"(two releases, λ̃ and ṽ, of ε = {params.epsilon:g}, δ = {params.delta:g} each)")
    table.add_row("grid Λ", f"{len(params.log10_lambda)} values of log10 λ from {min(params.log10_lambda):g} to "
                  f"{max(params.log10_lambda):g}; T = {params.iterations} GP-UCB steps")
    table.add_row("sensitivities", f"{at_least}λ̃: {noise.selection_sensitivity:.4g}, ṽ: {noise.value_sensitivity:.4g}")
    table.add_row("expected noise of ṽ", f"{at_least}Laplace scale {noise.value_noise_scale:.3g} (standard deviation "
                  f"{math.sqrt(2.0) * noise.value_noise_scale:.3g}) on an accuracy between 0 and 1")
    table.add_row("λ̃", lambda_verdict(noise.selection_sensitivity, params.epsilon, len(params.log10_lambda)).sentence)
    return table


def plan_notes(params: DpBoParams, rows: int | None) -> list[str]:
    noise = planned(params, rows)
    notes = [note for note in [value_noise_sentence(math.sqrt(2.0) * noise.value_noise_scale, params.epsilon,
                                                    "ṽ would be")] if note]
    if rows is None and params.dataset_kernel is None:
        notes.append("With --dataset the table's size is not known here: the sensitivities shown are the range "
                     "floor, a lower bound; give --release for the job's own numbers.")
    return notes


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
