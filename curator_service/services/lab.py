"""The lab workflow: manual measurements by the curator's own row identifier (an MRN), many at once from a CSV,
"cannot measure", and corrections with a reason.

The identifier column is a column of the registered table that is neither a feature nor the measurement. It is
stored on the curator and appears in curator responses only (the worklist); error sentences name lines and rows,
never an identifier or a value. A query counts once against its key's query budget whatever happens to it later:
answered, marked "cannot measure" (status ``unmeasurable``, no value; the modeler's client is told by that status)
or corrected. What the lab did and why (the old and the new value, the free-text reason) is kept in the
curator-only ``query_notes`` table (:func:`query_notes`); the audit log records only the query id and the action,
never a measured value or the lab's free text (which may name a patient).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import RawTable, TableCache, cached_table
from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import (
    Dataset,
    DatasetIdentifier,
    ModelingSession,
    Query,
    QueryNote,
    Release,
    utcnow,
)
from curator_service.services.audit import record
from curator_service.services.datasets import csv_rows, invalid
from curator_service.services.policy import Principal
from curator_service.services.queries import check_plausible, pending_queries, post_answer, query_result
from shared.api.errors import ApiError
from shared.api.governance import AnswersOut, IdentifierColumnOut, LabQuery, WorkItem, Worklist
from shared.api.schemas import MeasurementSpec, PendingQueryList, QueryResult, _Model
from shared.checks import ascii_decimal


@dataclass(frozen=True)
class Answer:
    """One measurement to post: ``where`` names it in error sentences ("line 3", "answer 2")."""

    where: str
    identifier: str
    value: float | None


class QueryNoteOut(_Model):
    """``GET /v1/sessions/{id}/notes``: one thing the lab did to a query, and why (curator only)."""

    query_id: int
    action: Literal["cannot_measure", "correct"]
    old_status: str
    old_value: float | None
    new_value: float | None
    reason: str
    actor: str
    created_at: datetime


# --- the identifier column ---------------------------------------------------------------------------------------


def identifier_column(session: Session, dataset_id: int) -> str | None:
    row = session.get(DatasetIdentifier, dataset_id)
    return None if row is None else row.column


def identifier_text(value: object) -> str:
    """How an identifier cell reads: text as stored, a number without a trailing ``.0`` (a column holding only
    numbers was stored as numbers at registration, so an MRN written 000123 reads 123)."""
    if isinstance(value, float | np.floating):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value).strip()


def row_identifiers(table: RawTable, column: str | None) -> list[str]:
    """The identifier of every stored row: its value in ``column``, or its file row number when there is none."""
    if column is None:
        return [str(table.file_row(i)) for i in range(table.n)]
    return [identifier_text(value) for value in table.columns[column].tolist()]


def set_identifier_column(session: Session, tables: TableCache, principal: Principal, dataset_id: int,
                          column: str) -> IdentifierColumnOut:
    """``PUT /v1/datasets/{id}/identifier-column``: :func:`name_identifier_column` on a registered dataset."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    return name_identifier_column(session, principal, dataset, cached_table(tables, dataset), column)


def name_identifier_column(session: Session, principal: Principal, dataset: Dataset, table: RawTable,
                           column: str) -> IdentifierColumnOut:
    """Names the column that identifies a row for the curator: a column of the table that is not released (not a
    feature, not the measurement), with a value in every row and no value twice. ``table`` is the dataset's raw
    table (at registration, the one just parsed; the dataset must be flushed, so it has its id)."""
    dataset_id = dataset.id
    if column not in dataset.columns:
        raise invalid(f"column {column!r} is not in dataset {dataset_id}; its columns are {dataset.columns}")
    if column in dataset.feature_columns:
        raise invalid(f"column {column!r} is a feature column, and features are released; choose a column that is "
                      "not a feature (an identifier never leaves the curator)")
    if dataset.evaluator.get("column") == column:
        raise invalid(f"column {column!r} is the measured column; choose the column that names the row")
    identifiers = row_identifiers(table, column)
    empty = next((i for i, text in enumerate(identifiers) if not text), None)
    if empty is not None:
        raise invalid(f"column {column!r} is empty in data row {table.file_row(empty)}; every row needs an "
                      "identifier")
    first_seen: dict[str, int] = {}
    for i, text in enumerate(identifiers):
        if text in first_seen:
            rows = sorted((table.file_row(first_seen[text]), table.file_row(i)))
            raise invalid(f"column {column!r} has the same value in data rows {rows[0]} and {rows[1]}; identifiers "
                          "must be unique: choose another column, or fix the file and register it again")
        first_seen[text] = i
    row = session.get(DatasetIdentifier, dataset_id) or DatasetIdentifier(dataset_id=dataset_id)
    row.column = column
    session.add(row)
    record(session, principal, "dataset.identifier_column", f"dataset:{dataset_id} ({column})")
    return IdentifierColumnOut(dataset_id=dataset_id, column=column)


