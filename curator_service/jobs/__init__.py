"""Curator-side jobs (Kusner et al.'s summaries, Ding et al.'s tuning, DPareto fronts): the framework.

A job kind is one module in :mod:`curator_service.jobs.kinds` that defines ``KIND = JobKind(...)``;
every such module is registered automatically (see docs/curator_service.md, "How to add a job kind").

* ``cost(params, dataset)`` returns the (ε, δ) the job will spend, computed from its parameters alone
  (never from the data). It validates the parameters: raise ``ValueError`` (or a pydantic
  ``ValidationError``) with a sentence saying what to fix, and the caller gets a 422.
* ``run(ctx)`` does the work and returns a JSON-serialisable dict: the job's released result. It runs in a
  Dask worker process (:mod:`.worker`), never in the API process. It reads the raw table from ``ctx.table``
  (a learner reads :func:`training_features`: the dataset's public scaling, rows clipped to the unit ball),
  reports progress with ``ctx.progress(fraction, message)``, calls ``ctx.check_cancelled()`` between steps
  (cancel, the time limit and a lost claim all show there; a DP-SGD training checks by itself every few
  hundred steps, in the job's thread and in its pieces on the cluster: :mod:`shared.learners.stopping`),
  spreads independent pieces over the cluster with ``ctx.map(fn, items)`` and draws every piece of privacy noise
  from ``ctx.noise``. Raise :class:`JobFailed` with a sentence for a failure the submitter may read; any other
  exception is reported by type only (its message might quote data).
* ``commit(session, job, result)``, when given, makes the job charge at the end instead: submission only
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

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from curator_service.jobs.cluster import parallel_map
from curator_service.persistence.blobs import RawTable
from curator_service.persistence.models import Job
from shared.dp.mechanisms import laplace_mechanism, summation_error
from shared.dp.noise import NoiseSource
from shared.releases.gaussian import _clip_rows as clip_rows
from shared.api.scaling import apply_scaling
from shared.api.schemas import ScalingSpec


class JobFailed(Exception):
    """A failure whose message is safe to show to the submitter (a sentence, no data values)."""


class JobCancelled(Exception):
    """Raised by a job's ``run`` when ``ctx.cancelled()`` turned true."""


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
    remaining_epsilon: float
    remaining_delta: float
    scaling: ScalingSpec
    label_columns: tuple[str, ...] = ()


@dataclass
class JobContext:
    """What ``run`` gets: the parameters, the raw table, progress, cancellation and randomness.

    ``noise`` is the privacy-noise source (floating-point-safe unless the job was seeded in research
    mode); ``rng`` is for everything that is not privacy noise (initial designs, data splits).
    ``cancelled()`` turns true when the job was cancelled, ran past its time limit or lost its claim.
    """

    job_id: int
    params: dict[str, Any]
    dataset: DatasetInfo | None
    table: RawTable | None
    epsilon: float
    delta: float
    noise: NoiseSource
    rng: np.random.Generator
    progress: Callable[[float, str | None], None]
    cancelled: Callable[[], bool]
    simulation_key: str | None = None  # the column evaluator's simulated-noise key: a secret, on the context only

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


TRAINING_ROW_NORM = 1.0


def training_features(ctx: JobContext) -> np.ndarray:
    """The features a learner trains on: the dataset's public scaling, then every row clipped to ℓ2 norm
    ≤ 1 (:data:`TRAINING_ROW_NORM`), the unit ball the benchmarks' rows live in (Adult's a9a rows are
    unit-norm) and DP-SGD's clip norms and DP-BO's Lipschitz constants are sized for. Both maps are fixed
    in advance and act on each row alone."""
    return clip_rows(apply_scaling(ctx.table.features, ctx.dataset.scaling), TRAINING_ROW_NORM)


def bounded_mean_sensitivity(lower: float, upper: float, n: int) -> float:
    """Δ = (upper − lower)/n + 2γ_n·max(|lower|, |upper|): replacing one of n values in [lower, upper] moves
    their mean by (upper − lower)/n, and the float mean (a sum in any order, one division) is off by at
    most γ_n·max(|lower|, |upper|) on either neighbour (:func:`shared.dp.mechanisms.summation_error`). Without
    the second term, bounds far from zero (1e12, 1e12 + 1e-3) let the rounding exceed the calibration."""
    return (upper - lower) / n + 2.0 * summation_error(n) * max(abs(lower), abs(upper))


def held_out_split(n: int, fraction: float) -> int:
    """How many of n rows a job holds out for scoring (public: n and the fraction are), at least 1."""
    return max(1, round(fraction * n))


