"""Kusner et al. (2015) DP-BO: the paper's formulas, the releases' scales and Theorem 2's utility bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from shared.algorithms.kusner import dpbo
from shared.dp.mechanisms import exponential_mechanism_probabilities
from shared.dp.noise import SeededNoise
from shared.gp.kernels import SquaredExponential
from shared.gp.ucb import GPUCB

# Inputs used for the formula checks; the expected values are written out from the paper's formulas.
N, DELTA, K1, SIGMA, GAMMA, T = 40, 1e-3, 0.995, 0.1, 7.5, 25


def test_kusner_beta_is_algorithm_1_line_4():
    assert dpbo.kusner_beta(5, N, DELTA) == pytest.approx(2 * math.log(N * 25 * math.pi**2 / (3 * DELTA)), rel=1e-14)


def test_the_bo_loop_uses_the_papers_beta():
    engine = GPUCB(np.zeros((N, 1)), lengthscale=1.0, signal_variance=1.0, noise_variance=0.1, delta=DELTA / 2)
    for t in (1, 7, 30):
        assert engine.beta(t) == pytest.approx(dpbo.kusner_beta(t, N, DELTA), rel=1e-12)


def test_c_is_sigma1_times_the_union_bound_gamma():
    sigma1 = math.sqrt(2 * (1 - K1))  # Theorem 1
    gamma = math.sqrt(2 * math.log(3 * N / DELTA))  # N e^(−γ²/2) = δ/3
    assert dpbo.dataset_shift_bound(K1, N, DELTA) == pytest.approx(sigma1 * gamma, rel=1e-14)
    assert dpbo.dataset_shift_bound(K1, N, DELTA, parts=2) == pytest.approx(
        2 * math.sqrt((1 - K1) * math.log(2 * N / DELTA)), rel=1e-14
    )
    assert dpbo.dataset_shift_bound(1.0, N, DELTA) == 0.0  # identical datasets' functions


def test_q_and_c1():
    assert dpbo.noise_max_bound(SIGMA, DELTA) == pytest.approx(SIGMA * math.sqrt(8 * math.log(3 / DELTA)), rel=1e-14)
    assert dpbo.regret_constant(SIGMA**2) == pytest.approx(8 / math.log(1 + SIGMA**-2), rel=1e-14)


def test_theorem_1_sensitivity():
    expected = 2 * math.sqrt(2 * math.log(N * (T + 1) ** 2 * math.pi**2 / (3 * DELTA))) + 2 * math.sqrt(
        (1 - K1) * math.log(3 * N / DELTA)
    )
    assert dpbo.mean_sensitivity(T, N, DELTA, K1) == pytest.approx(expected, rel=1e-14)


def test_theorem_3_laplace_scale():
    beta_T = 2 * math.log(N * T**2 * math.pi**2 / (3 * DELTA))
    C1 = 8 / math.log(1 + 1 / SIGMA**2)
    omega = math.sqrt(C1 * T * beta_T * GAMMA)
    c = 2 * math.sqrt((1 - K1) * math.log(3 * N / DELTA))
    q = SIGMA * math.sqrt(8 * math.log(3 / DELTA))
    assert dpbo.max_value_sensitivity(T, N, DELTA, K1, SIGMA, GAMMA) == pytest.approx(omega / T + c + q, rel=1e-14)


def test_theorem_5_laplace_scale():
    A, tau, d = 2.0, 0.3, 2
    expected = A * math.exp(-tau * T / math.log(T) ** (d / 4)) + 2 * math.sqrt((1 - K1) * math.log(2 * N / DELTA))
    assert dpbo.noise_free_sensitivity(T, d, A, tau, N, DELTA, K1) == pytest.approx(expected, rel=1e-14)
    with pytest.raises(ValueError):
        dpbo.noise_free_sensitivity(1, d, A, tau, N, DELTA, K1)


def test_theorem_7_total_sensitivity_is_the_worst_pair_of_the_grid():
    m, g_star, L = 500, 1.0, 0.25
    lambdas = np.logspace(-3, 0, 13)
    worst_pair = max((b - a) * L / (a * b) for a, b in itertools.combinations(lambdas, 2))
    expected = min(g_star / m, L / (m * lambdas[0])) + worst_pair
    sensitivity = dpbo.lipschitz_convex_sensitivity(m, g_star, L, lambdas[0], lambdas[-1])
    assert sensitivity == pytest.approx(expected, rel=1e-12)


def test_theorem_2_bound_formula():
    assert dpbo.selection_utility_bound(3.0, 0.5, N, 2.0) == pytest.approx(2 * 3.0 / 0.5 * (math.log(N) + 2.0))


def test_information_gain_bound_brackets_the_exact_maximum():
    grid = np.linspace(0, 1, 6).reshape(-1, 1)
    kernel = SquaredExponential(0.3)
    noise_variance, steps = 0.05, 3
    K = kernel(grid, grid)
    exact = max(
        0.5 * np.linalg.slogdet(np.eye(steps) + K[np.ix_(s, s)] / noise_variance)[1]
        for s in itertools.combinations_with_replacement(range(len(grid)), steps)
    )
    bound = dpbo.information_gain_bound(grid, kernel, noise_variance, steps)
    assert exact <= bound <= exact / (1 - 1 / math.e) + 1e-12


class RecordingNoise(SeededNoise):
    """Seeded noise that remembers the scales it was asked for."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.laplace_scales: list[float] = []
        self.selections: list[tuple[float, float]] = []
        self.laplace_inputs: list[float] = []
        self.scores: list[np.ndarray] = []

    def add_laplace(self, values, scale, grid=0.0):
        self.laplace_scales.append(scale)
        self.laplace_inputs.append(float(values))
        return super().add_laplace(values, scale, grid)

    def exponential_index(self, scores, sensitivity, epsilon):
        self.selections.append((sensitivity, epsilon))
        self.scores.append(np.array(scores))
        return super().exponential_index(scores, sensitivity, epsilon)