def identified_pending(session: Session, tables: TableCache, dataset_id: int | None = None) -> PendingQueryList:
    """:func:`~curator_service.services.queries.pending_queries` with each row's identifier (the MRN, or its file
    row number) and what to measure: what the lab needs to find the sample and answer by it."""
    pending = pending_queries(session, tables, dataset_id).queries
    identifiers, measurements = {}, {}
    for ds_id in {q.dataset_id for q in pending}:
        dataset = session.get_one(Dataset, ds_id)
        identifiers[ds_id] = row_identifiers(cached_table(tables, dataset), identifier_column(session, ds_id))
        stored = dataset.measurement  # a JSON dict; model_copy below does not validate, so build the model here
        measurements[ds_id] = None if stored is None else MeasurementSpec.model_validate(stored)
    return PendingQueryList(queries=[
        q.model_copy(update={"identifier": identifiers[q.dataset_id][q.index],
                             "measurement": measurements[q.dataset_id]}) for q in pending])


def session_rows(session: Session, tables: TableCache, session_id: int) -> list[LabQuery]:
    """A session's queries in order, each with the identifier and file row of the row it asked for (curator only)."""
    release = session.get_one(Release, get_or_404(session, ModelingSession, session_id).release_id)
    dataset = session.get_one(Dataset, release.dataset_id)
    table = cached_table(tables, dataset)
    identifiers = row_identifiers(table, identifier_column(session, dataset.id))
    queries = session.scalars(select(Query).where(Query.session_id == session_id).order_by(Query.id))
    return [LabQuery(query_id=q.id, index=q.row_index, identifier=identifiers[q.row_index],
                     row=table.file_row(q.row_index),
                     status=q.status, value=q.value) for q in queries]


def worklist(session: Session, tables: TableCache, dataset_id: int) -> Worklist:
    """The dataset's pending manual queries, each with the identifier of the row to measure."""
    dataset = get_or_404(session, Dataset, dataset_id)
    return Worklist(dataset_id=dataset_id, identifier_column=identifier_column(session, dataset_id),
                    measurement=dataset.measurement, queries=[
        WorkItem(query_id=q.query_id, identifier=q.identifier, row=q.row, session_id=q.session_id,
                 created_at=q.created_at)
        for q in identified_pending(session, tables, dataset_id).queries
    ])


def set_plausible_range(session: Session, principal: Principal, dataset_id: int, low: float | None,
                        high: float | None) -> MeasurementSpec:
    """Sets (or, with both bounds null, removes) the plausible range of a manual dataset's measurement. The range
    is public (it describes the quantity, like its unit), so it may be shown to modelers with the quantity."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    if dataset.evaluator["kind"] != "manual":
        raise invalid(f"dataset {dataset_id} is measured by its {dataset.evaluator['kind']} evaluator, not by hand; "
                      "a plausible range checks manual answers only")
    if dataset.measurement is None:
        raise invalid(f"dataset {dataset_id} names no measured quantity, so a range has no unit to be read in; "
                      "register it with the quantity (--measure, spec.measurement.quantity)")
    if (low is None) != (high is None):
        raise invalid("give both 'low' and 'high' (or neither, to remove the range)")
    try:
        measurement = MeasurementSpec.model_validate(
            {**dataset.measurement, "plausible_range": None if low is None else [low, high]})
    except ValueError:
        raise invalid("'low' must be below 'high': give the range as LOW HIGH, e.g. 20 120") from None
    dataset.measurement = measurement.model_dump()
    record(session, principal, "dataset.plausible_range", f"dataset:{dataset_id}")
    return measurement


# --- answers -----------------------------------------------------------------------------------------------------


def parse_answers_csv(content: bytes) -> list[Answer]:
    """``identifier,value`` lines after a header line (e.g. ``mrn,value``); every problem is a 422 naming the line."""
    rows = csv_rows(content)
    if not rows or len(rows[0]) != 2 or ascii_decimal(rows[0][1].strip()) is not None:
        raise invalid("line 1 of the CSV must be a header naming two columns, the identifier and the value "
                      "(e.g. mrn,value)")
    answers = []
    for line, cells in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != 2:
            raise invalid(f"line {line} of the CSV has {len(cells)} fields; each line is identifier,value")
        answers.append(Answer(f"line {line}", cells[0].strip(), ascii_decimal(cells[1].strip())))
    if not answers:
        raise invalid("the CSV has no answers after its header; add identifier,value lines")
    return answers


def answer_by_identifier(session: Session, tables: TableCache, principal: Principal, dataset_id: int,
                         answers: Sequence[Answer], confirm_outside_range: bool = False) -> AnswersOut:
    """Posts each measurement to every pending query of its row, all or nothing: the first bad answer (not a finite
    number, an identifier given twice, or one with no pending query) refuses the lot with a sentence naming it."""
    dataset = get_or_404(session, Dataset, dataset_id)
    column = identifier_column(session, dataset_id)
    table = cached_table(tables, dataset)
    index_of = {text: i for i, text in enumerate(row_identifiers(table, column))}
    numbers = column is None or table.columns[column].dtype.kind == "f"
    waiting: dict[int, list[Query]] = {}
    for query in session.scalars(
        select(Query).join(ModelingSession, ModelingSession.id == Query.session_id)
        .join(Release, Release.id == ModelingSession.release_id)
        .where(Release.dataset_id == dataset_id, Query.status == "pending").order_by(Query.id)
        .with_for_update(of=Query)
    ):
        waiting.setdefault(query.row_index, []).append(query)
    rows: list[tuple[list[Query], float]] = []
    given: set[int] = set()
    for answer in answers:
        if answer.value is None or not math.isfinite(answer.value):
            raise invalid(f"{answer.where}: the value is not a finite number; send the measured value")
        index = index_of.get(_as_identifier(answer.identifier, numbers))
        if index in given:
            raise invalid(f"{answer.where} repeats an identifier given earlier; give each row one value")
        if index is None or index not in waiting:
            raise invalid(f"{answer.where}: no pending query of dataset {dataset_id} has this identifier (unknown, "
                          "already answered, or never asked); check it against the worklist or remove it")
        given.add(index)
        check_plausible(session, waiting[index][0], answer.value, confirm_outside_range, f"{answer.where}: the value")
        rows.append((waiting[index], answer.value))
    answered = [post_answer(session, principal, query, value) for queries, value in rows for query in queries]
    return AnswersOut(answered=answered)


def _as_identifier(text: str, numbers: bool) -> str:
    """Reads an identifier given by the lab the way the column's identifiers read (numbers without ``.0``)."""
    number = ascii_decimal(text) if numbers else None
    return identifier_text(number) if number is not None else text.strip()


