"""The ask/tell layer any optimiser can drive: a release as data (:class:`RemoteRelease`) and index queries
on a journaled session (:class:`RemoteSession`).

An optimiser proposes rows of the released inputs Z; ``submit`` sends them, ``wait``/``refresh`` bring the
answers back for the optimiser's ``tell``. Every request is journaled in a run file (``pobo-run/1``, module
:mod:`modeler_client.runfile`) before it is sent, with a ``request_id`` that the service deduplicates, so a
process killed at any point resumes with ``RemoteSession.resume(path)``: nothing is lost and nothing is
charged twice. Answers a key already paid for in earlier sessions can be reused (``reuse_from``): each
earlier answer serves one later query of the same row instead of a new, charged one. That is right only
when a row's answer cannot change (memoised private measurements, a deterministic evaluator); a lab that
measures again gives a new sample, so reuse is the caller's choice.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from modeler_client.client import ModelerClient, PendingTimeout
from modeler_client.runfile import InFlight, QueryRecord, RunRecord, RunSettings
from shared.api.schemas import QueryResult, ReleaseOut


class RemoteRelease:
    """A release as the modeler sees it: its public metadata and the released inputs Z (n × dim).

    Nothing here is secret on the modeler's side; Z is downloaded once, on first use.
    """

    def __init__(self, client: ModelerClient, release_id: int, *, metadata: ReleaseOut | None = None) -> None:
        self.client = client
        self.metadata = metadata or client.release(release_id)
        self._Z: NDArray[np.float64] | None = None

    @property
    def id(self) -> int:
        return self.metadata.id

    @property
    def n(self) -> int:
        return self.metadata.n

    @property
    def dim(self) -> int:
        return self.metadata.dim

    @property
    def noise_std(self) -> float | None:
        """The public standard deviation of the Gaussian noise in every entry of Z (``gaussian`` releases)."""
        return self.metadata.noise_std

    @property
    def measurement_noise_std(self) -> float | None:
        """σ_y of private measurements (None when measurements are returned as computed)."""
        return self.metadata.measurement_noise_std

    @property
    def certified(self) -> bool:
        return self.metadata.certified

    @property
    def goal(self) -> str:
        return self.metadata.goal

    @property
    def Z(self) -> NDArray[np.float64]:
        """The released inputs, read-only (a shared copy; ``.copy()`` it to change it)."""
        if self._Z is None:
            Z = self.client.inputs(self.id)
            if Z.shape != (self.n, self.dim):
                raise RuntimeError(f"the released inputs have shape {Z.shape}, but the release says "
                                   f"{self.n} × {self.dim}")
            Z.setflags(write=False)
            self._Z = Z
        return self._Z

    @property
    def columns(self) -> list[str]:
        """Z's column names: the dataset's feature names under the identity projection (each coordinate is that
        feature, scaled and noised), else ``z0 … z{dim-1}`` (mixtures of every feature)."""
        m = self.metadata
        if m.projection == "identity" and len(m.feature_columns) == m.dim:
            return list(m.feature_columns)
        return [f"z{j}" for j in range(m.dim)]

    def to_dataframe(self):
        """Z as a pandas DataFrame: columns :attr:`columns`, index = the row index a query sends."""
        try:
            import pandas as pd
        except ImportError as exc:  # optional extra
            raise ImportError("to_dataframe needs pandas: pip install 'pobo[pandas]'") from exc
        frame = pd.DataFrame(self.Z, columns=self.columns)
        frame.index.name = "index"
        return frame

    def describe(self) -> dict[str, object]:
        """The public facts an optimiser may use: shape, noise, certification, goal."""
        m = self.metadata
        return dict(
            release_id=m.id, mechanism=m.mechanism, certified=m.certified, epsilon=m.epsilon, delta=m.delta,
            n=m.n, dim=m.dim, noise_std=m.noise_std, measurement_noise_std=m.measurement_noise_std, goal=m.goal,
            columns=self.columns, evaluator_kind=m.evaluator_kind,
            measurement=None if m.measurement is None else m.measurement.model_dump(),
        )


def row_indices(indices: Iterable[object], n: int) -> list[int]:
    """``indices`` as row numbers of a release of ``n`` rows, or a ValueError saying which one is not: a query names
    a row by its whole number from 0 to n − 1, never a fraction (1.5 is no row) or a count from the end (−1)."""
    rows = []
    for index in indices:
        number = index.item() if isinstance(index, np.generic) else index
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise ValueError(f"index {index!r} is not a row number; give whole numbers from 0 to {n - 1}")
        if isinstance(number, float) and not number.is_integer():
            raise ValueError(f"index {index!r} is not a whole number; a row index is one of 0, 1, …, {n - 1} (round "
                             "or choose the row you mean)")
        if not 0 <= number < n:
            raise ValueError(f"index {int(number)} is out of range: the release has {n} rows, numbered 0 to {n - 1} "
                             "(negative indices do not count from the end)")
        rows.append(int(number))
    return rows


def previous_answers(client: ModelerClient, session_ids: Iterable[int]) -> dict[int, deque[tuple[int, QueryResult]]]:
    """Answered queries of earlier sessions (the same key's) as (session id, query), by row index, oldest first."""
    by_index: dict[int, deque[tuple[int, QueryResult]]] = defaultdict(deque)
    for session_id in session_ids:
        for result in client.queries(session_id):
            if result.status == "done":
                by_index[result.index].append((session_id, result))
    return by_index


class RemoteSession:
    """Index queries on one server session, journaled in a run file.

    ``submit(indices)`` → the queries as the server stored them (``done`` with a value, or ``pending`` for a
    manual evaluator); ``refresh()`` and ``wait()`` return queries answered since; ``evaluate(indices)`` does
    both and returns the values. ``observations()`` gives every answer so far as (indices, values).
    ``on_wait(still_pending, waited_seconds)`` is called while waiting.
    """

    def __init__(
        self,
        client: ModelerClient,
        record: RunRecord,
        path: str | Path,
        *,
        reuse_from: Iterable[int] = (),
        poll: float = 0.5,
        max_poll: float = 30.0,
        pending_timeout: float | None = None,
        on_wait: Callable[[list[QueryResult], float], None] | None = None,
    ) -> None:
        self.client = client
        self.record = record
        self.path = Path(path)
        self.poll, self.max_poll, self.pending_timeout = poll, max_poll, pending_timeout
        self.on_wait = on_wait
        self._clock_start = time.monotonic()
        self._elapsed_before = record.elapsed_seconds
        self._reusable = self._unused_previous_answers(reuse_from)
        self.changes: list[str] = []

    @classmethod
    def start(cls, client: ModelerClient, release_id: int, path: str | Path, settings: RunSettings,
              **options) -> RemoteSession:
        """Open a server session on ``release_id`` and write the run file before any query."""
        release = client.release(release_id)
        session = client.open_session(release_id)
        record = RunRecord(
            run_id=uuid.uuid4().hex, url=client.url, release_id=release_id, session_id=session.id,
            release=release, settings=settings,
        )
        record.save(path)
        return cls(client, record, path, **options)

    @classmethod
    def resume(cls, client: ModelerClient, path: str | Path, **options) -> RemoteSession:
        """Load the run file and bring it up to date with the server (see :meth:`reconcile`)."""
        remote = cls(client, RunRecord.load(path), path, **options)
        remote.reconcile()
        return remote

    @classmethod
    def rebuild(cls, client: ModelerClient, session_id: int, path: str | Path, settings: RunSettings | None = None,
                **options) -> RemoteSession:
        """A run file for server session ``session_id`` (one of this key's) rebuilt from what the server keeps: the
        release and every query in order with its answer, written to ``path``. The server keeps no GP settings:
        ``settings`` (default: T = the queries made) apply from now on."""
        info = client.session(session_id)
        results = client.queries(session_id)
        record = RunRecord(
            run_id=uuid.uuid4().hex, url=client.url, release_id=info.release_id, session_id=session_id,
            release=client.release(info.release_id), settings=settings or RunSettings(iterations=max(len(results), 1)),
        )
        record.merge(results)
        record.finished = record.complete()
        record.save(path)
        return cls(client, record, path, **options)

    @classmethod
    def open(cls, client: ModelerClient, release_id: int, path: str | Path, settings: RunSettings,
             **options) -> RemoteSession:
        """Resume the run file at ``path`` if there is one (it must be of this release), else start a run."""
        if not Path(path).exists():
            return cls.start(client, release_id, path, settings, **options)
        remote = cls.resume(client, path, **options)
        if remote.record.release_id != release_id:
            raise ValueError(f"{path} holds a run of release {remote.record.release_id}, not {release_id}; "
                             "choose another file")
        return remote

    # --- journal ----------------------------------------------------------------------------------------

    def save(self) -> None:
        self.record.elapsed_seconds = self._elapsed_before + time.monotonic() - self._clock_start
        self.record.save(self.path)

    def _unused_previous_answers(self, session_ids: Iterable[int]) -> dict[int, deque[tuple[int, QueryResult]]]:
        session_ids = [s for s in dict.fromkeys(session_ids) if s != self.record.session_id]
        answers = previous_answers(self.client, session_ids)
        used = {q.query_id for q in self.record.queries if q.reused_from_session is not None}
        return {i: deque(a for a in stored if a[1].query_id not in used) for i, stored in answers.items()}

    def reconcile(self) -> int:
        """Record answers the server stored but the run file missed, and re-send an in-flight request with
        its ``request_id`` (the server returns the stored results, uncharged). Returns how many were new; every
        answer the curator changed since the run file recorded it is added to :attr:`changes` as a sentence."""
        record = self.record
        if not record.complete():
            self.client.reopen_if_closed(record.session_id)
        recovered = record.merge(self.client.queries(record.session_id))
        self.changes += record.take_changes()
        if record.in_flight is not None:
            flight = record.in_flight
            results = self.client.query(record.session_id, flight.indices, request_id=flight.request_id)
            recovered += record.merge(results, request_id=flight.request_id)
            record.in_flight = None
        self.save()
        return recovered

    # --- asking the curator -----------------------------------------------------------------------------

    def _reuse(self, index: int) -> QueryRecord | None:
        stored = self._reusable.get(index)
        if not stored:
            return None
        session_id, result = stored.popleft()
        query = QueryRecord(
            iteration=len(self.record.queries) + 1, index=index, query_id=result.query_id, status="done",
            value=result.value, reused_from_session=session_id,
        )
        self.record.queries.append(query)
        return query

    def submit(self, indices: Sequence[int]) -> list[QueryRecord]:
        """Ask for rows ``indices``: reusable earlier answers first, the rest in one charged request. Each index must
        be a whole number from 0 to n − 1 (:func:`row_indices`); nothing is sent otherwise."""
        indices = row_indices(indices, self.record.release.n)
        if not indices:
            return []
        out: dict[int, QueryRecord] = {}
        to_send: list[tuple[int, int]] = []
        for position, index in enumerate(indices):
            reused = self._reuse(index)
            if reused is None:
                to_send.append((position, index))
            else:
                out[position] = reused
        if to_send:
            record = self.record
            request_id = f"{record.run_id}-{len(record.queries) + 1}"
            record.in_flight = InFlight(iteration=len(record.queries) + 1, request_id=request_id,
                                        indices=[i for _, i in to_send])
            self.save()
            results = self.client.query(record.session_id, record.in_flight.indices, request_id=request_id)
            record.merge(results, request_id=request_id)
            record.in_flight = None
            by_id = {q.query_id: q for q in record.queries}
            out.update({position: by_id[r.query_id] for (position, _), r in zip(to_send, results)})
        self.save()
        return [out[p] for p in range(len(indices))]

    def refresh(self) -> list[QueryRecord]:
        """One look at the server: the pending queries answered since (``done``, or ``unmeasurable`` when the
        curator could not measure the row), in the run's order."""
        before = {q.query_id for q in self.record.pending()}
        if not before:
            return []
        self.record.merge(self.client.queries(self.record.session_id))
        answered = [q for q in self.record.queries if q.query_id in before and q.status != "pending"]
        if answered:
            self.save()
        return answered

    def wait(self, *, until: Literal["all", "any"] = "all") -> list[QueryRecord]:
        """Wait for the pending queries (``until="all"``) or for at least one of them (``"any"``); returns
        the queries answered meanwhile. Raises :class:`~modeler_client.client.PendingTimeout` after
        ``pending_timeout`` seconds; the answers stay on the server for a later resume."""
        pending = self.record.pending()
        if not pending:
            return []
        answered = self.client.wait_for(
            self.record.session_id, [q.query_id for q in pending], until=until, poll=self.poll,
            max_poll=self.max_poll, timeout=self.pending_timeout, on_wait=self.on_wait,
        )
        before = {q.query_id for q in pending}
        self.record.merge(list(answered.values()))
        self.save()
        return [q for q in self.record.queries if q.query_id in before and q.status != "pending"]

    def evaluate(self, indices: Sequence[int]) -> NDArray[np.float64]:
        """Submit ``indices`` and wait for every answer; the values in the order asked (NaN for a row the
        curator could not measure)."""
        queries = self.submit(indices)
        if any(q.status == "pending" for q in queries):
            self.wait(until="all")
        by_id = {q.query_id: q for q in self.record.queries}
        return np.array([by_id[q.query_id].value for q in queries], dtype=float)

    def observations(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Every answered query of the run, in the run's order, as (row indices, values as measured)."""
        done = self.record.done()
        return np.array([q.index for q in done], dtype=int), np.array([q.value for q in done], dtype=float)

    def close(self) -> None:
        """Close the server session (no further queries; the answers stay readable)."""
        self.record.finished = True
        self.save()
        self.client.close_session(self.record.session_id)


__all__ = ["PendingTimeout", "RemoteRelease", "RemoteSession", "previous_answers"]
