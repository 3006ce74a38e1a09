"""``dpareto``: the privacy–utility Pareto front of DP-SGD / DP-Adam on the curator's table (Avent et al.).

The features are the dataset's public scaling with rows clipped to the unit ball
(:func:`~curator_service.services.job_kinds.inputs.training_features`), as the paper's Adult rows are; with a 0/1 label
column they are split (``ctx.rng``) into training and held-out rows. DPareto (``shared.algorithms.dpareto.optimizer``)
explores the learner's hyperparameters (Table 1 of the paper by default, its learning rates scaled to the table's size:
:func:`shared.algorithms.dpareto.problems.learning_rates_for`), the privacy oracle is
``shared.dp.accounting.dpsgd_epsilon`` on the training rows and the utility is held-out accuracy, reported
beside the held-out majority-class baseline; when no learner beats it the result's ``diagnosis`` says so and why.

Privacy. The result — every evaluated point, the front and the baseline — is NOT differentially private
(the paper's threat model: fronts go to trusted analysts only), so the kind is curator-only and costs
nothing on the ledger: it releases nothing to modelers, and no parameter can change that. Utility-oracle
noise is research noise from ``ctx.rng`` (the trainings are never released either), so no parameter
touches ``ctx.noise``.

Baseline. ``baseline`` "random" or "grid" also evaluates random search (``baseline_points`` settings drawn
uniformly from the same domain, the first ``initial_points`` of them DPareto's own initial points, as in the
paper, and not evaluated again) or the finest regular grid of at most ``baseline_points`` settings (k values
per hyperparameter, k^5 ≤ baseline_points, so at least 32); by default as many points as DPareto evaluates.
Its points, front and hypervolume (same anti-ideal) come back beside DPareto's, so the curator sees whether
the front beats the baseline at the same cost. Like DPareto's initial points, its evaluations are spread over
the cluster (``ctx.map``); DPareto's HVPoI steps are sequential and run in the job's process.

Bounds (each violation is a 422 with a sentence): at most 256 initial points, 512 iterations and 768
baseline points, at most 1000 epochs (at least 2: epochs are searched in [1, max_epochs]), lot sizes in
[1, 65,536], learning rates in (0, 10], noise variances in (0, 10^4], clip norms in (0, 1000], each range with
low < high (a range of one value would be a division by zero in the search), 5–50% of the rows held out, a
smallest lot of at most half the training rows, and at most 10^7 DP-SGD steps over the whole job, counted at the
worst setting of the domain: (initial points + iterations + baseline points) × max_epochs × round(training rows /
smallest lot) (the curator's CPU is shared).
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any, cast

import numpy as np

from curator_service.jobs import DatasetInfo, JobContext, JobKind
from curator_service.services.job_kinds.inputs import (
    binary_labels,
    check_label_column,
    held_out_rows,
    held_out_split,
    training_features,
)
from shared.algorithms.dpareto.optimizer import (
    Evaluation,
    ParetoProblem,
    ParetoResult,
    dpareto,
    grid_points_per_dimension,
    grid_search,
    random_search,
)
from shared.algorithms.dpareto.problems import dpsgd_oracle, dpsgd_space, learning_rates_for
from shared.api.jobs import DparetoParams, DparetoPoint, DparetoResult
from shared.dp.noise import SeededNoise
from shared.learners.dpsgd import Loss, Optimizer

MAX_STEPS = 10_000_000
"""DP-SGD steps a job may need at worst. The defaults (24 evaluations × 64 epochs at lots ≥ 8) fit on tables of up
to ~74,000 rows (all of Adult, 32,561 rows: 4.4·10^6); the service-latency benchmark's long job needs 2.8·10^6 and
the end-to-end Adult tests at most 2.9·10^6. A small-lot step is tens of microseconds of CPU, so the bound is
minutes of CPU, much of it spread over the cluster."""
DIMENSIONS = len(dpsgd_space())


def baseline_budget(params: DparetoParams) -> int:
    """``baseline_points``, by default as many as DPareto evaluates; 0 without a baseline."""
    return 0 if params.baseline == "none" else params.baseline_points or params.initial_points + params.iterations


def grid_size(params: DparetoParams) -> int:
    """Values per hyperparameter of the grid baseline: the finest grid within the budget."""
    return grid_points_per_dimension(baseline_budget(params), DIMENSIONS)


def baseline_evaluations(params: DparetoParams) -> int:
    """How many settings the baseline evaluates: its budget for random search, the grid's size for the grid."""
    return grid_size(params) ** DIMENSIONS if params.baseline == "grid" else baseline_budget(params)


