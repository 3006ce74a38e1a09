"""What the job commands (``dp-bo``, ``dp-tune``, ``dpareto``) share: submit, follow with progress, fail loudly."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from modeler_client.client import ModelerClient
from modeler_client.commands.common import console, err_console
from shared.api.job_polling import follow_job
from shared.api.schemas import JobOut, JobStatus

Params = TypeVar("Params", bound=BaseModel)

Release = Annotated[int | None, typer.Option(help="A release in your scope; the job runs on its dataset.")]
Dataset = Annotated[int | None, typer.Option(help="The dataset id (instead of --release).")]
LabelColumn = Annotated[str, typer.Option(help="The curator's column of 0/1 labels (pobo-modeler info lists the ones "
                                               "the curator approved).")]
Poll = Annotated[float, typer.Option(help="Seconds between status checks.")]
Wait = Annotated[float, typer.Option(help="Give up waiting after this many seconds (the job keeps running).")]
RequestId = Annotated[str | None, typer.Option(
    help="Submit under this id, 1 to 200 characters (a fresh one is printed otherwise): rerunning with it returns "
         "the same job, charged once.")]


def job_dataset(client: ModelerClient, release: int | None, dataset: int | None) -> int:
    """The dataset a job runs on: given directly, or the dataset of a release in the key's scope."""
    if release is None and dataset is not None:
        return dataset
    if release is not None and dataset is None:
        return client.release(release).dataset_id
    err_console.print("[bold red]error[/]: give exactly one of --release and --dataset")
    raise typer.Exit(2)


def check_label_column(client: ModelerClient, release: int | None, column: str) -> None:
    """Before a job is charged: the label column must be one the curator approved for the release's dataset (exit 2
    naming them); where the curator approved none, a warning that nothing says the column holds 0/1 labels."""
    if release is None:
        return
    approved = client.release(release).label_columns
    if approved and column not in approved:
        err_console.print(f"[bold red]error[/]: --label-column {column!r} is not one of the 0/1 label columns the "
                          f"curator approved: {', '.join(approved)}")
        raise typer.Exit(2)
    if not approved:
        err_console.print(f"[yellow]warning[/]: the curator has approved no label columns for release {release}'s "
                          f"dataset, so nothing says {column!r} holds 0/1 labels: a value other than 1 counts as 0 "
                          "(ask the curator to register it with --label-columns)")


def job_params(model: type[Params], **values) -> Params:
    """The job's parameters as its wire model (``shared.api.jobs``); a value the curator would refuse exits 2
    here, naming the option to fix."""
    try:
        return model(**values)
    except ValidationError as exc:
        for error in exc.errors():
            option = "--" + str(error["loc"][0]).replace("_", "-") if error["loc"] else "the options"
            err_console.print(f"[bold red]error[/]: {option}: {error['msg']}")
        raise typer.Exit(2) from None


def run_job(client: ModelerClient, kind: str, dataset_id: int | None, params: BaseModel | dict[str, Any], *,
            poll: float, wait: float, request_id: str | None = None) -> JobOut:
    """Submit a ``kind`` job, follow it to the end with a progress bar and return it if it succeeded.

    ``params`` is the kind's wire model (``shared.api.jobs``), or a plain dict for a kind registered without
    one (the curator validates it either way). The request id is printed before the job is sent: if the command
    is cut off, rerunning it with ``--request-id`` finds the job instead of charging the dataset again.

    Exits 1 when the job failed or was cancelled and 3 when it is still running after ``wait`` seconds
    (the job keeps running on the curator; its charge stays on the ledger either way). The server's
    warnings on the finished job are printed.
    """
    if isinstance(params, BaseModel):
        params = params.model_dump(mode="json", exclude_none=True)
    request_id = request_id or str(uuid.uuid4())
    console.print(f"submitting {kind} under request id {request_id} (rerun with --request-id {request_id} to get "
                  "this job back without a second charge)")
    try:
        job = client.submit_job(kind, dataset_id, params, request_id=request_id)
    except ValidationError as exc:  # built before anything is sent: only the request id can be wrong here
        err_console.print(f"[bold red]error[/]: --request-id: {exc.errors()[0]['msg']}")
        raise typer.Exit(2) from None
    target = f"dataset {dataset_id}" if dataset_id is not None else "the curator"
    console.print(f"{kind} job {job.id} submitted; charged ε = {job.epsilon:g}, δ = {job.delta:g} to {target}")
    columns = (TextColumn(f"[bold]{kind}[/]"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
               TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(job.status, total=1.0)
        job = follow_job(client.api, job.id, poll=poll, timeout=wait, on_progress=lambda seen: bar.update(
            task, completed=seen.progress, description=seen.message or seen.status))
    if not job.status.finished:
        err_console.print(f"[yellow]still {job.status} after {wait:g} s; check later with GET /v1/jobs/{job.id}[/]")
        raise typer.Exit(3)
    if job.status != JobStatus.SUCCEEDED:
        err_console.print(f"[bold red]{kind} job {job.id} {job.status}[/]: {job.message}")
        raise typer.Exit(1)
    for warning in job.warnings:  # seeded (not certified) or uncharged (not a DP release)
        console.print(f"[bold yellow]warning[/]: {warning}")
    return job