GRID = np.linspace(0.0, 1.0, 30)
TRUE_F = np.sin(3 * np.pi * GRID) * np.exp(-GRID)  # known optimum on the grid
BEST = int(np.argmax(TRUE_F))
RANGE = (-1.0, 1.0)  # TRUE_F's public range


def noisy_objective(seed: int, noise_std: float):
    rng = np.random.default_rng(seed)
    return lambda i: float(TRUE_F[i] + noise_std * rng.standard_normal())


def test_algorithm_1_releases_with_the_papers_scales_and_costs_2eps_2delta():
    prior = dpbo.GPPrior(lengthscale=0.1)
    params = dpbo.NoisyObservations(epsilon=0.7, delta=1e-3, iterations=20, dataset_kernel=0.99, noise_std=0.1,
                                    info_gain=6.0, value_range=RANGE)
    noise = RecordingNoise(1)
    result = dpbo.dp_bo_noisy(noisy_objective(0, 0.1), GRID, prior, params, noise)
    delta_mu = dpbo.mean_sensitivity(20, 30, 1e-3, 0.99)
    value_sens = dpbo.max_value_sensitivity(20, 30, 1e-3, 0.99, 0.1, 6.0)
    assert noise.selections == [(pytest.approx(delta_mu, rel=1e-14), 0.7)]
    assert noise.laplace_scales == [pytest.approx(value_sens / 0.7, rel=1e-14)]
    release = result.release
    assert (release.epsilon, release.delta) == (pytest.approx(1.4), pytest.approx(2e-3))
    assert 0 <= release.hyperparameter_index < 30
    assert result.run.best_observed == max(result.run.values) and len(result.run.indices) == 20
    # the non-private GP-UCB run finds the known optimum
    assert int(np.argmax(result.run.posterior_mean)) == BEST


