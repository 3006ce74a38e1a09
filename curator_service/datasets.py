"""Registering datasets (CSV upload or a server-side path) and reading their metadata.

The raw table is validated completely before anything is stored; problems are reported as one
sentence naming the column and the row to fix, never the offending value.
"""

from __future__ import annotations

import csv
import io
import math
import secrets
from pathlib import Path

import numpy as np
from fastapi import APIRouter, FastAPI, Request
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from curator_service.audit import record
from curator_service.auth import Curator, Principal
from curator_service.db import get_or_404
from curator_service.errors import ApiError, api_error_from_validation
from curator_service.evaluators import load_target
from curator_service.ledger import budget_status
from curator_service.models import Dataset
from curator_service.storage import RawTable, encode_matrix, secret_permutation
from shared.releases.scaling import neighbouring_step
from shared.api.schemas import DatasetFromPath, DatasetOut, DatasetSpec, RowOrder, ScalingSpec

router = APIRouter(tags=["datasets"])


def _invalid(sentence: str) -> ApiError:
    return ApiError(422, "validation_error", sentence)


def _parse_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_csv(content: bytes, spec: DatasetSpec) -> RawTable:
    """The validated raw table of a CSV with a header row.

    Feature columns and the evaluator's column must hold a finite number in every row; other columns are
    kept as numbers when every cell is one, otherwise as text (a python evaluator receives them).
    """
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _invalid("the CSV file is not UTF-8 text; save it as UTF-8 and upload it again") from None
    rows = list(csv.reader(io.StringIO(text)))
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise _invalid("the CSV file is empty; it needs a header row naming the columns and at least 2 data rows")
    header = [name.strip() for name in rows[0]]
    if any(not name for name in header):
        raise _invalid(f"column {header.index('') + 1} of the CSV header has no name; name every column")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise _invalid(f"the CSV header names column {name!r} twice; column names must be unique")
        seen.add(name)
    body = rows[1:]
    if len(body) < 2:
        raise _invalid(f"the CSV has {len(body)} data row(s); a dataset needs at least 2 rows (n >= 2)")
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise _invalid(
                f"line {line} of the CSV has {len(row)} fields but the header has {len(header)}; fix that line"
            )
    _check_spec_columns(spec, header)
    required = set(spec.feature_columns) | ({spec.evaluator.column} if spec.evaluator.kind == "column" else set())
    columns: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        cells = [row[j].strip() for row in body]
        numbers = [_parse_number(cell) for cell in cells]
        bad = next((i for i, value in enumerate(numbers) if value is None), None)
        if bad is None:
            columns[name] = np.array(numbers, dtype=np.float64)
        elif name in required:
            what = "is empty" if not cells[bad] else "is not a finite number"
            raise _invalid(
                f"column {name!r}, data row {bad + 1} (line {bad + 2} of the file) {what}; "
                "every feature and measurement cell must be a finite number"
            )
        else:
            columns[name] = np.array(cells, dtype=np.str_)
    return RawTable(columns, tuple(spec.feature_columns))


def _check_spec_columns(spec: DatasetSpec, header: list[str]) -> None:
    """Spec-against-header checks: known columns, no duplicates, scaling vectors of length d."""
    available = ", ".join(repr(name) for name in header)
    seen: set[str] = set()
    for name in spec.feature_columns:
        if name in seen:
            raise _invalid(f"feature_columns lists {name!r} twice; list each feature once")
        seen.add(name)
        if name not in header:
            raise _invalid(f"feature column {name!r} is not in the CSV; the columns are {available}")
    if spec.evaluator.kind == "column":
        target = spec.evaluator.column
        if target not in header:
            raise _invalid(f"evaluator column {target!r} is not in the CSV; the columns are {available}")
        if target in seen:
            raise _invalid(
                f"evaluator column {target!r} is also a feature column; the measurement must not be a released feature"
            )
    d = len(spec.feature_columns)
    for field in ("offset", "scale", "lower", "upper"):
        values = getattr(spec.scaling, field)
        if values is not None and len(values) != d:
            raise _invalid(f"scaling.{field} has {len(values)} numbers but there are {d} feature columns; "
                           "give one per feature column, in the same order")


def _check_evaluator(spec: DatasetSpec) -> None:
    if spec.evaluator.kind == "python":
        try:
            load_target(spec.evaluator.target)
        except ValueError as exc:
            raise _invalid(str(exc)) from None


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
        created_at=dataset.created_at,
    )


