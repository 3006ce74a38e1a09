import numpy as np
import pytest

from shared.datasets.paper_preprocessing import fit_paper_preprocessing
from shared.gp.kernels import SquaredExponential


def anisotropic_problem(seed: int = 0, n: int = 120):
    """y varies along feature 0 only; the features are on very different scales, as raw loan amounts and
    rates are."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 5, n), rng.uniform(0, 500, n)])
    y = np.sin(X[:, 0] / 0.5)
    return X, y


def test_maximal_norm_is_exactly_25_and_inputs_are_centred():
    X, y = anisotropic_problem()
    prep = fit_paper_preprocessing(X, y, fit_rows=80, seed=1, n_restarts=1)
    Z = prep.transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1).max(), 25.0, rtol=1e-14)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    assert prep.fit_rows == 80


def test_each_dimension_is_divided_by_its_fitted_lengthscale():
    X, y = anisotropic_problem()
    prep = fit_paper_preprocessing(X, y, fit_rows=80, seed=1, n_restarts=1)
    Z = prep.transform(X)
    # Differences in Z are differences in X / l, times one common factor: isotropic in lengthscale units.
    np.testing.assert_allclose((Z[1] - Z[0]) / prep.scale, (X[1] - X[0]) / prep.lengthscales, rtol=1e-10)
    # The ML fit finds which feature matters: the irrelevant one gets a lengthscale many times its range.
    relative = prep.lengthscales / np.ptp(X, axis=0)
    assert relative[0] < 1 and relative[1] > 5
    # ... so large that it stops at the top of the search box (10 × its range in the subsample): flagged
    assert prep.at_bound == ("", "upper")


def test_fit_is_seeded_and_uses_a_subsample():
    X, y = anisotropic_problem()
    a = fit_paper_preprocessing(X, y, fit_rows=60, seed=3, n_restarts=1)
    b = fit_paper_preprocessing(X, y, fit_rows=60, seed=3, n_restarts=1)
    np.testing.assert_array_equal(a.lengthscales, b.lengthscales)
    assert fit_paper_preprocessing(X[:30], y[:30], fit_rows=60, n_restarts=1).fit_rows == 30


def test_the_fitted_kernel_carries_over_to_the_preprocessed_inputs():
    """The SE kernel with ARD lengthscales l on X equals the isotropic one with lengthscale ``scale`` on the
    preprocessed inputs, with the same variance: GP-UCB on them can use the fit unchanged."""
    X, y = anisotropic_problem()
    prep = fit_paper_preprocessing(X, y, fit_rows=80, seed=1, n_restarts=1)
    ard = SquaredExponential(prep.lengthscales, prep.signal_variance)
    iso = SquaredExponential(prep.isotropic_lengthscale, prep.signal_variance)
    Z = prep.transform(X)
    np.testing.assert_allclose(iso(Z[:20], Z[20:40]), ard(X[:20], X[20:40]), rtol=1e-10, atol=1e-14)
    # the noise: y = sin is noise-free, so the fit puts almost all variance in the signal
    assert prep.noise_variance < 0.01 * prep.signal_variance
    fit_rows = np.sort(np.random.default_rng(1).choice(120, 80, replace=False))
    assert prep.prior_mean == pytest.approx(np.mean(y[fit_rows]))
