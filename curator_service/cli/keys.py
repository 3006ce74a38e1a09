"""``pobo-curator key create/list/revoke``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from curator_service.cli.common import (
    DEFAULT_URL,
    Json,
    Token,
    Url,
    build,
    cell,
    console,
    curator,
    listing,
    print_json,
    single,
)
from shared.api.schemas import KeyCreate

key_app = typer.Typer(help="Issue, list and revoke API keys.", no_args_is_help=True)

KEY_FLAGS = {"name": "--name", "release_ids": "--release", "max_queries": "--max-queries", "role": "--role"}
KEY_COLUMNS = ["id", "name", "role", "release_ids", "max_queries", "used_queries", "revoked", "created_at"]


def _key_cell(column: str, value: Any) -> str:
    if column == "revoked":
        return "[bold red]revoked[/bold red]" if value else "no"
    return cell(column, value)


@key_app.command("create")
def key_create(
    name: Annotated[str, typer.Option(help="Who the key is for.")],
    release: Annotated[list[int], typer.Option(help="Release id in scope (repeat for several).")],
    max_queries: Annotated[int, typer.Option(help="Query budget of the key.")],
    role: Annotated[str, typer.Option(help="modeler or curator.")] = "modeler",
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Create an API key; its token is printed once."""
    body = build(KeyCreate, {"name": name, "release_ids": release, "max_queries": max_queries, "role": role},
                 KEY_FLAGS)
    with curator(url, token, KEY_FLAGS) as admin:
        out = admin.create_key(body)
    if as_json:
        print_json(out)
        return
    single(out, False, KEY_COLUMNS[:5], "key")
    console.print(f"token (shown once; only its hash is stored): [bold]{out.token}[/bold]")


@key_app.command("list")
def key_list(as_json: Json = False, url: Url = DEFAULT_URL, token: Token = "") -> None:
    """List keys with their scope, query budget and use (never their tokens)."""
    with curator(url, token) as admin:
        listing(admin.keys(), as_json, KEY_COLUMNS, "keys", _key_cell)


@key_app.command("revoke")
def key_revoke(
    key: Annotated[int, typer.Argument(help="The key's id (see `pobo-curator key list`).")],
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Revoke a key at once: its token stops working, and so do its sessions."""
    with curator(url, token) as admin:
        out = admin.revoke_key(key)
    single(out, as_json, KEY_COLUMNS, "revoked", _key_cell)
