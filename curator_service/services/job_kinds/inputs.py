"""What a job kind reads from its dataset, and the checks its ``cost`` makes on public facts: the numeric and label
columns it may name, the features a learner trains on, the rows a job holds out for scoring."""

from __future__ import annotations

import numpy as np

from curator_service.jobs import DatasetInfo, JobContext
from curator_service.persistence.blobs import RawTable
from shared.api.scaling import apply_scaling
from shared.releases.gaussian import clip_rows

TRAINING_ROW_NORM = 1.0


def training_features(ctx: JobContext) -> np.ndarray:
    """The features a learner trains on: the dataset's public scaling, then every row clipped to ℓ2 norm
    ≤ 1 (:data:`TRAINING_ROW_NORM`), the unit ball the benchmarks' rows live in (Adult's a9a rows are
    unit-norm) and DP-SGD's clip norms and DP-BO's Lipschitz constants are sized for. Both maps are fixed
    in advance and act on each row alone."""
    return clip_rows(apply_scaling(ctx.require_table().features, ctx.require_dataset().scaling), TRAINING_ROW_NORM)


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
    the approved 0/1 label columns when the dataset names any (public facts only: never a row's value). A feature
    and an unapproved column get one sentence."""
    check_numeric_column(dataset, "label_column", column)
    if dataset is None:
        return
    if column in dataset.feature_columns or (dataset.label_columns and column not in dataset.label_columns):
        approved = (f"the curator approved {', '.join(map(repr, dataset.label_columns))}" if dataset.label_columns
                    else "any numeric column but the features")
        raise ValueError(f"label_column {column!r} is not one of this dataset's 0/1 label columns ({approved})")


def binary_labels(table: RawTable, column: str) -> np.ndarray:
    """For ``run``: the label column (a numeric column: :func:`check_label_column`) as 0/1 integers, 1 where the
    value is exactly 1 and 0 everywhere else. Never fails on a row's value: a job that failed because one row held 2
    would tell a modeler that such a row exists."""
    return (table.columns[column] == 1).astype(np.int64)
