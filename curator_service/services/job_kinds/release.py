"""``release``: a release of a dataset's inputs, made on the cluster and charged when it is stored.

Created by ``POST /v1/datasets/{id}/releases`` (its checks: :func:`~curator_service.services.releases.
check_release_request`); the parameters are the request's :class:`~shared.api.schemas.ReleaseCreate` without its
``request_id``. ``run`` measures every row when private measurements are asked for, then computes Z with gaussian's
noise in row chunks spread over the cluster (``ctx.map``; M is drawn once, here, and goes to the chunk tasks only),
reporting progress per chunk. ``commit`` charges and stores the release in one write transaction (the final budget
check; a key revoked since is refused) and returns ``{"release_id": id}``; a release cancelled or failed before its
commit is charged nothing.

Like every kind, a release counts in its key's ``POBO_JOB_LIMIT_PER_KEY`` and running share, so a curator
key's large releases cannot hold every worker while another key's jobs wait (the admin token is not limited).

Progress and timing depend on public facts only: n and r (the number of chunks), the evaluator's speed.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from curator_service.jobs import DatasetInfo, JobContext, JobKind
from curator_service.jobs.outcomes import JobFailed
from curator_service.persistence.models import ApiKey, Job
from curator_service.services.evaluators import measure_all
from curator_service.services.policy import ADMIN, Principal, principal_of_key
from curator_service.services.releases import (
    ComputedRelease,
    check_gaussian_options,
    compute_release,
    mechanism_input,
    store_release,
)
from shared.api.schemas import CERTIFIED_MECHANISMS, UNCERTIFIED_WARNING, ReleaseCreate


def cost(body: ReleaseCreate, dataset: DatasetInfo | None) -> tuple[float, float]:
    """The release's (ε, δ); its options are checked against the dataset's d (a bad combination is a 422)."""
    if dataset is not None and body.mechanism == "gaussian":
        check_gaussian_options(body, dataset.d)
    return body.epsilon, body.delta


def run(ctx: JobContext[ReleaseCreate]) -> ComputedRelease:
    body = ctx.params
    dataset, table = ctx.require_dataset(), ctx.require_table()
    y = None
    if body.measurements is not None:
        if ctx.simulation_key is None:  # every dataset has one (registration draws it; migration 0005 for older ones)
            raise TypeError(f"job {ctx.job_id}'s dataset has no simulation key")
        ctx.progress(0.0, "measuring every row")
        y = measure_all(dataset.evaluator, table, ctx.simulation_key)
        ctx.check_cancelled()
    X = mechanism_input(table, dataset.scaling.model_dump(mode="json"), body.mechanism)
    ctx.progress(0.0, "drawing the noise")

    def chunk_done(done: int, total: int) -> None:
        ctx.progress(done / total, f"drawing the noise: {done} of {total} row chunks")

    return compute_release(X, body, y, ctx.noise, ctx.rng, map_fn=partial(ctx.map, progress=chunk_done))


def uncertified(params: dict[str, Any]) -> str | None:
    """The warning of a release job whose mechanism is not differentially private (po-gp-ucb)."""
    return None if params["mechanism"] in CERTIFIED_MECHANISMS else UNCERTIFIED_WARNING


def submitter(session: Session, job: Job) -> Principal:
    """Who submitted the job, as the ledger and the audit log name them (the admin, or a curator key). A key revoked
    since is refused: nothing is charged under a key its owner took back."""
    if job.key_id is None:
        return ADMIN
    key = session.get_one(ApiKey, job.key_id)
    if key.revoked:
        raise JobFailed(f"key {key.id} that asked for this release was revoked before it was stored; nothing was "
                        "stored or charged")
    return principal_of_key(key)


def commit(session: Session, job: Job, body: ReleaseCreate, computed: ComputedRelease) -> dict[str, Any]:
    if job.dataset_id is None:  # submission refuses a release without one
        raise RuntimeError(f"release job {job.id} has no dataset")
    release = store_release(session, submitter(session, job), job.dataset_id, body, computed)
    return {"release_id": release.id}


KIND = JobKind(
    name="release",
    description="A release of a dataset's inputs (POST /v1/datasets/{id}/releases), charged when it is stored.",
    params=ReleaseCreate,
    cost=cost,
    run=run,
    commit=commit,
    uncertified=uncertified,
    endpoint="POST /v1/datasets/{id}/releases",
)
