"""``pobo-curator sessions`` and ``queries pending/answer`` (manual measurements)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NamedTuple

import typer

from curator_service.admin_client import CuratorAdmin
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
    print_json,
)
from shared.api.governance import AnswersOut, CannotMeasure, Correction, Worklist, identifier_name
from shared.api.schemas import API_PREFIX, MeasurementSpec
from shared.checks import ascii_decimal

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


def measured_value(value: float | None, measurement: MeasurementSpec | None) -> str:
    """A value as the lab reads it: ``HbA1c 4.2 mmol/mol`` (``value 4.2`` when no quantity is stated)."""
    if value is None:
        return "cannot measure"
    if measurement is None:
        return f"value {value:g}"
    return f"{measurement.quantity} {value:g}" + (f" {measurement.unit}" if measurement.unit else "")


def row_name(identifier_column: str | None, identifier: str) -> str:
    """The row as the curator names it: ``MRN 12345``, or ``row 7`` (its file row) without an identifier column."""
    return f"{identifier_name(identifier_column)} {identifier}"


def decimal(text: str | None, name: str) -> float:
    """A measured value typed by a person: digits with a decimal point, or a decimal comma (4,2 is 4.2)."""
    value = ascii_decimal((text or "").strip().replace(",", ".")) if text and text.count(",") <= 1 else None
    if value is None:
        fail(f"{name} must be a number such as 4.2 (a decimal comma, 4,2, is read as 4.2); got {text!r}", USAGE_ERROR)
    return value


class LabRow(NamedTuple):
    """One query of a dataset as the lab names it."""

    query_id: int
    identifier: str
    status: str
    value: float | None
    session_id: int


def _dataset_rows(admin: CuratorAdmin, dataset: int) -> list[LabRow]:
    """Every query ever asked of ``dataset``'s rows, through the sessions of its releases."""
    releases = {r.id for r in admin.releases() if r.dataset_id == dataset}
    return [LabRow(q.query_id, q.identifier, q.status, q.value, s.id)
            for s in admin.sessions() if s.release_id in releases for q in admin.session_lab_queries(s.id)]


def _by_identifier(rows: list[LabRow], identifier: str, pending: bool, dataset: int, label: str) -> list[LabRow]:
    wanted = [r for r in rows if r.identifier == identifier and (r.status == "pending") == pending]
    if not wanted:
        state = "pending" if pending else "answered (or marked cannot measure)"
        fail(f"no {state} query of dataset {dataset} is for {label}; check it against `pobo-curator queries pending "
             f"--dataset {dataset}` or `pobo-curator sessions --session ID`")
    return wanted


def _target(query_id: int | None, mrn: str | None, dataset: int | None, command: str) -> None:
    if (query_id is None) == (mrn is None):
        fail(f"name the query: {command} QUERY_ID ..., or --mrn MRN --dataset ID", USAGE_ERROR)
    if mrn is not None and dataset is None:
        fail("--mrn names a row of one dataset: give --dataset ID too", USAGE_ERROR)


ConfirmOutsideRange = Annotated[bool, typer.Option(
    "--confirm-outside-range", help="Store the value although it lies outside the dataset's plausible range (you "
                                    "checked it).")]
Mrn = Annotated[str | None, typer.Option("--mrn", help="Name the row by its MRN (the dataset's identifier column; "
                                                       "with --dataset) instead of a QUERY_ID.")]
DatasetOfMrn = Annotated[int | None, typer.Option(help="The dataset whose row --mrn names (or whose rows --from-csv "
                                                      "names).")]
FLAGS = {"value": "VALUE", "reason": "--reason", "confirm_outside_range": "--confirm-outside-range",
         "file": "--from-csv"}


def _query_of(admin: CuratorAdmin, query_id: int) -> tuple[LabRow, Worklist] | None:
    """The query's row and its dataset's worklist (identifier column, quantity), found through the sessions."""
    for session in admin.sessions():
        for q in admin.session_lab_queries(session.id):
            if q.query_id == query_id:
                dataset = next(r.dataset_id for r in admin.releases() if r.id == session.release_id)
                return LabRow(q.query_id, q.identifier, q.status, q.value, session.id), admin.worklist(dataset)
    return None


