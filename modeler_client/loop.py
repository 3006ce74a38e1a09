"""The remote GP-UCB loop: PO-GP-UCB's Algorithm 2 run by the modeler against a curator over HTTP.

    for t = 1..T:
        β_t = 2 log(n t² π² / (6 δ'))
        i_t = argmax_i μ_t(z_i) + β_t^½ σ_t(z_i)      (shared.gp.ucb.GPUCB)
        y_t = the curator's measurement of row i_t     (POST /v1/sessions/{id}/queries, index only)
        update the posterior with (z_{i_t}, y_t)       (rank-one step)

:class:`RemoteGPUCB` is the one query driver: ``settings.batch`` = q picks per request by GP-BUCB
(:mod:`modeler_client.batch`; q = 1 with nothing pending is the step above), synchronously or
asynchronously, every request journaled through :class:`modeler_client.remote.RemoteSession`. A ``minimize``
release is run as maximisation of −y; the run file keeps the values as measured. Every request is saved to
the run file before it is sent (its request_id, ``in_flight``) and after the answer arrives, so a crash at
any point loses nothing and is never charged twice (module :mod:`modeler_client.runfile`). Pending manual
measurements are waited on before the next pick, because Algorithm 2 needs y_t to choose i_{t+1}.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeler_client.batch import GPBUCBProposer, run_batched
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import RunRecord, RunSettings
from modeler_client.surrogate import KernelHook, release_options
from shared.api.schemas import QueryResult


@dataclass(frozen=True)
class LoopEvent:
    """What the loop reports to a progress display: ``kind`` is one of ``started``, ``recovered``, ``corrected``,
    ``answer``, ``waiting``, ``refit``, ``finished``."""

    kind: str
    record: RunRecord
    message: str = ""


EventHandler = Callable[[LoopEvent], None]


class RemoteGPUCB:
    """Runs (or resumes) one modeler run; ``run()`` returns the finished :class:`RunRecord`.

    Parameters
    ----------
    client:
        A :class:`ModelerClient` for the run's curator and key.
    record, path:
        The run's state and where it is saved after every step.
    kernel_hook:
        Optional ``hook(kernel, release) -> kernel`` applied to every kernel the surrogate builds (for
        trying other uses of a ``gaussian`` release's public noise_std).
    requery, measurement_noise_std, public_box_width:
        ``requery=False`` never queries a row twice (its answer cannot change when measurements are
        memoised); ``measurement_noise_std`` is private measurements' public σ_y, the floor of the
        observation noise. Both default (None) to what the release's metadata says
        (:func:`modeler_client.surrogate.release_options`: σ_y of private measurements, and no repeats when
        they are private or the kernel is averaged over the input noise). ``public_box_width`` W (identity
        releases of data scaled to [0, W]^d) gives each row its posterior under the box (see
        :class:`modeler_client.surrogate.Surrogate`).
    device:
        Where GP-UCB's candidate posterior lives (:class:`shared.gp.ucb.GPUCB`'s ``device``; None: the Numba engine).
    reuse_from:
        Earlier sessions of the same key whose answers may serve this run's queries of the same rows
        (:class:`modeler_client.remote.RemoteSession`; default: the run's ``settings.reuse_sessions``).
    poll, max_poll, pending_timeout:
        How pending manual queries are waited on (seconds; ``pending_timeout=None`` waits forever).
    on_event:
        Called with a :class:`LoopEvent` at each step (the CLI's progress display).
    """

    def __init__(
        self,
        client: ModelerClient,
        record: RunRecord,
        path: str | Path,
        *,
        kernel_hook: KernelHook | None = None,
        requery: bool | None = None,
        measurement_noise_std: float | None = None,
        public_box_width: float | None = None,
        device: str | None = None,
        reuse_from: Iterable[int] | None = None,
        poll: float = 0.5,
        max_poll: float = 30.0,
        pending_timeout: float | None = None,
        on_event: EventHandler | None = None,
    ) -> None:
        self.client = client
        self.record = record
        self.kernel_hook = kernel_hook
        self.surrogate_options = release_options(
            record.release, record.settings, requery=requery, measurement_noise_std=measurement_noise_std
        ) | dict(public_box_width=public_box_width, device=device)
        self.on_event = on_event or (lambda event: None)
        self.session = RemoteSession(
            client, record, path, poll=poll, max_poll=max_poll, pending_timeout=pending_timeout,
            reuse_from=record.settings.reuse_sessions if reuse_from is None else reuse_from, on_wait=self._waiting)
        self._seen = len(record.queries)
        self._pending = {q.query_id for q in record.pending()}

    @classmethod
    def start(
        cls, client: ModelerClient, release_id: int, settings: RunSettings, path: str | Path, **options
    ) -> RemoteGPUCB:
        """Open a new session on ``release_id`` and write the run file before the first query."""
        return cls(client, RemoteSession.start(client, release_id, path, settings).record, path, **options)

    @classmethod
    def resume(cls, client: ModelerClient, path: str | Path, **options) -> RemoteGPUCB:
        return cls(client, RunRecord.load(path), path, **options)

    # --- reporting -----------------------------------------------------------------------------------

    def _emit(self, kind: str, message: str = "") -> None:
        self.on_event(LoopEvent(kind, self.record, message))

    def _waiting(self, still: list[QueryResult], waited: float) -> None:
        rows = ", ".join(f"#{q.query_id} (row {q.index})" for q in still)
        self._emit("waiting", f"waiting {waited:.0f} s for the curator to measure {rows}")

    def _step(self, kind: str, record: RunRecord) -> None:
        """``run_batched``'s steps as ``answer`` events: the rows just asked (with the answers that came back at once),
        or the pending measurements answered since, naming rows the curator could not measure."""
        if kind == "asked":
            asked = record.queries[self._seen:]
            self._emit("answer", f"iteration {asked[0].iteration}: row {', '.join(str(q.index) for q in asked)}")
        else:
            answered = [q for q in record.queries if q.query_id in self._pending and q.status != "pending"]
            unmeasurable = [q for q in answered if q.status == "unmeasurable"]
            self._emit("answer", f"{len(answered)} pending measurement(s) answered"
                       + (f"; the curator could not measure row(s) {', '.join(str(q.index) for q in unmeasurable)}, "
                          "which will not be asked again" if unmeasurable else ""))
        self._seen = len(record.queries)
        self._pending = {q.query_id for q in record.pending()}

    def _refit(self, surrogate) -> None:
        """Keep each refit's hyperparameters in the run file (a resume restores the last one) and report them."""
        done = len(self.record.done())
        if self.record.settings.hyperparameters != "fit" or done < 2:
            return
        entry = {"observations": done, **surrogate.hyperparameters.as_dict()}
        self.record.hyperparameter_history.append(entry)
        self._emit("refit", ", ".join(f"{k}={np.array2string(np.asarray(v), precision=4)}" for k, v in entry.items()))

    # --- steps ---------------------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Recover what the server stored but this run never recorded (and every answer the curator changed since,
        each reported as a ``corrected`` event), then finish an in-flight request."""
        recovered = self.session.reconcile()
        for change in self.session.changes:
            self._emit("corrected", change)
        self.session.changes.clear()
        if recovered:
            self._emit("recovered", f"recovered {recovered} answer(s) the server had stored")
        self._seen = len(self.record.queries)
        self._pending = {q.query_id for q in self.record.pending()}

    def run(self) -> RunRecord:
        record = self.record
        Z = RemoteRelease(self.client, record.release_id, metadata=record.release).Z
        self._emit("started", f"{len(record.queries)} of {record.settings.iterations} queries already made")
        self.reconcile()
        last_fit = record.hyperparameter_history[-1] if record.hyperparameter_history else None
        proposer = GPBUCBProposer(Z, record.release, record.settings, kernel_hook=self.kernel_hook, last_fit=last_fit,
                                  on_refit=self._refit, **self.surrogate_options)
        run_batched(self.session, proposer, on_step=self._step)
        self._emit("finished", record.summary())
        return record
