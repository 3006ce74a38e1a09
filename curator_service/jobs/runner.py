"""The API side of the job engine: hands queued jobs to the Dask cluster and reaps jobs whose worker died.

Nothing of a job runs in the API process: :meth:`JobRunner.submit` sends a :class:`~.worker.JobTask` (the job's id,
never its data) to the scheduler, fire-and-forget, so a job outlives the replica that submitted it; the worker claims
it in the database (:mod:`.state`), which is what keeps several replicas from running it twice. A reaper thread
fails running jobs whose heartbeat stopped, so a restart fails only the jobs whose worker really died.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from distributed import Client, Future, fire_and_forget
from sqlalchemy import select

from curator_service.errors import log_unexpected
from curator_service.jobs import JobKind, charged_at_submission, cluster, state
from curator_service.jobs.worker import JobTask, run_job, without_password
from curator_service.persistence.models import Job, utcnow
from curator_service.settings import refuse_seed_in_production
from shared.api.errors import ApiError

if TYPE_CHECKING:
    from fastapi import FastAPI

REAP_EVERY_SECONDS = 5.0
RESEND_AFTER_SECONDS = 60.0  # a job queued this long is sent to the cluster again (once a minute at most)


class JobRunner:
    """Sends jobs to the Dask cluster (``POBO_DASK_SCHEDULER``, or the embedded one of ``POBO_JOB_WORKERS`` worker
    processes) and reaps dead ones. The client connects on first use, so an app that runs no job starts none.
    ``kinds``: the job kinds it runs, by name (a job names its kind)."""

    def __init__(self, app: FastAPI, kinds: Mapping[str, JobKind]) -> None:
        self.settings = app.state.settings
        self.db = app.state.db
        self.kinds = kinds
        self._client: Client | None = None
        self._futures: dict[int, Future] = {}
        self._sent_at: dict[int, float] = {}  # when each job still queued was last sent (monotonic seconds)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._reaper = threading.Thread(target=self._reap_forever, name="pobo-job-reaper", daemon=True)

    @property
    def client(self) -> Client:
        with self._lock:
            if self._stopping.is_set():
                raise RuntimeError("the job engine is shutting down")
            if self._client is None:
                self._client = cluster.connect(self.settings, self.preload)
            return self._client

    @property
    def preload(self) -> list[str]:
        """The modules of the kinds it runs: an embedded cluster's workers import them as they start."""
        return sorted({kind.run.__module__ for kind in self.kinds.values()})

    @property
    def accepting(self) -> bool:
        """Whether submitted jobs will run now (false while the embedded cluster starts and once shutting down)."""
        return not self._stopping.is_set() and not cluster.embedded_starting()

    def recover(self) -> None:
        """At start: fail running jobs whose worker is gone; then, in the reaper's thread (the service answers
        meanwhile; connecting may wait for the cluster), send every queued job again (a claim runs it once)."""
        self.reap()
        self._reaper.start()

    def _send_queued(self) -> None:
        with self.db.read() as session:
            queued = list(session.scalars(select(Job.id).where(Job.status == "queued").order_by(Job.id)))
        for job_id in queued:
            self.submit(job_id)

    def reap(self) -> list[int]:
        with self.db.write() as session:
            return state.reap(session, self.charged_at_submission)

    def charged_at_submission(self, kind_name: str) -> bool:
        return charged_at_submission(self.kinds.get(kind_name))

    def _reap_forever(self) -> None:
        try:
            self._send_queued()
        except Exception as exc:  # noqa: BLE001 - the reaper must outlive a database hiccup
            log_unexpected(exc)
        while not self._stopping.wait(REAP_EVERY_SECONDS):
            try:
                self.reap()
                self.resend_waiting()
            except Exception as exc:  # noqa: BLE001 - the reaper must outlive a database hiccup
                log_unexpected(exc)

    def resend_waiting(self) -> list[int]:
        """Sends again the jobs queued for over :data:`RESEND_AFTER_SECONDS` (at most that often each): a task the
        cluster lost (a restarted scheduler drops fire-and-forget tasks) must not leave its job queued, holding its
        reservation, until the next start. A job sent twice still runs once (the claim). A job whose task waits for its
        key's turn is not sent again: that task beats (:func:`~.state.waiting_for_turn`)."""
        cutoff = utcnow() - timedelta(seconds=RESEND_AFTER_SECONDS)
        with self.db.read() as session:
            waiting = list(session.scalars(select(Job.id).where(Job.status == "queued", Job.created_at < cutoff,
                                                                ~state.waiting_for_turn())))
        now = time.monotonic()
        with self._lock:
            self._sent_at = {job_id: self._sent_at[job_id] for job_id in waiting if job_id in self._sent_at}
            due = [job_id for job_id in waiting if now - self._sent_at.get(job_id, -math.inf) >= RESEND_AFTER_SECONDS]
        for job_id in due:
            self.submit(job_id)
        return due

    def submit(self, job_id: int) -> None:
        """Sends a queued job to the cluster; one that cannot start (its kind is gone, or a seed queued in research
        mode meets production) fails now instead of staying queued."""
        try:
            kind = self._startable(job_id)
            if kind is None:
                return
            task = JobTask(job_id=job_id, database_url=without_password(self.db.url), kind=kind,
                           time_limit_seconds=min(self.settings.job_time_limit_seconds,
                                                  kind.time_limit_seconds or float("inf")))
            # A fresh key per sending: job ids repeat across databases sharing a cluster, and a key Dask already
            # knows would be taken for that finished task.
            future = self.client.submit(run_job, task, key=f"pobo-job-{job_id}-{uuid.uuid4().hex}", pure=False)
        except Exception as exc:  # noqa: BLE001 - a job must never stay queued unseen
            log_unexpected(exc)
            self._fail_queued(job_id, f"the job could not start ({type(exc).__name__}); the curator's log says where")
            return
        fire_and_forget(future)  # the job outlives this replica; its state is in the database
        with self._lock:
            self._futures = {i: f for i, f in self._futures.items() if not f.done()}
            self._futures[job_id] = future
            self._sent_at[job_id] = time.monotonic()

    def _startable(self, job_id: int) -> JobKind | None:
        with self.db.read() as session:
            job = session.get(Job, job_id)
            if job is None or job.status != "queued":
                return None
            name, seed = job.kind, job.params.get("seed")
        try:  # submission refused it already; this catches a job queued in research mode, run in production
            refuse_seed_in_production(self.settings, seed)
        except ApiError as exc:
            self._fail_queued(job_id, exc.detail)
            return None
        return self.kinds[name]

    def _fail_queued(self, job_id: int, reason: str) -> None:
        with self.db.write() as session:
            note = state.budget_note(self.charged_at_submission(session.get(Job, job_id).kind))
            state.finish(session, job_id, None, "failed", f"{reason}; {note}")

    def cancel(self, job_id: int) -> None:
        """Takes the job's task off the cluster if it has not started; a running job stops at its next check."""
        with self._lock:
            future = self._futures.pop(job_id, None)
        if future is not None:
            future.cancel(force=True)

    def shutdown(self) -> None:
        """Stops sending and reaping. Jobs already on the cluster go on (the embedded cluster stops with the process;
        a restarted service's reaper then fails them)."""
        self._stopping.set()
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
