"""dp-bo's noise stated before the job runs is the job's own, and the one verdict on λ̃."""

import math

import numpy as np
import pytest

from shared.algorithms.kusner import dpbo
from shared.dp.noise import SeededNoise


def test_planned_noise_is_what_algorithm_1_then_uses():
    grid = np.linspace(-6.0, 0.0, 9)
    m, epsilon, delta, T = 120, 0.7, 1e-5, 6
    plan = dpbo.planned_noise(grid, epsilon=epsilon, delta=delta, iterations=T, validation_size=m, lengthscale=1.0,
                              signal_std=0.25, noise_std=0.01, dataset_kernel=None, value_range=(0.0, 1.0))
    kernel = dpbo.default_dataset_kernel(m, 0.25)
    settings = dpbo.NoisyObservations(epsilon, delta, T, kernel, 0.01, plan.info_gain, value_range=(0.0, 1.0))
    run = dpbo.dp_bo_noisy(lambda i: 0.6 + 0.01 * i, grid, dpbo.GPPrior(1.0, 0.25, 0.5), settings,
                           SeededNoise(np.random.default_rng(0)))
    release = run.release
    assert (plan.selection_sensitivity, plan.value_sensitivity) == (release.selection_sensitivity,
                                                                     release.value_sensitivity)
    assert plan.value_noise_scale == pytest.approx(release.value_noise_scale)
    assert (plan.total_epsilon, plan.total_delta) == (release.epsilon, release.delta) == (2 * epsilon, 2 * delta)


def test_lambda_is_useful_only_when_the_exponential_mechanisms_gap_is_small():
    bad = dpbo.lambda_verdict(1.0, 1.0, 25)
    assert not bad.useful and bad.gap == pytest.approx(2 * (math.log(25) + math.log(10)))
    assert "close to a random grid point" in bad.sentence and f"--epsilon {bad.epsilon_needed:.3g}" in bad.sentence
    good = dpbo.lambda_verdict(1.0, bad.epsilon_needed, 25)
    assert good.useful and good.gap == pytest.approx(dpbo.USEFUL_GAP) and good.sentence.startswith("λ̃ is useful")
    middling = dpbo.lambda_verdict(1.0, bad.epsilon_needed / 3, 25)
    assert not middling.useful and "may miss the best λ by that much" in middling.sentence
