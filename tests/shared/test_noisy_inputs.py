"""The noise-corrected kernel debiases squared distances between released rows."""

import numpy as np
import pytest

from shared.kernels import SquaredExponential
from shared.noise import noise_source
from shared.noisy_inputs import NoiseCorrectedKernel
from shared.projection import gaussian_release


def test_corrected_distances_are_unbiased_over_the_noise():
    x = np.array([[0.0, 0.0], [3.0, 4.0]])  # true distance² 25
    X = np.repeat(x, 2000, axis=0)
    release = gaussian_release(X, 1.0, 1e-5, 8, 0, noise=noise_source(1))
    Z0, Z1 = release.Z[:2000], release.Z[2000:]
    raw = np.sum((Z0 - Z1) ** 2, axis=1)
    M = np.random.default_rng(0).standard_normal((2, 8))
    projected = np.sum(((x[1] - x[0]) @ M) ** 2) / 8
    corrected = raw - 2 * 8 * release.noise_std**2
    assert raw.mean() > projected + 8 * release.noise_std**2
    assert corrected.mean() == pytest.approx(projected, abs=4 * corrected.std() / np.sqrt(2000))


def test_kernel_clips_and_keeps_the_diagonal():
    base = SquaredExponential(2.0, 3.0)
    k = NoiseCorrectedKernel(base, noise_std=1.0)
    A = np.array([[0.0, 0.0], [0.5, 0.0], [10.0, 0.0]])
    K = k(A, A)
    np.testing.assert_allclose(np.diag(K), 3.0)
    assert K[0, 1] == pytest.approx(3.0)  # 0.25 − 2·2·1 < 0 → clipped to distance 0
    assert K[0, 2] == pytest.approx(3.0 * np.exp(-(100.0 - 4.0) / (2 * 4.0)))
    np.testing.assert_allclose(k.diag(A), 3.0)
    with pytest.raises(ValueError):
        NoiseCorrectedKernel(SquaredExponential([1.0, 2.0]), 1.0)
