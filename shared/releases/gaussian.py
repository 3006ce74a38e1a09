"""The certified input release (mechanism ``gaussian``, docs/design.md §4): a projection plus Gaussian noise.

    Z = X_s P + G,    G: n × r i.i.d. N(0, σ²)

X_s is the *publicly* scaled data (:func:`shared.api.scaling.apply_scaling`; nothing estimated from the data, no
centring). Row i of Z depends on row i of X_s only, through v ↦ v P, whose ℓ2 operator norm σ_max(P) is the
sensitivity under "one row moves by ℓ2 ≤ 1" (``unit="bounded-change"``, PO-GP-UCB's Definition 1; attained
by the top right-singular direction). The projection P (``projection=``):

* ``identity`` (r = d; the default there): P = I, sensitivity exactly 1. A square Gaussian M would distort
  the geometry (condition number 3.7 at d = 2, 32 at d = 10) and inflate the sensitivity (1.2–1.8).
* ``haar``: P with orthonormal rows (r ≥ d, an isometry; the default at r > d) or orthonormal columns
  (r < d, a uniformly random r-dimensional subspace), sensitivity exactly 1. From the QR factorisation
  (signs fixed, so it is Haar-distributed) of the first max(d, r)·min(d, r) standard normals of ``rng``.
* ``jl`` (the default at r < d): P = M/√r with M the first d·r standard normals of ``default_rng(rng)``,
  sensitivity σ_max(M)/√r (the published JL structure).
* ``pca`` (r = k ≤ d, needs :class:`PcaOption`): a differentially private top-k subspace, then P = V_k.
  Analyze Gauss (Dwork, Talwar, Thakurta & Zhang 2014): rows clipped to ‖x̂‖ ≤ C, augmented with a public
  constant τ = C, and the sums S = Σ x̂ x̂ᵀ (upper triangle) and τ Σ x̂ released with N(0, σ_G²) noise. One
  row moving by ≤ s = min(row change, 2C) changes S by uuᵀ − wwᵀ = m vᵀ + v mᵀ (m = (u + w)/2, v = u − w),
  of Frobenius norm ≤ min(2‖m‖‖v‖, √(‖u‖⁴ + ‖w‖⁴)) ≤ min(2Cs, √2 C²), and τ Σ x̂ by ≤ τ s, so
  Δ_G = √(min(2Cs, √2C²)² + τ²s²) bounds the ℓ2 change of the released vector. The noisy covariance
  S/n − m̂ m̂ᵀ (m̂ = τΣx̂/(τn); n is public, so no data-dependent centring) gives V_k, orthonormal: the
  projection's sensitivity is exactly the row change.

One release, one charge (ε, δ). Every part is a Gaussian mechanism with its own noise σ_i and ℓ2 sensitivity
Δ_i, i.e. μ_i-GDP with μ_i = Δ_i/σ_i, and the adaptive composition of Gaussian mechanisms is exactly
√(Σ μ_i²)-GDP (Dong, Roth & Su, "Gaussian differential privacy", 2019/2022). μ-GDP is (ε, δ)-DP for δ = Φ(−ε/μ + μ/2) −
e^ε Φ(−ε/μ − μ/2), the analytic Gaussian curve (Balle & Wang 2018) at σ/Δ = 1/μ. So the release takes the μ the analytic
Gaussian σ allows for (ε, δ) and gives each part a public share of μ² (μ_i² = share_i · μ²): the PCA step
``pca.share``, private measurements ``measurements.share`` (:mod:`shared.releases.measurements`), the inputs the rest.
With one part this is the plain analytic Gaussian σ for (ε, δ, Δ).

``unit="replace-one"``: rows are clipped to ℓ2 norm ≤ ``clip_norm`` C first, so a row changes by ≤ 2C.

Floating point. Noise comes from a :class:`shared.dp.noise.NoiseSource` (default: the floating-point-safe OpenDP
source, which rounds each value to a grid ~3e-14 Δ and adds an exact discrete Gaussian): the grid slack is in
every Δ. The identity projection does no arithmetic. Any other projection is a float product, whose error
per row is ≤ γ_d ‖x‖ ‖P‖_F (Higham §3.1), so rows are first clipped to the public norm ``MAX_ROW_NORM``
(~1e6; clipping is non-expansive, so neighbours stay neighbours; it never binds for publicly scaled data) and twice
that error enters Δ; the Gram sums of ``pca`` likewise (γ_n per entry). ``FLOAT_MARGIN`` covers the rounding
of the clipping and of the computed singular values. The projection matrix is a local variable: never
stored, returned or logged (M is drawn independently of the data, and Δ is computed from M alone, so the
guarantee does not need M secret).

Chunks. With ``map_fn`` (a cluster's map, or the built-in ``map``), the inputs' noise is drawn in row chunks of
about :data:`CHUNK_SAMPLES` samples, each a task of :func:`noisy_chunk`: what all chunks share (X_s, P drawn once,
here, σ and the grid: :class:`ChunkedNoise`) and the chunk's row range and own sampler (:class:`RowChunk`), which
adds the noise to the chunk's rounded X_s P. Every coordinate gets the same σ and grid as unchunked, so the
guarantee is unchanged. The safe sampler is stateless (the OS's CSPRNG on every call); a seeded one gives chunk i
the i-th stream spawned from its seed, so a seeded release is reproducible whatever runs the chunks. Without
``map_fn`` it is one chunk drawn by ``noise`` itself (a seeded release of ≤ :data:`CHUNK_SAMPLES` samples is the
same either way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np

from shared.checks import open_unit, positive
from shared.dp.mechanisms import analytic_gaussian_sigma, gaussian_delta, l2_sensitivity_with_grid, summation_error
from shared.dp.noise import NoiseSource, OpenDPNoise, SeededNoise
from shared.releases.measurements import (
    MeasurementOption,
    PrivateMeasurements,
    checked_measurements,
    release_measurements,
)

Unit = Literal["bounded-change", "replace-one"]
Projection = Literal["auto", "identity", "haar", "jl", "pca"]

MAX_ROW_NORM = 2.0**20
"""Public row-norm bound of every non-identity projection: it bounds the float error of X_s P."""
FLOAT_MARGIN = 2.0**-40
"""Relative margin on clipped norms and computed singular values (their rounding is ~1e-15 relative)."""
CHUNK_SAMPLES = 1 << 18
"""Noise samples per chunk of a chunked release: ~3 s of the safe sampler, a few MB of rows per task."""

MapFn = Callable[[Callable, Iterable], Iterable]
"""``map``'s shape: results in the items' order (a cluster's map may run the items in parallel)."""


@dataclass(frozen=True)
class PcaOption:
    """DP-PCA's public choices: its ``share`` of μ² and the row-norm bound ``clip_norm`` C of its Gram matrix."""

    share: float
    clip_norm: float

    def __post_init__(self) -> None:
        open_unit(self.share, "pca 'share' (the fraction of the privacy budget for the subspace)")
        positive(self.clip_norm, "pca 'clip_norm' (a public bound on row norms)")


@dataclass(frozen=True)
class PcaStep:
    """The public parameters of the DP-PCA step that chose the subspace."""

    share: float
    clip_norm: float
    noise_std: float
    sensitivity: float


@dataclass(frozen=True)
class GaussianRelease:
    """A certified release: ``Z`` (n × r) and every public parameter of how it was made.

    ``projection_sensitivity`` is σ_max(P) × the row change (plus the float bound for non-identity P);
    ``sensitivity`` adds the sampler's grid slack √r · grid (0 for a seeded source); ``noise_std`` is the
    inputs' σ, the analytic Gaussian σ for (ε, δ, ``sensitivity``/√``input_share``). ``mu`` is the GDP μ of
    the whole release (all parts composed); ``pca`` and ``measurements`` are None when not asked for.
    """

    Z: np.ndarray
    noise_std: float
    sensitivity: float
    projection_sensitivity: float
    epsilon: float
    delta: float
    unit: Unit
    clip_norm: float | None
    floating_point_safe: bool
    projection: Projection
    dim: int
    mu: float
    input_share: float
    pca: PcaStep | None = None
    measurements: PrivateMeasurements | None = None

    def public_parameters(self) -> dict:
        """Everything about this release that may be published (no data, no projection matrix)."""
        return {
            "projection": self.projection, "dim": self.dim, "epsilon": self.epsilon, "delta": self.delta,
            "mu": self.mu, "unit": self.unit, "clip_norm": self.clip_norm, "input_share": self.input_share,
            "noise_std": self.noise_std, "sensitivity": self.sensitivity,
            "projection_sensitivity": self.projection_sensitivity, "floating_point_safe": self.floating_point_safe,
            "pca": None if self.pca is None else vars(self.pca).copy(),
            "measurements": None if self.measurements is None else self.measurements.public_parameters(),
        }


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest μ for which μ-GDP is (ε, δ)-DP: 1/σ of the analytic Gaussian mechanism with Δ = 1."""
    return 1.0 / analytic_gaussian_sigma(epsilon, delta, 1.0)


def split_noise_stds(epsilon: float, delta: float, sensitivities: list[float], shares: list[float]) -> list[float]:
    """σ_i for Gaussian parts of ℓ2 sensitivity Δ_i that receive the fractions ``shares`` of μ² (summing to 1).

    σ_i = analytic σ for (ε, δ, Δ_i/√share_i), so μ_i² ≤ share_i μ² and Σ μ_i² ≤ μ²; the composed curve is
    then checked against δ and every σ nudged up together if rounding left it an ulp short.
    """
    if len(shares) == 1:
        return [analytic_gaussian_sigma(epsilon, delta, sensitivities[0])]
    stds = [analytic_gaussian_sigma(epsilon, delta, s / math.sqrt(w)) for s, w in zip(sensitivities, shares)]
    while gaussian_delta(1.0 / math.hypot(*(s / std for s, std in zip(sensitivities, stds))), epsilon) > delta:
        stds = [std * (1.0 + 2.0**-45) for std in stds]
    return stds


def gaussian_release(
    X: np.ndarray,
    epsilon: float,
    delta: float,
    r: int,
    rng: np.random.Generator | int | None = None,
    *,
    noise: NoiseSource | None = None,
    unit: Unit = "bounded-change",
    clip_norm: float | None = None,
    projection: Projection = "auto",
    pca: PcaOption | None = None,
    y: np.ndarray | None = None,
    measurements: MeasurementOption | None = None,
    map_fn: MapFn | None = None,
) -> GaussianRelease:
    """(ε, δ)-DP release of the publicly scaled n × d ``X`` (see the module docstring).

    ``rng`` draws the projection only; ``noise`` draws every privacy noise (default: floating-point-safe).
    ``projection="auto"``: identity at r = d, Haar at r > d, JL at r < d. ``pca`` is needed for
    ``projection="pca"``. ``measurements`` with ``y`` (one value per row) adds private measurements.
    ``map_fn`` draws the inputs' noise in chunks (module docstring).
    """
    X = _checked_inputs(X, r)
    n, d = X.shape
    r = int(r)
    kind = _projection_kind(projection, d, r, pca)
    if unit == "replace-one":
        if clip_norm is None or not clip_norm > 0:
            raise ValueError("unit 'replace-one' needs a public clip_norm > 0 (the largest row norm allowed)")
        X = clip_rows(X, clip_norm)
        row_change = 2.0 * clip_norm * (1.0 + FLOAT_MARGIN)
    elif unit == "bounded-change":
        row_change = 1.0
    else:
        raise ValueError(f"unknown neighbouring unit {unit!r}; use 'bounded-change' or 'replace-one'")
    measured = checked_measurements(y, n) if measurements is not None else None
    pca_used = pca if kind == "pca" else None
    pca_share = pca_used.share if pca_used is not None else 0.0
    measurement_share = measurements.share if measurements is not None else 0.0
    input_share = 1.0 - pca_share - measurement_share
    if not input_share > 0:
        raise ValueError("the pca and measurement shares must leave the inputs a positive share "
                         "(their sum must be < 1)")
    noise = OpenDPNoise() if noise is None else noise
    mu = gdp_mu(epsilon, delta)
    rng = np.random.default_rng(rng)

    if kind == "identity":
        P, operator_norm, frobenius_norm = None, 1.0, 0.0
    elif kind == "pca":  # V_k is orthonormal: its norms are known before the subspace is chosen
        P, operator_norm, frobenius_norm = None, 1.0 + FLOAT_MARGIN, math.sqrt(r) * (1.0 + FLOAT_MARGIN)
    else:
        P = _random_projection(kind, d, r, rng)
        operator_norm = float(np.linalg.norm(P, ord=2)) * (1.0 + FLOAT_MARGIN)
        frobenius_norm = float(np.linalg.norm(P)) * (1.0 + FLOAT_MARGIN)
    float_error = 0.0 if kind == "identity" else 2.0 * summation_error(d) * MAX_ROW_NORM * frobenius_norm
    projection_sensitivity = row_change * operator_norm + float_error

    # every part's sensitivity is fixed before any noise is drawn, so the split is decided once
    sensitivity = l2_sensitivity_with_grid(projection_sensitivity, r, noise)
    parts = [(sensitivity, input_share)]
    if measurements is not None:
        parts.append((measurements.sensitivity(noise), measurement_share))
    if pca_used is not None:
        gram_sensitivity = _gram_sensitivity(n, row_change, pca_used.clip_norm)
        parts.append((l2_sensitivity_with_grid(gram_sensitivity, d * (d + 1) // 2 + d, noise), pca_share))
    stds = split_noise_stds(epsilon, delta, [s for s, _ in parts], [w for _, w in parts])

    pca_step = None
    if kind != "identity":
        X = clip_rows(X, MAX_ROW_NORM)
    if pca_used is not None:
        P = _dp_pca_subspace(X, r, pca_used.clip_norm, stds[-1], noise.grid(gram_sensitivity), noise)
        pca_step = PcaStep(pca_used.share, pca_used.clip_norm, stds[-1], parts[-1][0])
        if np.linalg.norm(P, ord=2) > operator_norm:
            raise ArithmeticError("the computed principal directions are not orthonormal to working precision")
    Z = add_input_noise(X, P, stds[0], noise.grid(projection_sensitivity), noise, map_fn)
    del P  # used once: never stored, returned or logged
    private_y = (release_measurements(measured, measurements, stds[1], noise)
                 if measurements is not None and measured is not None else None)
    return GaussianRelease(
        Z=Z,
        noise_std=stds[0],
        sensitivity=sensitivity,
        projection_sensitivity=projection_sensitivity,
        epsilon=float(epsilon),
        delta=float(delta),
        unit=unit,
        clip_norm=clip_norm,
        floating_point_safe=noise.floating_point_safe,
        projection=kind,
        dim=r,
        mu=mu,
        input_share=input_share,
        pca=pca_step,
        measurements=private_y,
    )


@dataclass(frozen=True, repr=False)
class ChunkedNoise:
    """What every chunk of a release shares: all rows of X_s, the projection P (None: identity), σ and the grid.
    A cluster's map sends it once per worker. Its repr names no value: a cluster may log a failed task's arguments."""

    rows: np.ndarray
    projection: np.ndarray | None
    std: float
    grid: float

    def __repr__(self) -> str:
        return f"ChunkedNoise(rows={self.rows.shape[0]})"


@dataclass(frozen=True)
class RowChunk:
    """One chunk: rows ``start`` to ``stop`` and the chunk's own sampler."""

    index: int
    start: int
    stop: int
    noise: NoiseSource


def noisy_chunk(shared: ChunkedNoise, chunk: RowChunk) -> np.ndarray:
    """Z's rows of one chunk: (rows · P) rounded to the grid + N(0, σ²) per coordinate, by the chunk's sampler
    (module-level, so a cluster's worker process can run it)."""
    rows = shared.rows[chunk.start : chunk.stop]
    projected = rows if shared.projection is None else rows @ shared.projection
    return chunk.noise.add_gaussian(projected, shared.std, shared.grid)


def chunk_noise_sources(noise: NoiseSource, count: int) -> list[NoiseSource]:
    """One independent sampler per chunk: ``noise`` itself for one chunk; the safe source is stateless, so shared;
    a seeded source spawns chunk i's generator from its seed and i (copies of one generator would repeat noise)."""
    if count == 1 or isinstance(noise, OpenDPNoise):
        return [noise] * count
    if isinstance(noise, SeededNoise):
        return [SeededNoise(stream) for stream in noise.rng.spawn(count)]
    raise TypeError(f"a release drawn in chunks needs an OpenDPNoise or SeededNoise source, not {type(noise).__name__}")


def add_input_noise(X: np.ndarray, P: np.ndarray | None, std: float, grid: float, noise: NoiseSource,
                    map_fn: MapFn | None = None) -> np.ndarray:
    """Z = round(X P) + G: one chunk by ``noise`` without ``map_fn``, else chunks of ≈ :data:`CHUNK_SAMPLES`
    samples mapped by ``map_fn`` (module docstring). The chunking depends on n and r only (public)."""
    n = X.shape[0]
    r = X.shape[1] if P is None else P.shape[1]
    rows = n if map_fn is None else max(1, CHUNK_SAMPLES // r)
    starts = range(0, n, rows)
    chunks = [RowChunk(i, start, min(start + rows, n), source)
              for i, (start, source) in enumerate(zip(starts, chunk_noise_sources(noise, len(starts))))]
    outputs = (map_fn or map)(partial(noisy_chunk, ChunkedNoise(X, P, std, grid)), chunks)
    if len(chunks) == 1:
        return next(iter(outputs))  # the sampler's own output, no copy
    Z = np.empty((n, r))
    for chunk, out in zip(chunks, outputs):
        Z[chunk.start : chunk.stop] = out
    return Z


def _checked_inputs(X: np.ndarray, r: int) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty n × d matrix, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must hold finite numbers only")
    if int(r) != r or r < 1:
        raise ValueError(f"r (the projection dimension) must be an integer ≥ 1, got {r!r}")
    return X


def _projection_kind(projection: Projection, d: int, r: int, pca: PcaOption | None) -> Projection:
    if projection == "auto":
        return "identity" if r == d else ("haar" if r > d else "jl")
    if projection == "identity" and r != d:
        raise ValueError(f"the identity projection keeps every feature: r must equal d = {d}, got {r}")
    if projection == "pca":
        if pca is None:
            raise ValueError("projection 'pca' needs pca=PcaOption(share, clip_norm)")
        if r > d:
            raise ValueError(f"projection 'pca' keeps k = r ≤ d = {d} principal directions, got r = {r}")
    elif projection not in ("identity", "haar", "jl"):
        raise ValueError(f"unknown projection {projection!r}; use 'auto', 'identity', 'haar', 'jl' or 'pca'")
    return projection


def _random_projection(kind: Projection, d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "jl":
        return rng.standard_normal((d, r)) / math.sqrt(r)
    # Haar: Q of a Gaussian matrix's QR, columns' signs fixed by R's diagonal (Mezzadri 2007).
    q, upper = np.linalg.qr(rng.standard_normal((max(d, r), min(d, r))))
    q *= np.sign(np.diag(upper))
    return q if r < d else q.T


def _gram_sensitivity(n: int, row_change: float, clip_norm: float) -> float:
    """Δ_G of the released Gram vector (module docstring), plus the float error of its sums."""
    bound = clip_norm * (1.0 + FLOAT_MARGIN)
    step = min(row_change, 2.0 * bound)
    tau = clip_norm
    exact = math.hypot(min(2.0 * bound * step, math.sqrt(2.0) * bound**2), tau * step)
    # each computed sum is off by ≤ γ_n Σ_i |terms| (γ_{n+1} with the product by τ) ≤ γ_{n+1} n (C² + τC) in ℓ2
    # over the vector, for each of the two datasets
    return exact + 2.0 * summation_error(n + 1) * n * (bound**2 + tau * bound)


def _dp_pca_subspace(
    X: np.ndarray, k: int, clip_norm: float, std: float, grid: float, noise: NoiseSource
) -> np.ndarray:
    """V_k: the top-k eigenvectors of the covariance from Analyze Gauss on the augmented Gram (module docstring)."""
    n, d = X.shape
    rows = clip_rows(X, clip_norm)
    tau = clip_norm
    upper = np.triu_indices(d)
    released = np.concatenate([(rows.T @ rows)[upper], tau * rows.sum(axis=0)])
    noisy = noise.add_gaussian(released, std, grid)
    second = np.zeros((d, d))
    second[upper] = noisy[: len(upper[0])]
    second = (second + np.triu(second, 1).T) / n
    mean = noisy[len(upper[0]) :] / (tau * n)
    _, vectors = np.linalg.eigh(second - np.outer(mean, mean))
    return vectors[:, ::-1][:, :k]


def clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    """Each row of ``X`` scaled onto the ℓ2 ball of radius ``bound`` when it lies outside (x·min(1, bound/‖x‖)): a
    map of each row alone, so one row's change stays one row's change of norm ≤ 2·bound after it."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    over = norms > bound
    return np.where(over, X * (bound / np.where(over, norms, 1.0)), X)