def training_steps(params: DparetoParams, n_train: int) -> int:
    """DP-SGD steps of the whole job at worst: every evaluation (DPareto's and the baseline's) at max_epochs and
    the smallest lot, round(n_train / lot) steps an epoch (the learner's count)."""
    evaluations = params.initial_points + params.iterations + baseline_evaluations(params)
    return evaluations * params.max_epochs * max(1, round(n_train / params.batch_size[0]))


def cost(params: DparetoParams, dataset: DatasetInfo | None) -> tuple[float, float]:
    """Zero: the front is for the curator only and nothing is released to a modeler (not DP, docs/design.md §4)."""
    if params.baseline == "grid" and grid_size(params) < 2:
        raise ValueError(f"a grid baseline needs baseline_points ≥ {2**DIMENSIONS} (2 values of each of the "
                         f"{DIMENSIONS} hyperparameters); set baseline_points")
    check_label_column(dataset, params.label_column)
    if dataset is not None:
        n_train = dataset.n - held_out_split(dataset.n, params.test_fraction)
        if n_train < 2 * params.batch_size[0]:  # so the lot-size range [low, min(high, n_train)] keeps low < high
            raise ValueError(f"{n_train} training rows are too few for lots of at least {params.batch_size[0]}; "
                             f"the smallest batch_size may be at most half the training rows (the table's {dataset.n} "
                             f"rows less test_fraction {params.test_fraction})")
        if (steps := training_steps(params, n_train)) > MAX_STEPS:
            raise ValueError(f"this front may need {steps:,} DP-SGD steps and at most {MAX_STEPS:,} are allowed; use "
                             "fewer initial points, iterations or baseline points, fewer max_epochs, or a larger "
                             "smallest batch_size")
    return 0.0, 0.0


def evaluate_setting(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], loss: Loss,
                     optimizer: Optimizer, delta: float, seed: int, params: dict[str, float]) -> tuple[float, float]:
    """The oracle at one setting: one DP-SGD training whose research generator (its noise and lots) is seeded by the
    job's seed and the setting itself, so evaluations spread over several worker processes (each with its own copy
    of this function) still get distinct streams, and a seeded job is reproducible however they are spread."""
    setting = np.asarray([params[name] for name in sorted(params)], dtype=np.float64).view(np.uint64)
    generator = np.random.default_rng(np.random.SeedSequence([seed, *setting.tolist()]))
    oracle = dpsgd_oracle(train, test, loss=loss, optimizer=optimizer, delta=delta,
                          draws=lambda: [(SeededNoise(generator), generator)])
    return oracle(params)


