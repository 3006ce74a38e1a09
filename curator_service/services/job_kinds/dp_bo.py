"""``dp-bo``: Kusner et al. (2015) Algorithm 1 on the curator's table — a private best hyperparameter λ̃
and a private best validation accuracy ṽ.

The features are the dataset's public scaling with rows clipped to the unit ball
(:func:`~curator_service.services.job_kinds.inputs.training_features`); the rows are split at random into a training
part and a validation part V (then prepared for eq. 9 by :func:`shared.algorithms.kusner.validation_tasks.split_task`).
Logistic regression with regularisation λ (eq. 9) is trained on the training part and scored by
accuracy on V at every λ of the public grid Λ of log10 λ; then GP-UCB runs T steps over those accuracies. Released:
λ̃ (exponential mechanism over the GP posterior mean) and ṽ (Laplace), each with the range floor of
:mod:`shared.algorithms.kusner.dpbo`: the accuracies are clipped to [0, 1] and every sensitivity is max(paper's, 1). The
job is charged (2ε, 2δ) — from the parameters alone. Nothing else of the run leaves the curator.

What the guarantee covers. Each release is ε-DP for every row of the table (training and validation),
whatever the parameters: a value clipped to [0, 1] moves by at most 1 under any change of the data,
and its sensitivity is at least 1. Kusner et al.'s bound (Theorems 1 and 3, under their Assumption 1)
is used when it is larger — with the default prior it is (Δ ≈ 3.5), so the releases are then more private
than charged. The 2δ charge is the paper's; the floor needs no δ.

Parameters and privacy (the requester may be a modeler):

* ``signal_std``, ``noise_std``, ``dataset_kernel``, ``lengthscale``, ``prior_mean``, ``iterations``,
  ``delta``, ``log10_lambda``: the GP model and the paper's bound. They choose which λ GP-UCB tries and
  the paper's Δ, but Δ is floored at the accuracy range, so none can lower the noise below 1/ε.
* ``validation_fraction``, ``label_column``: which rows are scored and against which labels; accuracy
  stays in [0, 1].
* ``epsilon``: the charge (2ε); the noise scales are ≥ 1/ε.
* ``seed``: research mode only (the API refuses it in production); it picks the split and the noise
  stream, never a noise scale.

Bounds (each violation is a 422 naming the parameter): |Λ| ≤ 200 distinct values of log10 λ in [−10, 10]
(every grid point is fitted, see below; beyond ±10 eq. 9 is unregularised or all-zero in floating point),
T ≤ 1000, lengthscale in [1e-3, 1e3] decades, signal_std and noise_std in [1e-9, 1e3], |prior_mean| ≤ 1e3.

Timing. The learner is fitted at every grid point, in grid order, before GP-UCB starts, and progress is
reported only before that and after each of the T steps, so neither the progress nor its timing depends
on which λ GP-UCB picks (a fit is slow and a repeat served from memory fast, so fitting on demand showed the path).
The total fitting time still depends on the data (the solver's iteration counts) and is visible as the
job's duration; cancellation takes effect at the same data-independent points.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from curator_service.jobs import DatasetInfo, JobContext, JobKind
from curator_service.jobs.outcomes import JobCancelled
from curator_service.services.job_kinds.inputs import binary_labels, check_label_column, training_features
from shared.algorithms.kusner import dpbo
from shared.algorithms.kusner.dpbo import SCORE_RANGE
from shared.algorithms.kusner.validation_tasks import split_task
from shared.api.jobs import DpBoParams, DpBoResult

GUARANTEE = ("lambda and validation_accuracy are each epsilon-DP for every row of the table, whatever the "
             "parameters: accuracies are clipped to [0, 1] and each sensitivity is at least 1 (Kusner et al.'s "
             "Assumption-1 bound is used when larger); the job is charged (2 epsilon, 2 delta)")


def cost(params: DpBoParams, dataset: DatasetInfo | None) -> tuple[float, float]:
    if dataset is not None:
        check_label_column(dataset, params.label_column)
        m = dpbo.validation_size(dataset.n, params.validation_fraction)
        if m < 1 or dataset.n - m < 2:
            raise ValueError(f"validation_fraction {params.validation_fraction} of {dataset.n} rows leaves an empty "
                             "training or validation part; choose a fraction nearer 0.5")
    return 2 * params.epsilon, 2 * params.delta


def run(ctx: JobContext[DpBoParams]) -> dict[str, Any]:
    params = ctx.params
    labels = binary_labels(ctx.require_table(), params.label_column)
    ctx.progress(0.0, f"fitting the learner at the {len(params.log10_lambda)} grid points")
    task = split_task(training_features(ctx), labels, validation_fraction=params.validation_fraction, rng=ctx.rng)
    m, grid = task.validation_size, np.asarray(params.log10_lambda, dtype=float)

    def fitted(value: float) -> float:
        ctx.check_cancelled()  # up to 200 fits of seconds each: a cancel stops the job between them
        return task.at_log10(value)

    # Every grid point, in grid order, before GP-UCB: fitting time then does not depend on GP-UCB's path.
    accuracies = np.array([fitted(value) for value in grid])
    prior = dpbo.GPPrior(params.lengthscale, params.signal_std, params.prior_mean)
    dataset_kernel = params.dataset_kernel
    if dataset_kernel is None:
        dataset_kernel = dpbo.default_dataset_kernel(m, params.signal_std)
    info_gain = dpbo.information_gain_bound(grid.reshape(-1, 1), dpbo.GPPrior(params.lengthscale).covariance(),
                                            (params.noise_std / params.signal_std) ** 2, params.iterations)
    settings = dpbo.NoisyObservations(params.epsilon, params.delta, params.iterations, dataset_kernel,
                                      params.noise_std, info_gain, value_range=SCORE_RANGE)

    def progress(done: int, total: int) -> None:
        if ctx.cancelled():
            raise JobCancelled
        ctx.progress(done / (total + 1), f"GP-UCB step {done} of {total}")

    result = dpbo.dp_bo_noisy(lambda i: float(accuracies[i]), grid, prior, settings, ctx.noise, progress=progress)
    release = result.release
    return DpBoResult(
        log10_lambda=float(grid[release.hyperparameter_index]),
        lambda_=float(10.0 ** grid[release.hyperparameter_index]),
        index=release.hyperparameter_index,
        validation_accuracy=release.value,
        epsilon=release.epsilon,
        delta=release.delta,
        selection_sensitivity=release.selection_sensitivity,
        value_sensitivity=release.value_sensitivity,
        value_noise_scale=release.value_noise_scale,
        iterations=params.iterations,
        validation_size=m,
        dataset_kernel=dataset_kernel,
        info_gain_bound=info_gain,
        grid_size=len(grid),
        guarantee=GUARANTEE,
    ).model_dump(by_alias=True)


KIND = JobKind(
    name="dp-bo",
    description="Kusner et al. Algorithm 1: GP-UCB over a public grid of logistic-regression regularisation, then "
                "a private best lambda (exponential mechanism) and validation accuracy (Laplace), each ε-DP "
                "for any parameters; costs 2ε, 2δ.",
    params=DpBoParams,
    cost=cost,
    run=run,
    roles=frozenset({"curator", "modeler"}),
)
