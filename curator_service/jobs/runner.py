"""Runs jobs in background worker threads and persists their status, progress and result."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from fastapi import FastAPI
from sqlalchemy import select

from curator_service.errors import log_unexpected
from curator_service.jobs import KINDS, DatasetInfo, JobCancelled, JobContext, JobFailed, JobKind
from curator_service.persistence.models import Dataset, Job, utcnow
from curator_service.services.datasets import cached_table
from curator_service.services.ledger import budget_status
from curator_service.services.policy import refuse_seed_in_production
from shared.api.errors import ApiError
from shared.api.schemas import ScalingSpec
from shared.dp.noise import seeded_streams

INTERRUPTED = "the service stopped while this job was running; its privacy budget stays charged; submit it again"


def dataset_info(session, dataset: Dataset) -> DatasetInfo:
    status = budget_status(session, dataset)
    return DatasetInfo(
        id=dataset.id, n=dataset.n, d=dataset.d, columns=tuple(dataset.columns),
        feature_columns=tuple(dataset.feature_columns), evaluator=dict(dataset.evaluator),
        remaining_epsilon=status.remaining_epsilon, remaining_delta=status.remaining_delta,
        scaling=ScalingSpec.model_validate(dataset.scaling),
    )


def _builtin(value: object) -> object:
    """NumPy scalars and arrays in a job's result become plain JSON numbers and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"a job result may hold only JSON values, not {type(value).__name__}")


class JobRunner:
    """A pool of worker threads (``POBO_JOB_WORKERS``, default 1) that runs queued jobs one by one."""

    def __init__(self, app: FastAPI, workers: int) -> None:
        self.app = app
        self.db = app.state.db
        self._executor = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="pobo-job")
        self._stopping = False

    def recover(self) -> None:
        """At start: jobs that were running when the service died failed; queued ones run again."""
        with self.db.write() as session:
            for job in session.scalars(select(Job).where(Job.status == "running")):
                job.status, job.message, job.finished_at = "failed", INTERRUPTED, utcnow()
            queued = list(session.scalars(select(Job.id).where(Job.status == "queued").order_by(Job.id)))
        for job_id in queued:
            self.submit(job_id)

    def submit(self, job_id: int) -> None:
        self._executor.submit(self._run, job_id)

    @property
    def accepting(self) -> bool:
        """Whether submitted jobs will run (false once the service is shutting down)."""
        return not self._stopping

    def shutdown(self) -> None:
        self._stopping = True
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _update(self, job_id: int, **fields: object) -> None:
        with self.db.write() as session:
            job = session.get(Job, job_id)
            for name, value in fields.items():
                setattr(job, name, value)

    def _cancel_requested(self, job_id: int) -> bool:
        if self._stopping:
            return True
        with self.db.read() as session:
            return bool(session.scalar(select(Job.cancel_requested).where(Job.id == job_id)))

    def _run(self, job_id: int) -> None:
        try:
            started = self._start(job_id)
        except Exception as exc:  # noqa: BLE001 - a job must never stay queued or running unseen
            log_unexpected(exc)
            self._finish(job_id, "failed", f"the job could not start ({type(exc).__name__}); the curator's log says "
                         "where; its privacy budget stays charged")
            return
        if started is None:
            return
        kind, ctx = started
        try:
            result = json.loads(json.dumps(kind.run(ctx), allow_nan=False, default=_builtin))
        except JobCancelled:
            self._finish(job_id, "cancelled", INTERRUPTED if self._stopping else "cancelled; the budget stays charged")
        except JobFailed as exc:
            self._finish(job_id, "failed", str(exc))
        except Exception as exc:  # noqa: BLE001 - report by type only: the message might quote data
            log_unexpected(exc)
            self._finish(job_id, "failed", f"the job failed with {type(exc).__name__}; the curator's log says where")
        else:
            if self._cancel_requested(job_id):
                self._finish(job_id, "cancelled", "cancelled; the budget stays charged")
            else:
                self._finish(job_id, "succeeded", "done", result=result)

    def _start(self, job_id: int) -> tuple[JobKind, JobContext] | None:
        """Marks a queued job running and builds its context; None when there is nothing to run."""
        with self.db.write() as session:
            job = session.get(Job, job_id)
            if job is None or job.status != "queued":
                return None
            seed = job.params.get("seed")
            try:  # submission refused it already; this catches a job queued in research mode, run in production
                refuse_seed_in_production(self.app.state.settings, seed)
            except ApiError as exc:
                job.status, job.message, job.finished_at = "failed", exc.detail, utcnow()
                return None
            kind = KINDS[job.kind]
            info = table = None
            if job.dataset_id is not None:
                dataset = session.get(Dataset, job.dataset_id)
                info, table = dataset_info(session, dataset), cached_table(self.app.state.tables, dataset)
            job.status = "running"
            noise, rng = seeded_streams(seed)
            ctx = JobContext(
                job_id=job_id, params=dict(job.params), dataset=info, table=table, epsilon=job.epsilon,
                delta=job.delta, noise=noise, rng=rng,
                progress=lambda fraction, message=None: self._update(
                    job_id, progress=min(1.0, max(0.0, float(fraction))), message=message
                ),
                cancelled=lambda: self._cancel_requested(job_id),
            )
        return kind, ctx

    def _finish(self, job_id: int, status: str, message: str, result: dict | None = None) -> None:
        fields: dict[str, object] = {"status": status, "message": message, "finished_at": utcnow(), "result": result}
        if status == "succeeded":
            fields["progress"] = 1.0
        self._update(job_id, **fields)
