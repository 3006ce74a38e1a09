"""Following a job to its end over HTTP: the one poller both the curator's admin client and the modeler's job
commands use (``GET /v1/jobs/{id}``, docs/design.md §5)."""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.api.http_client import ApiClient
from shared.api.schemas import API_PREFIX, FINISHED_JOB_STATUSES, JobOut


def follow_job(api: ApiClient, job_id: int, *, poll: float = 1.0, timeout: float | None = None,
               on_progress: Callable[[JobOut], None] | None = None) -> JobOut:
    """Reads job ``job_id`` every ``poll`` seconds until it finished (:data:`FINISHED_JOB_STATUSES`) and returns it
    as last read: finished, or still queued or running once ``timeout`` seconds passed (None: no limit; each read
    retries through a curator restart). ``on_progress(job)`` is called after every read."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        job = api.get(f"{API_PREFIX}/jobs/{job_id}", model=JobOut)
        if on_progress is not None:
            on_progress(job)
        if job.status in FINISHED_JOB_STATUSES:
            return job
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return job
        time.sleep(poll if left is None else min(poll, left))
