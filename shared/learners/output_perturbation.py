"""Output-perturbation logistic regression: the private model of DPareto's first example (§2.2).

Fit the ℓ2-regularised empirical risk minimiser
    w* = argmin_w f(w),   f(w) = (1/n) Σ_i log(1 + exp(−s_i wᵀx_i)) + (γ/2) ‖w‖²,   s_i = 2y_i − 1 ∈ {−1, +1},
and release w + N(0, σ² I). With ‖x_i‖ ≤ R the loss is R-Lipschitz in w and f is γ-strongly convex, so
replacing one row moves w* by at most 2R/(nγ) in ℓ2 (Chaudhuri, Monteleoni & Sarwate 2011, Cor. 8; the
same 2L/(γn) as Wu et al.'s Bolt-on Algorithm 2 with L = 1, which the paper uses). The released w is
not w* exactly: Newton's method stops once ‖∇f(w)‖ ≤ τ, and strong convexity gives ‖w − w*‖ ≤ τ/γ
(approximate minima perturbation, Iyengar et al. 2019). The safe sampler then rounds w to its grid.
So the Gaussian mechanism is calibrated to

    Δ = 2R/(nγ) + 2τ/γ + √d · grid,    τ = 10⁻⁶/n,   R = 1 + 10⁻⁹ (the row-norm check's tolerance),

10⁻⁶ of the textbook 2/(nγ) plus the grid slack. The gradient is itself evaluated in floating point
(error ~√n·2⁻⁵³ in practice, ~10⁻¹⁴ on Adult, far below τ = 3·10⁻¹¹; not a worst-case bound). The privacy
oracle is the exact Gaussian mechanism for (σ, Δ) at fixed δ (Balle & Wang 2018).

Differences from the paper, on purpose: we release the minimiser (Newton's method) where the paper runs
10 passes of single-example projected SGD — the sensitivity is the same up to τ, and 325k sequential numpy
steps per γ would dominate the benchmark; and there is no intercept (on Adult one-hot groups that are
never missing, e.g. sex, sum to a constant, which acts as one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from shared.dp.accounting import gaussian_mechanism_epsilon
from shared.dp.mechanisms import l2_sensitivity_with_grid
from shared.dp.noise import NoiseSource

ROW_NORM_BOUND = 1.0 + 1e-9
"""R: rows may exceed norm 1 by this much (rounding of public scaling); the sensitivity uses R."""

NEWTON_ITERATIONS = 100


def gradient_tolerance(n: int) -> float:
    """τ = 10⁻⁶/n: the minimiser is returned once ‖∇f(w)‖ ≤ τ, so its error adds 10⁻⁶ of 2/(nγ) to Δ."""
    return 1e-6 / n


def minimizer_sensitivity(n: int, regularization: float) -> float:
    """2R/(nγ) + 2τ/γ: how far replacing one of n rows can move the minimiser the fit returns."""
    return (2.0 * ROW_NORM_BOUND / n + 2.0 * gradient_tolerance(n)) / regularization


def regularized_logistic_minimizer(X: NDArray, y: NDArray, regularization: float) -> NDArray:
    """w with ‖∇f(w)‖ ≤ :func:`gradient_tolerance` (n) for the objective above (no intercept).

    Damped Newton steps with Armijo backtracking, full steps once the Newton decrement is small (the
    quadratic-convergence zone, where backtracking would only see floating-point noise in f). The
    Hessian XᵀDX/n + γI is formed through a sparse copy of X (one-hot data such as Adult has ~14
    non-zeros per row), so a step costs O(nnz · nnz_row) rather than O(n d²).
    """
    Xs = sparse.csr_matrix(np.asarray(X, dtype=float))
    signs = 2.0 * np.asarray(y, dtype=float) - 1.0
    n, d = Xs.shape
    tolerance = gradient_tolerance(n)

    def objective(w: NDArray) -> float:
        return float(np.logaddexp(0.0, -signs * (Xs @ w)).mean() + 0.5 * regularization * (w @ w))

    w = np.zeros(d)
    value = objective(w)
    for _ in range(NEWTON_ITERATIONS):
        margins = signs * (Xs @ w)
        p = 0.5 * (1.0 - np.tanh(0.5 * margins))  # σ(−t) = −ℓ'(t)
        gradient = -(Xs.T @ (p * signs)) / n + regularization * w
        if np.linalg.norm(gradient) <= tolerance:
            return w
        hessian = (Xs.T @ Xs.multiply((p * (1.0 - p))[:, None])).toarray() / n + regularization * np.eye(d)
        step = np.linalg.solve(hessian, gradient)
        decrement = float(gradient @ step)
        t = 1.0
        if decrement > 1e-12:
            while objective(w - t * step) > value - 0.25 * t * decrement and t > 1e-10:
                t *= 0.5
        w = w - t * step
        value = objective(w)
    raise ArithmeticError(f"Newton's method did not reach ‖∇f‖ ≤ {tolerance:.1e} in {NEWTON_ITERATIONS} steps")


@dataclass
class OutputPerturbationLogisticRegression:
    """ℓ2-regularised logistic regression (γ = ``regularization``) released with N(0, σ²) output noise
    (σ = ``noise_std``). Requires rows with ‖x‖ ≤ 1 (the sensitivity 2/(nγ) assumes it)."""

    regularization: float
    noise_std: float

    def sensitivity(self, n: int, d: int, noise: NoiseSource) -> float:
        """Δ = 2R/(nγ) + 2τ/γ + √d · grid (module docstring): what the released coefficients can move by."""
        return l2_sensitivity_with_grid(minimizer_sensitivity(n, self.regularization), d, noise)

    def epsilon(self, n: int, d: int, delta: float, noise: NoiseSource) -> float:
        """The ε of :meth:`fit` on n rows of d features with ``noise`` at this δ (replace-one neighbours)."""
        return gaussian_mechanism_epsilon(self.noise_std, self.sensitivity(n, d, noise), delta)

    def fit(self, X: NDArray, y: NDArray, noise: NoiseSource) -> OutputPerturbationLogisticRegression:
        X = np.asarray(X, dtype=float)
        if not (self.regularization > 0 and self.noise_std > 0 and math.isfinite(self.noise_std)):
            raise ValueError("regularization and noise_std must be positive")
        if np.max(np.linalg.norm(X, axis=1)) > ROW_NORM_BOUND:
            raise ValueError("rows must have l2 norm at most 1 (scale the features publicly first)")
        w = regularized_logistic_minimizer(X, y, self.regularization)
        grid = noise.grid(minimizer_sensitivity(len(X), self.regularization))
        self.coef_ = noise.add_gaussian(w, self.noise_std, grid)
        return self

    def predict(self, X: NDArray) -> NDArray:
        return (np.asarray(X, dtype=float) @ self.coef_ > 0).astype(np.int64)

    def score(self, X: NDArray, y: NDArray) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))
