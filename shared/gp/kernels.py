"""Stationary covariance functions: squared exponential and Matérn-5/2, isotropic or ARD.

A kernel is any object with ``k(A, B) -> (len(A), len(B)) ndarray`` and ``k.diag(A) -> (len(A),)``;
the GP engine accepts such objects. The two built-in kernels also expose what the engine uses to be
fast (``scale``, ``profile``) and what marginal-likelihood fitting needs (``gram_and_gradient_contraction``;
``log_parameter_gradients`` for checks).

Both are functions of the scaled distance d = ‖(a − b) / l‖ (l a scalar, or one length per input
dimension for ARD) times a signal variance σ²:

* squared exponential: k(a, b) = σ² exp(−d² / 2)
* Matérn-5/2:          k(a, b) = σ² (1 + √5 d + 5 d² / 3) exp(−√5 d)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

SQRT5 = np.sqrt(5.0)


@runtime_checkable
class Kernel(Protocol):
    """What the GP engine needs from a covariance function."""

    def __call__(self, A: NDArray, B: NDArray) -> NDArray: ...

    def diag(self, A: NDArray) -> NDArray: ...


@runtime_checkable
class FittableKernel(Kernel, Protocol):
    """A kernel whose hyperparameters marginal-likelihood fitting can adjust
    (:func:`shared.gp.regression.fit_hyperparameters`)."""

    # Read-only here: a kernel is changed by with_parameters, and an isotropic kernel's plain float lengthscale
    # then satisfies the protocol's float | NDArray.
    @property
    def lengthscale(self) -> float | NDArray: ...

    @property
    def variance(self) -> float: ...

    @property
    def ard(self) -> bool: ...

    def with_parameters(self, lengthscale: float | ArrayLike, variance: float) -> FittableKernel: ...

    def log_parameter_gradients(self, X: ArrayLike) -> tuple[NDArray, NDArray]: ...


def squared_distances(A: NDArray, B: NDArray) -> NDArray:
    """Pairwise squared Euclidean distances ‖a‖² + ‖b‖² − 2 a·b, clipped at 0.

    Both sets are shifted by the mean of ``A`` first: distances do not change, and the cancellation
    error of the expansion (relative to ‖a‖²) shrinks to the spread of the data. ``B is A`` (a Gram
    matrix) computes the norms and the shift once.
    """
    centre = A.mean(axis=0)
    A = A - centre
    B = A if B is A else B - centre
    a_norms = np.einsum("ij,ij->i", A, A)
    b_norms = a_norms if B is A else np.einsum("ij,ij->i", B, B)
    sq = A @ B.T
    sq *= -2.0
    sq += a_norms[:, None]
    sq += b_norms[None, :]
    return np.maximum(sq, 0.0, out=sq)


def weighted_squared_differences(X: NDArray, M: NDArray) -> NDArray:
    """Σ_ab M_ab (x_aj − x_bj)² for every column j of X, for a symmetric n × n weight M.

    Fused, without the n × n × d tensor of differences: expanding the square and using M = Mᵀ,
    Σ_ab M_ab (x_aj − x_bj)² = 2 (1ᵀ M x_j²) − 2 x_jᵀ M x_j, both from one product M [X, X²] (a single
    pass over M). X is centred first (differences do not change) so the expansion loses only the data's
    spread.
    """
    X = X - X.mean(axis=0)
    d = X.shape[1]
    product = M @ np.hstack([X, X * X])
    return 2.0 * (product[:, d:].sum(axis=0) - np.einsum("aj,aj->j", X, product[:, :d]))


class StationaryKernel:
    """σ² · ρ(d²) for a profile ρ of the squared scaled distance d² = ‖(a − b) / l‖².

    ``lengthscale`` is a positive float (isotropic) or a 1-D array with one entry per input dimension
    (ARD); ``variance`` is the signal variance σ² = k(a, a).
    """

    name: str = ""

    def __init__(self, lengthscale: float | ArrayLike, variance: float = 1.0) -> None:
        ls = np.asarray(lengthscale, dtype=float)
        if ls.ndim > 1 or ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
            raise ValueError("lengthscale must be a positive float or a 1-D array of positive floats")
        if not (np.isfinite(variance) and variance > 0):
            raise ValueError("variance (the signal variance) must be a positive float")
        self.lengthscale: float | NDArray = float(ls) if ls.ndim == 0 else ls
        self.variance = float(variance)

    @property
    def ard(self) -> bool:
        return np.ndim(self.lengthscale) == 1

    def __repr__(self) -> str:
        ls = (np.array2string(self.lengthscale, precision=4) if isinstance(self.lengthscale, np.ndarray)
              else f"{self.lengthscale:.4g}")
        return f"{type(self).__name__}(lengthscale={ls}, variance={self.variance:.4g})"

    def with_parameters(self, lengthscale: float | ArrayLike, variance: float) -> StationaryKernel:
        """The same kind of kernel with other hyperparameters."""
        return type(self)(lengthscale, variance)

    @property
    def distance_lengthscale(self) -> float | NDArray:
        """The length(s) distances are measured in before ``profile``: the lengthscale itself here."""
        return self.lengthscale

    def scale(self, A: ArrayLike) -> NDArray:
        """Inputs divided by ``distance_lengthscale``, as float64 (the kernel is isotropic in these)."""
        A = np.asarray(A, dtype=float)
        if A.ndim != 2:
            raise ValueError("kernel inputs must be 2-D arrays (points × dimensions)")
        if isinstance(self.lengthscale, np.ndarray) and A.shape[1] != self.lengthscale.size:
            raise ValueError(
                f"ARD lengthscale has {self.lengthscale.size} entries but inputs have {A.shape[1]} columns"
            )
        return A / self.distance_lengthscale

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        """σ² ρ(d²) evaluated elementwise on squared scaled distances."""
        raise NotImplementedError

    def __call__(self, A: ArrayLike, B: ArrayLike) -> NDArray:
        As = self.scale(A)
        sq = squared_distances(As, As if B is A else self.scale(B))
        return self.profile(sq, out=sq)

    def diag(self, A: ArrayLike) -> NDArray:
        return np.full(np.shape(A)[0], self.variance)

    def log_lengthscale_parts(self, sq: NDArray) -> tuple[NDArray, NDArray, float | NDArray, float | NDArray]:
        """(K, g, u, v) for squared scaled distances ``sq``: K = profile(sq) and

            ∂K_ab/∂log l_j = g_ab (u_j + v_j Δ̃_abj²),    Δ̃ = (a − b) / ``distance_lengthscale``,

        with u, v one number per dimension (ARD) or, isotropic, ∂K/∂log l = g (u + v d̃²) with u summed
        over the dimensions. A profile kernel σ² ρ(d̃²) has u = 0, v = 1 and g = −2 σ² ρ′(d̃²)."""
        raise NotImplementedError

    def log_parameter_gradients(self, X: ArrayLike) -> tuple[NDArray, NDArray]:
        """K(X, X) and its derivatives with respect to the log-parameters, dense (for checks and for
        kernels without a contraction; fitting uses :meth:`gram_and_gradient_contraction`).

        Returns ``(K, dK)``, ``dK`` of shape (p, n, n) ordered as (log l_1, …, log l_p, log σ²) with
        p = 1 for isotropic kernels. ∂K/∂log σ² = K.
        """
        Xs = self.scale(X)
        sq = squared_distances(Xs, Xs)
        K, g, u, v = self.log_lengthscale_parts(sq)
        if self.ard:
            diffs = np.moveaxis((Xs[:, None, :] - Xs[None, :, :]) ** 2, 2, 0)  # d × n × n
            d_ls = g * (np.reshape(u, (-1, 1, 1)) + np.reshape(v, (-1, 1, 1)) * diffs)
        else:
            d_ls = (g * (u + v * sq))[None]
        return K.copy(), np.concatenate([d_ls, K[None]], axis=0)

    def gram_and_gradient_contraction(self, X: ArrayLike) -> tuple[NDArray, Callable[[NDArray], NDArray]]:
        """K(X, X) and ``contract(W)`` = (Σ_ab W_ab ∂K_ab/∂θ_j)_j for a symmetric W, θ ordered as in
        :meth:`log_parameter_gradients`, without building ∂K.

        What marginal-likelihood fitting needs (R&W eq. 5.9 is ½ contract(W) with W = ααᵀ − K⁻¹). With
        the parts of :meth:`log_lengthscale_parts`, the j-th lengthscale entry is
        u_j Σ_ab (W ∘ g)_ab + v_j Σ_ab (W ∘ g)_ab Δ̃_abj², the second fused by
        :func:`weighted_squared_differences` (isotropic: Σ W ∘ g ∘ (u + v d̃²)); the signal variance's is
        Σ W ∘ K. K is returned as an array the caller may change.
        """
        Xs = self.scale(X)
        sq = squared_distances(Xs, Xs)
        K, g, u, v = self.log_lengthscale_parts(sq)

        def contract(W: NDArray) -> NDArray:
            weighted = W * g
            if self.ard:
                t_ls = v * weighted_squared_differences(Xs, weighted)
                if np.any(u):
                    t_ls += u * weighted.sum()
            else:
                t_ls = [v * np.vdot(weighted, sq) + (u * weighted.sum() if u else 0.0)]
            return np.append(t_ls, np.vdot(W, K))

        return K.copy(), contract


class SquaredExponential(StationaryKernel):
    """k(a, b) = σ² exp(−‖(a − b) / l‖² / 2)."""

    name = "se"

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        out = np.multiply(sq, -0.5, out=out)
        np.exp(out, out=out)
        out *= self.variance
        return out

    def log_lengthscale_parts(self, sq: NDArray) -> tuple[NDArray, NDArray, float, float]:
        # ∂/∂log l_j of exp(−½ Σ Δ_i²/l_i²) = exp(·) · Δ_j²/l_j²: g = K.
        K = self.profile(sq)
        return K, K, 0.0, 1.0


class Matern52(StationaryKernel):
    """k(a, b) = σ² (1 + √5 d + 5 d² / 3) exp(−√5 d), d = ‖(a − b) / l‖."""

    name = "matern52"

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        d = np.sqrt(sq)
        out = np.multiply(sq, 5.0 / 3.0, out=out)
        out += 1.0
        out += SQRT5 * d
        np.multiply(d, -SQRT5, out=d)
        np.exp(d, out=d)
        out *= d
        out *= self.variance
        return out

    def log_lengthscale_parts(self, sq: NDArray) -> tuple[NDArray, NDArray, float, float]:
        # ∂k/∂d = −σ² (5/3) d (1 + √5 d) e^{−√5 d} and ∂d/∂log l_j = −Δ_j²/(l_j² d), so the d cancels:
        # g = σ² (5/3) (1 + √5 d) e^{−√5 d}, sharing the square root and the exponential with K.
        one_plus = np.sqrt(sq)
        one_plus *= SQRT5
        decay = np.negative(one_plus)
        np.exp(decay, out=decay)
        one_plus += 1.0
        K = np.multiply(sq, 5.0 / 3.0)
        K += one_plus
        K *= decay
        K *= self.variance
        g = np.multiply(one_plus, decay, out=one_plus)
        g *= (5.0 / 3.0) * self.variance
        return K, g, 0.0, 1.0


KERNELS: dict[str, type[StationaryKernel]] = {"se": SquaredExponential, "matern52": Matern52}
