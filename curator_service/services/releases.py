"""Releases of a dataset's inputs: the certified ``gaussian`` mechanism and the uncertified ``po-gp-ucb``.

A release is made by a job of kind ``release`` (:mod:`curator_service.services.job_kinds.release`) on the cluster: the
request is checked here (:func:`check_release_request`), the job computes Z (:func:`compute_release`, the noise in
row chunks across the workers) and its commit stores it with its ledger entry in one write transaction, which locks
the dataset and checks the budget (:func:`store_release`). The projection matrix lives only inside the mechanism's
function call and its chunk tasks: it is never stored, logged or returned.

A ``gaussian`` release may carry private measurements: every row is measured at release time (a ``python``
evaluator is called n times, once per row, before anything is charged) and ỹ = clip(y, a, b) + N(0, σ_y²) is
drawn once per row by the release's own sampler and stored with it; queries then return the stored ỹ_i.
Inputs, DP-PCA and measurements are one Gaussian mechanism: one ledger entry (ε, δ).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.blobs import RawTable, decode_matrix, encode_matrix
from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import Dataset, Release
from curator_service.services.audit import record
from curator_service.services.ledger import Spend, charge
from curator_service.services.ledger_events import NON_PRIVATE, gaussian_release_event
from curator_service.services.policy import Principal, visible, visible_or_404
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.scaling import apply_scaling, neighbouring_step, scaling_warning
from shared.api.schemas import (
    CERTIFIED_MECHANISMS,
    FILE_ORDER_WARNING,
    MEASUREMENTS_NOTE,
    PRIVATE_MEASUREMENTS_NOTE,
    SEEDED_WARNING,
    UNCERTIFIED_MEASUREMENTS_NOTE,
    UNCERTIFIED_WARNING,
    UNKNOWN_SEED_WARNING,
    InputsPage,
    NeighbouringStep,
    ReleaseCreate,
    ReleaseMetadata,
    ReleaseOptions,
    ReleaseOut,
    ReleaseParameters,
    ScalingSpec,
)
from shared.dp.noise import NoiseSource
from shared.releases import gaussian_release, largest_r, po_gp_ucb_release
from shared.releases.gaussian import MapFn, PcaOption
from shared.releases.measurements import MeasurementOption

AUTO_DIM_CAP = 10
"""``dim: "auto"`` for ``po-gp-ucb`` when the paper's guideline admits no r: min(d, 10)."""