def cannot_measure(session: Session, principal: Principal, query_id: int, reason: str) -> QueryResult:
    """Marks a pending query ``unmeasurable``: it keeps its one charge and is never answered."""
    query = get_or_404(session, Query, query_id, lock=True)
    if query.status != "pending":
        raise ApiError(409, "conflict", f"query {query_id} is not pending (it is {query.status}); only a pending "
                       "query can be marked 'cannot measure' (correct an answer instead)")
    _note(session, principal, query, "cannot_measure", None, reason)
    query.status, query.value, query.answered_at = "unmeasurable", None, utcnow()
    return query_result(query)


def correct(session: Session, principal: Principal, query_id: int, value: float, reason: str,
            confirm_outside_range: bool = False) -> QueryResult:
    """Replaces a manual answer (or a "cannot measure") with ``value``; the query's notes keep the old value and
    the reason. Answers the curator did not type are refused: an evaluator's, and above all a private measurement's
    (a true value there would undo the noise that protects it)."""
    if not math.isfinite(value):
        raise invalid("'value' must be a finite number; send the measured value")
    query = get_or_404(session, Query, query_id, lock=True)
    if query.status == "pending":
        raise ApiError(409, "conflict", f"query {query_id} is still pending; answer it instead of correcting it")
    release = session.get_one(Release, session.get_one(ModelingSession, query.session_id).release_id)
    if release.measurements is not None:
        raise ApiError(409, "conflict", f"query {query_id} was answered from release {release.id}'s private "
                       "measurements; a true value would undo their noise, so it cannot be corrected")
    kind = session.get_one(Dataset, release.dataset_id).evaluator["kind"]
    if kind != "manual":
        raise ApiError(409, "conflict", f"query {query_id} was measured by the dataset's {kind} evaluator, not by "
                       "hand; only manual answers can be corrected")
    check_plausible(session, query, value, confirm_outside_range, "the corrected value")
    _note(session, principal, query, "correct", value, reason)
    query.status, query.value, query.answered_at = "done", value, utcnow()
    return query_result(query)


def _note(session: Session, principal: Principal, query: Query, action: str, new_value: float | None,
          reason: str) -> None:
    """Keeps the query's state before ``action``, the new value and the reason in its notes; audits only
    ``query:<id>`` and the action (no measured value or free text in the audit log)."""
    session.add(QueryNote(query_id=query.id, action=action, old_status=query.status, old_value=query.value,
                          new_value=new_value, reason=reason, actor=principal.actor))
    record(session, principal, f"query.{action}", f"query:{query.id}")


def query_notes(session: Session, session_id: int) -> list[QueryNoteOut]:
    """The lab's notes on a modeling session's queries, oldest first (curator only)."""
    get_or_404(session, ModelingSession, session_id)
    notes = session.scalars(select(QueryNote).join(Query, Query.id == QueryNote.query_id)
                            .where(Query.session_id == session_id).order_by(QueryNote.id))
    return [QueryNoteOut.model_validate(note, from_attributes=True) for note in notes]
