"""Built-in problems of the PO-GP-UCB paper (Kharkovskii, Dai & Low 2020, §4 and Appendix A).

* ``synthetic_gp_problem``: a function drawn from a GP on a 100 × 100 grid, squared-exponential kernel
  k(x, x') = σ_y² exp(−‖x − x'‖² / (2 l²)) with l = 1.25, σ_y² = 1, observation noise σ_n² = 1e-5.
* ``branin_problem``: Branin-Hoo on a 100 × 100 grid of its usual domain, negated for maximisation.

Both are maximised; simple regret is reported in units of ``signal_std``:
S = (optimum − best value found) / signal_std.

**Where the grid sits.** The paper gives the grid size and l but not the grid's extent, and says that
inputs are "normalised to a maximal norm of 25". We draw the function on the grid with 100 equally spaced
points per axis over [−5, 5]² (l = 1.25 then spans 1/8 of an axis: a smooth function with a handful of local
maxima), and then rescale the inputs, which changes nothing about f (the lengthscale is rescaled with them):

* ``"max-norm-25"`` (the paper's stated normalisation, the default): the centred grid scaled so its largest
  norm is 25. Its centred smallest singular value is σ_min ≈ 1,031, and with Blocki et al.'s ω
  (``shared.releases.omega``) the paper's crossing statements hold on it (``docs/po_gp_ucb.md``).
* ``"none"``: the raw [−5, 5]² grid.

**Sampling exactly.** On a Cartesian grid the SE kernel factorises, K = σ_y² K₁ ⊗ K₁ with K₁ the 100 × 100
kernel matrix of one axis, so f = σ_y (A ⊗ A) w with A Aᵀ = K₁ and w ~ N(0, I): exact in distribution. A is
Q √Λ from the symmetric eigendecomposition of K₁ (eigenvalues below zero by rounding clipped to 0), so no
jitter is needed; ``kronecker_factor_error`` reports max |A Aᵀ − K₁| (about 1e-15), which bounds the error
of the 10⁴ × 10⁴ covariance by 2·err + err². (A Cholesky factor of the full 10⁴ × 10⁴ matrix would need
jitter: the matrix has numerical rank far below 10⁴.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from shared.regret import simple_regret

Normalisation = Literal["max-norm-25", "none"]
PAPER_MAX_NORM = 25.0
SYNTHETIC_DOMAIN = (-5.0, 5.0)
BRANIN_DOMAIN = ((-5.0, 10.0), (0.0, 15.0))


@dataclass(frozen=True)
class Problem:
    """A finite maximisation problem: candidate inputs ``X`` (n × d) and noise-free values ``f``.

    ``lengthscale`` is the generating SE lengthscale in the units of ``X`` (None when f is not a GP draw);
    ``noise_variance`` is the variance of the observation noise added to f when a row is measured.
    """

    name: str
    X: np.ndarray
    f: np.ndarray
    noise_variance: float
    signal_std: float
    lengthscale: float | None = None

    @property
    def optimum(self) -> float:
        return float(self.f.max())

    def simple_regret(self, best_value: float | np.ndarray) -> float | np.ndarray:
        """(optimum − best noise-free value found) / signal_std."""
        return simple_regret(best_value, self.optimum, self.signal_std)


def grid(size: int, bounds: tuple[tuple[float, float], ...]) -> np.ndarray:
    """The size^d Cartesian grid over ``bounds``, rows in C order (last coordinate fastest)."""
    axes = [np.linspace(low, high, size) for low, high in bounds]
    return np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)


def normalisation_scale(X: np.ndarray, normalisation: Normalisation) -> float:
    """The factor the (centred) inputs are multiplied by under ``normalisation``."""
    centred = X - X.mean(axis=0)
    if normalisation == "max-norm-25":
        return PAPER_MAX_NORM / float(np.linalg.norm(centred, axis=1).max())
    if normalisation == "none":
        return 1.0
    raise ValueError(f"normalisation must be 'max-norm-25' or 'none', got {normalisation!r}")


def _normalised(X: np.ndarray, normalisation: Normalisation) -> tuple[np.ndarray, float]:
    scale = normalisation_scale(X, normalisation)
    if normalisation == "none":
        return X, scale
    return (X - X.mean(axis=0)) * scale, scale


@lru_cache(maxsize=8)
def _axis_factor(size: int, low: float, high: float, lengthscale: float) -> tuple[np.ndarray, float]:
    """A with A Aᵀ = K₁ (unit-variance SE kernel on one grid axis), and max |A Aᵀ − K₁|."""
    axis = np.linspace(low, high, size)
    K1 = np.exp(-0.5 * ((axis[:, None] - axis[None, :]) / lengthscale) ** 2)
    eigenvalues, Q = np.linalg.eigh(K1)
    A = Q * np.sqrt(np.clip(eigenvalues, 0.0, None))
    A.setflags(write=False)
    return A, float(np.abs(A @ A.T - K1).max())


def kronecker_factor_error(size: int = 100, lengthscale: float = 1.25) -> float:
    """max |A Aᵀ − K₁| of the one-axis factor used to sample the synthetic GP (see the module docstring)."""
    return _axis_factor(size, *SYNTHETIC_DOMAIN, lengthscale)[1]


@lru_cache(maxsize=64)
def synthetic_gp_values(seed: int, size: int = 100, lengthscale: float = 1.25,
                        signal_variance: float = 1.0) -> np.ndarray:
    """f ~ GP(0, σ_y² SE(l)) on the size × size grid of [−5, 5]² in ``grid`` row order (read-only, cached)."""
    A, _ = _axis_factor(size, *SYNTHETIC_DOMAIN, lengthscale)
    w = np.random.default_rng(seed).standard_normal((size, size))
    f = (np.sqrt(signal_variance) * (A @ w @ A.T)).ravel()  # Cov = σ_y² K₁ ⊗ K₁ in grid() row order
    f.setflags(write=False)
    return f


def synthetic_gp_problem(
    seed: int = 0,
    *,
    normalisation: Normalisation = "max-norm-25",
    size: int = 100,
    lengthscale: float = 1.25,
    signal_variance: float = 1.0,
    noise_variance: float = 1e-5,
) -> Problem:
    """The paper's synthetic GP problem: f ~ GP(0, SE(l, σ_y²)) drawn exactly on a size × size grid of
    [−5, 5]² (cached per seed), inputs rescaled by ``normalisation`` (module docstring)."""
    raw = grid(size, (SYNTHETIC_DOMAIN, SYNTHETIC_DOMAIN))
    X, scale = _normalised(raw, normalisation)
    return Problem(
        name=f"synthetic-gp(seed={seed}, {normalisation})",
        X=X,
        f=synthetic_gp_values(seed, size, float(lengthscale), float(signal_variance)),
        noise_variance=noise_variance,
        signal_std=float(np.sqrt(signal_variance)),
        lengthscale=float(lengthscale) * scale,
    )


def branin(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Branin-Hoo: (x2 − 5.1 x1²/(4π²) + 5 x1/π − 6)² + 10 (1 − 1/(8π)) cos x1 + 10; minimum 0.397887."""
    return (x2 - 5.1 * x1**2 / (4 * np.pi**2) + 5 * x1 / np.pi - 6) ** 2 + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10


def branin_problem(
    *, normalisation: Normalisation = "max-norm-25", size: int = 100, noise_variance: float = 1e-5
) -> Problem:
    """Branin-Hoo on a size × size grid of [−5, 10] × [0, 15], negated so that it is maximised.

    ``signal_std`` is the standard deviation of the values over the grid (the role σ_y plays for the GP
    problem); ``noise_variance`` is in units of signal_std² (observations are f + N(0, noise_variance ·
    signal_std²)).
    """
    raw = grid(size, BRANIN_DOMAIN)
    X, _ = _normalised(raw, normalisation)
    f = -branin(raw[:, 0], raw[:, 1])
    signal_std = float(f.std())
    return Problem(
        name=f"branin-hoo({normalisation})",
        X=X,
        f=f,
        noise_variance=noise_variance * signal_std**2,
        signal_std=signal_std,
    )
