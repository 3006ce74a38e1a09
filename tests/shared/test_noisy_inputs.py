"""The SE kernel averaged over a release's public input noise: closed form, nugget, PSD, engine, fitting."""

import numpy as np
import pytest

from shared.dp.noise import noise_source
from shared.gp.kernels import SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential, PosteriorInputsSE, box_posterior
from shared.gp.regression import CandidatePosterior, GPRegressor, fit_hyperparameters
from shared.releases import gaussian_release


@pytest.mark.parametrize("lengthscale", [1.3, np.array([0.7, 1.3, 2.0])])
def test_off_diagonal_is_the_se_kernel_averaged_over_the_noise(lengthscale):
    variance, s = 2.0, 0.4
    z_a, z_b = np.array([[0.2, -0.5, 1.0]]), np.array([[1.1, 0.3, 0.4]])
    # Given z_a, z_b the noise-free difference is N(z_a − z_b, 2s² I_r); average the SE kernel over it.
    diffs = (z_a - z_b) + np.sqrt(2) * s * np.random.default_rng(0).standard_normal((400_000, 3))
    monte_carlo = variance * np.exp(-0.5 * np.sum((diffs / lengthscale) ** 2, axis=1)).mean()
    kernel = ExpectedSquaredExponential(lengthscale, variance, input_noise_std=s, dim=3)
    assert kernel(z_a, z_b)[0, 0] == pytest.approx(monte_carlo, rel=0.01)
    assert kernel(z_a, z_a)[0, 0] == variance and np.all(kernel.diag(z_a) == variance)


def test_gram_is_a_scaled_se_plus_a_row_nugget_and_positive_semidefinite():
    Z = np.random.default_rng(1).normal(size=(60, 4))
    kernel = ExpectedSquaredExponential(1.0, 1.0, input_noise_std=0.5, dim=4)
    K = kernel(Z, Z)
    assert kernel.attenuation == pytest.approx((1.0 / 1.5) ** 2)  # (l² / (l² + 2s²))^(r/2)
    widened = SquaredExponential(np.sqrt(1.5), kernel.attenuation)(Z, Z)
    np.testing.assert_allclose(K, widened + (1 - kernel.attenuation) * np.eye(60), atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > 0.5 * (1 - kernel.attenuation)
    noise_free = ExpectedSquaredExponential(1.0, 1.0, input_noise_std=0.0, dim=4)
    np.testing.assert_allclose(noise_free(Z, Z), SquaredExponential(1.0, 1.0)(Z, Z))


def test_gram_on_a_noisy_release_is_positive_definite():
    """The retired debiased-distance kernel gave a smallest eigenvalue of −4.3 on such releases."""
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 20), np.linspace(0, 1, 20)), -1).reshape(-1, 2)
    release = gaussian_release(grid, 1.0, 1e-5, 2, 0, noise=noise_source(0))
    kernel = ExpectedSquaredExponential(0.1, 1.0, input_noise_std=release.noise_std, dim=2)
    assert np.linalg.eigvalsh(kernel(release.Z, release.Z)).min() > 0


def test_the_engine_fast_path_measures_distances_in_the_widened_lengthscale():
    """CandidatePosterior's stationary fast path (rank-one columns) equals the dense regressor, repeats included."""
    rng = np.random.default_rng(2)
    C = rng.normal(size=(50, 3))
    kernel = ExpectedSquaredExponential(0.8, 1.5, input_noise_std=0.6, dim=3)
    indices, y = [3, 17, 3, 40, 8], rng.normal(size=5)
    posterior = CandidatePosterior(C, kernel, noise_variance=0.01)
    for i, value in zip(indices, y):
        posterior.observe(i, value)
    mean, std = GPRegressor(kernel, noise_variance=0.01).fit(C[indices], y).predict(C, return_std=True)
    np.testing.assert_allclose(posterior.mean, mean, atol=1e-9)
    np.testing.assert_allclose(posterior.std, std, atol=1e-7)


