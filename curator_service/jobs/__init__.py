"""Curator-side jobs (releases, Kusner et al.'s summaries, Ding et al.'s tuning, DPareto fronts): the framework.

The framework runs any :class:`JobKind` it is given and knows no kind by name: the kinds are modules of
:mod:`curator_service.services.job_kinds`, each defining ``KIND = JobKind(...)``, listed once in that package's
``KINDS`` (see docs/curator_service.md, "How to add a job kind").

Each kind declares its parameters' pydantic model (``params``). The framework parses a job's parameters with it
once where they are read, :meth:`JobKind.parse`: on submission from the request (``cost`` and ``event`` get the
parsed object) and in the worker from the stored JSON (``run`` gets it as ``ctx.params``, ``commit`` beside the
result), so a kind never validates its parameters itself; a bad one is a 422 that names the parameter.

* ``cost(params, dataset)`` returns the (ε, δ) the job will spend, computed from its parameters alone
  (never from the data). It checks what the model cannot (the parameters against the dataset's public facts):
  raise ``ValueError`` with a sentence saying what to fix, and the caller gets a 422.
* ``run(ctx)`` does the work and returns a JSON-serialisable dict: the job's released result. It runs in a
  Dask worker process (:mod:`.worker`), never in the API process. It reads the raw table from ``ctx.table``
  (a learner reads :func:`~curator_service.services.job_kinds.inputs.training_features`: the dataset's public
  scaling, rows clipped to the unit ball), reports progress with ``ctx.progress(fraction, message)``, calls
  ``ctx.check_cancelled()`` between steps (cancel, the time limit and a lost claim all show there; a DP-SGD
  training checks by itself every few hundred steps, in the job's thread and in its pieces on the cluster:
  :mod:`shared.learners.stopping`),
  spreads independent pieces over the cluster with ``ctx.map(fn, items)`` and draws every piece of privacy noise
  from ``ctx.noise``. Raise :class:`~.outcomes.JobFailed` with a sentence for a failure the submitter may read; any
  other exception is reported by type only (its message might quote data).
* ``commit(session, job, params, result)``, when given, makes the job charge at the end instead: submission only
  checks that the cost is affordable, and after ``run`` returns (anything, not only JSON) the worker calls
  ``commit`` in ONE write transaction, unless the job was cancelled: it charges the ledger (the final budget
  check) and stores what ``run`` made, and returns the JSON dict stored as the job's result. A job cancelled
  or failed before its commit is charged nothing.

Progress, its timing and the moment a cancellation takes effect are visible to the submitter (who may be
a modeler): report them only at points that do not depend on the data.

Without ``commit`` the ledger is charged at submission, in the transaction that creates the job: a job that
later fails or is cancelled stays charged (its randomness may already have touched the data).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
from pydantic import BaseModel
from sqlalchemy.orm import Session

from curator_service.jobs.outcomes import JobCancelled
from curator_service.jobs.parallel import parallel_map
from curator_service.persistence.blobs import RawTable
from curator_service.persistence.models import Job
from shared.api.schemas import ScalingSpec
from shared.dp.noise import NoiseSource

P = TypeVar("P", bound=BaseModel)
"""A kind's parameter model."""


@dataclass(frozen=True)
class DatasetInfo:
    """Public facts about the job's dataset, for ``cost``: no data values. ``scaling`` is the public scaling
    the curator registered (privacy's unit: one row moves by ℓ2 ≤ 1 after it)."""

    id: int
    n: int
    d: int
    columns: tuple[str, ...]
    numeric_columns: tuple[str, ...]  # what a job may read as numbers: fixed at registration from the spec
    feature_columns: tuple[str, ...]
    evaluator: dict[str, Any]
    scaling: ScalingSpec
    label_columns: tuple[str, ...] = ()


