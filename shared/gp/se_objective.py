"""The squared-exponential kernel's negative log marginal likelihood and its gradient as one compiled function.

A hyperparameter fit on t ≤ a few hundred answers evaluates this objective tens of times a fit and refits after
every answer; in numpy each evaluation is some twenty calls on small t × t arrays, at small t almost all of it
call overhead. Here, for K = σ² exp(−½ Σ_j (x_aj − x_bj)² / l_j²) + σ_n² I = L Lᵀ, α = K⁻¹ r and W = α αᵀ − K⁻¹
(Rasmussen & Williams eqs. 2.30 and 5.9):

    −log p(r | θ)      = ½ rᵀ α + Σ_i log L_ii + (t/2) log 2π
    ∂ log p / ∂log l_j = ½ Σ_ab W_ab K⁰_ab (x_aj − x_bj)² / l_j²      (isotropic: ½ Σ_ab W_ab K⁰_ab d²_ab)
    ∂ log p / ∂log σ²  = ½ Σ_ab W_ab K⁰_ab,     ∂ log p / ∂log σ_n² = ½ σ_n² tr W

with K⁰ the kernel without the noise. The Cholesky factor, K⁻¹ and the sums are plain loops (t is small). A
matrix that is not positive definite gives (1e25, 0), as the numpy objective does.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def se_negative_lml_and_gradient(theta: np.ndarray, ard: bool, X: np.ndarray,
                                 residual: np.ndarray) -> tuple[float, np.ndarray]:
    """−log p(r | θ) and its gradient in θ = (log l…, log σ², log σ_n²) (one log l unless ``ard``)."""
    t, d = X.shape
    n_ls = len(theta) - 2
    inv_ls2 = np.empty(d)
    for j in range(d):
        inv_ls2[j] = math.exp(-2.0 * theta[j if ard else 0])
    variance, noise = math.exp(theta[n_ls]), math.exp(theta[n_ls + 1])
    K0 = np.empty((t, t))
    for a in range(t):
        K0[a, a] = variance
        for b in range(a):
            sq = 0.0
            for j in range(d):
                diff = X[a, j] - X[b, j]
                sq += diff * diff * inv_ls2[j]
            K0[a, b] = K0[b, a] = variance * math.exp(-0.5 * sq)
    # lower Cholesky factor of K0 + σ_n² I
    L = np.zeros((t, t))
    for i in range(t):
        for k in range(i + 1):
            s = K0[i, k] + (noise if i == k else 0.0)
            for m in range(k):
                s -= L[i, m] * L[k, m]
            if i == k:
                if not s > 0.0:
                    return 1e25, np.zeros(len(theta))
                L[i, i] = math.sqrt(s)
            else:
                L[i, k] = s / L[k, k]
    # U = (L⁻¹)ᵀ by forward substitution (row j of U is column j of L⁻¹: contiguous), then K⁻¹ = U Uᵀ, α = K⁻¹ r
    U = np.zeros((t, t))
    for j in range(t):
        U[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, t):
            s = 0.0
            for m in range(j, i):
                s -= L[i, m] * U[j, m]
            U[j, i] = s / L[i, i]
    K_inv = np.empty((t, t))
    for a in range(t):
        for b in range(a + 1):
            s = 0.0
            for m in range(a, t):
                s += U[a, m] * U[b, m]
            K_inv[a, b] = K_inv[b, a] = s
    alpha = K_inv @ residual
    value = 0.5 * (residual @ alpha) + 0.5 * t * LOG_2PI
    for i in range(t):
        value += math.log(L[i, i])
    grad = np.zeros(len(theta))
    trace = 0.0
    for a in range(t):
        w_aa = alpha[a] * alpha[a] - K_inv[a, a]
        trace += w_aa
        grad[n_ls] += 0.5 * w_aa * K0[a, a]
        for b in range(a):
            wk = (alpha[a] * alpha[b] - K_inv[a, b]) * K0[a, b]  # W_ab K⁰_ab, counted twice (symmetry)
            grad[n_ls] += wk
            for j in range(d):
                diff = X[a, j] - X[b, j]
                grad[j if ard else 0] += wk * diff * diff * inv_ls2[j]
    grad[n_ls + 1] = 0.5 * noise * trace
    return value, -grad