@queries_app.command("correct")
@connects
def queries_correct(
    server: Server,
    first: Annotated[str, typer.Argument(metavar="[QUERY_ID] VALUE", help="The answered query's id, then the right "
                                         "value (with --mrn: the value only).")],
    second: Annotated[str | None, typer.Argument(show_default=False, hidden=True)] = None,
    reason: Annotated[str, typer.Option(help="Why the answer changes (kept in the session's lab notes, never sent to "
                                        "the modeler or the audit log).")] = "",
    mrn: Mrn = None,
    dataset: DatasetOfMrn = None,
    confirm_outside_range: ConfirmOutsideRange = False,
    as_json: Json = False,
) -> None:
    """Correct a manual answer (or give a value to a query marked "cannot measure"): QUERY_ID VALUE, or
    --mrn MRN --dataset ID VALUE. It echoes the row and the change, e.g. "MRN 12345: HbA1c 40.2 → 4.2 mmol/mol"."""
    query_id, text = _id_and_value(first, second, mrn)
    _target(query_id, mrn, dataset, "queries correct")
    if not reason:
        fail("say why the answer changes: --reason '…' (kept in the session's lab notes)", USAGE_ERROR)
    value = decimal(text, "VALUE")
    body = build(Correction, {"value": value, "reason": reason, "confirm_outside_range": confirm_outside_range},
                 FLAGS)
    with curator(server, FLAGS) as admin:
        if mrn is not None:
            assert dataset is not None
            worklist = admin.worklist(dataset)
            label = row_name(worklist.identifier_column, mrn)
            rows = _by_identifier(_dataset_rows(admin, dataset), mrn, False, dataset, label)
            if len(rows) > 1:
                fail(f"{label} was answered in {len(rows)} queries ("
                     + ", ".join(f"query {r.query_id} of session {r.session_id}" for r in rows)
                     + "); give the QUERY_ID to correct", USAGE_ERROR)
            row = rows[0]
        else:
            assert query_id is not None
            found = _query_of(admin, query_id)
            if found is None:  # the server says why (no such query)
                admin.correct_query(query_id, body)
                fail(f"there is no query {query_id}; see `pobo-curator sessions --session ID`")
            row, worklist = found
            label = row_name(worklist.identifier_column, row.identifier)
        out = admin.correct_query(row.query_id, body)
    if as_json:
        print_json(out)
        return
    m = worklist.measurement
    change = (f"{m.quantity} {row.value:g} → {out.value:g}" + (f" {m.unit}" if m.unit else "")
              if m is not None and row.value is not None and out.value is not None
              else f"{measured_value(row.value, m)} → {measured_value(out.value, m)}")
    console.print(f"{label}: {change} (query {out.query_id} corrected; the old value and the reason are in the "
                  "session's lab notes)", highlight=False)


def _id_and_value(first: str, second: str | None, mrn: str | None) -> tuple[int | None, str | None]:
    """``QUERY_ID VALUE``, or (with --mrn) ``VALUE`` alone."""
    if mrn is not None:
        if second is not None:
            fail("with --mrn give the VALUE only, not a QUERY_ID", USAGE_ERROR)
        return None, first
    if not first.isdigit():
        fail(f"QUERY_ID must be a query's id (a whole number); got {first!r} (or name the row with --mrn)",
             USAGE_ERROR)
    return int(first), second


@queries_app.command("cannot-measure")
@connects
def queries_cannot_measure(
    server: Server,
    query_id: Annotated[int | None, typer.Argument(help="The pending query's id (or --mrn).")] = None,
    reason: Annotated[str, typer.Option(help="Why (kept in the session's lab notes).")] = "",
    mrn: Mrn = None,
    dataset: DatasetOfMrn = None,
    as_json: Json = False,
) -> None:
    """Mark a pending query "cannot measure" (QUERY_ID, or every pending query of --mrn MRN --dataset ID): it keeps
    its one charge and the modeler is told."""
    _target(query_id, mrn, dataset, "queries cannot-measure")
    if not reason:
        fail("say why: --reason '…' (kept in the session's lab notes)", USAGE_ERROR)
    body = build(CannotMeasure, {"reason": reason}, FLAGS)
    with curator(server, FLAGS) as admin:
        if mrn is not None:
            assert dataset is not None
            worklist = admin.worklist(dataset)
            label = row_name(worklist.identifier_column, mrn)
            targets = [r.query_id for r in _by_identifier(_dataset_rows(admin, dataset), mrn, True, dataset, label)]
        else:
            assert query_id is not None
            found = _query_of(admin, query_id)
            if found is None:  # the server says why (no such query)
                admin.cannot_measure(query_id, body)
                fail(f"there is no query {query_id}; see `pobo-curator queries pending`")
            row, worklist = found
            label, targets = row_name(worklist.identifier_column, row.identifier), [query_id]
        marked = [admin.cannot_measure(target, body) for target in targets]
    if as_json:
        print_json(marked)
        return
    for out in marked:
        console.print(f"{label}: cannot measure (query {out.query_id}; the modeler's client is told, no new charge)",
                      highlight=False)


