"""The PO-GP-UCB paper's input preprocessing for its real-world experiments (Kharkovskii, Dai & Low 2020, §4).

The paper says two things about the inputs: "the original inputs are preprocessed to form an isotropic
covariance function" (its footnote 4: divide each dimension by the length-scale of a non-isotropic SE
kernel), and "normalize the inputs to have a maximal norm of 25 in all experiments". We read them as

    1. fit an ARD squared-exponential GP to (X, y) by maximum marginal likelihood
       (``shared.gp.regression.fit_hyperparameters(..., ard=True)``) on a seeded uniform subsample of
       ``fit_rows`` rows (an exact fit is O(m³) per likelihood evaluation; 500 rows take seconds);
    2. X ← X / l  (per dimension): the SE kernel with lengthscales l becomes isotropic with lengthscale 1;
    3. X ← (X − mean) · 25 / max_i ‖x_i − mean‖: centred (Algorithm 1 centres anyway) and scaled so the
       largest row norm is exactly 25, as ``shared.datasets.synthetic`` does for the paper's grid.

The same fit gives GP-UCB its kernel on the preprocessed inputs: an SE kernel with lengthscale ``scale``
(x / l has lengthscale 1, then everything is multiplied by ``scale``) and the fitted signal variance, noise
variance and mean, the paper's "GP hyperparameters ... learned using maximum likelihood estimation".

**This preprocessing is data-dependent.** The lengthscales are fitted to the private rows and their
outcomes, and the centre and scale come from the private rows (the maximal norm is one person's record).
Releasing anything computed from the result leaks beyond what Algorithm 1 releases (which is itself not
differentially private, docs/design.md §4). It exists only to reproduce the paper's uncertified ``po-gp-ucb``
experiments; the certified ``gaussian`` mechanism uses the table's public ``scaling`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shared.datasets.synthetic import PAPER_MAX_NORM
from shared.gp.regression import default_bounds, fit_hyperparameters

DEFAULT_FIT_ROWS = 500


@dataclass(frozen=True)
class PaperPreprocessing:
    """The fitted preprocessing: x ↦ (x / lengthscales − centre) · scale.

    ``lengthscales`` are the ARD lengthscales in the units of the original features, ``centre`` the mean
    of X / lengthscales, ``scale`` the factor that brings the largest centred norm to 25, ``fit_rows``
    the size of the subsample the lengthscales were fitted on; ``signal_variance``, ``noise_variance`` and
    ``prior_mean`` the rest of that fit; ``at_bound`` says per lengthscale whether the fit stopped at the
    lower or upper end of its search box (``shared.gp.regression.default_bounds``: 0.01–10 × the feature's range), where
    the likelihood, not the data, decided nothing.
    """

    lengthscales: NDArray
    centre: NDArray
    scale: float
    fit_rows: int
    signal_variance: float
    noise_variance: float
    prior_mean: float
    at_bound: tuple[Literal["lower", "upper", ""], ...]

    @property
    def isotropic_lengthscale(self) -> float:
        """The fitted kernel's lengthscale in the units of ``transform``'s output (1 before the max-norm scale)."""
        return self.scale

    def transform(self, X: ArrayLike) -> NDArray:
        return (np.asarray(X, dtype=float) / self.lengthscales - self.centre) * self.scale


def fit_paper_preprocessing(
    X: ArrayLike,
    y: ArrayLike,
    *,
    fit_rows: int = DEFAULT_FIT_ROWS,
    seed: int = 0,
    n_restarts: int = 2,
    max_norm: float = PAPER_MAX_NORM,
) -> PaperPreprocessing:
    """Fits the ARD lengthscales on ``min(fit_rows, n)`` seeded rows, then the centre and the max-norm scale
    on all of X (steps 1–3 of the module docstring)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).ravel()
    rng = np.random.default_rng(seed)
    m = min(fit_rows, len(X))
    rows = np.sort(rng.choice(len(X), size=m, replace=False))
    bounds = default_bounds(X[rows], y[rows], ard=True)
    fitted = fit_hyperparameters(X[rows], y[rows], kernel="se", ard=True, bounds=bounds, n_restarts=n_restarts,
                                 rng=rng)
    lengthscales = np.asarray(fitted.kernel.lengthscale, dtype=float)
    per_dimension = cast(Sequence[tuple[float, float]], bounds.lengthscale)  # ard=True: one (low, high) a column
    at_bound = tuple(_bound_reached(lengthscale, low, high)
                     for lengthscale, (low, high) in zip(lengthscales, per_dimension))
    isotropic = X / lengthscales
    centre = isotropic.mean(axis=0)
    largest = float(np.linalg.norm(isotropic - centre, axis=1).max())
    if largest == 0:
        raise ValueError("every row is the same point; there is nothing to normalise")
    return PaperPreprocessing(
        lengthscales=lengthscales,
        centre=centre,
        scale=max_norm / largest,
        fit_rows=m,
        signal_variance=fitted.kernel.variance,
        noise_variance=fitted.noise_variance,
        prior_mean=fitted.prior_mean,
        at_bound=at_bound,
    )


def _bound_reached(value: float, low: float, high: float) -> Literal["lower", "upper", ""]:
    """Which end of [low, high] a fitted ``value`` stopped at ("" for neither)."""
    if np.isclose(value, low, rtol=1e-6):
        return "lower"
    return "upper" if np.isclose(value, high, rtol=1e-6) else ""
