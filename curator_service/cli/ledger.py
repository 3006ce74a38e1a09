"""``pobo-curator ledger`` and ``audit log/reconstruction``: what was spent, who did what, what a release hides."""

from __future__ import annotations

from typing import Annotated

import typer

from curator_service.cli.common import DEFAULT_URL, Json, Token, Url, build, console, curator, listing, single
from shared.api.schemas import ReconstructionAuditRequest

audit_app = typer.Typer(help="The audit log (who did what, when), and the reconstruction audit of a release.",
                        no_args_is_help=True)

LEDGER_COLUMNS = ["id", "dataset_id", "kind", "epsilon", "delta", "purpose", "mechanism", "actor", "release_id", "job_id",
                  "created_at"]


def ledger(
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """The privacy ledger: every (ε, δ) spent or raised, for what, by whom."""
    with curator(url, token) as admin:
        listing(admin.ledger(dataset), as_json, LEDGER_COLUMNS, "ledger")


@audit_app.command("log")
def audit_log(
    actor: Annotated[str | None, typer.Option(help="Only this actor: 'admin' or 'key:<id>:<name>'.")] = None,
    action: Annotated[str | None, typer.Option(help="Only actions starting with this, e.g. 'key.' or "
                                               "'release.create'.")] = None,
    offset: Annotated[int, typer.Option(help="Skip this many events.")] = 0,
    limit: Annotated[int, typer.Option(help="At most this many events.")] = 1000,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """The audit log, oldest first: who did what, when, to which object (never a data value)."""
    flags = {"offset": "--offset", "limit": "--limit"}
    with curator(url, token, flags) as admin:
        events = admin.audit_events(actor=actor, action=action, offset=offset, limit=limit)
    listing(events, as_json, ["id", "created_at", "actor", "action", "target"], "audit log")


@audit_app.command("reconstruction")
def audit_reconstruction(
    release: Annotated[int, typer.Option(help="Release id.")],
    known: Annotated[int, typer.Option(help="Records the attacker knows (d + 1 break po-gp-ucb).")],
    seed: Annotated[int | None, typer.Option(help="Which rows are known (research mode).")] = None,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Attack a release with K known records; prints aggregate reconstruction errors only."""
    flags = {"known": "--known", "seed": "--seed"}
    body = build(ReconstructionAuditRequest, {"known": known, "seed": seed}, flags)
    with curator(url, token, flags) as admin:
        out = admin.reconstruction_audit(release, body)
    if single(out, as_json, ["release_id", "mechanism", "known", "reconstructed", "max_relative_error",
                                "median_relative_error", "rms_error", "baseline_rms_error", "noise_std",
                                "noise_floor_rms"], "reconstruction audit"):
        for warning in out.warnings:
            console.print(f"[yellow]warning:[/yellow] {warning}")