class ComputedRelease(ReleaseMetadata):
    """A mechanism's output before it is stored: the metadata ReleaseOut shows, the released inputs Z, the public
    parameters (gaussian) and the private measurements ỹ."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)
    Z: np.ndarray
    parameters: dict | None = None
    private_y: np.ndarray | None = None


def mechanism_input(table: RawTable, scaling: dict, mechanism: str) -> np.ndarray:
    """The matrix a mechanism sees: publicly scaled features for ``gaussian``, raw features for ``po-gp-ucb``
    (Algorithm 1 centres and normalises internally)."""
    if mechanism == "gaussian":
        return apply_scaling(table.features, ScalingSpec.model_validate(scaling))
    return table.features


def gaussian_dim(body: ReleaseOptions, d: int) -> int:
    """r: ``dim: "auto"`` keeps every feature (the identity projection, sensitivity exactly 1)."""
    return d if body.dim == "auto" else body.dim


def gaussian_options(body: ReleaseOptions) -> dict:
    """The keyword arguments of :func:`gaussian_release` that the request shapes: the wire models become the maths'
    plain options here (shared.api imports no maths). The options check themselves (ValueError with a sentence)."""
    pca = None if body.pca is None else PcaOption(body.pca.share, body.pca.clip_norm)
    measurements = (None if body.measurements is None
                    else MeasurementOption(body.measurements.clip, body.measurements.share))
    return dict(projection=body.projection, pca=pca, measurements=measurements)


def check_gaussian_options(body: ReleaseCreate, d: int) -> None:
    """Runs the release's own checks (dimension against projection, shares) on one row of zeros, so a bad
    combination is refused before any evaluator runs; nothing of it is kept or released."""
    try:
        gaussian_release(np.zeros((1, d)), body.epsilon, body.delta, gaussian_dim(body, d),
                         y=np.zeros(1) if body.measurements else None, **gaussian_options(body))
    except ValueError as exc:
        raise ApiError(422, "validation_error", f"{exc}; change the release options") from None


def check_measurable(dataset: Dataset) -> None:
    """Private measurements need every row's y at release time, from a deterministic evaluator, and a row order
    independent of the values (else an index alone tells something of y, outside the mechanism)."""
    if dataset.in_file_order:
        raise ApiError(422, "validation_error",
                       f"private 'measurements' need rows stored in a secret random order, and dataset {dataset.id} "
                       "was registered before pobo did that (its rows are in the file's order, which may follow the "
                       "values); re-register the table and release from the new dataset, or remove 'measurements'")
    if dataset.evaluator["kind"] == "manual":
        raise ApiError(422, "validation_error",
                       "private 'measurements' need a deterministic evaluator that can measure every row when the "
                       "release is made; this dataset's evaluator is 'manual' (answers posted by a person are not "
                       "covered); remove 'measurements' or register the table with a 'column' or 'python' evaluator")


def compute_release(X: np.ndarray, body: ReleaseCreate, y: np.ndarray | None, noise: NoiseSource,
                    rng: np.random.Generator, map_fn: MapFn | None = None) -> ComputedRelease:
    """Runs the mechanism on X (n × d) and, with private measurements, on y. ``noise`` and ``rng`` are the release's
    streams (:func:`shared.dp.noise.seeded_streams`: without a seed, M is fresh and gaussian's noise floating-point-
    safe; a seed, research mode only, makes both reproducible); ``map_fn`` draws gaussian's noise in row chunks."""
    d = X.shape[1]
    if body.mechanism == "gaussian":
        r = gaussian_dim(body, d)
        out = gaussian_release(X, body.epsilon, body.delta, r, rng, noise=noise, y=y, map_fn=map_fn,
                               **gaussian_options(body))
        parameters = ReleaseParameters.model_validate(out.public_parameters()).model_dump(mode="json")
        return ComputedRelease(Z=out.Z, dim=r, noise_std=float(out.noise_std), sensitivity=float(out.sensitivity),
                               parameters=parameters,
                               private_y=None if out.measurements is None else out.measurements.values)
    try:  # it centres and decomposes the raw features: values near 1e300 overflow
        with np.errstate(over="raise"):
            r = body.dim if body.dim != "auto" else (largest_r(X, body.epsilon, body.delta, d) or min(d, AUTO_DIM_CAP))
            po = po_gp_ucb_release(X, body.epsilon, body.delta, r, np.random.default_rng(body.seed))
        if not np.all(np.isfinite(po.Z)):
            raise FloatingPointError
    except (ArithmeticError, np.linalg.LinAlgError):
        raise ApiError(422, "validation_error",
                       "po-gp-ucb works on the raw features (it ignores the scaling), and this "
                       "table's values are too large for its arithmetic (it overflowed); rescale the features to "
                       "moderate units and register the table again, or use the 'gaussian' mechanism") from None
    return ComputedRelease(
        Z=po.Z, dim=r, omega=float(po.omega), sigma_min=float(po.sigma_min), lifted=bool(po.lifted)
    )


def release_purpose(body: ReleaseCreate, computed: ComputedRelease) -> str:
    """The ledger's purpose: what was released, and how (one entry for every part)."""
    what = "inputs and measurements" if computed.private_y is not None else "inputs"
    how = body.mechanism if computed.parameters is None else f"{body.mechanism}, {computed.parameters['projection']}"
    return f"release of {what} ({how})"


def step_of(release: Release, dataset: Dataset) -> NeighbouringStep | None:
    """What the release hides in the table's units; None for po-gp-ucb, which hides nothing (and ignores scaling)."""
    if release.mechanism not in CERTIFIED_MECHANISMS:
        return None
    return neighbouring_step(ScalingSpec.model_validate(dataset.scaling), dataset.feature_columns)


def release_warnings(release: Release, step: NeighbouringStep | None) -> list[str]:
    """Why a release is not certified (its mechanism, a known or possible seed) and what it does not hide."""
    warnings = [] if release.mechanism in CERTIFIED_MECHANISMS else [UNCERTIFIED_WARNING]
    if release.seeded is None:
        warnings.append(UNKNOWN_SEED_WARNING)
    elif release.seeded:
        warnings.append(SEEDED_WARNING)
    if step is not None and (warning := scaling_warning(step)) is not None:
        warnings.append(warning)
    return warnings