def test_the_callers_grid_is_left_alone():
    grid = GRID.copy()
    params = dpbo.NoisyObservations(epsilon=1.0, delta=1e-3, iterations=5, dataset_kernel=0.99, noise_std=0.1,
                                    value_range=RANGE)
    dpbo.dp_bo_noisy(lambda i: float(TRUE_F[i]), grid, dpbo.GPPrior(1.0), params, SeededNoise(0))
    dpbo.information_gain_bound(grid.reshape(-1, 1), SquaredExponential(1.0), 0.01, 3)
    assert np.array_equal(grid, GRID)


def test_signal_std_is_a_change_of_units():
    """f = s·g with noise s·σ: same BO path, every sensitivity times s (the paper is s = 1)."""
    scale = 0.05
    params = dict(epsilon=1.0, delta=1e-3, iterations=15, dataset_kernel=0.99, info_gain=None)
    unit = dpbo.dp_bo_noisy(lambda i: float(TRUE_F[i]), GRID, dpbo.GPPrior(0.1),
                            dpbo.NoisyObservations(noise_std=0.1, value_range=RANGE, **params), SeededNoise(0))
    scaled_range = (scale * RANGE[0], scale * RANGE[1])
    scaled = dpbo.dp_bo_noisy(lambda i: float(scale * TRUE_F[i]), GRID, dpbo.GPPrior(0.1, signal_std=scale),
                              dpbo.NoisyObservations(noise_std=0.1 * scale, value_range=scaled_range, **params),
                              SeededNoise(0))
    assert scaled.run.indices == unit.run.indices
    assert scaled.release.selection_sensitivity == pytest.approx(scale * unit.release.selection_sensitivity)
    assert scaled.release.value_sensitivity == pytest.approx(scale * unit.release.value_sensitivity)


def test_algorithm_2_releases_the_last_sample():
    params = dpbo.NoiseFreeObservations(epsilon=2.0, delta=1e-3, iterations=12, dataset_kernel=0.99, A=1.0, tau=0.2,
                                        value_range=(0.0, 0.5))  # narrower than the paper's Δ ≈ 0.81
    noise = RecordingNoise(2)
    result = dpbo.dp_bo_noise_free(lambda i: float(TRUE_F[i]), GRID, dpbo.GPPrior(0.1), params, noise)
    sens = dpbo.noise_free_sensitivity(12, 1, 1.0, 0.2, 30, 1e-3, 0.99)
    assert noise.laplace_scales == [pytest.approx(sens / 2.0, rel=1e-14)]
    assert result.run.values[-1] == TRUE_F[result.run.indices[-1]]
    assert (result.release.epsilon, result.release.delta, result.release.hyperparameter_index) == (2.0, 1e-3, None)


def test_algorithm_3_is_pure_epsilon_dp_with_theorem_7_scale():
    params = dpbo.LipschitzConvex(epsilon=0.5, iterations=10, validation_size=200, lipschitz=0.25, g_max=1.0,
                                  lambda_min=0.1, lambda_max=1.0)
    noise = RecordingNoise(3)
    result = dpbo.dp_bo_lipschitz_convex(lambda i: float(TRUE_F[i]), GRID, dpbo.GPPrior(0.1), params, noise)
    sens = min(1.0 / 200, 0.25 / (200 * 0.1)) + 0.9 * 0.25 / 0.1
    assert noise.laplace_scales == [pytest.approx(sens / 0.5, rel=1e-14)]
    assert result.release.delta == 0.0 and result.release.epsilon == 0.5


def test_theorem_2_utility_bound_holds_with_the_stated_probability():
    """μ_T(λ̃) ≥ max μ_T − (2Δ/ε)(log|Λ| + a) with probability ≥ 1 − e^(−a): exactly, and over 4000 seeded draws."""
    params = dpbo.NoisyObservations(epsilon=400.0, delta=1e-3, iterations=20, dataset_kernel=0.99, noise_std=0.1,
                                    info_gain=6.0, value_range=RANGE)
    result = dpbo.dp_bo_noisy(noisy_objective(5, 0.1), GRID, dpbo.GPPrior(0.1), params, SeededNoise(5))
    mu = result.run.posterior_mean
    sensitivity = result.release.selection_sensitivity
    probabilities = exponential_mechanism_probabilities(mu, sensitivity, params.epsilon)
    noise = SeededNoise(11)
    draws = np.array([dpbo.private_hyperparameter(mu, sensitivity, params.epsilon, noise) for _ in range(4000)])
    for a in (0.25, 0.5, 1.0, 2.0):
        bound = dpbo.selection_utility_bound(sensitivity, params.epsilon, len(GRID), a)
        assert bound < mu.max() - mu.min()  # the bound says something on this problem
        within = mu.max() - mu <= bound
        assert probabilities[within].sum() >= 1 - math.exp(-a)
        assert np.mean(within[draws]) >= 1 - math.exp(-a)


