"""Modeler-side help for GP-UCB on a ``gaussian`` release, whose inputs carry public Gaussian noise.

Released rows are zᵢ = xᵢ M/√r + gᵢ with gᵢ ~ N(0, σ² I_r) and σ public (the release's ``noise_std``).
For two different rows E‖zᵢ − zⱼ‖² = ‖(xᵢ − xⱼ) M‖²/r + 2rσ², and E‖(xᵢ − xⱼ) M‖²/r = ‖xᵢ − xⱼ‖² over M.
:class:`NoiseCorrectedKernel` therefore feeds a stationary kernel the debiased squared distance
max(‖zᵢ − zⱼ‖² − 2rσ², 0) for distinct rows, and 0 for a row with itself.

This is not guaranteed positive semi-definite (the clipping at 0 and the debiasing both break the Gram
structure), so the GP engine's jitter may have to grow; ``benchmarks/regret_vs_epsilon.py`` compares it
with a plain kernel on Z whose hyperparameters are fitted by marginal likelihood.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shared.kernels import StationaryKernel, squared_distances


class NoiseCorrectedKernel:
    """k(zᵢ, zⱼ) = base.profile(max(‖zᵢ − zⱼ‖² − 2 r σ², 0) / l²) for distinct rows; base variance on the diagonal.

    ``base`` is an isotropic :class:`shared.kernels.StationaryKernel` (its lengthscale in the units of the
    publicly scaled inputs); ``noise_std`` the release's public σ. Works as ``GPUCB(kernel=…)``.
    """

    def __init__(self, base: StationaryKernel, noise_std: float) -> None:
        if base.ard:
            raise ValueError("the noise correction is written for an isotropic base kernel")
        if not noise_std >= 0:
            raise ValueError("noise_std must be ≥ 0")
        self.base = base
        self.noise_std = float(noise_std)

    def __call__(self, A: ArrayLike, B: ArrayLike) -> NDArray:
        A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        sq = squared_distances(A, B)
        same = sq == 0.0  # only a row with itself: distinct noisy rows never coincide
        sq -= 2.0 * A.shape[1] * self.noise_std**2
        np.maximum(sq, 0.0, out=sq)
        sq[same] = 0.0
        sq /= self.base.lengthscale**2
        return self.base.profile(sq, out=sq)

    def diag(self, A: ArrayLike) -> NDArray:
        return self.base.diag(A)
