"""Releases of a dataset's inputs: create (a job, charged when stored), list, read, download Z, the reconstruction
audit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse

from curator_service.routers.auth import AnyRole, Curator
from curator_service.routers.params import DatasetFilter, DatasetId, Offset, ReleaseId
from curator_service.services import audit, reconstruction, release_requests, releases
from shared.api.schemas import (
    InputsPage,
    JobOut,
    ReconstructionAuditOut,
    ReconstructionAuditRequest,
    ReleaseCreate,
    ReleaseOut,
)

router = APIRouter(tags=["releases"])

NPY = "application/x-npy"


@router.post(
    "/v1/datasets/{dataset_id}/releases", status_code=201, response_model=ReleaseOut,
    summary="Release a dataset's inputs (a job; charged to the budget when stored)",
    responses={
        200: {"model": ReleaseOut, "description": "A retry of a `request_id` whose release is stored: that release."},
        202: {"model": JobOut, "description": "The release's job, still running (or ended without a release: its "
                                              "status and message say why); `Location` is the job's URL. Its result is "
                                              "`{\"release_id\": N}` once stored."},
    },
)
def create_release(request: Request, response: Response, principal: Curator, dataset_id: DatasetId,
                   body: ReleaseCreate) -> ReleaseOut | JSONResponse:
    """Releases a dataset's inputs with a mechanism and (ε, δ, dim): the certified `gaussian` (optionally with private
    measurements or DP-PCA), or the uncertified `po-gp-ucb` when the operator enables it. The release runs as a job of
    kind `release` on the curator's workers (the noise in row chunks across them). The request waits for it up to
    `POBO_RELEASE_WAIT_SECONDS` (default 2 s): finished, the answer is the release (201); otherwise the job (202, with
    `Location: /v1/jobs/{id}`): follow its progress there, cancel it with `POST /v1/jobs/{id}/cancel`. The release is
    charged to the dataset's budget in the transaction that stores it, at the end (a cancelled one costs nothing);
    submission already refuses one that does not fit (409 budget_exceeded). With a `request_id`, a retry returns the
    same job or release (200 once stored) and is charged once; the same `request_id` with another body is a 409. The
    projection matrix is never stored or returned."""
    state = request.app.state
    made, created = release_requests.request_release(state.db, state.settings, principal, dataset_id, body,
                                                     state.jobs.submit)
    if isinstance(made, JobOut):
        return JSONResponse(made.model_dump(mode="json"), status_code=202, headers={"Location": f"/v1/jobs/{made.id}"})
    response.status_code = 201 if created else 200
    return made


@router.get("/v1/releases", response_model=list[ReleaseOut], summary="Releases this caller may see")
def list_releases(
    request: Request,
    principal: AnyRole,
    dataset_id: DatasetFilter = None,
) -> list[ReleaseOut]:
    """Release metadata this caller may see: every release for the curator, the releases its key is scoped to for a
    modeler. Filter by dataset."""
    with request.app.state.db.read() as session:
        return releases.list_releases(session, request.app.state.settings, principal, dataset_id)


@router.get("/v1/releases/{release_id}", response_model=ReleaseOut, summary="One release's metadata")
def get_release(request: Request, principal: AnyRole, release_id: ReleaseId) -> ReleaseOut:
    """One release's metadata: mechanism, certified, (ε, δ), n, dim, noise and every public parameter, warnings. A
    release out of a modeler's scope answers 404, like one that does not exist."""
    with request.app.state.db.read() as session:
        return releases.get_release(session, request.app.state.settings, principal, release_id)


@router.get(
    "/v1/releases/{release_id}/inputs",
    response_model=InputsPage,
    summary="The released inputs Z, a page of rows (or the whole matrix as .npy)",
    responses={200: {"content": {NPY: {"schema": {"type": "string", "format": "binary"}}}}},
)
def get_release_inputs(
    request: Request,
    principal: AnyRole,
    release_id: ReleaseId,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=100_000, description="Rows in the page.")] = 10_000,
    accept: Annotated[str | None, Header()] = None,
) -> InputsPage | Response:
    """The released inputs Z: a JSON page of rows (offset, limit), or with `Accept: application/x-npy` the whole n × dim
    matrix as a .npy body. Every download is audited."""
    npy = bool(accept and NPY in accept)
    what = "the whole matrix as .npy" if npy else f"rows from {offset}, at most {limit}"
    with request.app.state.db.write() as session:  # a download is audited, like every use of a release
        blob = releases.release_inputs_blob(session, request.app.state.settings, principal, release_id)
        page = None if npy else releases.inputs_page(blob, offset, limit)
        audit.record(session, principal, "release.inputs", f"release:{release_id} ({what})")
    return Response(content=blob, media_type=NPY) if page is None else page


@router.post("/v1/releases/{release_id}/audits/reconstruction", response_model=ReconstructionAuditOut,
             summary="Reconstruction audit: aggregate error of an attacker knowing K records")
def reconstruction_audit(
    request: Request, principal: Curator, release_id: ReleaseId, body: ReconstructionAuditRequest
) -> ReconstructionAuditOut:
    """Simulates an attacker who knows `known` records and their row indices and reports the aggregate reconstruction
    error over the other rows (never a row): shows how exposed a release is (po-gp-ucb: exactly)."""
    state = request.app.state
    return reconstruction.reconstruction_audit(state.db, state.tables, state.settings, principal, release_id, body)