def test_fitting_recovers_the_noise_free_lengthscale():
    """With distinct rows the kernel is a reparametrisation of SE + noise (the same maximum likelihood), but
    its lengthscale is the noise-free one: a plain SE fit on Z reports the widened √(l² + 2s²)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, size=(300, 2))
    f = np.linalg.cholesky(SquaredExponential(0.8, 1.0)(X, X) + 1e-4 * np.eye(300)) @ rng.standard_normal(300)
    s = 0.4
    Z = X + s * rng.standard_normal(X.shape)
    expected = fit_hyperparameters(Z, f, kernel=ExpectedSquaredExponential(1.0, 1.0, input_noise_std=s, dim=2),
                                   n_restarts=2, rng=0)
    plain = fit_hyperparameters(Z, f, n_restarts=2, rng=0)
    assert expected.log_marginal_likelihood == pytest.approx(plain.log_marginal_likelihood, abs=0.05)
    assert expected.kernel.lengthscale**2 + 2 * s**2 == pytest.approx(plain.kernel.lengthscale**2, rel=0.02)
    assert abs(np.log(expected.kernel.lengthscale / 0.8)) < abs(np.log(plain.kernel.lengthscale / 0.8))


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        ExpectedSquaredExponential(1.0, 1.0, input_noise_std=-0.1, dim=2)
    with pytest.raises(ValueError):
        ExpectedSquaredExponential([1.0, 2.0], 1.0, input_noise_std=0.1, dim=3)


def test_the_posterior_inputs_kernel_takes_one_lengthscale_as_a_number_or_a_one_entry_array():
    # the fit hands back lengthscales as arrays: a one-entry one is the isotropic lengthscale, a longer one is refused
    kernel = PosteriorInputsSE(0.8, 1.5).with_parameters(np.array([0.6]), 2.0)
    assert kernel.lengthscale == 0.6 and type(kernel.lengthscale) is float and kernel.variance == 2.0
    for bad in ([0.6, 0.7], np.array([[0.6]]) * np.ones((1, 2)), [], [-0.6], [np.nan]):
        with pytest.raises(ValueError, match="an isotropic lengthscale"):
            PosteriorInputsSE(bad, 1.5)


def test_box_posterior_is_the_truncated_normal_of_a_uniform_prior():
    """Against quadrature of p(x | z) ∝ φ((z − x)/s) on [0, W]."""
    s, width = 0.8, 2.0
    Z = np.array([[-3.0, 0.1], [1.0, 5.5]])
    means, variances = box_posterior(Z, s, width)
    x = np.linspace(0, width, 20_001)
    for z, m, v in zip(Z.ravel(), means.ravel(), variances.ravel()):
        weight = np.exp(-0.5 * ((z - x) / s) ** 2)
        weight /= weight.sum()
        assert m == pytest.approx(weight @ x, abs=2e-4)  # the grid sum is accurate to ~1e-4
        assert v == pytest.approx(weight @ (x - weight @ x) ** 2, abs=2e-4)
    assert 0 < means.min() and means.max() < width and variances.max() < s**2


def test_posterior_inputs_kernel_reduces_to_the_expected_kernel_and_is_psd():
    rng = np.random.default_rng(3)
    Z = rng.uniform(-1, 4, size=(40, 2))
    flat = np.hstack([Z, np.full_like(Z, 0.7**2)])
    expected = ExpectedSquaredExponential(0.8, 1.5, input_noise_std=0.7, dim=2)
    np.testing.assert_allclose(PosteriorInputsSE(0.8, 1.5)(flat, flat), expected(Z, Z), atol=1e-12)
    boxed = np.hstack(box_posterior(Z, 0.7, 3.0))
    K = PosteriorInputsSE(0.8, 1.5)(boxed, boxed)
    assert np.linalg.eigvalsh(K).min() > 0 and np.all(np.diag(K) == 1.5)
    # two rows released far outside the same corner: the flat prior calls them distant, the box knows better
    corner = np.array([[-4.0, -4.0], [-4.0, -9.0]])
    assert PosteriorInputsSE(0.8, 1.5)(*np.split(np.hstack(box_posterior(corner, 0.7, 3.0)), 2))[0, 0] > 0.5
    assert expected(corner[:1], corner[1:])[0, 0] < 0.01
