"""What runs on a Dask worker: one whole job, from its claim to its verdict, writing its own state to the database.

The task carries a :class:`JobTask`: the job's id, the kind, its time limit and the database URL *without its
password* (Dask's messages are unencrypted unless TLS is configured). The worker puts the password back from its own
environment (:func:`with_password`), opens an engine per URL and keeps decoded tables per URL and dataset, both
cached for the worker's life. While the job runs, a heartbeat thread writes ``heartbeat_at`` every
:data:`~.state.HEARTBEAT_SECONDS` and reads the cancel flag, so ``ctx.cancelled()`` costs no query. The heartbeat
gives the verdict itself: a cancelled job is marked cancelled, one past its deadline failed, within a heartbeat;
the job's thread stops at its next check (a thread cannot be killed; a DP-SGD training checks itself every few
hundred steps: :mod:`shared.learners.stopping`), and whatever it writes later is refused by the claimant check, so
a late result or commit never lands. A job whose API key already runs its share of the workers
waits queued, its task holding no worker slot (:func:`running_share`), so one key can never starve another's jobs.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from distributed import get_client, get_worker, rejoin, secede
from sqlalchemy import select
from sqlalchemy.engine import make_url

from curator_service.errors import log_unexpected
from curator_service.jobs import JobContext, JobKind, state
from curator_service.jobs.outcomes import JobCancelled, JobFailed
from curator_service.jobs.parallel import on_worker
from curator_service.persistence.blobs import TableCache, cached_table
from curator_service.persistence.db import Database
from curator_service.persistence.models import Dataset, Job
from curator_service.settings import read_secret
from shared.api.errors import ApiError
from shared.dp.noise import seeded_streams
from shared.learners.stopping import stop_check

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobTask:
    """What the API sends the cluster for one job (picklable; the kind travels by reference to its module)."""

    job_id: int
    database_url: str  # without the password
    kind: JobKind
    time_limit_seconds: float


SECRET_QUERY_KEYS = ("password", "sslpassword")  # libpq also takes a password in the URL's query


def without_password(url: str) -> str:
    # URL.set(password=None) would keep the password ("None: unchanged"); the named tuple's _replace drops it.
    parsed = make_url(url)._replace(password=None).difference_update_query(SECRET_QUERY_KEYS)
    return parsed.render_as_string(hide_password=False)


def with_password(url: str) -> str:
    """The worker's own password for ``url``: ``POBO_DATABASE_PASSWORD_FILE``, or the password of
    ``POBO_DATABASE_URL`` when that names the same database; else none, and libpq's own ``PGPASSWORD`` or
    ``~/.pgpass`` apply."""
    parsed = make_url(url)
    if parsed.password is not None or parsed.get_backend_name() == "sqlite":
        return url
    if path := os.environ.get("POBO_DATABASE_PASSWORD_FILE"):
        return parsed.set(password=read_secret(path, "POBO_DATABASE_PASSWORD_FILE")).render_as_string(False)
    configured = os.environ.get("POBO_DATABASE_URL")
    if configured and without_password(configured) == url:
        return configured
    return url


def database(url: str) -> Database:
    """One engine per database for the worker's life (the tests' many databases share a worker). A SQLite file
    replaced at the same path (a demo reset) is another database: its engine is keyed by the file's identity too."""
    return _engine(url, _file_identity(url))


@lru_cache(maxsize=8)
def _engine(url: str, identity: tuple[int, int] | None) -> Database:
    return Database(with_password(url))


def _file_identity(url: str) -> tuple[int, int] | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    try:
        found = os.stat(parsed.database)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


@lru_cache(maxsize=4)
def tables(url: str, dataset_id: int, created_at: str, n: int, d: int) -> TableCache:
    """The decoded table of one dataset, per worker, keyed by what changes with the table: a database replaced at
    the same URL (a restored or reset PostgreSQL schema) has another dataset under the same id, whose rows must never
    be served from the old one's cache."""
    return TableCache(capacity=1)


def claimant() -> str:
    """Who runs the job: the worker's address and process, for the operator (``claimed_by``)."""
    try:
        address = get_worker().address
    except ValueError:
        address = "local"
    return f"{address} pid {os.getpid()}"


