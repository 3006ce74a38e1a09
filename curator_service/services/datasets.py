"""Datasets: validating and registering a table, its metadata and budget, the curator's row order.

The raw table is validated completely before anything is stored; problems are reported as one sentence naming
the column and the row to fix, never the offending value. Rows are stored in a secret random order
(:func:`~curator_service.persistence.blobs.secret_permutation`), so a row index says nothing of the file's order.
"""

from __future__ import annotations

import csv
import io
import secrets
from pathlib import Path

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import RawTable, TableCache, cached_table, encode_matrix, secret_permutation
from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import Dataset
from curator_service.services.audit import record
from curator_service.services.evaluators import load_target
from curator_service.services.ledger import budget_status
from curator_service.services.policy import Principal
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.scaling import neighbouring_step
from shared.api.schemas import (
    CONTROL_CHARACTER_SENTENCE,
    DatasetOut,
    DatasetSpec,
    RowOrder,
    ScalingSpec,
    control_character_at,
)
from shared.checks import ascii_decimal


def invalid(sentence: str) -> ApiError:
    return ApiError(422, "validation_error", sentence)


def csv_rows(content: bytes) -> list[list[str]]:
    """The rows of a UTF-8 CSV file; a 422 naming the line the ``csv`` module cannot read (a cell longer than its
    field limit, a quote left open)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise invalid("the CSV file is not UTF-8 text; save it as UTF-8 and upload it again") from None
    reader = csv.reader(io.StringIO(text))
    try:
        return list(reader)
    except csv.Error as exc:
        limit = csv.field_size_limit()
        problem = (f"holds a cell longer than {limit:,} characters, the most a cell may hold"
                   if str(exc).startswith("field larger than field limit") else f"cannot be read as CSV ({exc})")
        raise invalid(f"line {reader.line_num} of the CSV {problem}; fix that line") from None


def parse_csv(content: bytes, spec: DatasetSpec) -> RawTable:
    """The validated raw table of a CSV with a header row.

    Feature columns, the evaluator's column and the spec's numeric and label columns (:func:`numeric_columns`) must
    hold a finite number in every row, and label columns 0 or 1: so a job that reads one never meets a cell it
    cannot use. Other columns are kept as numbers when every cell is one, otherwise as text (a python evaluator
    receives them); a job never reads them.
    """
    rows = csv_rows(content)
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise invalid("the CSV file is empty; it needs a header row naming the columns and at least 2 data rows")
    header = [name.strip() for name in rows[0]]
    if any(not name for name in header):
        raise invalid(f"column {header.index('') + 1} of the CSV header has no name; name every column")
    if (where := control_character_at(header)) is not None:
        raise invalid(f"column {int(where) + 1} of the CSV header {CONTROL_CHARACTER_SENTENCE}")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise invalid(f"the CSV header names column {name!r} twice; column names must be unique")
        seen.add(name)
    body = rows[1:]
    if len(body) < 2:
        raise invalid(f"the CSV has {len(body)} data row(s); a dataset needs at least 2 rows (n >= 2)")
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise invalid(
                f"line {line} of the CSV has {len(row)} fields but the header has {len(header)}; fix that line"
            )
    _check_spec_columns(spec, header)
    required, labels = set(numeric_columns(spec, header)), set(spec.label_columns)
    columns: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        cells = [row[j].strip() for row in body]
        numbers = [ascii_decimal(cell) for cell in cells]
        bad = next((i for i, value in enumerate(numbers) if value is None), None)
        if bad is not None and name in required:
            what = "is empty" if not cells[bad] else "is not a finite number"
            raise invalid(
                f"column {name!r}, data row {bad + 1} (line {bad + 2} of the file) {what}; every cell of a feature, "
                "the measured column and a declared numeric or label column must be a finite number"
            )
        off_label = next((i for i, v in enumerate(numbers) if v not in (0.0, 1.0)), None) if name in labels else None
        if off_label is not None:
            raise invalid(f"column {name!r}, data row {off_label + 1} (line {off_label + 2} of the file) is not 0 or "
                          "1; every cell of a label column must be 0 or 1")
        columns[name] = np.array(numbers, dtype=np.float64) if bad is None else np.array(cells, dtype=np.str_)
    return RawTable(columns, tuple(spec.feature_columns))


def numeric_columns(spec: DatasetSpec, header: list[str]) -> list[str]:
    """The columns a job may read as numbers, in the header's order: the features, the measured column and the
    spec's numeric and label columns. Fixed by the spec alone, so whether a job may read a column never depends on
    what its cells hold."""
    declared = {*spec.feature_columns, *spec.numeric_columns, *spec.label_columns}
    if spec.evaluator.kind == "column":
        declared.add(spec.evaluator.column)
    return [name for name in header if name in declared]


def _check_spec_columns(spec: DatasetSpec, header: list[str]) -> None:
    """Spec-against-header checks: known columns, no duplicates, scaling vectors of length d."""
    available = ", ".join(repr(name) for name in header)
    for field in ("numeric_columns", "label_columns"):
        listed: set[str] = set()
        for name in getattr(spec, field):
            if name in listed:
                raise invalid(f"{field} lists {name!r} twice; list each column once")
            listed.add(name)
            if name not in header:
                raise invalid(f"{field[:-1].replace('_', ' ')} {name!r} is not in the CSV; the columns are {available}")
    seen: set[str] = set()
    for name in spec.feature_columns:
        if name in seen:
            raise invalid(f"feature_columns lists {name!r} twice; list each feature once")
        seen.add(name)
        if name not in header:
            raise invalid(f"feature column {name!r} is not in the CSV; the columns are {available}")
    if spec.evaluator.kind == "column":
        target = spec.evaluator.column
        if target not in header:
            raise invalid(f"evaluator column {target!r} is not in the CSV; the columns are {available}")
        if target in seen:
            raise invalid(
                f"evaluator column {target!r} is also a feature column; the measurement must not be a released feature"
            )
    d = len(spec.feature_columns)
    for field in ("offset", "scale", "lower", "upper"):
        values = getattr(spec.scaling, field)
        if values is not None and len(values) != d:
            raise invalid(f"scaling.{field} has {len(values)} numbers but there are {d} feature columns; "
                           "give one per feature column, in the same order")


def _check_evaluator(spec: DatasetSpec) -> None:
    if spec.evaluator.kind == "python":
        try:
            load_target(spec.evaluator.target)
        except ValueError as exc:
            raise invalid(str(exc)) from None


def confined_path(settings: Settings, requested: str) -> Path:
    """The CSV file at ``requested`` (relative to the import root, or absolute) once resolved, ``..`` and symlinks
    followed, inside the import root (``POBO_IMPORT_ROOT``); without a root no server path is read at all.
    Nothing outside the root is opened, and errors say nothing about it (resolving does look up each component, to
    follow symlinks, before the containment check)."""
    if settings.import_root is None:
        raise ApiError(403, "forbidden", "registration by server-side 'path' is off on this server (POBO_IMPORT_ROOT "
                       "is not set); upload the CSV as multipart/form-data, or have the operator set POBO_IMPORT_ROOT "
                       "to the directory of files the service may read")
    root = settings.import_root.resolve()
    try:
        path = (root / requested).resolve()
        if not path.is_relative_to(root):
            raise ApiError(403, "forbidden", f"path {requested!r} is outside the import root (POBO_IMPORT_ROOT); "
                           "give a path inside it, relative to it or absolute")
        if not path.is_file():
            raise invalid(f"path {requested!r} is not a file inside the import root; give the path of a CSV file")
    except (ValueError, OSError):  # a NUL byte, a name longer than the file system allows
        raise invalid(f"the path starting {requested[:80]!r} is not a usable file name (a NUL byte, or a name too "
                      "long for the file system); give the path of a CSV file inside the import root") from None
    return path


def dataset_out(session: Session, dataset: Dataset) -> DatasetOut:
    return DatasetOut(
        id=dataset.id,
        name=dataset.name,
        n=dataset.n,
        d=dataset.d,
        feature_columns=dataset.feature_columns,
        evaluator_kind=dataset.evaluator["kind"],
        goal=dataset.goal,
        scaling_kind=dataset.scaling["kind"],
        neighbouring_step=neighbouring_step(ScalingSpec.model_validate(dataset.scaling), dataset.feature_columns),
        budget=budget_status(session, dataset),
        measurement=dataset.measurement,
        label_columns=dataset.label_columns or [],
        created_at=dataset.created_at,
    )


def parse_registration(spec: DatasetSpec, content: bytes) -> RawTable:
    """The validated table of a registration, rows in a fresh secret order (call it outside a transaction: it
    reads the whole file)."""
    _check_evaluator(spec)
    table = parse_csv(content, spec)
    return table.permuted(secret_permutation(table.n))  # row indices must not reveal the file's order


def store_dataset(session: Session, principal: Principal, spec: DatasetSpec, table: RawTable) -> DatasetOut:
    """Stores a parsed table and its audit event in the caller's write transaction."""
    dataset = Dataset(
        name=spec.name,
        n=table.n,
        d=len(spec.feature_columns),
        columns=list(table.columns),
        numeric_columns=numeric_columns(spec, list(table.columns)),
        feature_columns=list(spec.feature_columns),
        evaluator=spec.evaluator.model_dump(),
        scaling=spec.scaling.model_dump(),
        goal=spec.goal,
        measurement=None if spec.measurement is None else spec.measurement.model_dump(),
        label_columns=list(spec.label_columns),
        budget_epsilon=spec.budget.epsilon,
        budget_delta=spec.budget.delta,
        table=table.encode(),
        # None: the file's own order
        source_rows=encode_matrix(np.arange(table.n) if table.source_rows is None else table.source_rows,
                                  dtype=np.int64),
        simulation_key=secrets.token_hex(16),
    )
    try:
        with session.begin_nested():
            session.add(dataset)
            session.flush()
    except IntegrityError:
        raise ApiError(409, "conflict", f"a dataset named {spec.name!r} already exists; choose another name") from None
    record(session, principal, "dataset.create", f"dataset:{dataset.id}")
    return dataset_out(session, dataset)


def list_datasets(session: Session) -> list[DatasetOut]:
    return [dataset_out(session, dataset) for dataset in session.scalars(select(Dataset).order_by(Dataset.id))]


def get_dataset(session: Session, dataset_id: int) -> DatasetOut:
    return dataset_out(session, get_or_404(session, Dataset, dataset_id))


def row_order(session: Session, tables: TableCache, principal: Principal, dataset_id: int) -> RowOrder:
    """The file row behind each row index, for the curator's own analyses (e.g. a benchmark's regret by file
    row); audited, since it undoes the secret order that keeps row indices from revealing the file's order."""
    table = cached_table(tables, get_or_404(session, Dataset, dataset_id))
    record(session, principal, "dataset.row_order", f"dataset:{dataset_id}")
    return RowOrder(dataset_id=dataset_id, rows=[table.file_row(i) for i in range(table.n)])
