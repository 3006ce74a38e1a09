"""The mechanisms' calibration against an independent library and their closed-form distributions."""

import math

import numpy as np
import pytest
from dp_accounting.gaussian_mechanism import get_sigma_gaussian
from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

from shared.dp.mechanisms import (
    analytic_gaussian_sigma,
    bounded_mean_sensitivity,
    exponential_mechanism_probabilities,
    gaussian_delta,
    gaussian_mechanism,
    laplace_mechanism,
    release_held_out_scores,
    summation_error,
)
from shared.dp.noise import noise_source


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-2])
def test_analytic_sigma_matches_dp_accounting(epsilon, delta):
    assert analytic_gaussian_sigma(epsilon, delta, 1.0) == pytest.approx(get_sigma_gaussian(epsilon, delta), rel=1e-9)


@pytest.mark.parametrize("epsilon,delta,sensitivity", [(0.5, 1e-5, 1.0), (1.0, 1e-5, 2.5), (8.0, 1e-6, 0.3)])
def test_analytic_sigma_is_tight_by_the_pld_delta(epsilon, delta, sensitivity):
    """dp-accounting's privacy-loss distribution gives δ(ε) = δ at our σ, and more than δ just below it."""
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    at = GaussianPrivacyLoss(sigma, sensitivity=sensitivity).get_delta_for_epsilon(epsilon)
    below = GaussianPrivacyLoss(sigma * (1 - 1e-4), sensitivity=sensitivity).get_delta_for_epsilon(epsilon)
    assert at == pytest.approx(delta, rel=1e-6)
    assert at <= delta * (1 + 1e-9)
    assert below > delta
    assert gaussian_delta(sigma, epsilon, sensitivity) <= delta


def test_analytic_sigma_scales_linearly_with_sensitivity():
    assert analytic_gaussian_sigma(1.0, 1e-5, 7.0) == pytest.approx(7.0 * analytic_gaussian_sigma(1.0, 1e-5, 1.0),
                                                                    rel=1e-12)


@pytest.mark.parametrize("bad",
                         [dict(epsilon=0.0, delta=1e-5), dict(epsilon=1.0, delta=0.0), dict(epsilon=1.0, delta=1.0)])
def test_analytic_sigma_rejects_bad_parameters(bad):
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(sensitivity=1.0, **bad)


def test_exponential_probabilities_are_the_softmax_and_overflow_safe():
    p = exponential_mechanism_probabilities([0.0, 1.0, 3.0], sensitivity=2.0, epsilon=1.0)
    expected = np.exp(np.array([0.0, 0.25, 0.75]))
    np.testing.assert_allclose(p, expected / expected.sum(), rtol=1e-14)
    huge = exponential_mechanism_probabilities([1e308, -1e308, 1e308], sensitivity=1.0, epsilon=1.0)
    np.testing.assert_allclose(huge, [0.5, 0.0, 0.5])


def test_laplace_mechanism_scale_includes_the_grid_slack():
    draws = np.array([laplace_mechanism(0.0, 2.0, 0.5, noise_source(s)) for s in range(2000)])
    # Laplace(b = Δ/ε = 4): mean |x| = b; seeded source has no grid.
    assert np.mean(np.abs(draws)) == pytest.approx(4.0, rel=0.1)
    vector = laplace_mechanism(np.zeros(3), 1.0, 1.0, noise_source(0))
    assert vector.shape == (3,)


def test_gaussian_mechanism_shape_and_type():
    assert isinstance(gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, noise_source(0)), float)
    assert gaussian_mechanism(np.zeros((2, 3)), 1.0, 1.0, 1e-5, noise_source(None)).shape == (2, 3)


def test_gaussian_delta_is_decreasing_in_sigma():
    deltas = [gaussian_delta(s, 1.0) for s in (0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    assert math.isclose(gaussian_delta(1e-3, 0.0), 1.0, rel_tol=1e-9)


def test_summation_error_bounds_a_worst_case_float_sum():
    # Adding 2⁻⁵³ to 1.0 n times rounds back to 1.0 each time: the float sum is off by n·u, which γ_n covers.
    n = 1000
    computed = 1.0
    for _ in range(n):
        computed += 2.0**-53
    exact = 1.0 + n * 2.0**-53
    assert exact - computed <= summation_error(n) * exact
    assert exact - computed > 0.9 * summation_error(n - 1)  # and the bound is nearly attained
    assert summation_error(0) == 0.0
    with pytest.raises(ValueError):
        summation_error(2**53)


def test_the_bounded_means_sensitivity_covers_the_float_means_of_neighbours_far_from_zero():
    # Neighbours differ in one of n values in [lower, upper]: (upper − lower)/n alone is below what the float means
    # of such neighbours can differ by when the bounds are far from zero.
    lower, upper, n = 1e12, 1e12 + 1e-3, 3
    values = np.array([lower, lower, lower])
    neighbour = np.array([lower, lower, upper])
    moved = abs(float(np.mean(neighbour)) - float(np.mean(values)))
    assert moved > (upper - lower) / n
    assert moved <= bounded_mean_sensitivity(lower, upper, n)
    assert bounded_mean_sensitivity(0.0, 1.0, 50) == pytest.approx(1 / 50)


class Scored:
    def score(self, X, y):
        return 0.75


def test_held_out_scores_spend_half_of_epsilon_on_each_mean_at_the_bounded_means_scale():
    y = np.array([1, 1, 0, 1] * 10)
    scores = release_held_out_scores(Scored(), np.zeros((40, 2)), y, 2.0, noise_source(seed=0))
    assert scores["rows"] == 40 and scores["epsilon"] == 2.0
    assert scores["noise_scale"] == bounded_mean_sensitivity(0.0, 1.0, 40) / 1.0
    assert 0.5 <= scores["majority_baseline"] and scores["accuracy"] != 0.75  # released with noise
    assert release_held_out_scores(None, np.zeros((40, 2)), y, 2.0, noise_source(seed=0))["accuracy"] is None