def run(ctx: JobContext[DparetoParams]) -> dict[str, Any]:
    p = ctx.params
    labels = binary_labels(ctx.require_table(), p.label_column)
    X, y = training_features(ctx), labels
    test, train = held_out_rows(ctx.require_table(), p.test_fraction, ctx.rng)
    n_test = len(test)
    learning_rate = p.learning_rate or learning_rates_for(len(train))
    lot_size = (p.batch_size[0], min(p.batch_size[1], len(train)))
    space = dpsgd_space(max_epochs=p.max_epochs, lot_size=lot_size, learning_rate=learning_rate,
                        noise_variance=p.noise_variance, clip_norm=p.clip_norm)
    # The params' patterns admit only the learner's names.
    oracle = partial(evaluate_setting, (X[train], y[train]), (X[test], y[test]), cast(Loss, p.loss),
                     cast(Optimizer, p.optimizer), p.delta, int(ctx.rng.integers(2**63)))
    front_total = p.initial_points + p.iterations
    total = front_total + baseline_evaluations(p)

    def progress(method: str, done: int, _total: int, evaluation) -> None:
        ctx.check_cancelled()
        done += 0 if method == "dpareto" else front_total
        ctx.progress(done / total, f"{done}/{total} points evaluated")

    problem = ParetoProblem("dpareto", space, oracle)
    # random search's first points are DPareto's initial points, as in the paper: it starts from DPareto's generator
    start = copy.deepcopy(ctx.rng) if p.baseline == "random" else None
    result = dpareto(problem, initial_points=p.initial_points, iterations=p.iterations, rng=ctx.rng, progress=progress,
                     map_fn=ctx.map)  # the initial design's evaluations over the cluster
    baseline = None
    if p.baseline == "random":  # the oracle is a function of the setting: DPareto's evaluations are reused
        baseline = random_search(problem, evaluations=baseline_evaluations(p), rng=start, progress=progress,
                                 map_fn=ctx.map, known=result.evaluations)
    elif p.baseline == "grid":
        baseline = grid_search(problem, points_per_dimension=grid_size(p), progress=progress, map_fn=ctx.map)
    majority = max(float(np.mean(y[test])), 1.0 - float(np.mean(y[test])))
    best = 1.0 - min(e.error for e in result.evaluations)
    return DparetoResult(
        warning="This front is not differentially private (DPareto's threat model): share it with trusted analysts "
                "only.",
        anti_ideal=list(result.anti_ideal),
        hypervolume=result.hypervolume(),
        delta=p.delta,
        n_train=len(train),
        n_test=n_test,
        majority_baseline=majority,
        best_accuracy=best,
        learning_rate=list(learning_rate),
        diagnosis=majority_diagnosis(best, majority, n_test, len(train), lot_size[0], learning_rate[1], p.max_epochs),
        points=wire_points(result.evaluations),
        front=wire_points(result.front_evaluations()),
        overhead_seconds=float(np.sum(result.overhead_seconds)),
        **baseline_fields(p.baseline, baseline),
    ).model_dump()


def majority_diagnosis(best: float, majority: float, n_test: int, n_train: int, smallest_lot: int,
                       largest_rate: float, max_epochs: int) -> str | None:
    """A sentence when no learner beat the majority class by more than one held-out row (None otherwise): what
    bounds how far the weights can move (steps per epoch, learning rate, epochs) and what to change."""
    if best > majority + 1.0 / n_test:
        return None
    steps = max(1, round(n_train / smallest_lot))
    return (f"Every learner ended at the majority class (best held-out accuracy {best:.3f}, always guessing the "
            f"majority {majority:.3f}): with {n_train} training rows an epoch is at most {steps} steps of learning "
            f"rate ≤ {largest_rate:.3g}, for at most {max_epochs} epochs, which may be too little to move the weights "
            "away from zero, or the features may not predict the label. Try larger learning rates (learning_rate), "
            "more epochs (max_epochs) or smaller lots (batch_size).")


def wire_points(evaluations: list[Evaluation]) -> list[DparetoPoint]:
    return [DparetoPoint(params=e.params, epsilon=e.epsilon, error=e.error) for e in evaluations]


def baseline_fields(method: str, baseline: ParetoResult | None) -> dict[str, Any]:
    if baseline is None:
        return {}
    return {"baseline": method, "baseline_points": wire_points(baseline.evaluations),
            "baseline_front": wire_points(baseline.front_evaluations()), "baseline_hypervolume": baseline.hypervolume()}


KIND = JobKind(
    name="dpareto",
    description="Privacy–utility Pareto front of DP-SGD/DP-Adam on the table by multi-objective BO "
                "(Avent et al. 2020); not DP, curator only, no ledger charge",
    params=DparetoParams,
    cost=cost,
    run=run,
    roles=frozenset({"curator"}),
)
