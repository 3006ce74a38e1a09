"""``dp-tune``: Ding et al.'s constant-overhead private hyperparameter selection, then a DP-SGD model,
scored on held-out rows beside the majority-class baseline.

The features are the dataset's public scaling with rows clipped to the unit ball
(:func:`~curator_service.services.job_kinds.inputs.training_features`). A random ``test_fraction`` of the rows is held
out. The other rows are split into k parts; every candidate (DP-SGD logistic-regression hyperparameters) is
trained on each part and scored on that part's held-out rows, so each part's utility depends on that
part alone and the mean over parts moves by at most 1/k when one row is replaced. The capped
elastic-step sparse vector (``shared.algorithms.ding.dptune``) picks a candidate, which is trained by DP-SGD on all
non-held-out rows at (final_epsilon, final_delta). On the held-out rows the model's accuracy and the
rate of label 1 are released by the Laplace mechanism (sensitivity 1/n_test each, evaluation_epsilon/2
each); the majority-class baseline is max(rate, 1 − rate), post-processing.

Charged: max_iterations · epsilon + final_epsilon + evaluation_epsilon, final_delta — from the
parameters alone (basic composition; the held-out and training rows are disjoint, so it is loose).
Released: the selected hyperparameters, the iteration count, the model weights (for the scaled,
clipped features) and the two noisy held-out numbers.

Parameters and privacy (the requester may be a modeler):

* ``k``: the utilities' sensitivity is 1/k for any k, because the parts are disjoint and each part's
  utility is an accuracy in [0, 1]; the sparse vector's noise is calibrated to that 1/k.
* ``epsilon``, ``max_iterations``, ``final_epsilon``, ``final_delta``, ``evaluation_epsilon``: the
  charge. Every iteration is ϵ-DP and the cap, not the realised count, is charged; the DP-SGD noise
  multiplier is calibrated so that the accountant gives ≤ final_epsilon for the realised n, batch size
  and epochs.
* the candidates' ``learning_rate``, ``batch_size``, ``epochs``, ``clip_norm``, ``optimizer``: the noise
  multiplier σ is recalibrated for each (batch and epochs enter the accountant; a batch larger than the
  rows is cut to the rows) and the noise standard deviation is σ·Δ, Δ = 2·clip_norm·(1 + ≤5e-7 at batch
  65,536) + √p·grid (the floating-point sum's replace-one sensitivity plus the sampler's rounding slack
  on p = features + 1 coordinates: ``DPSGDClassifier.noise_std``), proportional to the gradients'
  clip, so none lowers the noise below what final_epsilon requires.
* ``u0``, ``g``, ``private_parts``, ``label_column``, ``test_fraction``: where the threshold starts, how
  it climbs, whether part models are noised, what is predicted, how many rows are held out; none
  enters a noise scale except through the public n_test.
* ``seed``: research mode only (the API refuses it in production); it picks the noise stream, never
  its scale.

Bounds (each violation is a 422 with a sentence): at most 100 candidates, 100 epochs, batches of at
most 65,536 rows, learning rates and clip norms in (0, 1000], k ≤ (training rows)/4 and ≤ 1,000, at most 10,000
iterations, and at most 2·10^6 DP-SGD steps over all trainings (the curator's CPU is shared).
"""

from __future__ import annotations

from typing import Any

from curator_service.jobs import DatasetInfo, JobContext, JobKind
from curator_service.services.job_kinds.inputs import (
    binary_labels,
    check_label_column,
    held_out_rows,
    held_out_split,
    training_features,
)
from shared.algorithms.ding.dptune import PrivateLogisticRegression, tune_and_train
from shared.api.jobs import DpTuneModel, DpTuneParams, DpTuneResult, HeldOutScores
from shared.dp.mechanisms import release_held_out_scores

MAX_STEPS = 2_000_000


def training_steps(params: DpTuneParams, n_train: int) -> int:
    """DP-SGD steps of the whole job, for its work bound: per candidate, epochs × (one step or more per
    part, on 70% of its rows, plus round(n_train / batch) for the final training)."""
    per_part = n_train // params.k
    steps = 0
    for c in params.candidates:
        parts = params.k * max(1, round(0.7 * per_part / c.batch_size))
        steps += c.epochs * (parts + max(1, round(n_train / c.batch_size)))
    return steps


def cost(params: DpTuneParams, dataset: DatasetInfo | None) -> tuple[float, float]:
    if dataset is not None:
        check_label_column(dataset, params.label_column)
        n_train = dataset.n - held_out_split(dataset.n, params.test_fraction)
        if n_train < 4 * params.k:
            raise ValueError(f"k = {params.k} parts need at least {4 * params.k} training rows; the dataset has "
                             f"{n_train} after holding out test_fraction {params.test_fraction}; choose a smaller k")
        if (steps := training_steps(params, n_train)) > MAX_STEPS:
            raise ValueError(f"these candidates need about {steps:,} DP-SGD steps and at most {MAX_STEPS:,} are "
                             "allowed; use fewer candidates or epochs, or larger batches")
    return params.max_iterations * params.epsilon + params.final_epsilon + params.evaluation_epsilon, params.final_delta


def run(ctx: JobContext[DpTuneParams]) -> dict[str, Any]:
    params = ctx.params
    labels = binary_labels(ctx.require_table(), params.label_column)
    X = training_features(ctx)
    test, train = held_out_rows(ctx.require_table(), params.test_fraction, ctx.rng)
    candidates = [PrivateLogisticRegression(**c.model_dump()) for c in params.candidates]
    ctx.progress(0.05, f"training {len(candidates)} candidates on {params.k} parts")
    tuned = tune_and_train(
        X[train], labels[train], candidates, k=params.k, epsilon=params.epsilon, u0=params.u0,
        g=params.g, max_iterations=params.max_iterations, final_epsilon=params.final_epsilon,
        final_delta=params.final_delta, noise=ctx.noise, rng=ctx.rng, private_parts=params.private_parts,
        map_fn=ctx.map,  # candidates × parts over the cluster; cancellation is checked while they run
    )
    ctx.check_cancelled()
    selection = tuned.selection
    model = tuned.model
    return DpTuneResult(
        selected=selection.index,
        iterations=selection.iterations,
        max_iterations=selection.max_iterations,
        truncated=selection.truncated,
        selection_epsilon=selection.epsilon_spent,
        final_epsilon=params.final_epsilon if model is not None else 0.0,
        final_delta=params.final_delta if model is not None else 0.0,
        hyperparameters=None if selection.index is None else params.candidates[selection.index],
        model=None if model is None else DpTuneModel(
            coef=model.coef_.tolist(), intercept=model.intercept_, noise_multiplier=model.noise_multiplier,
            feature_columns=list(ctx.require_table().feature_columns),
            features="the dataset's public scaling, then rows clipped to l2 norm 1",
            scaling=ctx.require_dataset().scaling.model_dump(),
        ),
        held_out=HeldOutScores(**release_held_out_scores(model, X[test], labels[test], params.evaluation_epsilon,
                                                          ctx.noise)),
    ).model_dump(exclude_none=False)


KIND = JobKind(
    name="dp-tune",
    description="Ding et al.: private hyperparameter selection (capped elastic-step sparse vector) and a DP-SGD "
                "logistic regression, with its private held-out accuracy and majority-class baseline; costs "
                "max_iterations·epsilon + final_epsilon + evaluation_epsilon.",
    params=DpTuneParams,
    cost=cost,
    run=run,
    # Everything it returns is a charged DP release, so a modeler in scope may ask for it, as for dp-bo.
    roles=frozenset({"curator", "modeler"}),
)
