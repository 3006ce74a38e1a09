"""``pobo-modeler dp-tune``: Ding et al.'s constant-overhead private hyperparameter selection on the curator.

Submits a ``dp-tune`` job: the curator splits its table into k parts, scores every candidate DP-SGD
logistic regression on each part, selects one with the capped elastic-step sparse vector and trains it
by DP-SGD on all rows. The job costs max_iterations · ϵ + final ε (and the final δ), whatever the number
of candidates. Candidates are the Cartesian product of the grid options, or a JSON list in --candidates.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shared.schemas import JobOut

from modeler_client.commands.common import Retries, Timeout, Token, Url, connect, console, reports_api_errors
from modeler_client.commands.jobs import Dataset, Poll, Release, Wait, job_dataset, run_job


def _numbers(text: str, kind: type) -> list:
    return [kind(part) for part in text.split(",") if part.strip()]


@reports_api_errors
def dp_tune(
    url: Url,
    token: Token,
    label_column: Annotated[str, typer.Option(help="The curator's column of 0/1 labels.")],
    release: Release = None,
    dataset: Dataset = None,
    learning_rates: Annotated[str, typer.Option(help="Comma-separated DP-SGD learning rates.")] = "0.05,0.2,1.0",
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.")] = "64,256",
    epochs: Annotated[str, typer.Option(help="Comma-separated epoch counts.")] = "2,5",
    clip_norms: Annotated[str, typer.Option(help="Comma-separated per-example clipping norms.")] = "1.0",
    optimizer: Annotated[str, typer.Option(help="sgd or adam.")] = "sgd",
    candidates: Annotated[Path | None, typer.Option(help="JSON list of candidates (overrides the grid options).")] = None,
    k: Annotated[int, typer.Option(help="Parts of the table (utility sensitivity 1/k).")] = 10,
    epsilon: Annotated[float, typer.Option(help="ϵ of one sparse-vector iteration.")] = 0.1,
    max_iterations: Annotated[int, typer.Option(help="Hard cap: the selection costs max_iterations · ϵ.")] = 20,
    u0: Annotated[float, typer.Option(help="Starting utility level u₀ in [0, 1).")] = 0.5,
    g: Annotated[float, typer.Option(help="Utility granularity g.")] = 0.01,
    final_epsilon: Annotated[float, typer.Option(help="ε of the final DP-SGD training.")] = 1.0,
    final_delta: Annotated[float, typer.Option(help="δ of the final DP-SGD training.")] = 1e-5,
    seed: Annotated[int | None, typer.Option(help="Research mode only: reproducible parts and noise.")] = None,
    poll: Poll = 0.5,
    wait: Wait = 3600.0,
    timeout: Timeout = 30.0,
    retries: Retries = 3,
) -> None:
    """Private hyperparameter selection and a DP-SGD logistic regression, at a cost independent of the grid size."""
    if candidates is not None:
        grid = json.loads(candidates.read_text())
    else:
        grid = [
            {"learning_rate": lr, "batch_size": b, "epochs": e, "clip_norm": c, "optimizer": optimizer}
            for lr, b, e, c in itertools.product(
                _numbers(learning_rates, float), _numbers(batch_sizes, int), _numbers(epochs, int), _numbers(clip_norms, float)
            )
        ]
    client = connect(url, token, timeout, retries)
    dataset_id = job_dataset(client, release, dataset)
    params = {
        "label_column": label_column, "candidates": grid, "k": k, "epsilon": epsilon, "u0": u0, "g": g,
        "max_iterations": max_iterations, "final_epsilon": final_epsilon, "final_delta": final_delta, "seed": seed,
    }
    console.print(f"{len(grid)} candidates; the selection costs at most {max_iterations} × {epsilon:g} whatever their number")
    console.print(result_table(run_job(client, "dp-tune", dataset_id, params, poll=poll, wait=wait), grid))


def result_table(job: JobOut, grid: list[dict]) -> Table:
    result = job.result or {}
    table = Table(title=f"dp-tune job {job.id}: released", show_header=False)
    selected = result.get("selected")
    table.add_row("selected candidate", "none passed the threshold" if selected is None else f"#{selected}: {grid[selected]}")
    table.add_row("sparse-vector iterations", f"{result['iterations']} of at most {result['max_iterations']}"
                  + (" (stopped by the cap)" if result["truncated"] else ""))
    table.add_row("privacy cost", f"selection ε = {result['selection_epsilon']:g}; final training ε = "
                  f"{result['final_epsilon']:g}, δ = {result['final_delta']:g}")
    if result.get("model"):
        table.add_row("model", f"{len(result['model']['coef'])} coefficients, noise multiplier "
                      f"{result['model']['noise_multiplier']:.3g} (in the job's result)")
    return table


def register(app: typer.Typer) -> None:
    app.command("dp-tune")(dp_tune)
