"""``pobo-curator jobs list/show/cancel``: curator-side jobs (Kusner summaries, Ding tuning, DPareto fronts)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from curator_service.cli.common import DEFAULT_URL, Csv, Json, Token, Url, console, curator, listing, single

jobs_app = typer.Typer(help="Watch and cancel curator-side jobs.", no_args_is_help=True)

JOB_COLUMNS = ["id", "kind", "dataset_id", "status", "progress", "epsilon", "delta", "certified", "message",
               "created_at", "finished_at"]


@jobs_app.command("list")
def jobs_list(
    status: Annotated[str | None, typer.Option(help="Only jobs in this status: queued, running, succeeded, failed "
                                               "or cancelled.")] = None,
    as_json: Json = False,
    as_csv: Csv = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Every job with its status, progress and charge."""
    with curator(url, token, {"status": "--status"}) as admin:
        listing(admin.jobs(status), as_json, JOB_COLUMNS, "jobs", as_csv=as_csv)


@jobs_app.command("show")
def jobs_show(
    job: Annotated[int, typer.Argument(help="Job id.")],
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """One job, with its warnings and its released result."""
    with curator(url, token) as admin:
        out = admin.job(job)
    if single(out, as_json, JOB_COLUMNS, f"job {job}"):
        for warning in out.warnings:
            console.print(f"[yellow]warning:[/yellow] {warning}")
        if out.result is not None:
            console.print_json(json.dumps(out.result))


@jobs_app.command("cancel")
def jobs_cancel(
    job: Annotated[int, typer.Argument(help="Job id.")],
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Cancel a job (queued: at once; running: at its next check); its charge stays on the ledger."""
    with curator(url, token) as admin:
        out = admin.cancel_job(job)
    single(out, as_json, JOB_COLUMNS, f"job {job}")
