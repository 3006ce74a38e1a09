"""Curator-side jobs (Kusner et al.'s summaries, Ding et al.'s tuning, DPareto fronts): the framework.

A job kind is one module in :mod:`curator_service.jobs.kinds` that defines ``KIND = JobKind(...)``;
every such module is registered automatically (see docs/curator_service.md, "How to add a job kind").

* ``cost(params, dataset)`` returns the (ε, δ) the job will spend, computed from its parameters alone
  (never from the data). It validates the parameters: raise ``ValueError`` (or a pydantic
  ``ValidationError``) with a sentence saying what to fix, and the caller gets a 422.
* ``run(ctx)`` does the work and returns a JSON-serialisable dict: the job's released result. It reads
  the raw table from ``ctx.table``, reports progress with ``ctx.progress(fraction, message)``, stops
  early when ``ctx.cancelled()`` is true (raise :class:`JobCancelled`) and draws every piece of privacy
  noise from ``ctx.noise``. Raise :class:`JobFailed` with a sentence for a failure the submitter may
  read; any other exception is reported by type only (its message might quote data).

The ledger is charged at submission, in the transaction that creates the job: a job that later fails
or is cancelled stays charged (its randomness may already have touched the data).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curator_service.storage import RawTable
from shared.noise import NoiseSource


class JobFailed(Exception):
    """A failure whose message is safe to show to the submitter (a sentence, no data values)."""


class JobCancelled(Exception):
    """Raised by a job's ``run`` when ``ctx.cancelled()`` turned true."""


@dataclass(frozen=True)
class DatasetInfo:
    """Public facts about the job's dataset, for ``cost``: no data values."""

    id: int
    n: int
    d: int
    columns: tuple[str, ...]
    feature_columns: tuple[str, ...]
    evaluator: dict[str, Any]
    remaining_epsilon: float
    remaining_delta: float


@dataclass
class JobContext:
    """What ``run`` gets: the parameters, the raw table, progress, cancellation and randomness.

    ``noise`` is the privacy-noise source (floating-point-safe unless the job was seeded in research
    mode); ``rng`` is for everything that is not privacy noise (initial designs, data splits).
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

    def check_cancelled(self) -> None:
        """Raises :class:`JobCancelled` if the job was cancelled; call it between steps."""
        if self.cancelled():
            raise JobCancelled


def check_label_column(dataset: DatasetInfo | None, column: str) -> None:
    """For ``cost``: the label column must be a column of the dataset and not one of its features."""
    if dataset is None:
        return
    if column not in dataset.columns:
        raise ValueError(f"label_column {column!r} is not in the dataset; the columns are {list(dataset.columns)}")
    if column in dataset.feature_columns:
        raise ValueError("label_column must not be one of the feature columns")


def binary_labels(table: RawTable, column: str) -> np.ndarray:
    """For ``run``: the label column as 0/1 integers, or :class:`JobFailed` with a sentence."""
    labels = table.columns[column]
    if labels.dtype.kind not in "fiu" or not np.all((labels == 0) | (labels == 1)):
        raise JobFailed(f"column {column!r} must hold labels 0 and 1 only")
    return labels.astype(np.int64)


@dataclass(frozen=True)
class JobKind:
    """One kind of job. ``roles``: who may submit and see it (``{"curator"}``, or also ``"modeler"``)."""

    name: str
    description: str
    cost: Callable[[dict[str, Any], DatasetInfo | None], tuple[float, float]]
    run: Callable[[JobContext], dict[str, Any]]
    roles: frozenset[str] = field(default_factory=lambda: frozenset({"curator"}))
    needs_dataset: bool = True


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
