"""``pobo-curator sessions`` and ``queries pending/answer`` (manual measurements)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from curator_service.cli.common import (
    DEFAULT_URL,
    USAGE_ERROR,
    Json,
    Token,
    Url,
    console,
    curator,
    fail,
    listing,
    single,
)
from shared.api.governance import AnswersOut
from shared.api.schemas import API_PREFIX

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
    query_id: Annotated[int | None, typer.Argument(help="The pending query's id.")] = None,
    value: Annotated[float | None, typer.Argument(help="The measured value.")] = None,
    from_csv: Annotated[Path | None, typer.Option(help="Answer many: a CSV with a header line (e.g. mrn,value), "
                                                  "then identifier,value lines (all or nothing).")] = None,
    dataset: Annotated[int | None, typer.Option(help="With --from-csv: the dataset whose rows the identifiers "
                                                "name.")] = None,
    as_json: Json = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Post the measurement of a pending manual query (QUERY_ID VALUE), or of many by the row identifier from a CSV
    (--from-csv FILE --dataset ID)."""
    if from_csv is None:
        if query_id is None or value is None:
            fail("give QUERY_ID VALUE, or --from-csv FILE --dataset ID", USAGE_ERROR)
        with curator(url, token, {"value": "VALUE"}) as admin:
            out = admin.answer_query(query_id, value)
        single(out, as_json, ["query_id", "index", "status", "value"], "answered")
        return
    if query_id is not None or dataset is None:
        fail("--from-csv takes --dataset ID and no QUERY_ID VALUE", USAGE_ERROR)
    if not from_csv.is_file():
        fail(f"--from-csv {from_csv} is not a file", USAGE_ERROR)
    with curator(url, token, {"file": "--from-csv"}) as admin, admin.admin() as api:
        out = api.post(f"{API_PREFIX}/datasets/{dataset}/answers/csv", model=AnswersOut,
                       files={"file": (from_csv.name, from_csv.read_bytes(), "text/csv")})
    listing(out.answered, as_json, ["query_id", "index", "status", "value"], f"answered from {from_csv.name}")
