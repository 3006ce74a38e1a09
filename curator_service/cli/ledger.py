"""``pobo-curator ledger`` and ``audit log/reconstruction``: what was spent, who did what, what a release hides."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from curator_service.cli.common import Csv, Json, Server, build, cell, connects, console, curator, listing, single
from shared.api.schemas import ReconstructionAuditRequest

audit_app = typer.Typer(help="The audit log (who did what, when), and the reconstruction audit of a release.",
                        no_args_is_help=True)

LEDGER_COLUMNS = ["id", "dataset_id", "kind", "epsilon", "delta", "purpose", "mechanism", "actor", "release_id",
                  "job_id", "created_at"]


@connects
def ledger(
    server: Server,
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """The privacy ledger: every (ε, δ) spent or raised, for what, by whom."""
    with curator(server) as admin:
        listing(admin.ledger(dataset), as_json, LEDGER_COLUMNS, "ledger", _audit_cell, as_csv=as_csv)


def _when(_column: str, value: Any) -> str:
    """A time to the second, in UTC (the audit log's own zone)."""
    return "-" if value is None else str(value)[:19].replace("T", " ")


def _audit_cell(column: str, value: Any) -> str:
    if column in ("created_at", "last_at"):
        return _when(column, value)
    if column == "count":
        return "" if value == 1 else f"×{value}"
    return cell(column, value)


@audit_app.command("log")
@connects
def audit_log(
    server: Server,
    actor: Annotated[str | None, typer.Option(help="Only this actor: 'admin' or 'key:<id>:<name>'.")] = None,
    action: Annotated[str | None, typer.Option(help="Only actions starting with this, e.g. 'key.' or "
                                               "'release.create'.")] = None,
    target: Annotated[str | None, typer.Option(help="Only targets containing this, e.g. 'dataset:1' or "
                                               "'query:12'.")] = None,
    changes_only: Annotated[bool, typer.Option("--changes-only", help="Hide reads (browsing datasets and the "
                                               "ledger, planning, released inputs fetched).")] = False,
    oldest_first: Annotated[bool, typer.Option("--oldest-first", help="Oldest first (default: newest "
                                               "first).")] = False,
    each: Annotated[bool, typer.Option("--each", help="One line per event (default: identical events in a row "
                                       "as one line with their count).")] = False,
    offset: Annotated[int, typer.Option(help="Skip this many lines (the next page: --offset plus --limit).")] = 0,
    limit: Annotated[int, typer.Option(help="At most this many lines.")] = 50,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """The audit log, newest first: who did what, when, to which object (never a data value), a page at a time."""
    flags = {"offset": "--offset", "limit": "--limit", "actor": "--actor", "action": "--action", "target": "--target"}
    with curator(server, flags) as admin:
        events, total = admin.audit_events(actor=actor, action=action, target=target, changes_only=changes_only,
                                           order="oldest" if oldest_first else "newest", grouped=not each,
                                           offset=offset, limit=limit)
    columns = ["id", "created_at", "actor", "action", "target"] + ([] if each else ["count", "last_at"])
    if not listing(events, as_json, columns, "audit log" + (" (newest first)" if not oldest_first else ""),
                   _audit_cell, as_csv=as_csv):
        return
    if not events:
        console.print(f"no events on this page ({total} in all)" if total else "no events match")
        return
    shown = f"lines {offset + 1}–{offset + len(events)} of {total}"
    more = f"; the next page: --offset {offset + len(events)}" if offset + len(events) < total else ""
    grouped = "" if each else "; ×N: N identical events in a row, from created_at to last_at (--each lists them)"
    console.print(shown + more + grouped, highlight=False)


@audit_app.command("reconstruction")
@connects
def audit_reconstruction(
    server: Server,
    release: Annotated[int, typer.Option(help="Release id.")],
    known: Annotated[int, typer.Option(help="Records the attacker knows (d + 1 break po-gp-ucb).")],
    seed: Annotated[int | None, typer.Option(help="Which rows are known (research mode).")] = None,
    as_json: Json = False,
) -> None:
    """Attack a release with K known records; prints aggregate reconstruction errors only."""
    flags = {"known": "--known", "seed": "--seed"}
    body = build(ReconstructionAuditRequest, {"known": known, "seed": seed}, flags)
    with curator(server, flags) as admin:
        out = admin.reconstruction_audit(release, body)
    if single(out, as_json, ["release_id", "mechanism", "known", "reconstructed", "max_relative_error",
                                "median_relative_error", "rms_error", "baseline_rms_error", "noise_std",
                                "noise_floor_rms"], "reconstruction audit"):
        for warning in out.warnings:
            console.print(f"[yellow]warning:[/yellow] {warning}")
