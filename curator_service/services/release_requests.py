"""A release request, answered the way docs/design.md §5 says: checked, submitted as a ``release`` job (idempotent
by ``request_id``), handed to the cluster and waited for up to ``POBO_RELEASE_WAIT_SECONDS``.

Apart from :mod:`.releases` because it submits jobs (:mod:`.jobs`), whose registry imports the ``release`` kind,
which imports :mod:`.releases`.
"""

from __future__ import annotations

from collections.abc import Callable

from curator_service.persistence.db import Database
from curator_service.services import jobs, releases
from curator_service.services.policy import Principal
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import JobCreate, JobOut, ReleaseCreate, ReleaseOut


def request_release(db: Database, settings: Settings, principal: Principal, dataset_id: int, body: ReleaseCreate,
                    dispatch: Callable[[int], None]) -> tuple[ReleaseOut | JobOut, bool]:
    """The stored release, or its job while it runs (or after it ended without one: its message says why), and
    whether this request created the job (False: a retry of ``body.request_id``). A new job goes to ``dispatch``
    (the cluster, or a worker's loop run here). A job that failed on an API error within the wait (a python
    evaluator's, the commit's final budget check) raises that error, as the request did before releases were jobs."""
    with db.read() as session:
        releases.check_release_request(session, settings, dataset_id, body)
    submitted = JobCreate(kind="release", dataset_id=dataset_id, params=releases.release_params(body),
                          request_id=body.request_id)
    job, created = jobs.submit_job(db, settings, principal, submitted, own_endpoint=True)
    if created:
        dispatch(job.id)
    finished = jobs.wait_for_job(db, job.id, settings.release_wait_seconds)
    if finished.status == "succeeded" and finished.result is not None:
        with db.read() as session:
            return releases.stored_release_out(session, settings, finished.result["release_id"]), created
    if finished.status == "failed" and (error := (finished.result or {}).get("error")) is not None:
        raise ApiError(error["status"], error["code"], finished.message or "the release failed")
    return jobs.job_out(finished), created
