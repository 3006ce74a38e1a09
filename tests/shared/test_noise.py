"""Noise sources: the safe source's distributions and grid, the seeded source's reproducibility."""

import numpy as np
import pytest
from scipy import stats

from shared.noise import GRID_BITS, OpenDPNoise, SeededNoise, noise_source


def test_noise_source_picks_safe_source_without_a_seed():
    assert isinstance(noise_source(None), OpenDPNoise) and noise_source(None).floating_point_safe
    assert isinstance(noise_source(3), SeededNoise) and not noise_source(3).floating_point_safe


def test_seeded_source_is_reproducible():
    np.testing.assert_array_equal(noise_source(7).gaussian(1.0, 5), noise_source(7).gaussian(1.0, 5))
    assert noise_source(7).exponential_index([0.0, 1.0, 2.0], 1.0, 1.0) == noise_source(7).exponential_index(
        [0.0, 1.0, 2.0], 1.0, 1.0
    )


def test_opendp_gaussian_and_laplace_have_the_asked_spread():
    """n = 40 000: the sample std has relative s.e. ≈ 1/√(2n) = 0.35% (Gaussian), ~0.56% (Laplace)."""
    source = noise_source(None)
    g = source.gaussian(2.5, 40_000)
    assert g.std() == pytest.approx(2.5, rel=0.02) and abs(g.mean()) < 0.05
    lap = source.laplace(1.5, 40_000)
    assert lap.std() == pytest.approx(1.5 * np.sqrt(2), rel=0.03)
    assert stats.kstest(lap, stats.laplace(scale=1.5).cdf).pvalue > 1e-4


def test_opendp_outputs_lie_on_the_grid_and_keep_the_input():
    source = OpenDPNoise()
    grid = source.grid(1.0)
    assert grid == 2.0 ** -GRID_BITS
    out = source.add_gaussian(np.full(1000, 123.456), 1e-3, grid)
    assert np.allclose(out / grid, np.round(out / grid), atol=0, rtol=0)
    assert out.mean() == pytest.approx(123.456, abs=1e-3)


def test_opendp_exponential_index_follows_the_exponential_mechanism():
    scores = np.array([0.0, 1.0, 2.0])
    counts = np.bincount([OpenDPNoise().exponential_index(scores, 1.0, 2.0) for _ in range(6000)], minlength=3)
    expected = np.exp(scores) / np.exp(scores).sum()
    assert stats.chisquare(counts, 6000 * expected).pvalue > 1e-4


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_nonpositive_scales_are_refused(bad):
    with pytest.raises(ValueError):
        noise_source(None).gaussian(bad, 3)
    with pytest.raises(ValueError):
        noise_source(1).laplace(bad, 3)
