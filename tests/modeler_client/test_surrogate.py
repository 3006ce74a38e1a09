"""The modeler's surrogate: the input-noise-averaged kernel and the hyperparameter schedule."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from modeler_client.runfile import RunSettings
from modeler_client.surrogate import NoisyInputsSE, Surrogate, median_distance, uses_expected_kernel
from shared.kernels import SquaredExponential
from shared.schemas import ReleaseOut


def release(noise_std: float | None, dim: int = 3, n: int = 40) -> ReleaseOut:
    mechanism = "gaussian" if noise_std else "po-gp-ucb"
    return ReleaseOut(id=1, dataset_id=1, mechanism=mechanism, certified=bool(noise_std), epsilon=1.0, delta=1e-5,
                      n=n, dim=dim, noise_std=noise_std, created_at=datetime.now(UTC))


def test_noisy_inputs_kernel_is_the_se_kernel_averaged_over_the_release_noise():
    lengthscale, variance, sigma, r = 1.3, 2.0, 0.4, 3
    z_a, z_b = np.array([[0.2, -0.5, 1.0]]), np.array([[1.1, 0.3, 0.4]])
    # Given z_a, z_b the noise-free difference is N(z_a − z_b, 2σ² I_r); average the SE kernel over it.
    rng = np.random.default_rng(0)
    diffs = (z_a - z_b) + np.sqrt(2) * sigma * rng.standard_normal((400_000, r))
    monte_carlo = variance * np.exp(-0.5 * np.sum(diffs**2, axis=1) / lengthscale**2).mean()
    kernel = NoisyInputsSE(lengthscale, variance, sigma, r)
    assert abs(kernel(z_a, z_b)[0, 0] - monte_carlo) < 0.01 * monte_carlo
    assert kernel(z_a, z_a)[0, 0] == variance and np.all(kernel.diag(z_a) == variance)


def test_noisy_inputs_kernel_is_positive_semidefinite_with_correlations_capped_by_the_attenuation():
    Z = np.random.default_rng(1).normal(size=(60, 4))
    kernel = NoisyInputsSE(1.0, 1.0, 0.5, 4)
    noisy = kernel(Z, Z)
    assert np.linalg.eigvalsh(noisy).min() > -1e-10
    off = ~np.eye(60, dtype=bool)
    assert kernel.attenuation == pytest.approx((1.0 / 1.5) ** 2)  # (l² / (l² + 2σ²))^(r/2)
    assert noisy[off].max() <= kernel.attenuation  # even the closest released rows are only this correlated
    assert NoisyInputsSE(1.0, 1.0, 0.0, 4)(Z, Z) == pytest.approx(SquaredExponential(1.0, 1.0)(Z, Z))


def test_expected_kernel_applies_by_default_only_to_noisy_releases_with_fixed_hyperparameters():
    assert uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fit"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed"), release(None))
    assert uses_expected_kernel(RunSettings(iterations=1, input_noise="expected-kernel"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed", input_noise="ignore"),
                                    release(0.3))


def test_first_suggestion_is_row_zero_and_fits_follow_the_schedule():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(40, 3))
    values = np.sin(Z[:, 0]) + Z[:, 1]
    surrogate = Surrogate(Z, release(None), RunSettings(iterations=20, refit_every=3))
    indices: list[int] = []
    changed_at = []
    for t in range(10):
        if surrogate.update(indices, values[indices]):
            changed_at.append(t)
        indices.append(surrogate.suggest())
    assert indices[0] == 0  # Algorithm 2: every candidate ties before any observation
    assert changed_at == [0, 1, 2, 5, 8]  # start, the first value, then refits at 2 and every 3
    assert len(set(indices)) > 5  # it explores rather than re-querying one row


def test_the_kernel_hook_sees_every_kernel_the_surrogate_builds():
    Z = np.random.default_rng(3).normal(size=(30, 2))
    seen = []

    def hook(kernel, rel):
        seen.append((type(kernel).__name__, rel.id))
        return kernel

    surrogate = Surrogate(Z, release(None, dim=2, n=30), RunSettings(iterations=5, refit_every=1), kernel_hook=hook)
    indices = []
    for _ in range(4):
        surrogate.update(indices, Z[indices, 0])
        indices.append(surrogate.suggest())
    assert len(seen) >= 3 and all(name == "SquaredExponential" for name, _ in seen)


def test_median_distance_is_scale_aware():
    Z = np.random.default_rng(4).normal(size=(100, 3))
    assert median_distance(10 * Z) == pytest.approx(10 * median_distance(Z))
