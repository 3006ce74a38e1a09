"""Built-in problems: the paper's synthetic GP grid and Branin-Hoo."""

import numpy as np
import pytest

from shared.datasets.synthetic import (
    SYNTHETIC_DOMAIN,
    branin,
    branin_problem,
    grid,
    kronecker_factor_error,
    synthetic_gp_problem,
    synthetic_gp_values,
)
from shared.releases import omega
from shared.releases.po_gp_ucb import centred_gram


def test_grid_layout_and_normalisations():
    paper = synthetic_gp_problem(0)  # the paper's stated normalisation is the default
    assert paper.X.shape == (10_000, 2)
    assert np.linalg.norm(paper.X, axis=1).max() == pytest.approx(25.0)
    np.testing.assert_allclose(paper.X.mean(axis=0), 0.0, atol=1e-12)
    assert centred_gram(paper.X).sigma_min == pytest.approx(1030.88, abs=0.01)
    # Fig. 2a's crossing with Blocki et al.'s ω: at r = 10, e^1.1 has σ_min ≥ ω and e^0.9 does not.
    assert omega(np.exp(1.1), 1e-5, 10) <= 1030.88 < omega(np.exp(0.9), 1e-5, 10)
    # The same function whatever the normalisation; the lengthscale follows the inputs.
    raw = synthetic_gp_problem(0, normalisation="none")
    np.testing.assert_array_equal(paper.f, raw.f)
    assert raw.lengthscale == 1.25
    assert paper.lengthscale == pytest.approx(1.25 * 25.0 / (5.0 * np.sqrt(2.0)), rel=1e-12)
    np.testing.assert_allclose(raw.X, grid(100, (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN)))
    with pytest.raises(ValueError, match="normalisation"):
        synthetic_gp_problem(0, normalisation="calibrated")


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
