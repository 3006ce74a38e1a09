"""``pobo-curator sessions`` and ``queries pending/answer`` (manual measurements)."""

from __future__ import annotations

from typing import Annotated

import typer

from curator_service.cli.common import DEFAULT_URL, Json, Token, Url, console, curator, listing, single

queries_app = typer.Typer(help="Manual measurements: list pending queries and answer them.", no_args_is_help=True)


def sessions(
    release: Annotated[int | None, typer.Option(help="Only this release's sessions.")] = None,
    session: Annotated[int | None, typer.Option(help="Show this session's queries instead.")] = None,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Modeler sessions with their key's query budget, or (with --session) one session's queries in order."""
    with curator(url, token) as admin:
        if session is not None:
            listing(admin.session_queries(session).queries, as_json, ["query_id", "index", "status", "value"],
                    f"session {session}: queries")
        else:
            listing(admin.sessions(release), as_json, ["id", "release_id", "status", "used", "max_queries"],
                    "sessions (used / max_queries: the key's, over all its sessions)")


@queries_app.command("pending")
def queries_pending(
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Queries waiting for a manual measurement (measure row `row` of the file you registered)."""
    with curator(url, token) as admin:
        pending = admin.pending_queries(dataset).queries
    if listing(pending, as_json, ["query_id", "dataset_id", "row", "session_id", "release_id", "created_at"],
               "pending queries"):
        console.print("row: the row's number in the file you registered (1 = the first data row, after the header)")


@queries_app.command("answer")
def queries_answer(
    query_id: Annotated[int, typer.Argument(help="The pending query's id.")],
    value: Annotated[float, typer.Argument(help="The measured value.")],
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Post the measurement of a pending manual query."""
    with curator(url, token, {"value": "VALUE"}) as admin:
        out = admin.answer_query(query_id, value)
    single(out, as_json, ["query_id", "index", "status", "value"], "answered")
