"""Kernels: formulas against direct computation and scikit-learn, ARD vs isotropic, gradients."""

from functools import partial

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

from shared.gp.kernels import Kernel, Matern52, SquaredExponential, squared_distances, weighted_squared_differences
from shared.gp.noisy_inputs import ExpectedSquaredExponential

NOISY_INPUTS = partial(ExpectedSquaredExponential, input_noise_std=0.3, dim=3)
FITTED_KINDS = [SquaredExponential, Matern52, NOISY_INPUTS]  # every kernel marginal-likelihood fitting contracts


@pytest.fixture
def points():
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 3)), rng.normal(size=(20, 3))


def direct_scaled_distance(A, B, lengthscale):
    diff = (A[:, None, :] - B[None, :, :]) / lengthscale
    return np.sqrt((diff**2).sum(axis=-1))


def test_squared_exponential_formula(points):
    A, B = points
    d = direct_scaled_distance(A, B, 0.7)
    np.testing.assert_allclose(SquaredExponential(0.7, 1.9)(A, B), 1.9 * np.exp(-0.5 * d**2), rtol=1e-12)


def test_matern52_formula(points):
    A, B = points
    d = direct_scaled_distance(A, B, 1.3)
    expected = 0.6 * (1 + np.sqrt(5) * d + 5 * d**2 / 3) * np.exp(-np.sqrt(5) * d)
    np.testing.assert_allclose(Matern52(1.3, 0.6)(A, B), expected, rtol=1e-12)


@pytest.mark.parametrize("lengthscale", [0.9, np.array([0.5, 1.0, 2.5])])
def test_against_scikit_learn(points, lengthscale):
    A, B = points
    sk_matern = ConstantKernel(1.7) * Matern(length_scale=lengthscale, nu=2.5)
    sk_rbf = ConstantKernel(1.7) * RBF(length_scale=lengthscale)
    np.testing.assert_allclose(Matern52(lengthscale, 1.7)(A, B), sk_matern(A, B), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(SquaredExponential(lengthscale, 1.7)(A, B), sk_rbf(A, B), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kind", [SquaredExponential, Matern52])
def test_ard_agrees_with_isotropic(points, kind):
    A, B = points
    # Equal ARD lengths are the isotropic kernel ...
    np.testing.assert_allclose(kind(np.full(3, 0.8), 1.2)(A, B), kind(0.8, 1.2)(A, B), rtol=1e-12)
    # ... and unequal ones are the isotropic kernel on inputs divided per dimension (paper, footnote 4).
    ls = np.array([0.4, 1.1, 3.0])
    np.testing.assert_allclose(kind(ls, 1.2)(A, B), kind(1.0, 1.2)(A / ls, B / ls), rtol=1e-12)


@pytest.mark.parametrize("kind", [SquaredExponential, Matern52])
def test_diag_is_the_signal_variance(points, kind):
    A, _ = points
    k = kind(0.5, 2.2)
    np.testing.assert_allclose(k.diag(A), np.diag(k(A, A)), rtol=1e-12)
    assert isinstance(k, Kernel)


def test_distances_accurate_far_from_origin():
    # The expansion ‖a‖² + ‖b‖² − 2a·b loses everything at offset 1e7 unless the data are centred first.
    rng = np.random.default_rng(1)
    A = 1e7 + rng.normal(size=(10, 2))
    exact = ((A[:, None, :] - A[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(squared_distances(A, A), exact, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", FITTED_KINDS)
@pytest.mark.parametrize("lengthscale", [0.9, np.array([0.5, 1.0, 2.5])])
def test_log_parameter_gradients_match_finite_differences(points, kind, lengthscale):
    X = np.vstack([points[0], points[0][:3]])  # repeated rows: the noisy-inputs kernel's same-row pairs
    variance, h = 1.4, 1e-6
    K, dK = kind(lengthscale, variance).log_parameter_gradients(X)
    np.testing.assert_allclose(K, kind(lengthscale, variance)(X, X), rtol=1e-12)
    theta = np.log(np.append(np.atleast_1d(lengthscale), variance))
    for j in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h

        def kernel_at(th):
            ls = np.exp(th[:-1]) if np.ndim(lengthscale) else float(np.exp(th[0]))
            return kind(ls, float(np.exp(th[-1])))(X, X)

        np.testing.assert_allclose(dK[j], (kernel_at(up) - kernel_at(down)) / (2 * h), atol=1e-7)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, [1.0, 0.0], np.ones((2, 2))])
def test_rejects_bad_lengthscale(bad):
    with pytest.raises(ValueError, match="lengthscale"):
        SquaredExponential(bad)


def test_rejects_ard_dimension_mismatch(points):
    A, B = points
    with pytest.raises(ValueError, match="ARD"):
        Matern52([1.0, 2.0])(A, B)


def test_weighted_squared_differences_equal_the_direct_sum():
    rng = np.random.default_rng(4)
    X = 50.0 + rng.normal(size=(37, 3))
    M = rng.normal(size=(37, 37))
    M += M.T
    direct = np.einsum("ab,abj->j", M, (X[:, None, :] - X[None, :, :]) ** 2)
    np.testing.assert_allclose(weighted_squared_differences(X, M), direct, rtol=1e-9)


@pytest.mark.parametrize("kind", FITTED_KINDS)
@pytest.mark.parametrize("lengthscale", [0.9, np.array([0.5, 1.0, 2.5])])
def test_fused_gradient_contraction_equals_contracting_the_full_derivative(points, kind, lengthscale):
    # Σ_ab W_ab ∂K_ab/∂θ_j without the n × n × d tensor equals the tensor's contraction, which
    # the test above pins to finite differences; far from the origin too (the fused form expands a square).
    X = np.vstack([points[0], points[0][:3]])
    for shift in (0.0, 1e4):
        W = np.random.default_rng(3).normal(size=(len(X), len(X)))
        W += W.T
        K, dK = kind(lengthscale, 1.4).log_parameter_gradients(X + shift)
        fused_K, contract = kind(lengthscale, 1.4).gram_and_gradient_contraction(X + shift)
        np.testing.assert_allclose(fused_K, K, rtol=1e-12)
        np.testing.assert_allclose(contract(W), np.tensordot(dK, W, axes=2), rtol=1e-9, atol=1e-9)
