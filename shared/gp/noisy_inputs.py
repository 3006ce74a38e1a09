"""The squared-exponential kernel averaged over a ``gaussian`` release's public input noise.

Released rows are zᵢ = xᵢ P + gᵢ with gᵢ ~ N(0, s² I_r) independent across rows and s public (the release's
``noise_std``). With a flat prior on the noise-free xᵢ P, given zᵢ it is N(zᵢ, s² I_r), so for two *different*
rows the noise-free difference is N(zᵢ − zⱼ, 2s² I_r) and the SE kernel (lengthscales l_j, signal variance
σ_f²) averages, one Gaussian integral per coordinate, to

    E k(i, j) = σ_f² Π_j (l_j² / (l_j² + 2s²))^½ · exp(−½ Σ_j (z_ij − z_jj)² / (l_j² + 2s²))       (i ≠ j)
             = σ_f² (l² / (l² + 2s²))^(r/2) exp(−‖zᵢ − zⱼ‖² / (2 (l² + 2s²)))                   (isotropic),

while a row with itself has zero difference: E k(i, i) = σ_f². So the Gram matrix is
σ_f² a · SE_{l'}(Z) + σ_f² (1 − a) I with l'² = l² + 2s² and attenuation a = Π_j (l_j²/l_j'²)^½ — a scaled
SE kernel plus a per-*row* nugget, positive semi-definite. The nugget belongs to the row, not to the
observation: querying a row again does not average it away, which is why GP-UCB on such a release should not
re-query rows (``GPUCB(requery=False)``). It is a moment-matched GP (the exact f given Z is a Gaussian
mixture), the usual treatment of noisy inputs.

The kernel retired here, which fed an SE kernel the debiased distance max(‖zᵢ − zⱼ‖² − 2rs², 0), set about
half of all pairwise distances to 0 and made the Gram matrix indefinite (smallest eigenvalue −4.3 in one measured case).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import truncnorm

from shared.gp.kernels import StationaryKernel

SAME_ROW = 1e-12
"""Squared scaled distances at or below this are a row with itself (distinct noisy rows are ~2rs²/l'² apart)."""


class ExpectedSquaredExponential(StationaryKernel):
    """E k under public N(0, s² I_r) input noise (module docstring); ``lengthscale`` is the noise-free l."""

    name = "expected-se"

    def __init__(self, lengthscale: float | ArrayLike, variance: float = 1.0, *, input_noise_std: float,
                 dim: int) -> None:
        super().__init__(lengthscale, variance)
        if not (np.isfinite(input_noise_std) and input_noise_std >= 0):
            raise ValueError("input_noise_std (the release's public noise std) must be a finite number ≥ 0")
        if self.ard and np.size(self.lengthscale) != dim:
            raise ValueError(f"ARD lengthscale has {np.size(self.lengthscale)} entries but the inputs have {dim} "
                             "columns")
        self.input_noise_std = float(input_noise_std)
        self.dim = int(dim)
        widened = np.asarray(self.lengthscale) ** 2 + 2.0 * self.input_noise_std**2
        self.ratio = np.asarray(self.lengthscale) ** 2 / widened  # l_j² / l_j'², per dimension (or one number)
        self._widened = np.sqrt(widened) if self.ard else float(np.sqrt(widened))
        per_dimension = np.broadcast_to(self.ratio, (self.dim,))
        self.attenuation = float(np.prod(np.sqrt(per_dimension)))

    @property
    def distance_lengthscale(self) -> float | NDArray:
        """Distances are measured in units of the widened l' = √(l² + 2s²)."""
        return self._widened

    def with_parameters(self, lengthscale: float | ArrayLike, variance: float) -> ExpectedSquaredExponential:
        return type(self)(lengthscale, variance, input_noise_std=self.input_noise_std, dim=self.dim)

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        same = sq <= SAME_ROW
        out = np.multiply(sq, -0.5, out=out)
        np.exp(out, out=out)
        out *= self.variance * self.attenuation
        out[same] = self.variance
        return out

    def log_lengthscale_parts(self, sq: NDArray) -> tuple[NDArray, NDArray, float | NDArray, float | NDArray]:
        """∂K/∂log l_j = K · (1 − w_j + w_j (zᵢ_j − zⱼ_j)²/l_j'²) with w_j = l_j²/l_j'², 0 for a row with itself:
        the attenuation's log-derivative 1 − w_j plus the exponent's; g = K off the same-row pairs, u = 1 − w,
        v = w (isotropic: u summed over the r dimensions)."""
        K = self.profile(sq)
        g = np.where(sq <= SAME_ROW, 0.0, K)
        u = 1.0 - self.ratio if self.ard else self.dim * (1.0 - float(self.ratio))
        return K, g, u, self.ratio if self.ard else float(self.ratio)

    def __repr__(self) -> str:
        return (f"{super().__repr__()[:-1]}, input_noise_std={self.input_noise_std:.4g}, "
                f"attenuation={self.attenuation:.3g})")


def box_posterior(Z: ArrayLike, noise_std: float, width: float) -> tuple[NDArray, NDArray]:
    """Per-row posterior mean and variance of the noise-free x given z = x + N(0, s² I) when x is uniform on the
    public box [0, width]^r (an identity release of ``bounds``-scaled data): per coordinate the normal
    N(z, s²) truncated to [0, width]. Outlying rows, which the flat prior leaves far outside the box, are
    pulled to its edge with a small variance: they are near each other, not far from everything."""
    Z = np.asarray(Z, dtype=float)
    if not (noise_std > 0 and width > 0):
        raise ValueError("the box posterior needs a positive noise std and a positive public width")
    means, variances = truncnorm.stats(-Z / noise_std, (width - Z) / noise_std, loc=Z, scale=noise_std, moments="mv")
    return np.asarray(means), np.asarray(variances)


class PosteriorInputsSE:
    """E k under independent Gaussian posteriors xᵢ ~ N(mᵢ, diag vᵢ) of the inputs (isotropic lengthscale l):

        k(i, j) = σ_f² Π_c (l² / (l² + v_ic + v_jc))^½ exp(−½ Σ_c (m_ic − m_jc)² / (l² + v_ic + v_jc))   (i ≠ j),
        k(i, i) = σ_f²,

    the expected-SE kernel with a per-row input variance (v ≡ s², m = z gives
    :class:`ExpectedSquaredExponential`). An expectation of SE Gram matrices with the exact diagonal, so
    positive semi-definite. Inputs are the rows [mᵢ, vᵢ] (2r columns, e.g. from :func:`box_posterior`);
    identical rows are one row with itself. Works as ``GPUCB(kernel=…, refit_kernel=…)``.
    """

    name = "posterior-se"
    ard = False

    def __init__(self, lengthscale: float | ArrayLike, variance: float = 1.0) -> None:
        scale = np.asarray(lengthscale, dtype=float)
        if not (scale.size == 1 and np.isfinite(scale).all() and scale.item() > 0
                and np.isfinite(variance) and variance > 0):
            raise ValueError("lengthscale and variance must be positive numbers (an isotropic lengthscale)")
        self.lengthscale = float(scale.item())
        self.variance = float(variance)

    def with_parameters(self, lengthscale: float | ArrayLike, variance: float) -> PosteriorInputsSE:
        return type(self)(lengthscale, variance)

    def _pairs(self, A: ArrayLike, B: ArrayLike) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """K, the same-row mask, the ratios w = l²/(l² + V) and the scaled squared mean differences, per coordinate."""
        A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        r = A.shape[1] // 2
        widened = self.lengthscale**2 + A[:, None, r:] + B[None, :, r:]
        ratio = self.lengthscale**2 / widened
        scaled = (A[:, None, :r] - B[None, :, :r]) ** 2 / widened
        K = self.variance * np.sqrt(np.prod(ratio, axis=2)) * np.exp(-0.5 * scaled.sum(axis=2))
        same = np.all(A[:, None, :] == B[None, :, :], axis=2)
        K[same] = self.variance
        return K, same, ratio, scaled

    def __call__(self, A: ArrayLike, B: ArrayLike) -> NDArray:
        return self._pairs(A, B)[0]

    def diag(self, A: ArrayLike) -> NDArray:
        return np.full(np.shape(A)[0], self.variance)

    def log_parameter_gradients(self, X: ArrayLike) -> tuple[NDArray, NDArray]:
        """∂K/∂log l = K Σ_c (1 − w_c + w_c (m_ic − m_jc)²/(l² + V_c)), 0 for a row with itself; ∂K/∂log σ² = K."""
        K, same, ratio, scaled = self._pairs(X, X)
        d_ls = K * np.sum(1.0 - ratio + ratio * scaled, axis=2)
        d_ls[same] = 0.0
        return K, np.stack([d_ls, K])

    def __repr__(self) -> str:
        return f"PosteriorInputsSE(lengthscale={self.lengthscale:.4g}, variance={self.variance:.4g})"
