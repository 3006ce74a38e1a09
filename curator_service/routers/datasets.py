"""``/v1/datasets``: register (CSV upload or a server-side path), list, read, the curator's row order, plan."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from curator_service.errors import api_error_from_validation
from curator_service.routers.auth import Curator
from curator_service.routers.params import DatasetId
from curator_service.services import audit, datasets, planner
from curator_service.services.datasets import invalid
from curator_service.services.policy import Principal
from shared.api.errors import ApiError
from shared.api.schemas import DatasetFromPath, DatasetOut, DatasetSpec, PlanOut, PlanRequest, RowOrder

router = APIRouter(tags=["datasets"])

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


async def _read_registration(request: Request) -> tuple[DatasetSpec, bytes]:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=8)
        upload, raw_spec = form.get("file"), form.get("spec")
        if upload is None or isinstance(upload, str):
            raise invalid("the multipart form needs a 'file' part holding the CSV")
        if not isinstance(raw_spec, str):
            raise invalid("the multipart form needs a 'spec' part holding the dataset spec as a JSON string")
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
        path = datasets.confined_path(request.app.state.settings, spec.path)
        limit = request.app.state.settings.max_upload_bytes
        if path.stat().st_size > limit:
            raise ApiError(413, "payload_too_large",
                           f"the file at {spec.path!r} is larger than the limit of {limit} bytes; raise "
                           "POBO_MAX_UPLOAD_BYTES")
        return DatasetSpec.model_validate(spec.model_dump(exclude={"path"})), path.read_bytes()
    raise ApiError(415, "validation_error",
                   "send the dataset as multipart/form-data ('file' + 'spec') or as JSON with a server-side 'path'")


@router.post("/v1/datasets", status_code=201, response_model=DatasetOut,
             summary="Register a dataset (CSV upload or a path on the server)", openapi_extra=_REGISTRATION_BODY)
async def create_dataset(request: Request, principal: Curator) -> DatasetOut:
    """Registers a table: multipart (`file`: the CSV, `spec`: the DatasetSpec as JSON), or JSON with a `path` inside the
    server's import root (POBO_IMPORT_ROOT; unset: uploads only). The whole table is validated before anything is
    stored; errors name the column and row, never a cell. Rows are stored in a secret random order."""
    spec, content = await _read_registration(request)
    return await run_in_threadpool(_register, request, principal, spec, content)


def _register(request: Request, principal: Principal, spec: DatasetSpec, content: bytes) -> DatasetOut:
    table = datasets.parse_registration(spec, content)  # validated in full before the transaction
    with request.app.state.db.write() as session:
        return datasets.store_dataset(session, principal, spec, table)


@router.get("/v1/datasets", response_model=list[DatasetOut], summary="List datasets (metadata only)")
def list_datasets(request: Request, principal: Curator) -> list[DatasetOut]:
    """Metadata of every dataset: n, d, feature columns, evaluator kind, scaling and what one neighbouring step hides,
    budget total, spent and remaining. Never a row. The read is audited."""
    with request.app.state.db.write() as session:
        audit.record(session, principal, "dataset.list")
        return datasets.list_datasets(session)


@router.get("/v1/datasets/{dataset_id}", response_model=DatasetOut, summary="One dataset's metadata and budget")
def get_dataset(request: Request, principal: Curator, dataset_id: DatasetId) -> DatasetOut:
    """One dataset's metadata and budget (never a row). The read is audited."""
    with request.app.state.db.write() as session:
        out = datasets.get_dataset(session, dataset_id)
        audit.record(session, principal, "dataset.read", f"dataset:{dataset_id}")
        return out


@router.get("/v1/datasets/{dataset_id}/row-order", response_model=RowOrder,
            summary="Curator only: the file row behind each row index (never give it to a modeler)")
def get_row_order(request: Request, principal: Curator, dataset_id: DatasetId) -> RowOrder:
    """The registered file's row behind each row index of the dataset's releases: undoes the secret order, so it is for
    the curator's own analyses only. Audited."""
    with request.app.state.db.write() as session:
        return datasets.row_order(session, request.app.state.tables, principal, dataset_id)


@router.post("/v1/datasets/{dataset_id}/plan", response_model=PlanOut, tags=["planner"],
             summary="Plan a gaussian release: noise, bound and simulated regret per ε (charges nothing)")
def plan_release(request: Request, principal: Curator, dataset_id: DatasetId, body: PlanRequest) -> PlanOut:
    """Plans a release at several ε before anything is charged: noise-to-spread, the bound on any modeler's advantage
    over random search, and optionally a simulated regret curve on stand-in data of the same n, d and scaling. Reads
    no row, spends nothing."""
    return planner.plan_release(request.app.state.db, principal, dataset_id, body)