@queries_app.command("answer")
@connects
def queries_answer(
    server: Server,
    first: Annotated[str | None, typer.Argument(metavar="[QUERY_ID] VALUE", help="The pending query's id, then the "
                                                "measured value (with --mrn: the value only).")] = None,
    second: Annotated[str | None, typer.Argument(show_default=False, hidden=True)] = None,
    mrn: Mrn = None,
    from_csv: Annotated[Path | None, typer.Option(help="Answer many: a CSV with a header line (e.g. mrn,value), "
                                                  "then MRN,value lines (all or nothing).")] = None,
    dataset: DatasetOfMrn = None,
    confirm_outside_range: ConfirmOutsideRange = False,
    as_json: Json = False,
) -> None:
    """Post a measurement: QUERY_ID VALUE, --mrn MRN --dataset ID VALUE (every pending query of that row), or many
    from a CSV (--from-csv FILE --dataset ID). Each answer is echoed, e.g. "MRN 12345: HbA1c 4.2 mmol/mol"."""
    if from_csv is not None:
        _answer_csv(server, from_csv, first, dataset, confirm_outside_range, as_json)
        return
    if first is None:
        fail("give QUERY_ID VALUE, --mrn MRN --dataset ID VALUE, or --from-csv FILE --dataset ID", USAGE_ERROR)
    query_id, text = _id_and_value(first, second, mrn)
    _target(query_id, mrn, dataset, "queries answer")
    value = decimal(text, "VALUE")
    with curator(server, FLAGS) as admin:
        if mrn is not None:
            assert dataset is not None
            worklist = admin.worklist(dataset)
            answered = admin.answer_by_identifier(dataset, mrn, value, confirm_outside_range).answered
            label = row_name(worklist.identifier_column, mrn)
        else:
            assert query_id is not None
            pending = {q.query_id: q for q in admin.pending_queries().queries}
            answered = [admin.answer_query(query_id, value, confirm_outside_range)]  # the server names any refusal
            asked = pending[query_id]
            worklist = admin.worklist(asked.dataset_id)
            label = row_name(worklist.identifier_column, asked.identifier or str(asked.row))
    if as_json:
        print_json(answered)
        return
    for out in answered:
        console.print(f"{label}: {measured_value(out.value, worklist.measurement)} (query {out.query_id} answered)",
                      highlight=False)


def _answer_csv(server: Server, from_csv: Path, first: str | None, dataset: int | None, confirm: bool,
                as_json: bool) -> None:
    if first is not None or dataset is None:
        fail("--from-csv takes --dataset ID and no QUERY_ID VALUE", USAGE_ERROR)
    if not from_csv.is_file():
        fail(f"--from-csv {from_csv} is not a file", USAGE_ERROR)
    with curator(server, FLAGS) as admin, admin.admin() as api:
        worklist = admin.worklist(dataset)
        by_query = {q.query_id: q.identifier for q in worklist.queries}
        confirmed = "?confirm_outside_range=true" if confirm else ""
        out = api.post(f"{API_PREFIX}/datasets/{dataset}/answers/csv{confirmed}", model=AnswersOut,
                       files={"file": (from_csv.name, from_csv.read_bytes(), "text/csv")})
    if as_json:
        print_json(out.answered)
        return
    for answer in out.answered:
        label = row_name(worklist.identifier_column, by_query.get(answer.query_id, "?"))
        console.print(f"{label}: {measured_value(answer.value, worklist.measurement)} (query {answer.query_id} "
                      f"answered from {from_csv.name})", highlight=False)
