"""The remote GP-UCB loop: PO-GP-UCB's Algorithm 2 run by the modeler against a curator over HTTP.

    for t = 1..T:
        β_t = 2 log(n t² π² / (6 δ'))
        i_t = argmax_i μ_t(z_i) + β_t^½ σ_t(z_i)      (shared.gp.ucb.GPUCB)
        y_t = the curator's measurement of row i_t     (POST /v1/sessions/{id}/queries, index only)
        update the posterior with (z_{i_t}, y_t)       (rank-one step)

A ``minimize`` release is run as maximisation of −y; the run file keeps the values as measured. Every
iteration is saved to the run file before the query is sent (its request_id, ``in_flight``) and after
the answer arrives, so a crash at any point loses nothing and is never charged twice (module
:mod:`modeler_client.runfile`). Pending manual measurements are waited on before the next iteration,
because Algorithm 2 needs y_t to choose i_{t+1}.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeler_client.client import ModelerClient
from modeler_client.runfile import InFlight, RunRecord, RunSettings
from modeler_client.surrogate import KernelHook, Surrogate, release_options


@dataclass(frozen=True)
class LoopEvent:
    """What the loop reports to a progress display: ``kind`` is one of ``started``, ``recovered``,
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
        poll: float = 0.5,
        max_poll: float = 30.0,
        pending_timeout: float | None = None,
        on_event: EventHandler | None = None,
    ) -> None:
        self.client = client
        self.record = record
        self.path = Path(path)
        self.kernel_hook = kernel_hook
        self.surrogate_options = release_options(
            record.release, record.settings, requery=requery, measurement_noise_std=measurement_noise_std
        ) | dict(public_box_width=public_box_width, device=device)
        self.poll = poll
        self.max_poll = max_poll
        self.pending_timeout = pending_timeout
        self.on_event = on_event or (lambda event: None)
        self._clock_start = time.monotonic()
        self._elapsed_before = record.elapsed_seconds

    @classmethod
    def start(
        cls, client: ModelerClient, release_id: int, settings: RunSettings, path: str | Path, **options
    ) -> RemoteGPUCB:
        """Open a new session on ``release_id`` and write the run file before the first query."""
        release = client.release(release_id)
        session = client.open_session(release_id)
        record = RunRecord(
            run_id=uuid.uuid4().hex,
            url=client.url,
            release_id=release_id,
            session_id=session.id,
            release=release,
            settings=settings,
        )
        record.save(path)
        return cls(client, record, path, **options)

    @classmethod
    def resume(cls, client: ModelerClient, path: str | Path, **options) -> RemoteGPUCB:
        return cls(client, RunRecord.load(path), path, **options)

    # --- persistence and reporting -------------------------------------------------------------------

    def _save(self) -> None:
        self.record.elapsed_seconds = self._elapsed_before + time.monotonic() - self._clock_start
        self.record.save(self.path)

    def _emit(self, kind: str, message: str = "") -> None:
        self.on_event(LoopEvent(kind, self.record, message))

    # --- steps ---------------------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Recover what the server stored but this run never recorded (and every answer the curator changed since,
        each reported as a ``corrected`` event), then finish an in-flight query."""
        record = self.record
        recovered = record.merge(self.client.queries(record.session_id))
        for change in record.take_changes():
            self._emit("corrected", change)
        if record.in_flight is not None:
            flight = record.in_flight
            results = self.client.query(record.session_id, flight.indices, request_id=flight.request_id)
            recovered += record.merge(results, iteration=flight.iteration, request_id=flight.request_id)
            record.in_flight = None
        self._save()
        if recovered:
            self._emit("recovered", f"recovered {recovered} answer(s) the server had stored")

    def wait_for_pending(self) -> None:
        pending = self.record.pending()
        if not pending:
            return

        def report(still: list, waited: float) -> None:
            rows = ", ".join(f"#{q.query_id} (row {q.index})" for q in still)
            self._emit("waiting", f"waiting {waited:.0f} s for the curator to measure {rows}")

        answered = self.client.wait_for(
            self.record.session_id,
            [q.query_id for q in pending],
            poll=self.poll,
            max_poll=self.max_poll,
            timeout=self.pending_timeout,
            on_wait=report,
        )
        self.record.merge(list(answered.values()))
        self._save()
        unmeasurable = [q for q in answered.values() if q.status == "unmeasurable"]
        self._emit("answer", f"{len(answered)} pending measurement(s) answered"
                   + (f"; the curator could not measure row(s) {', '.join(str(q.index) for q in unmeasurable)}, "
                      "which will not be asked again" if unmeasurable else ""))

    def run(self) -> RunRecord:
        record = self.record
        Z = self.client.inputs(record.release_id)
        if Z.shape != (record.release.n, record.release.dim):
            raise RuntimeError(
                f"the released inputs have shape {Z.shape}, but the release says {record.release.n} × "
                f"{record.release.dim}"
            )
        self._emit("started", f"{len(record.queries)} of {record.settings.iterations} queries already made")
        if not record.complete():
            self.client.reopen_if_closed(record.session_id)
        self.reconcile()
        self.wait_for_pending()
        last_fit = record.hyperparameter_history[-1] if record.hyperparameter_history else None
        surrogate = Surrogate(Z, record.release, record.settings, kernel_hook=self.kernel_hook, last_fit=last_fit,
                              **self.surrogate_options)
        orientation = -1.0 if record.goal == "minimize" else 1.0
        while len(record.queries) < record.settings.iterations:
            done = record.done()
            if surrogate.update([q.index for q in done], orientation * np.array([q.value for q in done])):
                if record.settings.hyperparameters == "fit" and len(done) >= 2:
                    entry = {"observations": len(done), **surrogate.hyperparameters.as_dict()}
                    record.hyperparameter_history.append(entry)
                    self._emit("refit", ", ".join(f"{k}={np.array2string(np.asarray(v), precision=4)}"
                                                  for k, v in entry.items()))
            surrogate.exclude(q.index for q in record.unmeasurable())
            t = len(record.queries) + 1
            flight = InFlight(iteration=t, request_id=f"{record.run_id}-{t}", indices=[surrogate.suggest()])
            record.in_flight = flight
            self._save()
            results = self.client.query(record.session_id, flight.indices, request_id=flight.request_id)
            record.merge(results, iteration=t, request_id=flight.request_id)
            record.in_flight = None
            self._save()
            self._emit("answer", f"iteration {t}: row {flight.indices[0]}")
            self.wait_for_pending()
        record.finished = True
        self._save()
        self.client.close_session(record.session_id)
        self._emit("finished", record.summary())
        return record