def _builtin(value: object) -> object:
    """NumPy scalars and arrays in a job's result become plain JSON numbers and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"a job result may hold only JSON values, not {type(value).__name__}")


def as_json(result: Any) -> dict[str, Any]:
    return json.loads(json.dumps(result, allow_nan=False, default=_builtin))


class Heartbeat:
    """The thread that keeps a claimed job alive in the database and turns a cancel, the deadline or a lost claim
    into ``stop`` (what ``ctx.cancelled()`` reads)."""

    def __init__(self, db: Database, job_id: int, me: str, kind: JobKind) -> None:
        self.db, self.job_id, self.me, self.kind = db, job_id, me, kind
        self.stop = threading.Event()  # the job was cancelled, timed out or lost its claim: its verdict is stored
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"pobo-job-{job_id}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _loop(self) -> None:
        note = state.budget_note(self.kind.commit is None)
        while not self._done.wait(state.HEARTBEAT_SECONDS):
            try:
                with self.db.write() as session:
                    beat = state.heartbeat(session, self.job_id, self.me)
                    if beat.ours and beat.past_deadline:
                        job = session.get(Job, self.job_id)
                        state.finish(session, self.job_id, self.me, "failed", f"{state.timed_out(job)}; {note}")
                    elif beat.ours and beat.cancel_requested:
                        state.finish(session, self.job_id, self.me, "cancelled", f"{state.CANCELLED}; {note}")
                    elif beat.ours:
                        continue
                self.stop.set()  # the verdict is in the database; the job's thread stops at its next check
                return
            except Exception as exc:  # noqa: BLE001 - a database hiccup must not end the heartbeat
                log_unexpected(exc)


def run_job(task: JobTask) -> None:
    """The Dask task: claim the job, run it with a heartbeat, then commit (kinds that charge at the end) or store
    its result. Every write is conditional on this worker still holding the claim. Nothing escapes it: Dask would
    log an escaping exception with its message (a database error quotes its statement and parameters); the curator's
    log gets the type and the traceback only."""
    try:
        _run_job(task)
    except Exception as exc:  # noqa: BLE001
        log_unexpected(exc)


def running_share() -> int:
    """How many jobs one API key may run at once: all the cluster's worker threads but one (at least one), so a key
    can never hold every worker while another key's job waits; 1 for a job run outside a cluster (a loop running one
    job at a time, as the storage conformance suite does)."""
    if not on_worker():
        return 1
    return max(1, sum(get_client().nthreads().values()) - 1)


def _claim_in_turn(db: Database, task: JobTask, me: str) -> tuple[bool, bool]:
    """Claims the job, waiting while its key runs its share of the workers (:func:`running_share`): the task leaves
    its worker thread meanwhile (``secede``: it holds no slot another key's job could use) and asks again every
    heartbeat. Returns whether it claimed the job (not: someone else's, cancelled, or not in this database) and whether
    it waited (then it is outside the thread pool, and rejoins it once its heartbeat runs)."""
    share, waited = running_share(), False
    while True:
        with db.write() as session:
            turn = state.claim(session, task.job_id, me, task.time_limit_seconds, share)
            if turn is state.Claim.GONE and session.get(Job, task.job_id) is None:  # not the API's database: say so
                logger.warning("job %d is not in the database at %s; its task was dropped", task.job_id,
                               task.database_url)
        if turn is not state.Claim.WAITING:
            return turn is state.Claim.CLAIMED, waited
        if not waited:
            secede()
            waited = True
        time.sleep(state.HEARTBEAT_SECONDS)


def _run_job(task: JobTask) -> None:
    db, me, kind = database(task.database_url), claimant(), task.kind
    claimed, waited = _claim_in_turn(db, task, me)
    if not claimed:
        return  # another replica's worker has it, or it was cancelled while queued
    note = state.budget_note(kind.commit is None)
    with Heartbeat(db, task.job_id, me, kind) as beat:
        if waited:
            rejoin()  # a slot for the job's own work (the heartbeat keeps the claim alive while it frees)
        try:
            ctx = _context(db, task, beat)
            with stop_check(ctx.check_cancelled):  # a training in this thread stops within seconds of a cancel
                result = kind.run(ctx)
            if beat.stop.is_set():
                raise JobCancelled
            _store(db, task.job_id, me, kind, ctx.params, result, note)
        except JobCancelled:
            _finish(db, task.job_id, me, "cancelled", f"{state.CANCELLED}; {note}")
        except JobFailed as exc:
            _finish(db, task.job_id, me, "failed", f"{exc}; {note}")
        except ApiError as exc:  # e.g. the commit's final budget check: a sentence for the submitter, and its code
            _finish(db, task.job_id, me, "failed", exc.detail, {"error": {"status": exc.status, "code": exc.code}})
        except Exception as exc:  # noqa: BLE001 - report by type only: the message might quote data
            log_unexpected(exc)
            _finish(db, task.job_id, me, "failed", f"the job failed with {type(exc).__name__}; the curator's log says "
                    f"where; {note}")


def _finish(db: Database, job_id: int, me: str, status: str, message: str, result: dict | None = None) -> None:
    with db.write() as session:
        state.finish(session, job_id, me, status, message, result)


def _context(db: Database, task: JobTask, beat: Heartbeat) -> JobContext[Any]:
    """The job's context, its stored parameters parsed by its kind (once: ``run`` and ``commit`` share them)."""
    with db.read() as session:
        job = session.get_one(Job, task.job_id)
        info = table = simulation_key = None
        if job.dataset_id is not None:
            dataset = session.get_one(Dataset, job.dataset_id)
            fingerprint = (dataset.id, dataset.created_at.isoformat(), dataset.n, dataset.d)
            info, table = state.dataset_info(dataset), cached_table(tables(task.database_url, *fingerprint), dataset)
            simulation_key = dataset.simulation_key
        stored, epsilon, delta = dict(job.params), job.epsilon, job.delta
    params = task.kind.parse(stored)
    noise, rng = seeded_streams(stored.get("seed"))

    def progress(fraction: float, message: str | None = None) -> None:
        with db.write() as session:
            state.set_progress(session, task.job_id, beat.me, fraction, message)

    return JobContext(job_id=task.job_id, params=params, dataset=info, table=table, epsilon=epsilon, delta=delta,
                      noise=noise, rng=rng, progress=progress, cancelled=beat.stop.is_set,
                      simulation_key=simulation_key)


def _store(db: Database, job_id: int, me: str, kind: JobKind[Any], params: Any, result: Any, note: str) -> None:
    """Stores the result; with ``kind.commit``, in the one transaction where the commit charges and stores what the
    job made, with the job's row locked so a cancel cannot slip between the check and the charge."""
    with db.write() as session:
        job = session.scalars(select(Job).where(Job.id == job_id).with_for_update()).one()
        if job.status != "running" or job.claimed_by != me:
            return  # reaped or stopped by the heartbeat: that verdict stands
        if job.cancel_requested:
            state.finish(session, job_id, me, "cancelled", f"{state.CANCELLED}; {note}")
            return
        stored = as_json(kind.commit(session, job, params, result) if kind.commit is not None else result)
        state.finish(session, job_id, me, "succeeded", "done", result=stored)
