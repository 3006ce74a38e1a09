"""The Dask cluster that runs jobs: the embedded one (worker processes beside ``pobo-curator serve``) or a
scheduler given by ``POBO_DASK_SCHEDULER`` (the parallel map a running job uses to spread its pieces over it:
:mod:`.parallel`).

Jobs hold raw rows, so the workers must live inside the curator's trust boundary (docs/deployment.md), and every
connection to the cluster is mutual TLS: a Dask client that reaches a scheduler can run any code on its workers.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dask
from distributed import Client, LocalCluster, Security

if TYPE_CHECKING:
    from curator_service.settings import Settings

# Workers hold raw rows (a job's table, a release's chunks and M): never spilled to the worker's local disk.
NO_SPILLING = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False}
# The embedded workers run at nice 10 beside the API: on a loaded machine a worker busy with a job can miss its
# heartbeats for minutes, and the scheduler would then remove it for good (a test session lost both workers so).
# A worker that really dies is replaced by its nanny; one that hangs is failed by the job's own heartbeat and limit.
NO_WORKER_TTL = {"distributed.scheduler.worker-ttl": None}

# Dask starts an HTTP server in the scheduler (port 8787 by default, even without a dashboard) and in each worker,
# without authentication: its pages list the workers, their logs and the running tasks' call stacks. The embedded
# cluster serves none of them (its HTTP ports answer 404 to everything).
NO_HTTP_PAGES: dict[str, list[str]] = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}

_embedded: LocalCluster | None = None
_embedded_lock = threading.Lock()


def embedded_cluster(workers: int, preload: Sequence[str] = ()) -> LocalCluster:
    """This process's local cluster of ``workers`` worker processes (one thread each, loopback only), started on
    first use and shared by every app in the process (the tests' many apps use one), closed when it exits. Each
    worker imports the ``preload`` modules (the job kinds': :attr:`.runner.JobRunner.preload`) as it starts,
    at full priority, then runs :func:`dask_setup`.

    Its scheduler, nannies and workers listen on ``tls://`` only and require a client certificate from a key pair
    made for this cluster at its start (Dask's ``Security.temporary()``: held in memory and handed to the worker
    processes, never written to the data directory), so another local account cannot join it or run code on it."""
    global _embedded
    with _embedded_lock:
        if _embedded is None:
            # Set for the process, not in a `with`: each nanny keeps a shallow copy of this configuration and
            # respawns its worker from it, so a block's exit would give a replaced worker spilling back. The API
            # process runs no worker of its own.
            dask.config.set({**NO_SPILLING, **NO_WORKER_TTL, **NO_HTTP_PAGES})
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Port 8787 is already in use")  # loopback HTTP endpoint
                _embedded = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                         scheduler_port=0, dashboard_address=None, silence_logs=logging.ERROR,
                                         preload=[*preload, __name__],  # dask_setup below, in each worker
                                         security=Security.temporary())
            atexit.register(_embedded.close)
        return _embedded


WORKER_NICENESS = 10


SPILLING_EXIT_CODE = 78  # EX_CONFIG: the worker's configuration is refused
SPILLING_REFUSED = ("this Dask worker would spill task data (raw rows) to its disk, so it exits before joining the "
                    "cluster; start it with DASK_DISTRIBUTED__WORKER__MEMORY__TARGET=False and "
                    "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL=False")


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, run in each worker process as it starts (``dask worker --preload
    curator_service.jobs.cluster`` does the same on a cluster of your own). It ends a worker that would spill task
    data to disk (fail closed), then lets jobs yield the CPU to the API process beside them (a dpareto job had
    tripled the query path's p50 on 2 cores) and imports the job engine now, not in a release's first seconds (the
    kinds' modules come before it in the preload list: ``--preload curator_service.services.job_kinds``)."""
    memory = worker.memory_manager
    if memory.memory_target_fraction is not False or memory.memory_spill_fraction is not False:
        # Dask logs and ignores an exception raised here (PreloadManager.start) and the preload runs before the
        # worker registers with its scheduler: ending the process is what keeps it out of the cluster.
        logging.getLogger(__name__).critical(SPILLING_REFUSED)
        os._exit(SPILLING_EXIT_CODE)
    import curator_service.jobs.worker  # noqa: F401  (at full priority: a loaded machine would starve it)

    os.nice(WORKER_NICENESS)


_starting = threading.Event()


def start_embedded_cluster(workers: int, preload: Sequence[str] = ()) -> None:
    """Starts this process's cluster in the background (``serve``: the service answers at once; a job sent meanwhile
    waits for the cluster), logging a failure; :func:`embedded_starting` is true until it is up."""
    _starting.set()

    def start() -> None:
        try:
            embedded_cluster(workers, preload)
        except Exception as exc:  # noqa: BLE001 - the first job will try again and fail visibly
            logging.getLogger(__name__).error("the embedded Dask cluster did not start: %s", type(exc).__name__)
        finally:
            _starting.clear()

    threading.Thread(target=start, name="pobo-dask-start", daemon=True).start()


def embedded_starting() -> bool:
    return _starting.is_set()


def client_security(settings: Settings) -> Security | None:
    """The credentials the service presents to ``POBO_DASK_SCHEDULER``: the ``POBO_DASK_TLS_*`` files for a
    ``tls://`` scheduler; none for a ``tcp://`` one, which the settings accept only with the logged opt-out
    ``POBO_DASK_ALLOW_PLAINTEXT``, and none when it is unset (the embedded cluster brings its own)."""
    if settings.dask_scheduler is None:
        return None
    if settings.dask_scheduler.startswith("tls://"):
        return Security(require_encryption=True, tls_ca_file=str(settings.dask_tls_ca_file),
                        tls_client_cert=str(settings.dask_tls_cert_file),
                        tls_client_key=str(settings.dask_tls_key_file))
    logging.getLogger(__name__).warning(PLAINTEXT_WARNING, settings.dask_scheduler)
    return None


PLAINTEXT_WARNING = ("the Dask scheduler %s is plain TCP (POBO_DASK_ALLOW_PLAINTEXT): whoever reaches it can run code "
                     "on the workers that hold raw rows")


def connect(settings: Settings, preload: Sequence[str] = ()) -> Client:
    """A client of ``POBO_DASK_SCHEDULER``, or of the embedded cluster when it is unset (started with ``preload``),
    that is not the process's default (kinds never use it)."""
    if settings.dask_scheduler is None:
        local = embedded_cluster(settings.job_workers, preload)
        address, security = local.scheduler_address, local.security
    else:
        address, security = settings.dask_scheduler, client_security(settings)
    return Client(address, security=security, set_as_default=False, timeout="30s")
