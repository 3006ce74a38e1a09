"""The certified input release (mechanism ``gaussian``, DESIGN §4): a JL projection plus Gaussian noise.

    Z = X M / √r + G,    M: d × r i.i.d. N(0, 1),    G: n × r i.i.d. N(0, σ²)

X is the *publicly* scaled data (:func:`shared.scaling.apply_scaling`; nothing is estimated from the data,
no centring). Row i of Z depends on row i of X only, through the linear map v ↦ v M / √r, whose ℓ2
operator norm is σ_max(M)/√r. So under the neighbouring relation "one row changes by a vector of ℓ2
norm ≤ 1" (``unit="bounded-change"``, PO-GP-UCB's Definition 1) the query X ↦ X M / √r has ℓ2
sensitivity exactly Δ = σ_max(M)/√r (attained by the top right-singular direction), and adding G with the
analytic Gaussian σ for (ε, δ, Δ) makes Z (ε, δ)-DP, conditionally on M. The guarantee does not rely on M
being secret (M is drawn independently of the data, and Δ is computed from M alone), so M comes from the
ordinary ``rng``; it is still used once and never stored, returned or logged — it is a local variable of
:func:`gaussian_release`, not an attribute of the result.

``unit="replace-one"`` is the stronger relation "one row is replaced by any other row": rows are first
clipped to ℓ2 norm ≤ ``clip_norm`` (a public bound C), so two rows differ by ≤ 2C and Δ = 2C σ_max(M)/√r.

G is the privacy noise and is drawn from a :class:`shared.noise.NoiseSource`; by default the
floating-point-safe OpenDP source (whatever ``rng`` is), so the default call of DESIGN §7 is safe.
Research runs that need a reproducible release pass ``noise=noise_source(seed)`` (not floating-point-safe).
The safe source rounds X M/√r to a grid of ~3e-14 Δ first, which is included in ``sensitivity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shared.mechanisms import analytic_gaussian_sigma, l2_sensitivity_with_grid
from shared.noise import NoiseSource, OpenDPNoise

Unit = Literal["bounded-change", "replace-one"]


@dataclass(frozen=True)
class GaussianRelease:
    """A certified release: ``Z`` (n × r), the public noise std and the ℓ2 sensitivity it was calibrated to.

    ``projection_sensitivity`` is σ_max(M)/√r (· 2C for replace-one); ``sensitivity`` adds the safe
    sampler's grid-rounding slack √r · grid (0 for a seeded source), and ``noise_std`` is exactly
    :func:`shared.mechanisms.analytic_gaussian_sigma` (ε, δ, ``sensitivity``).
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
) -> GaussianRelease:
    """(ε, δ)-DP release Z = X M/√r + G of the publicly scaled n × d ``X`` (see the module docstring).

    ``rng`` draws the projection M only; ``noise`` draws G (default: the floating-point-safe source).
    ``unit="replace-one"`` needs a public ``clip_norm`` C > 0 and clips every row to ℓ2 norm ≤ C first.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty n × d matrix, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must hold finite numbers only")
    if int(r) != r or r < 1:
        raise ValueError(f"r (the projection dimension) must be an integer ≥ 1, got {r!r}")
    r = int(r)
    if unit == "replace-one":
        if clip_norm is None or not clip_norm > 0:
            raise ValueError("unit 'replace-one' needs a public clip_norm > 0 (the largest row norm allowed)")
        X = _clip_rows(X, clip_norm)
        row_change = 2.0 * clip_norm
    elif unit == "bounded-change":
        row_change = 1.0
    else:
        raise ValueError(f"unknown neighbouring unit {unit!r}; use 'bounded-change' or 'replace-one'")
    noise = OpenDPNoise() if noise is None else noise

    M = np.random.default_rng(rng).standard_normal((X.shape[1], r))
    projection_sensitivity = row_change * float(np.linalg.norm(M, ord=2)) / math.sqrt(r)
    projected = X @ M / math.sqrt(r)
    del M  # used once: never stored, returned or logged

    sensitivity = l2_sensitivity_with_grid(projection_sensitivity, r, noise)
    noise_std = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    Z = noise.add_gaussian(projected, noise_std, noise.grid(projection_sensitivity))
    return GaussianRelease(
        Z=Z,
        noise_std=noise_std,
        sensitivity=sensitivity,
        projection_sensitivity=projection_sensitivity,
        epsilon=float(epsilon),
        delta=float(delta),
        unit=unit,
        clip_norm=clip_norm,
        floating_point_safe=noise.floating_point_safe,
    )


def _clip_rows(X: np.ndarray, bound: float) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
