"""Parameter importance: the ARD lengthscales of a GP fitted to measured rows, one per input coordinate.

A short lengthscale ℓ_j means the measured value changes quickly along coordinate j, so coordinate j matters; the
relative importance is (1/ℓ_j) / max_k (1/ℓ_k) (the ARD reading of Rasmussen & Williams §5.1). The fit is the
modeler's own: maximum a posteriori under the dimension-scaled priors
(:meth:`~shared.gp.regression.HyperparameterPrior.dim_scaled`), each lengthscale in units of the released rows'
extent along its coordinate. A maximum-likelihood fit on GP-UCB's rows, which crowd around the optimum, often ends
a lengthscale at its bound and ranks the wrong coordinate first.

One fit says nothing of how sure it is, and on a release whose input noise exceeds the rows' spread it ranks
coordinates the value does not depend on first. :func:`importance_intervals` refits on ``HALF_SAMPLES`` random
halves of the rows: for sampling half of n rows without replacement the spread of a half's estimate around the
full one is about the full estimate's own sampling spread (the half-sample variance estimate), so the middle 80%
of the halves' relative importances is an interval for each coordinate, and how often each coordinate comes
first says how settled the ranking is. :func:`importance_warnings` says when the numbers mean little: the
release's noise-to-spread ratio above 1 (:mod:`shared.releases.noise_ratio`), fewer than
``ANSWERS_PER_COORDINATE`` answers per coordinate, or the leader's interval overlapping another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike

from shared.gp.regression import HyperparameterPrior, fit_hyperparameters

HALF_SAMPLES = 16
ANSWERS_PER_COORDINATE = 10
INTERVAL = (0.1, 0.9)


def ard_importance(X: ArrayLike, y: ArrayLike, extent: ArrayLike, *, kernel: Literal["se", "matern52"] = "se",
                   seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lengthscales, relative)`` of an ARD fit on the measured rows ``X`` and values ``y``; ``extent`` is the
    released rows' range per coordinate (the unit of each lengthscale; a zero range counts as 1)."""
    X = np.asarray(X, dtype=float)
    extent = np.asarray(extent, dtype=float)
    fitted = fit_hyperparameters(X, y, kernel=kernel, ard=True, rng=seed,
                                 prior=HyperparameterPrior.dim_scaled(X.shape[1]).peaking_at_medians(),
                                 input_scale=np.where(extent > 0, extent, 1.0))
    lengthscales = np.broadcast_to(np.asarray(fitted.kernel.lengthscale, dtype=float), (X.shape[1],)).copy()
    inverse = 1.0 / lengthscales
    return lengthscales, inverse / inverse.max()


@dataclass(frozen=True)
class ImportanceIntervals:
    """The full fit and, per coordinate, the half-samples' middle-80% interval of its relative importance and the
    share of half-samples in which it came first."""

    lengthscales: np.ndarray
    relative: np.ndarray
    low: np.ndarray
    high: np.ndarray
    first_share: np.ndarray


def importance_intervals(X: ArrayLike, y: ArrayLike, extent: ArrayLike, *, kernel: Literal["se", "matern52"] = "se",
                         seed: int | None = 0, half_samples: int = HALF_SAMPLES) -> ImportanceIntervals:
    """:func:`ard_importance` on all rows, and on ``half_samples`` random halves of them (module docstring)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    lengthscales, relative = ard_importance(X, y, extent, kernel=kernel, seed=seed)
    rng = np.random.default_rng(seed)
    half = max(2, len(y) // 2)
    halves = np.array([ard_importance(X[rows], y[rows], extent, kernel=kernel, seed=seed)[1]
                       for rows in (rng.choice(len(y), half, replace=False) for _ in range(half_samples))])
    low, high = np.quantile(halves, INTERVAL, axis=0)
    first = np.bincount(np.argmax(halves, axis=1), minlength=X.shape[1]) / half_samples
    return ImportanceIntervals(lengthscales, relative, low, high, first)


class NoiseRatio(Protocol):
    """A release's noise-to-spread ratio (:class:`shared.releases.noise_ratio.NoiseToSpread`; shared.gp imports
    nothing of shared.releases)."""

    @property
    def too_noisy(self) -> bool: ...

    def text(self) -> str: ...


def importance_warnings(names: list[str], found: ImportanceIntervals, observations: int,
                        noise: NoiseRatio | None) -> list[str]:
    """Sentences saying why the ranking may mean little (empty when none applies)."""
    warnings = []
    if noise is not None and noise.too_noisy:
        warnings.append(f"This release's noise / spread is {noise.text()}: the inputs are mostly noise, so the "
                        "importance below may rank first a feature the value does not depend on.")
    dim = len(names)
    if observations < ANSWERS_PER_COORDINATE * dim:
        warnings.append(f"Only {observations} answers for {dim} coordinates (fewer than {ANSWERS_PER_COORDINATE} "
                        "per coordinate): the fitted lengthscales are mostly the prior's.")
    order = np.argsort(found.relative)[::-1]
    if dim > 1:
        leader = order[0]
        rivals = [names[j] for j in order[1:] if found.high[j] >= found.low[leader]]
        if rivals:
            warnings.append(f"The ranking is not settled: {names[leader]}'s interval overlaps "
                            f"{', '.join(rivals)}'s, and {names[leader]} came first in "
                            f"{found.first_share[leader]:.0%} of the half-samples.")
    return warnings