def measurements_note(release: Release) -> str:
    """What the release's answers are, and whether its (ε, δ) covers them: private ones of a certified release only
    (a seeded release's ỹ are reproducible)."""
    if not (release.parameters and release.parameters.get("measurements")):
        return MEASUREMENTS_NOTE
    return PRIVATE_MEASUREMENTS_NOTE if release.certified else UNCERTIFIED_MEASUREMENTS_NOTE


def dataset_warnings(dataset: Dataset) -> list[str]:
    """What every release of this dataset inherits from how it was stored."""
    return [FILE_ORDER_WARNING] if dataset.in_file_order else []


def not_served(settings: Settings, release: Any) -> ApiError | None:
    """Why this server no longer serves a release made under laxer settings (None: it does). ``release``: the ORM row,
    or a Core row with its ``id``, ``mechanism`` and ``seeded`` (the query path's).

    An uncertified mechanism after ``POBO_ALLOW_UNCERTIFIED_MECHANISMS`` is turned off, or a seeded (or possibly
    seeded) release in production mode: its inputs, sessions and new queries are refused; its metadata stays."""
    if release.mechanism not in CERTIFIED_MECHANISMS and not settings.allow_uncertified_mechanisms:
        return ApiError(403, "uncertified_mechanism_disabled",
                        f"release {release.id} uses {release.mechanism!r}, which is not differentially private, and "
                        "this server has POBO_ALLOW_UNCERTIFIED_MECHANISMS off: its inputs, sessions and queries "
                        "are refused; use a 'gaussian' release")
    if release.seeded is not False and settings.mode == "production":
        how = "was made with a seed" if release.seeded else "may have been made with a seed"
        return ApiError(403, "seed_refused",
                        f"release {release.id} {how} and this server runs with POBO_MODE=production: its inputs, "
                        "sessions and queries are refused; ask the curator for an unseeded release")
    return None


def check_served(settings: Settings, release: Any) -> None:
    if (refusal := not_served(settings, release)) is not None:
        raise refusal


def answers_repeat(release: Release, dataset: Dataset) -> bool:
    """Whether every query of a row gets the same answer: private measurements are drawn once per row, and a column
    evaluator reads the same cell (its simulated noise, if any, is drawn once per row); python and manual
    evaluators promise nothing."""
    private = bool(release.parameters and release.parameters.get("measurements"))
    return private or dataset.evaluator["kind"] == "column"


def release_out(release: Release, dataset: Dataset, settings: Settings) -> ReleaseOut:
    step = step_of(release, dataset)
    refusal = not_served(settings, release)
    return ReleaseOut(
        id=release.id,
        dataset_id=release.dataset_id,
        mechanism=release.mechanism,
        certified=release.certified,
        seeded=release.seeded,
        epsilon=release.epsilon,
        delta=release.delta,
        n=release.n,
        **ReleaseMetadata.model_validate(release, from_attributes=True).model_dump(),
        projection=release.projection,
        parameters=release.parameters,
        neighbouring_step=step,
        goal=dataset.goal,
        feature_columns=dataset.feature_columns,
        evaluator_kind=dataset.evaluator["kind"],
        measurement=dataset.measurement,
        label_columns=dataset.label_columns or [],
        answers_repeat=answers_repeat(release, dataset),
        warnings=(release_warnings(release, step) + dataset_warnings(dataset)
                  + ([] if refusal is None else [refusal.detail])),
        measurements_note=measurements_note(release),
        created_at=release.created_at,
    )


def _check_mechanism_allowed(settings: Settings, mechanism: str) -> None:
    if mechanism not in CERTIFIED_MECHANISMS and not settings.allow_uncertified_mechanisms:
        raise ApiError(403, "uncertified_mechanism_disabled",
                       f"mechanism {mechanism!r} is not differentially private and is disabled on this server; "
                       "use 'gaussian', or have the operator set POBO_ALLOW_UNCERTIFIED_MECHANISMS=true")


