"""The certified release drawn in row chunks (what the ``release`` job does on the cluster) keeps its guarantee.

* Distribution: every coordinate of Z − X_s P is N(0, σ²) for the reported σ, with the safe sampler over many
  chunks (Kolmogorov–Smirnov and the χ² variance bound of ``test_gaussian_paths``) and on the sampler's grid; the
  same check on chunks noised with 0.9 σ (a 10% under-noised control) fails by a wide margin.
* Independence: chunks never repeat each other's noise (copies of one seeded generator would: the control).
* Reproducibility: a seeded chunked release is the same whoever runs the chunks and in which order; chunk i's
  noise is the i-th stream spawned from the seed; a release of one chunk equals the unchunked one exactly.
"""

from __future__ import annotations

import math
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy import stats
from test_dp_mechanisms import ALPHA, Recording
from test_gaussian_paths import Residuals, noise_matches, noise_reaches
from test_grid_residue import on_grid

from shared.dp.mechanisms import analytic_gaussian_sigma
from shared.dp.noise import OpenDPNoise, SeededNoise
from shared.releases import gaussian
from shared.releases.gaussian import (
    ChunkedNoise,
    RowChunk,
    add_input_noise,
    chunk_noise_sources,
    gaussian_release,
    noisy_chunk,
)

EPSILON, DELTA = 1.0, 1e-5
SMALL_CHUNKS = 4_000  # samples per chunk in these tests, so a few seconds of the safe sampler cover ~50 chunks


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(gaussian, "CHUNK_SAMPLES", SMALL_CHUNKS)
    return SMALL_CHUNKS


def unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.5, 0.5, size=(n, d))


def reversed_map(fn, items):
    """A cluster's map as seen from the release: the chunks run out of order, the results come back in order."""
    items = list(items)
    return reversed([fn(item) for item in reversed(items)])


def distribution_holds(residuals: np.ndarray, std: float) -> bool:
    """Mean, variance (ALPHA-level intervals) and shape (KS p-value ≥ ALPHA) of N(0, std²)."""
    summary = Residuals(residuals.size, float(residuals.sum()), float(np.sum(residuals**2)))
    return noise_matches(summary, std) and stats.kstest(residuals / std, "norm").pvalue >= ALPHA


def test_chunked_safe_noise_has_the_calibrated_distribution_on_the_grid(small_chunks):
    X = unit_rows(25_000, 4)  # 10⁵ samples in 25 chunks: ~3 s of OpenDP
    release = gaussian_release(X, EPSILON, DELTA, 4, 0, map_fn=map)
    assert release.floating_point_safe and release.projection == "identity"
    residuals = (release.Z - X).ravel()
    std = release.noise_std
    assert std == analytic_gaussian_sigma(EPSILON, DELTA, release.sensitivity)  # the unchunked σ, per coordinate
    assert distribution_holds(residuals, std)
    summary = Residuals(residuals.size, float(residuals.sum()), float(np.sum(residuals**2)))
    assert noise_reaches(summary, analytic_gaussian_sigma(EPSILON, DELTA, 1.0))  # enough for the true Δ = 1
    assert on_grid(release.Z, OpenDPNoise().grid(release.projection_sensitivity))


def test_the_check_rejects_chunks_noised_ten_percent_too_little(small_chunks):
    X = unit_rows(25_000, 4)
    std = gaussian_release(X[:1], EPSILON, DELTA, 4, 0).noise_std
    under = add_input_noise(X, None, 0.9 * std, OpenDPNoise().grid(1.0), OpenDPNoise(), map)
    residuals = (under - X).ravel()
    assert not distribution_holds(residuals, std)
    assert stats.kstest(residuals / std, "norm").pvalue < ALPHA**3  # by a wide margin, not at the edge
    summary = Residuals(residuals.size, float(residuals.sum()), float(np.sum(residuals**2)))
    assert not noise_reaches(summary, std)


