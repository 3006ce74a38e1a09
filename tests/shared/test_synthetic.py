"""Built-in problems: the paper's synthetic GP grid and Branin-Hoo."""

import numpy as np
import pytest

from shared.datasets.synthetic import (
    CALIBRATED_SIGMA_MIN,
    SYNTHETIC_DOMAIN,
    branin,
    branin_problem,
    grid,
    kronecker_factor_error,
    synthetic_gp_problem,
    synthetic_gp_values,
)
from shared.projection import omega
from shared.projection.po_gp_ucb import centred_gram


def test_grid_layout_and_normalisations():
    paper = synthetic_gp_problem(0, normalisation="max-norm-25")
    assert paper.X.shape == (10_000, 2)
    assert np.linalg.norm(paper.X, axis=1).max() == pytest.approx(25.0)
    assert centred_gram(paper.X).sigma_min == pytest.approx(1030.9, abs=0.1)
    calibrated = synthetic_gp_problem(0, normalisation="calibrated")
    assert centred_gram(calibrated.X).sigma_min == pytest.approx(CALIBRATED_SIGMA_MIN)
    # The calibrated grid reproduces the paper's crossing points (Tables 1–3, δ = 1e-5, natural logs).
    sigma_min = CALIBRATED_SIGMA_MIN
    for log_eps, r_star, r_next in [(1.1, 10, 15), (1.3, 15, 20), (1.5, 20, 30)]:
        assert omega(np.exp(log_eps), 1e-5, r_star) <= sigma_min < omega(np.exp(log_eps), 1e-5, r_next)
    # The same function whatever the normalisation; the lengthscale follows the inputs.
    np.testing.assert_array_equal(paper.f, calibrated.f)
    ratio = calibrated.lengthscale / paper.lengthscale
    assert ratio == pytest.approx(calibrated.X[1, 1] / paper.X[1, 1], rel=1e-12)
    raw = synthetic_gp_problem(0, normalisation="none")
    assert raw.lengthscale == 1.25
    np.testing.assert_allclose(raw.X, grid(100, (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN)))


def test_synthetic_draw_is_seeded_and_cached():
    a, b = synthetic_gp_problem(3), synthetic_gp_problem(3)
    assert a.f is b.f
    assert not np.array_equal(a.f, synthetic_gp_problem(4).f)
    assert a.optimum == a.f.max() and a.signal_std == 1.0 and a.noise_variance == 1e-5


def test_kronecker_factor_is_exact_to_rounding():
    assert kronecker_factor_error() < 1e-13


def test_synthetic_draws_have_the_se_covariance():
    """Across 400 seeds, the empirical covariance of f at a few grid points matches σ_y² exp(−‖Δ‖²/(2 l²))."""
    X = grid(100, (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN))
    points = np.array([0, 1, 2, 101, 5050, 5052, 5150, 9999])
    draws = np.array([synthetic_gp_values(seed)[points] for seed in range(1000, 1400)])
    diff = X[points][:, None] - X[points][None]
    expected = np.exp(-0.5 * (diff**2).sum(-1) / 1.25**2)
    empirical = draws.T @ draws / len(draws)
    # each entry is a mean of 400 products with variance ≤ 2: standard error ≤ 0.071; 5 s.e. = 0.36
    assert np.abs(empirical - expected).max() < 0.36
    # and a wrong lengthscale would be caught: neighbours at spacing 10/99 have correlation 0.9967
    assert np.corrcoef(draws[:, 0], draws[:, 1])[0, 1] > 0.99
    assert abs(np.corrcoef(draws[:, 0], draws[:, -1])[0, 1]) < 0.2


def test_branin_problem():
    assert branin(np.array([np.pi]), np.array([2.275]))[0] == pytest.approx(0.397887, abs=1e-6)
    problem = branin_problem()
    assert problem.X.shape == (10_000, 2)
    assert np.linalg.norm(problem.X, axis=1).max() == pytest.approx(25.0)
    # maximising −branin: the best grid point is close to the global minimum 0.397887
    assert -0.5 < problem.optimum < -0.397887
    assert problem.simple_regret(problem.optimum) == 0.0
    assert problem.simple_regret(problem.f.min()) == pytest.approx(np.ptp(problem.f) / problem.f.std())