# A requester's prior that shrinks the paper's bounds to nothing.
TINY_PRIOR = dpbo.GPPrior(0.1, signal_std=1e-6)


def test_algorithm_1_sensitivities_never_fall_below_the_value_range():
    """s = 1e-6, σ = 1e-9, k₁ = 1 make the paper's Δ ≈ 1e-5; the release clips to the range and uses its width."""
    params = dpbo.NoisyObservations(epsilon=0.1, delta=1e-3, iterations=10, dataset_kernel=1.0, noise_std=1e-9,
                                    value_range=(0.0, 1.0))
    paper = 1e-6 * dpbo.mean_sensitivity(10, len(GRID), 1e-3, 1.0)
    assert paper < 1e-4
    noise = RecordingNoise(4)
    result = dpbo.dp_bo_noisy(lambda i: float(TRUE_F[i]), GRID, TINY_PRIOR, params, noise)
    assert noise.selections == [(1.0, 0.1)]
    assert noise.laplace_scales == [pytest.approx(1.0 / 0.1, rel=1e-14)]
    assert np.all((noise.scores[0] >= 0) & (noise.scores[0] <= 1))  # μ_T clipped: TRUE_F dips to −0.6
    assert noise.laplace_inputs == [float(np.clip(result.run.best_observed, 0.0, 1.0))]
    assert (result.release.selection_sensitivity, result.release.value_sensitivity) == (1.0, 1.0)


def test_algorithm_1_keeps_the_papers_larger_sensitivity():
    params = dpbo.NoisyObservations(epsilon=1.0, delta=1e-3, iterations=10, dataset_kernel=0.99, noise_std=0.1,
                                    info_gain=6.0, value_range=(0.0, 1.0))
    result = dpbo.dp_bo_noisy(lambda i: float(TRUE_F[i]), GRID, dpbo.GPPrior(0.1), params, SeededNoise(0))
    assert result.release.selection_sensitivity == pytest.approx(dpbo.mean_sensitivity(10, 30, 1e-3, 0.99))
    assert result.release.selection_sensitivity > 1.0


def test_algorithm_2_sensitivity_never_falls_below_the_value_range():
    params = dpbo.NoiseFreeObservations(epsilon=0.5, delta=1e-3, iterations=6, dataset_kernel=1.0, A=0.0, tau=1.0,
                                        value_range=(0.0, 0.5))
    noise = RecordingNoise(5)
    result = dpbo.dp_bo_noise_free(lambda i: float(TRUE_F[i]), GRID, TINY_PRIOR, params, noise)
    assert noise.laplace_scales == [pytest.approx(0.5 / 0.5, rel=1e-14)]
    assert 0.0 <= noise.laplace_inputs[0] <= 0.5 and result.release.value_sensitivity == 0.5


@pytest.mark.parametrize("value_range", [(1.0, 1.0), (1.0, 0.0), (0.0, math.inf), (-1e308, 1e308), (math.nan, 1.0)])
def test_the_value_range_must_be_finite_and_ordered(value_range):
    with pytest.raises(ValueError, match="value_range"):
        dpbo.NoisyObservations(epsilon=1.0, delta=1e-3, iterations=5, dataset_kernel=0.99, noise_std=0.1,
                               value_range=value_range)


def test_the_value_range_is_required():
    with pytest.raises(TypeError, match="value_range"):
        dpbo.NoisyObservations(1.0, 1e-3, 5, 0.99, 0.1)  # type: ignore[call-arg]