def release_spend(body: ReleaseCreate, computed: ComputedRelease, principal: Principal) -> Spend:
    """The ledger's record of a release: its (ε, δ), what it released and, as data, its mechanism's parts."""
    if computed.parameters is None:
        event = NON_PRIVATE
    else:
        event = gaussian_release_event(ReleaseParameters.model_validate(computed.parameters))
    return Spend(epsilon=body.epsilon, delta=body.delta, purpose=release_purpose(body, computed),
                 mechanism=body.mechanism, event=event, actor=principal)


def check_release_request(session: Session, settings: Settings, dataset_id: int,
                          body: ReleaseCreate) -> None:
    """What the server refuses before a release's job is submitted: a disabled mechanism, an unknown dataset,
    measurements the dataset cannot give (the job's submission checks the seed, the options against d and the
    budget)."""
    _check_mechanism_allowed(settings, body.mechanism)
    dataset = get_or_404(session, Dataset, dataset_id)
    if body.measurements is not None:
        check_measurable(dataset)


def release_params(body: ReleaseCreate) -> dict:
    """The release job's parameters: the request without its ``request_id`` (a retry's body must equal them)."""
    return body.model_dump(mode="json", exclude={"request_id"})


def store_release(session: Session, principal: Principal, dataset_id: int, body: ReleaseCreate,
                  computed: ComputedRelease) -> Release:
    """Charges the release and stores it with its ledger entry and audit event, in the caller's write transaction
    (the dataset is locked; refused with ``budget_exceeded`` if it no longer fits)."""
    entry = charge(session, dataset_id, release_spend(body, computed, principal))
    release = Release(
        dataset_id=dataset_id,
        mechanism=body.mechanism,
        certified=body.mechanism in CERTIFIED_MECHANISMS and body.seed is None,
        seeded=body.seed is not None,
        epsilon=body.epsilon,
        delta=body.delta,
        n=computed.Z.shape[0],
        **computed.model_dump(include=set(ReleaseMetadata.model_fields)),
        projection=None if computed.parameters is None else computed.parameters["projection"],
        parameters=computed.parameters,
        inputs=encode_matrix(computed.Z),
        measurements=None if computed.private_y is None else encode_matrix(computed.private_y),
    )
    session.add(release)
    session.flush()
    entry.release_id = release.id
    record(session, principal, "release.create", f"release:{release.id}")
    return release


def stored_release_out(session: Session, settings: Settings, release_id: int) -> ReleaseOut:
    """A stored release as its creator sees it (after its job committed it)."""
    release = session.get_one(Release, release_id)
    return release_out(release, session.get_one(Dataset, release.dataset_id), settings)


def list_releases(session: Session, settings: Settings, principal: Principal,
                  dataset_id: int | None = None) -> list[ReleaseOut]:
    """The releases this caller may see (a modeler: those its key is scoped to), oldest first."""
    statement = (select(Release, Dataset).join(Dataset, Dataset.id == Release.dataset_id)
                 .where(visible(principal, Release)).order_by(Release.id))
    if dataset_id is not None:
        statement = statement.where(Release.dataset_id == dataset_id)
    return [release_out(release, dataset, settings) for release, dataset in session.execute(statement)]


def get_release(session: Session, settings: Settings, principal: Principal, release_id: int) -> ReleaseOut:
    release = visible_or_404(session, principal, Release, release_id)
    return release_out(release, session.get_one(Dataset, release.dataset_id), settings)


def release_inputs_blob(session: Session, settings: Settings, principal: Principal, release_id: int) -> bytes:
    """Z as the stored ``.npy`` bytes, for a caller who may see the release and a server that still serves it."""
    release = visible_or_404(session, principal, Release, release_id)
    check_served(settings, release)
    return release.inputs


def inputs_page(blob: bytes, offset: int, limit: int) -> InputsPage:
    """Rows ``offset`` to ``offset + limit`` of Z."""
    Z = decode_matrix(blob)
    if offset > Z.shape[0]:
        raise ApiError(422, "validation_error",
                       f"'offset' {offset} is past the end; the release has {Z.shape[0]} rows (offset 0 to "
                       f"{Z.shape[0]})")
    return InputsPage(n=Z.shape[0], dim=Z.shape[1], offset=offset, rows=Z[offset : offset + limit].tolist())