def chunk_correlation(Z: np.ndarray, X: np.ndarray, rows: int) -> float:
    """The largest |correlation| between the noise of chunk 0 and that of any other chunk."""
    noise = (Z - X)[: (len(X) // rows) * rows].reshape(-1, rows * X.shape[1])
    return float(np.max(np.abs(np.corrcoef(noise)[0, 1:])))


def test_chunks_draw_independent_noise_and_copies_of_one_generator_would_not(small_chunks):
    X = unit_rows(20_000, 2)
    rows = SMALL_CHUNKS // 2
    release = gaussian_release(X, EPSILON, DELTA, 2, 0, noise=SeededNoise(5), map_fn=map)
    assert chunk_correlation(release.Z, X, rows) < 0.1  # 4,000 samples a chunk: |r| ~ 0.016 when independent
    source = SeededNoise(5)
    shared = ChunkedNoise(X, None, 1.0, 0.0)
    copied = [RowChunk(i, i * rows, (i + 1) * rows, pickle.loads(pickle.dumps(source))) for i in range(len(X) // rows)]
    repeated = np.vstack([noisy_chunk(shared, chunk) for chunk in copied])
    assert chunk_correlation(repeated, X, rows) > 0.99


def test_a_seeded_chunked_release_is_the_same_whatever_runs_the_chunks(small_chunks):
    X = unit_rows(3_001, 5)
    options = dict(noise=SeededNoise(9), projection="jl")
    serial = gaussian_release(X, EPSILON, DELTA, 3, 4, map_fn=map, **options)
    for map_fn in (ThreadPoolExecutor(4).map, reversed_map):
        again = gaussian_release(X, EPSILON, DELTA, 3, 4, map_fn=map_fn, noise=SeededNoise(9), projection="jl")
        np.testing.assert_array_equal(again.Z, serial.Z)
    # chunk i is X_i P plus the i-th stream spawned from the seed
    P = np.random.default_rng(4).standard_normal((5, 3)) / math.sqrt(3)
    rows = SMALL_CHUNKS // 3
    streams = np.random.default_rng(9).spawn(math.ceil(len(X) / rows))
    expected = np.vstack([X[i * rows : (i + 1) * rows] @ P + stream.normal(0.0, serial.noise_std, (len(part), 3))
                          for i, (stream, part) in enumerate(zip(streams,
                                                                 np.array_split(X, range(rows, len(X), rows))))])
    np.testing.assert_allclose(serial.Z, expected, rtol=0, atol=1e-12)


def test_one_chunk_equals_the_unchunked_release_exactly():
    X = unit_rows(500, 3)
    measurements = gaussian.MeasurementOption((-1.0, 1.0), 0.3)
    y = np.linspace(-2, 2, 500)
    unchunked = gaussian_release(X, EPSILON, DELTA, 3, 2, noise=SeededNoise(1), y=y, measurements=measurements)
    chunked = gaussian_release(X, EPSILON, DELTA, 3, 2, noise=SeededNoise(1), y=y, measurements=measurements,
                               map_fn=map)
    np.testing.assert_array_equal(chunked.Z, unchunked.Z)
    np.testing.assert_array_equal(chunked.measurements.values, unchunked.measurements.values)
    assert chunked.public_parameters() == unchunked.public_parameters()


def test_a_chunk_task_pickles_and_its_repr_names_no_value():
    X = unit_rows(3, 2, seed=7)
    P = np.random.default_rng(3).standard_normal((2, 2))
    shared, chunk = ChunkedNoise(X, P, 0.5, 0.0), RowChunk(0, 0, 3, SeededNoise(0))
    text = repr(shared) + repr(chunk)
    assert repr(shared) == "ChunkedNoise(rows=3)"
    assert not any(f"{value:.4g}" in text for value in np.concatenate([X.ravel(), P.ravel()]))
    again = pickle.loads(pickle.dumps((shared, chunk)))
    np.testing.assert_array_equal(noisy_chunk(*again), noisy_chunk(shared, chunk))


def test_chunking_refuses_a_source_it_cannot_split():
    """A stateful source of unknown kind would repeat its noise in every chunk's copy: refused, unless one chunk."""
    assert len(chunk_noise_sources(Recording(SeededNoise(0)), 1)) == 1
    with pytest.raises(TypeError, match="OpenDPNoise or SeededNoise"):
        chunk_noise_sources(Recording(SeededNoise(0)), 2)
