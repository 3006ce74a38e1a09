"""The parallel map a running job uses (``ctx.map``): its pieces as tasks over the whole Dask cluster when it runs on
a worker, a loop elsewhere. A piece's failure or a cancel reaches the job without a data value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from distributed import get_worker, wait, worker_client

from curator_service.errors import log_unexpected
from curator_service.jobs.outcomes import JobCancelled, JobFailed
from shared.learners.stopping import stop_check

POLL_SECONDS = 0.25  # how often a job waiting on its pieces looks at its cancel flag


def on_worker() -> bool:
    """Whether this code runs inside a Dask worker (a job's ``run``), where :func:`parallel_map` uses the cluster."""
    try:
        get_worker()
    except ValueError:
        return False
    return True


MAX_PIECES = 256  # tasks one map sends at most (items are grouped beyond): the scheduler's load stays bounded


class Hidden:
    """A task's items, whose repr shows no value: a Dask worker logs a failed task's arguments (``repr``, 1,000
    characters: the first rows of a chunk would fit)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"<{len(self.items)} items hidden>"


def _call_each(fn: Callable[[Any], Any], batch: Hidden) -> list[Any]:
    """The task of one batch. A training in it stops at its next stop check once the task is cancelled
    (:func:`_stop_if_task_cancelled`). A failure leaves it as a :class:`~.outcomes.JobFailed` naming the
    error's type only: Dask logs a failed task's exception with its message, which might quote data (the curator's
    own log gets the traceback without the message)."""
    try:
        with stop_check(_stop_if_task_cancelled()):
            return [fn(item) for item in batch.items]
    except (JobFailed, JobCancelled):
        raise  # a kind's own sentence, safe by contract; a stop of a cancelled task, which nobody gathers
    except Exception as exc:  # noqa: BLE001
        log_unexpected(exc)
        raise JobFailed(f"a part of the job failed with {type(exc).__name__}; the curator's log says where") from None


def _stop_if_task_cancelled() -> Callable[[], None]:
    """The stop check of the task running in this thread: it raises :class:`~.outcomes.JobCancelled` once
    the worker holds the task as cancelled, as it does once :func:`parallel_map` cancels its unfinished pieces (a
    cancel, a failed piece). It reads the worker's own state of the task (Dask's worker state machine): no
    message to the scheduler, nothing to clean up."""
    worker = get_worker()
    key = worker.get_current_task()

    def check() -> None:
        task = worker.state.tasks.get(key)
        if task is None or task.state == "cancelled":
            raise JobCancelled

    return check


def parallel_map(fn: Callable[[Any], Any], items: list[Any], check_cancelled: Callable[[], None],
                 progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[fn(item) for item in items]``: on a Dask worker, as tasks over the whole cluster (this task secedes from
    its thread while it waits, so the pieces may run there too); elsewhere a loop. ``check_cancelled`` raises to
    stop: between items, or every :data:`POLL_SECONDS` while pieces run (the pieces not yet done are cancelled;
    a piece already running stops at its training's next stop check, :mod:`shared.learners.stopping`, else
    finishes in the background: Dask cannot interrupt a thread). More than
    :data:`MAX_PIECES` items go in that many tasks of consecutive items. ``progress(done, total)`` is called as
    pieces finish."""
    report = progress or (lambda done, total: None)
    if len(items) < 2 or not on_worker():
        results = []
        for item in items:
            check_cancelled()
            results.append(fn(item))
            report(len(results), len(items))
        return results
    size = -(-len(items) // MAX_PIECES)
    batches = [items[start:start + size] for start in range(0, len(items), size)]
    with worker_client() as client:
        [shared] = client.scatter([fn], hash=False)  # fn and the arrays it holds travel once per worker
        futures = [client.submit(_call_each, shared, Hidden(batch), pure=False) for batch in batches]
        try:
            pending = futures
            while pending and not any(future.status == "error" for future in futures):  # gather raises the error
                check_cancelled()
                try:
                    still = list(wait(pending, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED").not_done)
                except TimeoutError:
                    continue
                if len(still) < len(pending):
                    waiting = {future.key for future in still}
                    report(sum(len(b) for b, f in zip(batches, futures) if f.key not in waiting), len(items))
                pending = still
            return [result for batch in client.gather(futures) for result in batch]
        except BaseException:
            client.cancel(futures)
            raise
