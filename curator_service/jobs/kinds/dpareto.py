"""``dpareto``: the privacy–utility Pareto front of DP-SGD / DP-Adam on the curator's table (Avent et al.).

The features are the dataset's public scaling with rows clipped to the unit ball
(:func:`curator_service.jobs.training_features`), as the paper's Adult rows are; with a 0/1 label column
they are split (``ctx.rng``) into training and held-out rows. DPareto (``shared.algorithms.dpareto.optimizer``) explores the
learner's hyperparameters (Table 1 of the paper by default), the privacy oracle is
``shared.dp.accounting.dpsgd_epsilon`` on the training rows and the utility is held-out accuracy, reported
beside the held-out majority-class baseline.

Privacy. The result — every evaluated point, the front and the baseline — is NOT differentially private
(the paper's threat model: fronts go to trusted analysts only), so the kind is curator-only and costs
nothing on the ledger: it releases nothing to modelers, and no parameter can change that. Utility-oracle
noise is research noise from ``ctx.rng`` (the trainings are never released either), so no parameter
touches ``ctx.noise``.

Bounds (each violation is a 422 with a sentence): at most 256 initial points and 512 iterations, at most
1000 epochs (at least 2: epochs are searched in [1, max_epochs]), lot sizes in [1, 65,536], learning rates
in (0, 10], noise variances in (0, 10^4], clip norms in (0, 1000], each range with low < high (a range
of one value would be a division by zero in the search), and 5–50% of the rows held out.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from curator_service.jobs import (
    DatasetInfo,
    JobContext,
    JobFailed,
    JobKind,
    binary_labels,
    check_label_column,
    held_out_split,
    training_features,
)
from shared.algorithms.dpareto.optimizer import ParetoProblem, dpareto
from shared.algorithms.dpareto.problems import dpsgd_oracle, dpsgd_space
from shared.api.jobs import DparetoParams, DparetoPoint, DparetoResult
from shared.dp.noise import SeededNoise


def cost(params: dict[str, Any], dataset: DatasetInfo | None) -> tuple[float, float]:
    """Zero: the front is for the curator only and nothing is released to a modeler (not DP, DESIGN §4)."""
    parsed = DparetoParams.model_validate(params)
    check_label_column(dataset, parsed.label_column)
    return 0.0, 0.0


def evaluate_setting(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], loss: str,
                     optimizer: str, delta: float, seed: int, params: dict[str, float]) -> tuple[float, float]:
    """The oracle at one setting: one DP-SGD training whose research generator (its noise and lots) is seeded by the
    job's seed and the setting itself, so evaluations spread over several worker processes (each with its own copy
    of this function) still get distinct streams, and a seeded job is reproducible however they are spread."""
    setting = np.asarray([params[name] for name in sorted(params)], dtype=np.float64).view(np.uint64)
    generator = np.random.default_rng(np.random.SeedSequence([seed, *setting.tolist()]))
    oracle = dpsgd_oracle(train, test, loss=loss, optimizer=optimizer, delta=delta,
                          draws=lambda: [(SeededNoise(generator), generator)])
    return oracle(params)


def run(ctx: JobContext) -> dict[str, Any]:
    p = DparetoParams.model_validate(ctx.params)
    labels = binary_labels(ctx.table, p.label_column)
    X, y = training_features(ctx), labels
    order = ctx.rng.permutation(len(X))
    n_test = held_out_split(len(X), p.test_fraction)
    test, train = order[:n_test], order[n_test:]
    if len(train) < 2 * p.batch_size[0]:
        raise JobFailed(f"{len(train)} training rows are too few for lots of at least {p.batch_size[0]}")
    space = dpsgd_space(max_epochs=p.max_epochs, lot_size=(p.batch_size[0], min(p.batch_size[1], len(train))),
                        learning_rate=p.learning_rate, noise_variance=p.noise_variance, clip_norm=p.clip_norm)
    oracle = partial(evaluate_setting, (X[train], y[train]), (X[test], y[test]), p.loss, p.optimizer, p.delta,
                     int(ctx.rng.integers(2**63)))
    total = p.initial_points + p.iterations

    def progress(method: str, done: int, _total: int, evaluation) -> None:
        ctx.check_cancelled()
        ctx.progress(done / total, f"{done}/{total} points evaluated")

    problem = ParetoProblem("dpareto", space, oracle)
    result = dpareto(problem, initial_points=p.initial_points, iterations=p.iterations, rng=ctx.rng, progress=progress,
                     map_fn=ctx.map)  # the initial design's evaluations over the cluster
    return DparetoResult(
        warning="This front is not differentially private (DPareto's threat model): share it with trusted analysts only.",
        anti_ideal=list(result.anti_ideal),
        hypervolume=result.hypervolume(),
        delta=p.delta,
        n_train=len(train),
        n_test=n_test,
        majority_baseline=max(float(np.mean(y[test])), 1.0 - float(np.mean(y[test]))),
        best_accuracy=1.0 - min(e.error for e in result.evaluations),
        points=[DparetoPoint(params=e.params, epsilon=e.epsilon, error=e.error) for e in result.evaluations],
        front=[DparetoPoint(params=e.params, epsilon=e.epsilon, error=e.error) for e in result.front_evaluations()],
        overhead_seconds=float(np.sum(result.overhead_seconds)),
    ).model_dump()


KIND = JobKind(
    name="dpareto",
    description="Privacy–utility Pareto front of DP-SGD/DP-Adam on the table by multi-objective BO "
                "(Avent et al. 2020); not DP, curator only, no ledger charge",
    cost=cost,
    run=run,
    roles=frozenset({"curator"}),
)
