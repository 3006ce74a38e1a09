"""The certified gaussian release: calibration, exact sensitivity, spread of released rows, M hygiene."""

import dataclasses
import math

import numpy as np
import pytest

from shared.mechanisms import analytic_gaussian_sigma
from shared.noise import GRID_BITS, noise_source
from shared.projection import gaussian_release


def _projection(seed, d, r):
    # gaussian_release draws M as the first d·r standard normals of default_rng(rng).
    return np.random.default_rng(seed).standard_normal((d, r))


@pytest.mark.parametrize("epsilon,delta,r", [(0.5, 1e-5, 3), (4.0, 1e-6, 10)])
def test_noise_std_is_the_analytic_sigma_for_the_sensitivity(epsilon, delta, r):
    X = np.random.default_rng(0).uniform(size=(50, 4))
    release = gaussian_release(X, epsilon, delta, r, 11)
    M = _projection(11, 4, r)
    exact = np.linalg.svd(M, compute_uv=False)[0] / math.sqrt(r)
    assert release.projection_sensitivity == pytest.approx(exact, rel=1e-12)
    # the safe sampler's grid-rounding slack is √r · 2^(floor(log2 Δ) − GRID_BITS): ~1e-13 relative
    assert release.sensitivity - release.projection_sensitivity == pytest.approx(
        math.sqrt(r) * 2.0 ** (math.floor(math.log2(exact)) - GRID_BITS), rel=1e-9
    )
    assert release.noise_std == analytic_gaussian_sigma(epsilon, delta, release.sensitivity)
    assert release.floating_point_safe


def test_sensitivity_is_attained_by_the_top_singular_direction():
    """Moving one row by the unit top right-singular vector of Mᵀ moves its projection by exactly Δ."""
    d, r = 5, 7
    M = _projection(3, d, r)
    u, s, _ = np.linalg.svd(M)
    release = gaussian_release(np.zeros((2, d)), 1.0, 1e-5, r, 3, noise=noise_source(0))
    move = np.linalg.norm(u[:, 0] @ M / math.sqrt(r))
    assert move == pytest.approx(release.projection_sensitivity, rel=1e-12)
    # and no unit move does better
    directions = np.random.default_rng(1).standard_normal((2000, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    assert np.max(np.linalg.norm(directions @ M, axis=1)) / math.sqrt(r) <= release.projection_sensitivity


def test_released_rows_of_identical_rows_spread_by_noise_std():
    """All rows equal ⇒ Z − mean(Z) is pure noise; 8 000 × 5 safe draws: s.e. of the std ≈ 0.35%, we allow 5%."""
    X = np.tile([0.3, 0.7, 0.1], (8000, 1))
    release = gaussian_release(X, 1.0, 1e-5, 5, 2)
    centred = release.Z - release.Z.mean(axis=0)
    empirical = np.sqrt(np.sum(centred**2) / (centred.size - centred.shape[1]))
    assert empirical == pytest.approx(release.noise_std, rel=0.05)
    # the common row is X M/√r for the same M
    np.testing.assert_allclose(release.Z.mean(axis=0), X[0] @ _projection(2, 3, 5) / math.sqrt(5), atol=0.2)


def test_seeded_noise_is_reproducible_and_marked_unsafe():
    X = np.random.default_rng(0).uniform(size=(20, 3))
    a = gaussian_release(X, 1.0, 1e-5, 4, 5, noise=noise_source(9))
    b = gaussian_release(X, 1.0, 1e-5, 4, 5, noise=noise_source(9))
    np.testing.assert_array_equal(a.Z, b.Z)
    assert not a.floating_point_safe
    assert a.sensitivity == a.projection_sensitivity  # no grid for the seeded source


def test_projection_matrix_is_not_kept_on_the_result():
    release = gaussian_release(np.ones((4, 3)), 1.0, 1e-5, 2, 0)
    for field in dataclasses.fields(release):
        value = getattr(release, field.name)
        assert not (isinstance(value, np.ndarray) and value.shape == (3, 2)), field.name
    assert {f.name for f in dataclasses.fields(release)} >= {"Z", "noise_std", "sensitivity"}


def test_replace_one_clips_rows_and_doubles_the_bound():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    bounded = gaussian_release(X, 1.0, 1e-5, 3, 1, noise=noise_source(0))
    replace = gaussian_release(X, 1.0, 1e-5, 3, 1, noise=noise_source(0), unit="replace-one", clip_norm=1.0)
    assert replace.projection_sensitivity == pytest.approx(2.0 * bounded.projection_sensitivity, rel=1e-12)
    # the first row (norm 5) is clipped to norm 1: its noiseless projection equals the second row's × 2
    noiseless = replace.Z - noise_source(0).gaussian(replace.noise_std, (2, 3))
    np.testing.assert_allclose(noiseless[0], 2.0 * noiseless[1], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "kwargs",
    [dict(r=0), dict(r=2.5), dict(epsilon=0.0), dict(delta=1.0), dict(unit="replace-one"), dict(unit="other")],
)
def test_bad_parameters_are_refused(kwargs):
    arguments = dict(X=np.ones((3, 2)), epsilon=1.0, delta=1e-5, r=2, rng=0) | kwargs
    with pytest.raises(ValueError):
        gaussian_release(**arguments)
