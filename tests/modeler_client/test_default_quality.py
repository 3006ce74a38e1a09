"""The modeler's default finds good rows on a problem it was not tuned on: a standard 6-d test function (Rosenbrock)
on a fixed set of 1,000 candidates, 8 seeds, T = 40, as ``pobo-modeler run`` drives its surrogate (non-private,
noise-free answers, no row asked twice). The bar is half of random search's median regret; the modeler's previous
default (Algorithm 2's GP-UCB with the priors' medians) missed it."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from modeler_client.runfile import RunSettings
from modeler_client.surrogate import Surrogate, release_options
from shared.api.scaling import apply_scaling, unit_diameter_bounds
from shared.api.schemas import NeighbouringStep, ReleaseOut
from shared.datasets.benchmark_functions import candidate_table

SEEDS, T, N_INIT = range(8), 40, 5


@pytest.fixture(scope="module")
def rosenbrock_6d():
    table = candidate_table("rosenbrock", 6, 1000, seed=1)
    X = apply_scaling(table.features, unit_diameter_bounds(table.public_lower, table.public_upper))
    y = -table.objective  # larger is better
    return X, y


def regret_at_T(X: np.ndarray, y: np.ndarray, seed: int, acquisition: str | None) -> float:
    """(best value − best found in T queries) / sd(y); ``acquisition`` None: uniform random rows."""
    rng = np.random.default_rng([seed, 7])
    rows = [int(i) for i in rng.choice(len(y), N_INIT, replace=False)]
    if acquisition is None:
        rest = np.setdiff1d(np.arange(len(y)), rows)
        rows += [int(i) for i in rng.choice(rest, T - N_INIT, replace=False)]
    else:
        step = NeighbouringStep(scaling_kind="bounds", clipped=True, box_diameter=1.0, whole_record=True, features=[],
                                summary="a whole record")
        release = ReleaseOut(id=1, dataset_id=1, mechanism="gaussian", certified=False, epsilon=math.inf, delta=0.0,
                             n=len(y), dim=X.shape[1], projection="identity", neighbouring_step=step,
                             goal="maximize", answers_repeat=True, created_at=datetime.now(UTC))
        settings = RunSettings(iterations=T, seed=seed, **({"acquisition": acquisition} if acquisition else {}))
        surrogate = Surrogate(X, release, settings, **release_options(release, settings))
        while len(rows) < T:
            surrogate.update(rows, y[rows])
            rows.append(surrogate.suggest())
    assert len(set(rows)) == T
    return float((y.max() - y[rows].max()) / y.std())


def median_regret(X, y, acquisition):
    return float(np.median([regret_at_T(X, y, seed, acquisition) for seed in SEEDS]))


def test_the_default_acquisition_is_log_expected_improvement():
    assert RunSettings(iterations=1).acquisition == "logei"
    assert RunSettings(iterations=1, acquisition="ucb").acquisition == "paper-ucb"  # run files naming it so resume


def test_the_default_beats_half_of_random_search_on_a_6d_function(rosenbrock_6d):
    X, y = rosenbrock_6d
    random = median_regret(X, y, None)
    default = median_regret(X, y, "")
    assert default < 0.5 * random, (default, random)
