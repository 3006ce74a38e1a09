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

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

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
from shared.dp.accounting import dpsgd_epsilon
from shared.algorithms.dpareto.optimizer import Hyperparameter, ParetoProblem, dpareto
from shared.learners import DPSGDClassifier
from shared.dp.noise import SeededNoise


class DparetoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    label_column: str
    loss: str = Field(default="logistic", pattern="^(logistic|hinge)$")
    optimizer: str = Field(default="sgd", pattern="^(sgd|adam)$")
    initial_points: int = Field(default=8, ge=2, le=256)
    iterations: int = Field(default=16, ge=0, le=512)
    delta: float = Field(default=1e-5, gt=0, lt=1)
    test_fraction: float = Field(default=0.3, ge=0.05, le=0.5)
    max_epochs: int = Field(default=64, ge=2, le=1000)
    batch_size: tuple[int, int] = (8, 512)
    learning_rate: tuple[float, float] = (5e-4, 5e-2)
    noise_variance: tuple[float, float] = (0.1, 16.0)
    clip_norm: tuple[float, float] = (0.1, 4.0)
    seed: int | None = None


RANGE_LIMITS = {"batch_size": 65_536, "learning_rate": 10.0, "noise_variance": 1e4, "clip_norm": 1000.0}


def cost(params: dict[str, Any], dataset: DatasetInfo | None) -> tuple[float, float]:
    """Zero: the front is for the curator only and nothing is released to a modeler (not DP, DESIGN §4)."""
    parsed = DparetoParams.model_validate(params)
    for name, limit in RANGE_LIMITS.items():
        low, high = getattr(parsed, name)
        if not 0 < low < high <= limit:
            raise ValueError(f"{name} must be a range [low, high] with 0 < low < high ≤ {limit:g}")
    check_label_column(dataset, parsed.label_column)
    return 0.0, 0.0


def run(ctx: JobContext) -> dict[str, Any]:
    p = DparetoParams.model_validate(ctx.params)
    labels = binary_labels(ctx.table, p.label_column)
    X, y = training_features(ctx), labels
    order = ctx.rng.permutation(len(X))
    n_test = held_out_split(len(X), p.test_fraction)
    test, train = order[:n_test], order[n_test:]
    if len(train) < 2 * p.batch_size[0]:
        raise JobFailed(f"{len(train)} training rows are too few for lots of at least {p.batch_size[0]}")
    lot_high = min(p.batch_size[1], len(train))
    space = (Hyperparameter("epochs", 1, p.max_epochs, integer=True),
             Hyperparameter("lot_size", p.batch_size[0], lot_high, log=True, integer=True),
             Hyperparameter("learning_rate", *p.learning_rate, log=True),
             Hyperparameter("noise_variance", *p.noise_variance, log=True),
             Hyperparameter("clip_norm", *p.clip_norm, log=True))
    seeds = np.random.SeedSequence(int(ctx.rng.integers(2**63)))

    def oracle(params: dict[str, float]) -> tuple[float, float]:
        sigma = float(np.sqrt(params["noise_variance"]))
        model = DPSGDClassifier(learning_rate=params["learning_rate"], batch_size=int(params["lot_size"]),
                                epochs=int(params["epochs"]), noise_multiplier=sigma, clip_norm=params["clip_norm"],
                                loss=p.loss, optimizer=p.optimizer)
        child = np.random.default_rng(seeds.spawn(1)[0])
        model.fit(X[train], y[train], SeededNoise(child), rng=child)
        epsilon = dpsgd_epsilon(len(train), model.batch_size, model.epochs, sigma, p.delta)
        return epsilon, 1.0 - model.score(X[test], y[test])

    total = p.initial_points + p.iterations

    def progress(method: str, done: int, _total: int, evaluation) -> None:
        ctx.check_cancelled()
        ctx.progress(done / total, f"{done}/{total} points evaluated")

    problem = ParetoProblem("dpareto", space, oracle)
    result = dpareto(problem, initial_points=p.initial_points, iterations=p.iterations, rng=ctx.rng, progress=progress)
    return {
        "not_differentially_private": True,
        "warning": "This front is not differentially private (DPareto's threat model): share it with trusted analysts only.",
        "anti_ideal": list(result.anti_ideal),
        "hypervolume": result.hypervolume(),
        "delta": p.delta,
        "n_train": int(len(train)),
        "n_test": int(n_test),
        "majority_baseline": max(float(np.mean(y[test])), 1.0 - float(np.mean(y[test]))),
        "best_accuracy": 1.0 - min(e.error for e in result.evaluations),
        "points": [{"params": e.params, "epsilon": e.epsilon, "error": e.error} for e in result.evaluations],
        "front": [{"params": e.params, "epsilon": e.epsilon, "error": e.error} for e in result.front_evaluations()],
        "overhead_seconds": float(np.sum(result.overhead_seconds)),
    }


KIND = JobKind(
    name="dpareto",
    description="Privacy–utility Pareto front of DP-SGD/DP-Adam on the table by multi-objective BO "
                "(Avent et al. 2020); not DP, curator only, no ledger charge",
    cost=cost,
    run=run,
    roles=frozenset({"curator"}),
)