async def _read_registration(request: Request) -> tuple[DatasetSpec, bytes]:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=8)
        upload, raw_spec = form.get("file"), form.get("spec")
        if upload is None or isinstance(upload, str):
            raise _invalid("the multipart form needs a 'file' part holding the CSV")
        if not isinstance(raw_spec, str):
            raise _invalid("the multipart form needs a 'spec' part holding the dataset spec as a JSON string")
        try:
            spec = DatasetSpec.model_validate_json(raw_spec)
        except ValidationError as exc:
            raise api_error_from_validation(exc, prefix="spec.") from None
        return spec, await upload.read()
    if content_type.startswith("application/json"):
        try:
            spec = DatasetFromPath.model_validate_json(await request.body())
        except ValidationError as exc:
            raise api_error_from_validation(exc) from None
        path = Path(spec.path).expanduser()
        if not path.is_file():
            raise _invalid(f"path {spec.path!r} is not a file on the curator's server; give the path of a CSV file")
        limit = request.app.state.settings.max_upload_bytes
        if path.stat().st_size > limit:
            raise ApiError(413, "payload_too_large",
                           f"the file at {spec.path!r} is larger than the limit of {limit} bytes; raise POBO_MAX_UPLOAD_BYTES")
        return DatasetSpec.model_validate(spec.model_dump(exclude={"path"})), path.read_bytes()
    raise ApiError(415, "validation_error",
                   "send the dataset as multipart/form-data ('file' + 'spec') or as JSON with a server-side 'path'")


_REGISTRATION_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "spec"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "The CSV, with a header row."},
                        "spec": {"type": "string", "description": "The DatasetSpec as a JSON string."},
                    },
                }
            },
            "application/json": {"schema": {"$ref": "#/components/schemas/DatasetFromPath"}},
        },
    }
}


def add_registration_schema(document: dict) -> None:
    """Puts ``DatasetFromPath`` (the JSON registration body declared by hand above) into the components."""
    schema = DatasetFromPath.model_json_schema(ref_template="#/components/schemas/{model}")
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in schema.pop("$defs", {}).items():
        components.setdefault(name, definition)
    components.setdefault("DatasetFromPath", schema)


@router.post(
    "/v1/datasets",
    status_code=201,
    response_model=DatasetOut,
    summary="Register a dataset (CSV upload or a path on the server)",
    openapi_extra=_REGISTRATION_BODY,
)
async def create_dataset(request: Request, principal: Curator) -> DatasetOut:
    spec, content = await _read_registration(request)
    return await run_in_threadpool(_register, request, principal, spec, content)


def _register(request: Request, principal: Principal, spec: DatasetSpec, content: bytes) -> DatasetOut:
    """Validates everything first, then stores the dataset and its audit event in one transaction."""
    _check_evaluator(spec)
    table = parse_csv(content, spec)
    table = table.permuted(secret_permutation(table.n))  # row indices must not reveal the file's order
    try:
        with request.app.state.db.write() as session:
            dataset = Dataset(
                name=spec.name,
                n=table.n,
                d=len(spec.feature_columns),
                columns=list(table.columns),
                feature_columns=list(spec.feature_columns),
                evaluator=spec.evaluator.model_dump(),
                scaling=spec.scaling.model_dump(),
                goal=spec.goal,
                budget_epsilon=spec.budget.epsilon,
                budget_delta=spec.budget.delta,
                table=table.encode(),
                source_rows=encode_matrix(table.source_rows, dtype=np.int64),
                simulation_key=secrets.token_hex(16),
            )
            session.add(dataset)
            session.flush()
            record(session, principal, "dataset.create", f"dataset:{dataset.id}")
            return dataset_out(session, dataset)
    except IntegrityError:
        raise ApiError(409, "conflict", f"a dataset named {spec.name!r} already exists; choose another name") from None


@router.get("/v1/datasets", response_model=list[DatasetOut], summary="List datasets (metadata only)")
def list_datasets(request: Request, principal: Curator) -> list[DatasetOut]:
    with request.app.state.db.read() as session:
        return [dataset_out(session, ds) for ds in session.scalars(select(Dataset).order_by(Dataset.id))]


@router.get("/v1/datasets/{dataset_id}", response_model=DatasetOut, summary="One dataset's metadata and budget")
def get_dataset(request: Request, principal: Curator, dataset_id: int) -> DatasetOut:
    with request.app.state.db.read() as session:
        return dataset_out(session, get_or_404(session, Dataset, dataset_id))


@router.get("/v1/datasets/{dataset_id}/row-order", response_model=RowOrder,
            summary="Curator only: the file row behind each row index (never give it to a modeler)")
def get_row_order(request: Request, principal: Curator, dataset_id: int) -> RowOrder:
    """For the curator's own analyses (e.g. a benchmark's regret by file row); audited, since it undoes the
    secret order that keeps row indices from revealing the file's order."""
    with request.app.state.db.write() as session:
        table = cached_table(request.app, get_or_404(session, Dataset, dataset_id))
        record(session, principal, "dataset.row_order", f"dataset:{dataset_id}")
    return RowOrder(dataset_id=dataset_id, rows=[table.file_row(i) for i in range(table.n)])


def cached_table(app: FastAPI, dataset: Dataset) -> RawTable:
    """The dataset's decoded raw table (rows in stored order, with their file rows); tables never change, so
    decoded ones are kept in a small cache.

    Call it inside a session: on a cache miss the deferred ``table`` column is loaded."""
    return app.state.tables.get(
        dataset.id,
        lambda: RawTable.decode(dataset.table, dataset.columns, dataset.feature_columns, dataset.source_rows),
    )

