"""Privacy audit of Ding et al.'s elastic-step iteration: each iteration is ϵ-DP on neighbouring utilities.

Neighbouring datasets change one record, which lives in one of the k parts, so every mean utility
u_s moves by at most 1/k (their Lemma 2), in any direction. For one iteration from a fixed state we
sample its output (the accepted candidate or "none") many times on u and on a neighbour u′ and
estimate δ̂ = Σ_o max(0, p̂(o) − e^ϵ q̂(o)); an ϵ-DP iteration has true δ = 0. The sampling error is
bounded by Weissman et al. (2003): P(‖p̂ − p‖₁ ≥ t) ≤ (2^m − 2) exp(−N t²/2) for m outcomes, so
δ̂ ≤ (1 + e^ϵ) t except with probability 2β. The negative control draws the same iteration with its
noise scaled down (ϵ′ = 4ϵ) and must exceed that tolerance.
"""

import math

import numpy as np
import pytest

from shared.algorithms.ding.dptune import NO_SELECTION, constant_overhead_select, iteration_outputs
from shared.dp.noise import noise_source

K, EPSILON = 10, 1.0  # noise scales 2/(kϵ) = 0.2 and 4/(kϵ) = 0.4: comparable to the utility gaps
TRIALS = 500_000
BETA = 1e-6
STATE = dict(level=0.40, step=2, g=0.05, k=K)  # threshold level + step·g = 0.50
BASE = np.array([0.45, 0.55, 0.50])
SHIFT = 1.0 / K
NEIGHBOURS = {  # every candidate moves by at most 1/k, in the directions that stress AboveThreshold
    "all up": BASE + SHIFT,
    "all down": BASE - SHIFT,
    "earlier up, last down": BASE + np.array([SHIFT, SHIFT, -SHIFT]),
    "earlier down, last up": BASE + np.array([-SHIFT, -SHIFT, SHIFT]),
}


def _histogram(utilities, epsilon, seed):
    outputs = iteration_outputs(
        utilities, **STATE, epsilon=epsilon, noise=noise_source(seed), trials=TRIALS
    )
    outcomes = np.where(outputs == NO_SELECTION, len(utilities), outputs)
    return np.bincount(outcomes, minlength=len(utilities) + 1) / TRIALS


def _delta_hat(p, q, epsilon):
    return float(np.maximum(0.0, p - math.exp(epsilon) * q).sum())


def _tolerance(outcomes, epsilon):
    t = math.sqrt(2.0 * math.log((2**outcomes - 2) / BETA) / TRIALS)
    return (1.0 + math.exp(epsilon)) * t


@pytest.mark.parametrize("name", sorted(NEIGHBOURS))
def test_one_iteration_is_epsilon_dp_in_both_directions(name):
    p = _histogram(BASE, EPSILON, seed=101)
    q = _histogram(NEIGHBOURS[name], EPSILON, seed=202)
    tolerance = _tolerance(len(p), EPSILON)
    assert _delta_hat(p, q, EPSILON) <= tolerance
    assert _delta_hat(q, p, EPSILON) <= tolerance


def test_negative_control_scaled_down_noise_is_caught():
    # Same iteration, noise scales divided by 4 (ϵ′ = 4ϵ), checked against the ϵ the test claims.
    p = _histogram(BASE, 4 * EPSILON, seed=303)
    q = _histogram(NEIGHBOURS["earlier down, last up"], 4 * EPSILON, seed=404)
    assert max(_delta_hat(p, q, EPSILON), _delta_hat(q, p, EPSILON)) > _tolerance(len(p), EPSILON)


def test_the_cap_bounds_the_iterations_of_every_run():
    rng = np.random.default_rng(0)
    for seed in range(200):
        utilities = rng.uniform(size=(20, K))
        result = constant_overhead_select(
            utilities, epsilon=0.05, u0=0.0, g=0.001, max_iterations=12, rng=noise_source(seed)
        )
        assert result.iterations <= 12
        assert result.truncated == (result.history[-1].step != 0)
        assert result.epsilon_spent == pytest.approx(12 * 0.05)


def _best_frequency(k_epsilon, runs=150):
    rng = np.random.default_rng(7)
    utilities = np.repeat(rng.uniform(0.2, 0.7, size=(12, 1)), K, axis=1)
    utilities[5] = 0.9  # a clear best
    picks = [
        constant_overhead_select(
            utilities, epsilon=k_epsilon / K, u0=0.0, g=0.02, max_iterations=500, rng=noise_source(seed)
        ).index
        for seed in range(runs)
    ]
    return np.mean([pick == 5 for pick in picks])


def test_selection_concentrates_on_the_best_candidate_as_k_epsilon_grows():
    frequencies = [_best_frequency(ke) for ke in (0.5, 5.0, 50.0, 500.0)]
    assert all(a <= b + 0.05 for a, b in zip(frequencies, frequencies[1:]))
    assert frequencies[0] < 0.4  # 12 candidates, noise scale 8: close to a guess
    assert frequencies[-1] > 0.95
