"""``pobo-curator key create/list/revoke``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from curator_service.cli.common import (
    Csv,
    Json,
    Server,
    build,
    cell,
    connects,
    console,
    curator,
    listing,
    print_json,
    single,
    split,
)
from shared.api.governance import KeyCreateWithPolicy, KeyPolicyOut
from shared.api.schemas import API_PREFIX

key_app = typer.Typer(help="Issue, list and revoke API keys.", no_args_is_help=True)

KEY_FLAGS = {"name": "--name", "release_ids": "--release", "max_queries": "--max-queries", "role": "--role",
             "epsilon_cap": "--epsilon-cap", "delta_cap": "--delta-cap", "jobs": "--jobs", "expires_at": "--expires",
             "governance": "--governance"}
KEY_COLUMNS = ["id", "name", "role", "release_ids", "max_queries", "used_queries", "revoked", "created_at"]


def _key_cell(column: str, value: Any) -> str:
    if column == "revoked":
        return "[bold red]revoked[/bold red]" if value else "no"
    return cell(column, value)


@key_app.command("create")
@connects
def key_create(
    server: Server,
    name: Annotated[str, typer.Option(help="Who the key is for.")],
    release: Annotated[list[int], typer.Option(help="Release id in scope (repeat for several).")],
    max_queries: Annotated[int, typer.Option(help="Query budget of the key.")],
    role: Annotated[str, typer.Option(help="modeler or curator.")] = "modeler",
    epsilon_cap: Annotated[float | None, typer.Option(help="The most ε the key may spend over everything it "
                                                      "triggers (releases, jobs) on every dataset.")] = None,
    delta_cap: Annotated[float | None, typer.Option(help="The same for δ.")] = None,
    jobs: Annotated[str | None, typer.Option(help="Job kinds the key may run, comma-separated (default: a modeler "
                                             "key none, a curator key every kind).")] = None,
    expires: Annotated[str | None, typer.Option(help="When the key stops working: an ISO 8601 date or moment (UTC "
                                                "when no zone is given), e.g. 2027-01-31.")] = None,
    governance: Annotated[bool, typer.Option(help="A curator key that may raise budgets, revoke keys and change "
                                             "other keys' policies (no cap, no job list).")] = False,
    as_json: Json = False,
) -> None:
    """Create an API key, with its policy (caps, job kinds, expiry, governance); its token is printed once."""
    body = build(KeyCreateWithPolicy, {"name": name, "release_ids": release, "max_queries": max_queries, "role": role,
                                       "epsilon_cap": epsilon_cap, "delta_cap": delta_cap,
                                       "jobs": None if jobs is None else split(jobs), "expires_at": expires,
                                       "governance": governance or None}, KEY_FLAGS)
    with curator(server, KEY_FLAGS) as admin:
        out = admin.create_key(body)
        with admin.admin() as api:
            policy = api.get(f"{API_PREFIX}/keys/{out.id}/policy", model=KeyPolicyOut)
    if as_json:
        print_json(out)
        return
    single(out, False, KEY_COLUMNS[:5], "key")
    caps = ", ".join(f"{what} cap {cap:g}" for what, cap in (("ε", policy.epsilon_cap), ("δ", policy.delta_cap))
                     if cap is not None)
    console.print(f"policy: {caps or 'no cap of its own'}; jobs {', '.join(policy.jobs) or 'none'}; "
                  f"expires {policy.expires_at.isoformat() if policy.expires_at else 'never'}"
                  f"{'; governance' if policy.governance else ''}")
    console.print(f"token (shown once; only its hash is stored): [bold]{out.token}[/bold]")


@key_app.command("list")
@connects
def key_list(server: Server, as_json: Json = False, as_csv: Csv = False) -> None:
    """List keys with their scope, query budget and use (never their tokens)."""
    with curator(server) as admin:
        listing(admin.keys(), as_json, KEY_COLUMNS, "keys", _key_cell, as_csv=as_csv)


@key_app.command("revoke")
@connects
def key_revoke(
    server: Server,
    key: Annotated[int, typer.Argument(help="The key's id (see `pobo-curator key list`).")],
    as_json: Json = False,
) -> None:
    """Revoke a key at once: its token stops working, and so do its sessions."""
    with curator(server) as admin:
        out = admin.revoke_key(key)
    single(out, as_json, KEY_COLUMNS, "revoked", _key_cell)
