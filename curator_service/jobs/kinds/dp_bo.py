"""``dp-bo``: Kusner et al. (2015) Algorithm 1 on the curator's table — a private best hyperparameter λ̃
and a private best validation accuracy ṽ.

The rows are split at random into a training part and a validation part V. Logistic regression with
regularisation λ (eq. 9) is trained on the training part for the λ that GP-UCB picks on the public grid
Λ of log10 λ, and scored by accuracy on V, for T steps. Released: λ̃ (exponential mechanism over the GP
posterior mean, Theorem 1's sensitivity) and ṽ (Laplace, Theorem 3's sensitivity), each (ε, δ)-DP, so
the job is charged (2ε, 2δ) — from the parameters alone. Nothing else of the run leaves the curator.

What the guarantee covers, as in the paper: the validation rows, under Assumption 1 (the validation
accuracy, as a function of λ and of V, is a draw from the public GP prior given by the parameters; the
sensitivity bounds hold with probability ≥ 1 − δ over that prior). The training rows are treated as
fixed and are not protected by this job.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from curator_service.jobs import DatasetInfo, JobCancelled, JobContext, JobKind, binary_labels, check_label_column
from shared import dpbo
from shared.validation_tasks import split_task

GUARANTEE = ("lambda and validation_accuracy are each (epsilon, delta)-DP for the validation rows under the GP "
             "model of Kusner et al.'s Assumption 1 with this job's prior; training rows are not protected")


class DpBoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label_column: str = Field(description="Column of 0/1 labels; the features are the dataset's feature columns.")
    log10_lambda: list[float] = Field(min_length=2, max_length=1000, description="The public grid Λ, as log10 λ.")
    iterations: int = Field(ge=1, le=1000, description="T, the number of GP-UCB steps.")
    epsilon: float = Field(gt=0, description="ε of each of the two releases; the job costs 2ε.")
    delta: float = Field(gt=0, lt=1, description="δ of each of the two releases; the job costs 2δ.")
    validation_fraction: float = Field(default=0.5, gt=0, lt=1)
    lengthscale: float = Field(default=1.0, gt=0, description="GP lengthscale, in decades of λ.")
    signal_std: float = Field(default=0.25, gt=0, description="GP prior standard deviation of the accuracy.")
    prior_mean: float = Field(default=0.5, description="GP prior mean of the accuracy.")
    noise_std: float = Field(default=0.01, gt=0, description="Observation-noise σ the GP model assumes.")
    dataset_kernel: float | None = Field(
        default=None, ge=-1, le=1,
        description="k1(V, V') for neighbouring validation sets; default 1 − 1/(2 m² s²), so that the model's "
                    "neighbour standard deviation is 1/m, the most one record can move an accuracy.")
    seed: int | None = None

    @field_validator("log10_lambda")
    @classmethod
    def _finite_distinct(cls, grid: list[float]) -> list[float]:
        if not all(math.isfinite(g) and abs(g) <= 30 for g in grid) or len(set(grid)) != len(grid):
            raise ValueError("log10_lambda must hold distinct finite values between -30 and 30")
        return grid


def validation_size(n: int, fraction: float) -> int:
    """m = |V| (public: n and the fraction are); the same rounding as :func:`shared.validation_tasks.split_task`."""
    return round(fraction * n)


def cost(params: dict[str, Any], dataset: DatasetInfo | None) -> tuple[float, float]:
    parsed = DpBoParams.model_validate(params)
    if dataset is not None:
        check_label_column(dataset, parsed.label_column)
        m = validation_size(dataset.n, parsed.validation_fraction)
        if m < 1 or dataset.n - m < 2:
            raise ValueError(f"validation_fraction {parsed.validation_fraction} of {dataset.n} rows leaves an empty "
                             "training or validation part; choose a fraction nearer 0.5")
    return 2 * parsed.epsilon, 2 * parsed.delta


def run(ctx: JobContext) -> dict[str, Any]:
    params = DpBoParams.model_validate(ctx.params)
    labels = binary_labels(ctx.table, params.label_column)
    ctx.progress(0.0, "splitting the rows into training and validation parts")
    task = split_task(ctx.table.features, labels, validation_fraction=params.validation_fraction,
                      rng=ctx.rng)
    m, grid = task.validation_size, np.asarray(params.log10_lambda, dtype=float)
    prior = dpbo.GPPrior(params.lengthscale, params.signal_std, params.prior_mean)
    dataset_kernel = params.dataset_kernel
    if dataset_kernel is None:
        dataset_kernel = 1.0 - 1.0 / (2.0 * m**2 * params.signal_std**2)
    info_gain = dpbo.information_gain_bound(grid.reshape(-1, 1), dpbo.GPPrior(params.lengthscale).covariance(),
                                            (params.noise_std / params.signal_std) ** 2, params.iterations)
    settings = dpbo.NoisyObservations(params.epsilon, params.delta, params.iterations, dataset_kernel,
                                      params.noise_std, info_gain)

    def progress(done: int, total: int) -> None:
        if ctx.cancelled():
            raise JobCancelled
        ctx.progress(done / (total + 1), f"GP-UCB step {done} of {total}")

    result = dpbo.dp_bo_noisy(lambda i: task.at_log10(grid[i]), grid, prior, settings, ctx.noise, progress=progress)
    release = result.release
    return {
        "log10_lambda": float(grid[release.hyperparameter_index]),
        "lambda": float(10.0 ** grid[release.hyperparameter_index]),
        "index": release.hyperparameter_index,
        "validation_accuracy": release.value,
        "epsilon": release.epsilon,
        "delta": release.delta,
        "selection_sensitivity": release.selection_sensitivity,
        "value_sensitivity": release.value_sensitivity,
        "value_noise_scale": release.value_noise_scale,
        "iterations": params.iterations,
        "validation_size": m,
        "dataset_kernel": dataset_kernel,
        "info_gain_bound": info_gain,
        "guarantee": GUARANTEE,
    }


KIND = JobKind(
    name="dp-bo",
    description="Kusner et al. Algorithm 1: GP-UCB over a public grid of logistic-regression regularisation, then "
                "a private best lambda (exponential mechanism) and validation accuracy (Laplace); costs 2ε, 2δ.",
    cost=cost,
    run=run,
    roles=frozenset({"curator", "modeler"}),
)
