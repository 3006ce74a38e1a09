"""The compiled step's own arithmetic: its exp against numpy's, its kernel columns against the kernels', its
roundings against the plain step's."""

import numpy as np
import pytest
from numba import njit

from shared.gp.fused_step import GIVEN_COLUMN, MATERN52, SQUARED_EXPONENTIAL, _exp_in_place
from shared.gp.kernels import Matern52, SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential
from shared.gp.regression import CandidatePosterior


@njit
def _exp(x):
    y = x.copy()
    _exp_in_place(y, len(y), np.empty(len(y)), np.empty(len(y)))
    return y


def test_the_vectorised_exp_is_within_one_ulp_of_numpy_over_the_kernel_range():
    # Every exponent the step can meet: −d²/2 ∈ [−745, 0] (below that both round to 0), tiny ones near 0,
    # the libm hand-off at −707 and the subnormal results below it.
    x = np.concatenate([
        -np.logspace(-300, np.log10(745.2), 200_001), np.linspace(-745.2, 0.0, 200_001),
        np.linspace(-708.0, -706.0, 1001), [0.0, -0.0, -746.0],
    ])
    exact = np.exp(x)
    ulps = np.abs(_exp(x) - exact) / np.spacing(exact)
    assert ulps.max() <= 1.0, f"{ulps.max()} ulp at x = {x[np.argmax(ulps)]!r}"


class _Opaque:
    """The same covariance as ``kernel`` behind a type the compiled pass does not know: its column is given."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, A, B):
        return self.kernel(A, B)

    def diag(self, A):
        return self.kernel.diag(A)


@pytest.mark.parametrize("kernel", [
    SquaredExponential(0.7, 1.3), Matern52(np.array([0.5, 0.9, 1.4]), 0.8),
    ExpectedSquaredExponential(0.6, 1.1, input_noise_std=0.2, dim=3),
], ids=["se", "matern52-ard", "expected-se"])
def test_the_compiled_kernel_column_equals_the_kernels_own(kernel):
    # Duplicated rows (the expected-SE kernel's nugget is for a row itself only), tiles of 16, two threads.
    rng = np.random.default_rng(11)
    C = rng.normal(size=(300, 3))
    C[[100, 250]] = C[7]
    compiled, given = (CandidatePosterior(C, k, 0.01, chunk=16, workers=2) for k in (kernel, _Opaque(kernel)))
    assert (compiled._profile, given._profile) == (SQUARED_EXPONENTIAL if kernel.name != "matern52" else MATERN52,
                                                   GIVEN_COLUMN)
    for i, value in zip([7, 100, 299, 0, 7, 150], rng.normal(size=6)):
        for posterior in (compiled, given):
            posterior.observe(i, value, next_beta=6.0, excluded=np.array([7]))
        assert compiled.ucb_argmax == given.ucb_argmax
        np.testing.assert_allclose(compiled.mean, given.mean, rtol=0, atol=1e-12)
        np.testing.assert_allclose(compiled.variance, given.variance, rtol=0, atol=1e-12)


def _in_sweeps(total, rows, weights):
    """total + Σ_k weights[k] rows[k] in the compiled pass's order: ((w₀r₀ + w₁r₁) + w₂r₂) + w₃r₃ a sweep."""
    k = 0
    while k + 4 <= len(weights):
        total = total + (weights[k] * rows[k] + weights[k + 1] * rows[k + 1] + weights[k + 2] * rows[k + 2]
                         + weights[k + 3] * rows[k + 3])
        k += 4
    for j in range(k, len(weights)):
        total = total + weights[j] * rows[j]
    return total


@pytest.mark.parametrize("workers", [1, 2])
def test_the_compiled_pass_rounds_as_the_plain_step_in_its_order(workers):
    # Bit for bit, not within a tolerance: the picks equal scikit-learn's only if no step reassociates, fuses
    # (FMA) or reorders a sum. Tiles of 64 over 300 candidates, r + 1 = 6 rows of candidates (a sweep of four
    # and two single rows), V from 0 to 10 rows (below and above the four summed beside the exp).
    rng = np.random.default_rng(3)
    C = rng.normal(size=(300, 5))
    kernel, noise, beta = SquaredExponential(1.1, 1.4), 0.01, 5.0
    posterior = CandidatePosterior(C, kernel, noise, chunk=64, workers=workers)
    scaled = posterior._scaled
    for t, (index, y) in enumerate(zip([7, 299, 0, 150, 7, 64, 63, 200, 10, 11, 12], rng.normal(size=11))):
        mean, variance = posterior._mean.copy(), posterior._variance.copy()
        V = np.array([posterior._row(k) for k in range(t)]).reshape(t, len(C))
        pivot = np.sqrt(max(max(variance[index], 0.0) + noise, posterior.jitter * posterior.prior_variance[index]))
        exponent = _in_sweeps(np.full(len(C), scaled[-1, index]), scaled, np.append(scaled[:-1, index], 1.0))
        exponent = np.minimum(exponent, 0.0)
        exponent[index] = 0.0
        v = _in_sweeps(_exp(exponent) * (kernel.variance / pivot), V, -V[:, index] / pivot)
        mean += (y - mean[index]) / pivot * v
        variance -= v * v
        excluded = np.array([1, index])
        scores = mean + np.sqrt(beta) * np.sqrt(np.maximum(variance, 0.0))
        scores[excluded] = -np.inf
        posterior.observe(index, y, next_beta=beta, excluded=np.unique(excluded))
        np.testing.assert_array_equal(posterior._row(t), v)
        np.testing.assert_array_equal(posterior._mean, mean)
        np.testing.assert_array_equal(posterior._variance, variance)
        assert posterior.ucb_argmax == (beta, int(np.argmax(scores)))