def held_out_rows(table: RawTable, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The stored rows a job holds out for scoring and those it trains on (:func:`held_out_split` of them held out).

    ``rng`` permutes the rows in their file order, not in their stored order: each registration stores the rows in a
    fresh secret order (:class:`~curator_service.persistence.blobs.RawTable`), so a seeded job (research mode) splits
    the same file the same way whichever registration of it it reads. Unseeded, the split is a uniform permutation
    either way, independent of the file order."""
    n = table.n
    file_order = np.arange(n) if table.source_rows is None else np.argsort(table.source_rows, kind="stable")
    order = file_order[rng.permutation(n)]
    n_test = held_out_split(n, fraction)
    return order[:n_test], order[n_test:]


def release_held_out_scores(model: Any, X: np.ndarray, y: np.ndarray, epsilon: float,
                            noise: NoiseSource) -> dict[str, Any]:
    """A model's accuracy and the majority-class baseline on held-out rows, ε-DP for those rows.

    The accuracy and the rate r of label 1 are means of n_test values in [0, 1], each released by the
    Laplace mechanism at ε/2 (:func:`bounded_mean_sensitivity`); the baseline is max(r̃, 1 − r̃),
    post-processing. The model is already a DP release of the other rows, so scoring it is post-processing
    for them. ``model`` None (nothing selected) releases the baseline only.
    """
    n = len(y)
    sensitivity, half = bounded_mean_sensitivity(0.0, 1.0, n), epsilon / 2.0
    rate = laplace_mechanism(float(np.mean(y)), sensitivity, half, noise)
    accuracy = laplace_mechanism(model.score(X, y), sensitivity, half, noise) if model is not None else None
    return {"rows": n, "accuracy": accuracy, "majority_baseline": max(rate, 1.0 - rate), "epsilon": epsilon,
            "noise_scale": sensitivity / half}


class UnknownColumn(ValueError):
    """For ``cost``: a parameter names a column that is not one of the dataset's numeric columns (declared at
    registration). One sentence whether the column is missing or holds text: the sentence names no other column (a
    modeler may not learn the table's columns); the API lists the numeric ``columns`` to a curator caller, and checks
    the budget first (:func:`curator_service.services.jobs.submit_job`)."""

    def __init__(self, parameter: str, column: str, columns: tuple[str, ...]) -> None:
        super().__init__(f"{parameter} {column!r} is not a numeric column of the dataset (a feature, the measured "
                         "column, or one its registration declared in numeric_columns or label_columns)")
        self.columns = columns


def check_numeric_column(dataset: DatasetInfo | None, parameter: str, column: str) -> None:
    """For ``cost``: ``column`` must be one of the dataset's numeric columns, which the registration checked cell by
    cell, so ``run`` never meets a cell it cannot read (a job that failed on one cell would tell its submitter that
    such a row exists, and stay charged)."""
    if dataset is not None and column not in dataset.numeric_columns:
        raise UnknownColumn(parameter, column, dataset.numeric_columns)


def check_label_column(dataset: DatasetInfo | None, column: str) -> None:
    """For ``cost``: the label column must be a numeric column of the dataset, not one of its features, and one of
    the approved 0/1 label columns when the dataset names any (public facts only: never a row's value)."""
    check_numeric_column(dataset, "label_column", column)
    if dataset is None:
        return
    if column in dataset.feature_columns:
        raise ValueError("label_column must not be one of the feature columns")
    if dataset.label_columns and column not in dataset.label_columns:
        raise ValueError(f"label_column {column!r} is not one of the 0/1 label columns the curator approved for this "
                         f"dataset: {', '.join(map(repr, dataset.label_columns))}")


def binary_labels(table: RawTable, column: str) -> np.ndarray:
    """For ``run``: the label column (a numeric column: :func:`check_label_column`) as 0/1 integers, 1 where the
    value is exactly 1 and 0 everywhere else. Never fails on a row's value: a job that failed because one row held 2
    would tell a modeler that such a row exists."""
    return (table.columns[column] == 1).astype(np.int64)


@dataclass(frozen=True)
class JobKind:
    """One kind of job. ``roles``: who may submit and see it (``{"curator"}``, or also ``"modeler"``).

    ``event(params, dataset)``, when given, states the job's mechanism as a DP event for the ledger
    (:mod:`curator_service.services.ledger_events`: noise scale and sensitivity), from the parameters alone like
    ``cost``; without it the ledger records the kind's name and its (ε, δ). ``commit(session, job, result)``: see
    the module's docstring (charge at the end). ``time_limit_seconds`` bounds a job's run below the service's
    ``POBO_JOB_TIME_LIMIT_SECONDS``; past it the job is failed. ``endpoint``: the one endpoint that creates its
    jobs (with checks of its own), named to whoever tries ``POST /v1/jobs`` instead. ``uncertified(params)``: a warning sentence when the job's
    result is not a DP release as charged (an uncertified mechanism), else None; such jobs show ``certified: false``."""

    name: str
    description: str
    cost: Callable[[dict[str, Any], DatasetInfo | None], tuple[float, float]]
    run: Callable[[JobContext], Any]
    roles: frozenset[str] = field(default_factory=lambda: frozenset({"curator"}))
    needs_dataset: bool = True
    event: Callable[[dict[str, Any], DatasetInfo], dict[str, Any]] | None = None
    commit: Callable[[Session, Job, Any], dict[str, Any]] | None = None
    time_limit_seconds: float | None = None
    endpoint: str | None = None
    uncertified: Callable[[dict[str, Any]], str | None] | None = None


def discover() -> dict[str, JobKind]:
    """Every ``KIND`` defined by a module of :mod:`curator_service.jobs.kinds`, by name."""
    from curator_service.jobs import kinds

    registry: dict[str, JobKind] = {}
    for module_info in sorted(pkgutil.iter_modules(kinds.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{kinds.__name__}.{module_info.name}")
        kind = getattr(module, "KIND", None)
        if isinstance(kind, JobKind):
            if kind.name in registry:
                raise RuntimeError(f"two job kinds are named {kind.name!r}; rename one")
            registry[kind.name] = kind
    return registry


KINDS: dict[str, JobKind] = discover()
