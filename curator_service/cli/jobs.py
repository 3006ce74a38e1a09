"""``pobo-curator jobs list/show/cancel``: curator-side jobs (Kusner summaries, Ding tuning, DPareto fronts)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from curator_service.cli.common import Csv, Json, Server, connects, console, curator, listing, single

jobs_app = typer.Typer(help="Watch and cancel curator-side jobs.", no_args_is_help=True)

JOB_COLUMNS = ["id", "kind", "dataset_id", "status", "progress", "epsilon", "delta", "certified", "message",
               "created_at", "finished_at"]


@jobs_app.command("list")
@connects
def jobs_list(
    server: Server,
    status: Annotated[str | None, typer.Option(help="Only jobs in this status: queued, running, succeeded, failed "
                                               "or cancelled.")] = None,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Every job with its status, progress and charge."""
    with curator(server, {"status": "--status"}) as admin:
        listing(admin.jobs(status), as_json, JOB_COLUMNS, "jobs", as_csv=as_csv)


@jobs_app.command("show")
@connects
def jobs_show(
    server: Server,
    job: Annotated[int, typer.Argument(help="Job id.")],
    as_json: Json = False,
) -> None:
    """One job, with its warnings and its released result."""
    with curator(server) as admin:
        out = admin.job(job)
    if single(out, as_json, JOB_COLUMNS, f"job {job}"):
        for warning in out.warnings:
            console.print(f"[yellow]warning:[/yellow] {warning}")
        if out.result is not None:
            console.print_json(json.dumps(out.result))


@jobs_app.command("cancel")
@connects
def jobs_cancel(
    server: Server,
    job: Annotated[int, typer.Argument(help="Job id.")],
    as_json: Json = False,
) -> None:
    """Cancel a job (queued: at once; running: at its next check); its charge stays on the ledger."""
    with curator(server) as admin:
        out = admin.cancel_job(job)
    single(out, as_json, JOB_COLUMNS, f"job {job}")