@dataclass
class JobContext(Generic[P]):
    """What ``run`` gets: the parsed parameters, the raw table, progress, cancellation and randomness.

    ``noise`` is the privacy-noise source (floating-point-safe unless the job was seeded in research
    mode); ``rng`` is for everything that is not privacy noise (initial designs, data splits).
    ``cancelled()`` turns true when the job was cancelled, ran past its time limit or lost its claim.
    """

    job_id: int
    params: P
    dataset: DatasetInfo | None
    table: RawTable | None
    epsilon: float
    delta: float
    noise: NoiseSource
    rng: np.random.Generator
    progress: Callable[[float, str | None], None]
    cancelled: Callable[[], bool]
    simulation_key: str | None = None  # the column evaluator's simulated-noise key: a secret, on the context only

    def require_dataset(self) -> DatasetInfo:
        """``dataset``, which the worker loads for every kind that ``needs_dataset``."""
        if self.dataset is None:
            raise TypeError(f"job {self.job_id} has no dataset: its kind does not need one")
        return self.dataset

    def require_table(self) -> RawTable:
        """``table``, which the worker loads for every kind that ``needs_dataset``."""
        if self.table is None:
            raise TypeError(f"job {self.job_id} has no table: its kind does not need a dataset")
        return self.table

    def check_cancelled(self) -> None:
        """Raises :class:`JobCancelled` if the job was cancelled; call it between steps."""
        if self.cancelled():
            raise JobCancelled

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any],
            progress: Callable[[int, int], None] | None = None) -> list[Any]:
        """``[fn(item) for item in items]``, spread over the Dask cluster when the job runs on a worker (``fn`` and
        what it holds are sent once to each worker that needs them), a plain loop elsewhere; cancellation is
        checked between items (a loop) or every fraction of a second while they run (the cluster; a running
        piece's DP-SGD training then stops at its next stop check). ``fn`` must be picklable (a module-level
        function or a :func:`functools.partial` of one) and must not draw privacy noise from ``ctx.noise``, which
        stays in this process. ``progress(done, total)`` hears as pieces finish."""
        return parallel_map(fn, list(items), self.check_cancelled, progress)


@dataclass(frozen=True)
class JobKind(Generic[P]):
    """One kind of job. ``params``: the model of its parameters (:meth:`parse`). ``roles``: who may submit and see
    it (``{"curator"}``, or also ``"modeler"``).

    ``event(params, dataset)``, when given, states the job's mechanism as a DP event for the ledger
    (:mod:`curator_service.services.ledger_events`: noise scale and sensitivity), from the parameters alone like
    ``cost``; without it the ledger records the kind's name and its (ε, δ). ``commit(session, job, params, result)``:
    see the module's docstring (charge at the end). ``time_limit_seconds`` bounds a job's run below the service's
    ``POBO_JOB_TIME_LIMIT_SECONDS``; past it the job is failed. ``endpoint``: the one endpoint that creates its
    jobs (with checks of its own), named to whoever tries ``POST /v1/jobs`` instead. ``uncertified(params)``: a
    warning sentence when the job's result is not a DP release as charged (an uncertified mechanism), else None;
    such jobs show ``certified: false``. It reads the stored JSON, as every listing shows it, unparsed."""

    name: str
    description: str
    params: type[P]
    cost: Callable[[P, DatasetInfo | None], tuple[float, float]]
    run: Callable[[JobContext[P]], Any]
    roles: frozenset[str] = field(default_factory=lambda: frozenset({"curator"}))
    needs_dataset: bool = True
    event: Callable[[P, DatasetInfo], dict[str, Any]] | None = None
    commit: Callable[[Session, Job, P, Any], dict[str, Any]] | None = None
    time_limit_seconds: float | None = None
    endpoint: str | None = None
    uncertified: Callable[[dict[str, Any]], str | None] | None = None

    def parse(self, params: dict[str, Any]) -> P:
        """The job's parameters as the kind's model: the one validation of a request's or a stored job's JSON
        (a pydantic ``ValidationError`` when they are bad)."""
        return self.params.model_validate(params)


def charged_at_submission(kind: JobKind | None) -> bool:
    """Kinds without a ``commit`` were charged when the job was created (a kind no longer served: assume so)."""
    return kind is None or kind.commit is None
