"""Noise sources: the safe source's distributions and grid, the seeded source's reproducibility."""

import numpy as np
import pytest
from scipy import stats

from shared.dp.noise import GRID_BITS, NoiseSource, OpenDPNoise, SeededNoise, noise_source


def test_noise_source_picks_safe_source_without_a_seed():
    assert isinstance(noise_source(None), OpenDPNoise) and noise_source(None).floating_point_safe
    assert isinstance(noise_source(3), SeededNoise) and not noise_source(3).floating_point_safe


def test_seeded_source_is_reproducible():
    draw = lambda: noise_source(7).add_gaussian(np.zeros(5), 1.0, 0.0)  # noqa: E731
    np.testing.assert_array_equal(draw(), draw())
    assert noise_source(7).exponential_index([0.0, 1.0, 2.0], 1.0, 1.0) == noise_source(7).exponential_index(
        [0.0, 1.0, 2.0], 1.0, 1.0
    )


def test_no_source_offers_noise_around_zero():
    """``value + noise_around_zero`` keeps value's residue modulo the grid. Noise is only
    added to the value by the sampler itself, so there is no public way to draw it on its own."""
    public = {name for name in dir(NoiseSource) if not name.startswith("_")}
    assert public == {"add_gaussian", "add_laplace", "exponential_index", "grid"}
    for source in (OpenDPNoise(), SeededNoise(0)):
        assert not hasattr(source, "gaussian") and not hasattr(source, "laplace")


def test_opendp_gaussian_and_laplace_have_the_asked_spread():
    """n = 40 000: the sample std has relative s.e. ≈ 1/√(2n) = 0.35% (Gaussian), ~0.56% (Laplace)."""
    source = noise_source(None)
    g = source.add_gaussian(np.zeros(40_000), 2.5, source.grid(2.5))
    assert g.std() == pytest.approx(2.5, rel=0.02) and abs(g.mean()) < 0.05
    lap = source.add_laplace(np.zeros(40_000), 1.5, source.grid(1.5))
    assert lap.std() == pytest.approx(1.5 * np.sqrt(2), rel=0.03)
    assert stats.kstest(lap, stats.laplace(scale=1.5).cdf).pvalue > 1e-4


def test_opendp_outputs_lie_on_the_grid_and_keep_the_input():
    source = OpenDPNoise()
    grid = source.grid(1.0)
    assert grid == 2.0 ** -GRID_BITS
    out = source.add_gaussian(np.full(1000, 123.456), 1e-3, grid)
    assert np.all(np.fmod(out, grid) == 0)
    assert out.mean() == pytest.approx(123.456, abs=1e-3)


@pytest.mark.parametrize("grid", [0.0, -1.0, 3.0, np.nan])
def test_opendp_refuses_a_grid_that_is_not_a_power_of_two(grid):
    # Old code replaced a zero grid by one of its own choosing, which the caller's calibration did not know.
    with pytest.raises(ValueError, match="grid"):
        OpenDPNoise().add_gaussian(np.zeros(2), 1.0, grid)


@pytest.mark.parametrize("source", [OpenDPNoise(), SeededNoise(5)], ids=["opendp", "seeded"])
def test_exponential_index_follows_the_exponential_mechanism(source):
    """Both sources sample by Gumbel-max; p ∝ exp(ε·score/(2Δ)) = exp(score) here. Control: the law of ε = 4."""
    scores = np.array([0.0, 1.0, 2.0])
    counts = np.bincount([source.exponential_index(scores, 1.0, 2.0) for _ in range(6000)], minlength=3)
    expected = np.exp(scores) / np.exp(scores).sum()
    assert stats.chisquare(counts, 6000 * expected).pvalue > 1e-4
    too_sharp = np.exp(2 * scores) / np.exp(2 * scores).sum()
    assert stats.chisquare(counts, 6000 * too_sharp).pvalue < 1e-12


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_nonpositive_scales_are_refused(bad):
    with pytest.raises(ValueError):
        noise_source(None).add_gaussian(np.zeros(3), bad, 2.0**-40)
    with pytest.raises(ValueError):
        noise_source(1).add_laplace(np.zeros(3), bad, 0.0)
