"""Privacy of the Kusner et al. releases: the exponential mechanism over μ_T is ε-DP for Theorem 1's
sensitivity (exact ratios), and the Laplace release of the best value is ε-DP (a seeded statistical
test with a negative control)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shared import dpbo
from shared.kernels import SquaredExponential
from shared.mechanisms import exponential_mechanism_probabilities, laplace_mechanism
from shared.noise import SeededNoise, noise_source

GRID = np.linspace(0.0, 1.0, 25)
PRIOR = dpbo.GPPrior(lengthscale=0.15)
PARAMS = dpbo.NoisyObservations(epsilon=1.0, delta=1e-3, iterations=15, dataset_kernel=0.995, noise_std=0.1,
                                info_gain=5.0)


def max_log_ratio(p: np.ndarray, p_prime: np.ndarray) -> float:
    return float(np.max(np.abs(np.log(p) - np.log(p_prime))))


def test_distribution_is_exactly_proportional_to_exp_eps_mu_over_2delta():
    mu = np.random.default_rng(0).normal(size=25)
    weights = np.array([math.exp(1.3 * m / (2 * 0.7)) for m in mu])
    assert np.allclose(exponential_mechanism_probabilities(mu, 0.7, 1.3), weights / weights.sum(), rtol=1e-13, atol=0)


def neighbouring_functions(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(f_V, f_V′) on the grid drawn jointly from Assumption 1's GP(0, k₁ ⊗ k₂) with k₁(V, V′) = PARAMS' value."""
    K = SquaredExponential(PRIOR.lengthscale)(GRID.reshape(-1, 1), GRID.reshape(-1, 1))
    k1 = PARAMS.dataset_kernel
    joint = np.block([[K, k1 * K], [k1 * K, K]]) + 1e-9 * np.eye(2 * len(GRID))
    draw = np.linalg.cholesky(joint) @ np.random.default_rng(seed).standard_normal(2 * len(GRID))
    return draw[: len(GRID)], draw[len(GRID):]


def posterior_mean_after_bo(f: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    objective = lambda i: float(f[i] + PARAMS.noise_std * rng.standard_normal())  # noqa: E731
    return dpbo.dp_bo_noisy(objective, GRID, PRIOR, PARAMS, SeededNoise(seed)).run.posterior_mean


@pytest.mark.parametrize("seed", range(8))
def test_selection_is_eps_dp_on_neighbouring_validation_sets(seed):
    """Theorem 1's Δ bounds the change of μ_T between neighbours drawn under Assumption 1, so the output
    distributions' ratio is at most e^ε everywhere (Corollary 1)."""
    f, f_prime = neighbouring_functions(seed)
    mu, mu_prime = posterior_mean_after_bo(f, seed), posterior_mean_after_bo(f_prime, seed + 100)
    sensitivity = dpbo.mean_sensitivity(PARAMS.iterations, len(GRID), PARAMS.delta, PARAMS.dataset_kernel)
    assert np.max(np.abs(mu - mu_prime)) <= sensitivity
    p = exponential_mechanism_probabilities(mu, sensitivity, PARAMS.epsilon)
    p_prime = exponential_mechanism_probabilities(mu_prime, sensitivity, PARAMS.epsilon)
    assert max_log_ratio(p, p_prime) <= PARAMS.epsilon * (1 + 1e-12)


def test_worst_case_neighbours_reach_but_never_exceed_e_to_the_eps():
    """μ′ = μ − Δ at the weakest candidate and + Δ elsewhere is the extreme pair: the ratio there approaches
    e^ε; calibrating to half the sensitivity (negative control) lets it exceed e^ε."""
    mu = np.linspace(0.0, 40.0, 25)
    sensitivity, epsilon = 2.0, 1.0
    mu_prime = mu + sensitivity
    mu_prime[0] = mu[0] - sensitivity
    p = exponential_mechanism_probabilities(mu, sensitivity, epsilon)
    p_prime = exponential_mechanism_probabilities(mu_prime, sensitivity, epsilon)
    assert 0.99 * epsilon < max_log_ratio(p, p_prime) <= epsilon * (1 + 1e-12)
    understated = [exponential_mechanism_probabilities(m, sensitivity / 2, epsilon) for m in (mu, mu_prime)]
    assert max_log_ratio(*understated) > 1.9 * epsilon


def test_sampled_selection_follows_the_exact_distribution():
    mu = posterior_mean_after_bo(neighbouring_functions(0)[0], 0)
    sensitivity, epsilon = 0.2, 5.0  # a peaked distribution, so the test has power
    p = exponential_mechanism_probabilities(mu, sensitivity, epsilon)
    noise = SeededNoise(3)
    draws = [dpbo.private_hyperparameter(mu, sensitivity, epsilon, noise) for _ in range(5000)]
    counts = np.bincount(draws, minlength=len(mu))
    expected = 5000 * p
    well = expected >= 5
    chi2 = float(np.sum((counts[well] - expected[well]) ** 2 / expected[well]))
    # 99.9% quantile of χ² with (number of bins − 1) degrees of freedom, from the Wilson–Hilferty approximation
    k = well.sum() - 1
    limit = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3
    assert chi2 < limit


def empirical_max_log_ratio(a: np.ndarray, b: np.ndarray, edges: np.ndarray, min_count: int = 400) -> float:
    ca, _ = np.histogram(a, edges)
    cb, _ = np.histogram(b, edges)
    keep = (ca >= min_count) & (cb >= min_count)
    return float(np.max(np.abs(np.log(ca[keep] / cb[keep]))))


def test_value_release_is_eps_dp_statistically_with_a_negative_control():
    """ṽ = v* + Lap(Δ/ε) on v* and a neighbour's v* + Δ (Theorem 3's largest change): binned output
    frequencies differ by at most e^ε (up to sampling error); noise calibrated to Δ/2 is caught."""
    epsilon = 1.0
    sensitivity = dpbo.max_value_sensitivity(PARAMS.iterations, len(GRID), PARAMS.delta, PARAMS.dataset_kernel,
                                             PARAMS.noise_std, PARAMS.info_gain)
    v_star, v_neighbour = 0.8, 0.8 + sensitivity
    n = 40_000
    edges = np.linspace(v_star - 6 * sensitivity, v_neighbour + 6 * sensitivity, 41)

    def releases(value: float, calibrated_to: float, seed: int) -> np.ndarray:
        return laplace_mechanism(np.full(n, value), calibrated_to, epsilon, SeededNoise(seed))

    honest = empirical_max_log_ratio(releases(v_star, sensitivity, 1), releases(v_neighbour, sensitivity, 2), edges)
    leaky = empirical_max_log_ratio(releases(v_star, sensitivity / 2, 3), releases(v_neighbour, sensitivity / 2, 4),
                                    edges)
    assert honest <= epsilon + 0.25
    assert leaky > epsilon + 0.5


def test_production_noise_source_runs_algorithm_1():
    source = noise_source(None)
    assert source.floating_point_safe
    f = neighbouring_functions(1)[0]
    result = dpbo.dp_bo_noisy(lambda i: float(f[i]), GRID, PRIOR, PARAMS, source)
    assert 0 <= result.release.hyperparameter_index < len(GRID) and math.isfinite(result.release.value)
