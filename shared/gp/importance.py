"""Parameter importance: the ARD lengthscales of a GP fitted to measured rows, one per input coordinate.

A short lengthscale ℓ_j means the measured value changes quickly along coordinate j, so coordinate j matters; the
relative importance is (1/ℓ_j) / max_k (1/ℓ_k) (the ARD reading of Rasmussen & Williams §5.1). The fit is the
modeler's own: maximum a posteriori under the dimension-scaled priors
(:meth:`~shared.gp.regression.HyperparameterPrior.dim_scaled`), each lengthscale in units of the released rows'
extent along its coordinate. A maximum-likelihood fit on GP-UCB's rows, which crowd around the optimum, often ends
a lengthscale at its bound and ranks the wrong coordinate first.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from shared.gp.regression import HyperparameterPrior, fit_hyperparameters


def ard_importance(X: ArrayLike, y: ArrayLike, extent: ArrayLike, *, kernel: Literal["se", "matern52"] = "se",
                   seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lengthscales, relative)`` of an ARD fit on the measured rows ``X`` and values ``y``; ``extent`` is the
    released rows' range per coordinate (the unit of each lengthscale; a zero range counts as 1)."""
    X = np.asarray(X, dtype=float)
    extent = np.asarray(extent, dtype=float)
    fitted = fit_hyperparameters(X, y, kernel=kernel, ard=True, rng=seed,
                                 prior=HyperparameterPrior.dim_scaled(X.shape[1]),
                                 input_scale=np.where(extent > 0, extent, 1.0))
    lengthscales = np.broadcast_to(np.asarray(fitted.kernel.lengthscale, dtype=float), (X.shape[1],)).copy()
    inverse = 1.0 / lengthscales
    return lengthscales, inverse / inverse.max()
