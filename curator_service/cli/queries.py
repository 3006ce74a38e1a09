"""``pobo-curator sessions`` and ``queries pending/answer`` (manual measurements)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from curator_service.cli.common import (
    USAGE_ERROR,
    Csv,
    Json,
    Server,
    build,
    connects,
    console,
    curator,
    fail,
    listing,
    single,
)
from shared.api.governance import AnswersOut, CannotMeasure, Correction
from shared.api.schemas import API_PREFIX, MeasurementSpec

queries_app = typer.Typer(help="Manual measurements: list pending queries, answer, correct or mark them "
                          "'cannot measure'.", no_args_is_help=True)


@connects
def sessions(
    server: Server,
    release: Annotated[int | None, typer.Option(help="Only this release's sessions.")] = None,
    session: Annotated[int | None, typer.Option(help="Show this session's queries instead, each row by its "
                                                "identifier (e.g. the MRN).")] = None,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Modeler sessions with their key's query budget, or (with --session) one session's queries in order."""
    with curator(server) as admin:
        if session is not None:
            listing(admin.session_lab_queries(session), as_json,
                    ["query_id", "identifier", "row", "index", "status", "value"], f"session {session}: queries",
                    as_csv=as_csv)
        else:
            listing(admin.sessions(release), as_json, ["id", "release_id", "status", "used", "max_queries"],
                    "sessions (used / max_queries: the key's, over all its sessions)", as_csv=as_csv)


def measure_cell(measurement: MeasurementSpec | None) -> str:
    """What to measure, with its unit: ``HbA1c (mmol/mol)``."""
    if measurement is None:
        return "-"
    return measurement.quantity + (f" ({measurement.unit})" if measurement.unit else "")


@queries_app.command("pending")
@connects
def queries_pending(
    server: Server,
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Queries waiting for a manual measurement: measure the row with this identifier (e.g. the MRN)."""
    with curator(server) as admin:
        pending = admin.pending_queries(dataset).queries
    if listing(pending, as_json, ["query_id", "identifier", "row", "measure", "dataset_id", "session_id", "created_at"],
               "pending queries", as_csv=as_csv, extra=lambda q: {"measure": measure_cell(q.measurement)}):
        console.print("identifier: the row's value in the dataset's identifier column (its file row when there is "
                      "none); row: its number in the file you registered (1 = the first data row)", highlight=False)


@queries_app.command("correct")
@connects
def queries_correct(
    server: Server,
    query_id: Annotated[int, typer.Argument(help="The answered query's id.")],
    value: Annotated[float, typer.Argument(help="The right value.")],
    reason: Annotated[str, typer.Option(help="Why the answer changes (kept in the session's lab notes, never sent to "
                                        "the modeler or the audit log).")],
    as_json: Json = False,
) -> None:
    """Correct a manual answer (or give a value to a query marked "cannot measure")."""
    flags = {"value": "VALUE", "reason": "--reason"}
    body = build(Correction, {"value": value, "reason": reason}, flags)
    with curator(server, flags) as admin:
        out = admin.correct_query(query_id, body)
    single(out, as_json, ["query_id", "status", "value"], "corrected (the old value and the reason are in the lab "
           "notes)")


@queries_app.command("cannot-measure")
@connects
def queries_cannot_measure(
    server: Server,
    query_id: Annotated[int, typer.Argument(help="The pending query's id.")],
    reason: Annotated[str, typer.Option(help="Why (kept in the session's lab notes).")],
    as_json: Json = False,
) -> None:
    """Mark a pending query "cannot measure": it keeps its one charge and the modeler is told."""
    flags = {"reason": "--reason"}
    body = build(CannotMeasure, {"reason": reason}, flags)
    with curator(server, flags) as admin:
        out = admin.cannot_measure(query_id, body)
    single(out, as_json, ["query_id", "status"], "marked cannot measure")


@queries_app.command("answer")
@connects
def queries_answer(
    server: Server,
    query_id: Annotated[int | None, typer.Argument(help="The pending query's id.")] = None,
    value: Annotated[float | None, typer.Argument(help="The measured value.")] = None,
    from_csv: Annotated[Path | None, typer.Option(help="Answer many: a CSV with a header line (e.g. mrn,value), "
                                                  "then identifier,value lines (all or nothing).")] = None,
    dataset: Annotated[int | None, typer.Option(help="With --from-csv: the dataset whose rows the identifiers "
                                                "name.")] = None,
    as_json: Json = False,
) -> None:
    """Post the measurement of a pending manual query (QUERY_ID VALUE), or of many by the row identifier from a CSV
    (--from-csv FILE --dataset ID)."""
    if from_csv is None:
        if query_id is None or value is None:
            fail("give QUERY_ID VALUE, or --from-csv FILE --dataset ID", USAGE_ERROR)
        with curator(server, {"value": "VALUE"}) as admin:
            out = admin.answer_query(query_id, value)
        single(out, as_json, ["query_id", "index", "status", "value"], "answered")
        return
    if query_id is not None or dataset is None:
        fail("--from-csv takes --dataset ID and no QUERY_ID VALUE", USAGE_ERROR)
    if not from_csv.is_file():
        fail(f"--from-csv {from_csv} is not a file", USAGE_ERROR)
    with curator(server, {"file": "--from-csv"}) as admin, admin.admin() as api:
        out = api.post(f"{API_PREFIX}/datasets/{dataset}/answers/csv", model=AnswersOut,
                       files={"file": (from_csv.name, from_csv.read_bytes(), "text/csv")})
    listing(out.answered, as_json, ["query_id", "index", "status", "value"], f"answered from {from_csv.name}")
