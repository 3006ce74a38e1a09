"""Stationary covariance functions: squared exponential and Matérn-5/2, isotropic or ARD.

A kernel is any object with ``k(A, B) -> (len(A), len(B)) ndarray`` and ``k.diag(A) -> (len(A),)``;
the GP engine accepts such objects. The two built-in kernels also expose what the engine uses to be
fast (``scale``, ``profile``) and what marginal-likelihood fitting needs (``log_parameter_gradients``).

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
    """A kernel whose hyperparameters marginal-likelihood fitting can adjust (:func:`shared.gp.regression.fit_hyperparameters`)."""

    lengthscale: float | NDArray
    variance: float

    @property
    def ard(self) -> bool: ...

    def with_parameters(self, lengthscale: float | ArrayLike, variance: float) -> FittableKernel: ...

    def log_parameter_gradients(self, X: ArrayLike) -> tuple[NDArray, NDArray]: ...


def squared_distances(A: NDArray, B: NDArray) -> NDArray:
    """Pairwise squared Euclidean distances ‖a‖² + ‖b‖² − 2 a·b, clipped at 0.

    Both sets are shifted by the mean of ``A`` first: distances do not change, and the cancellation
    error of the expansion (relative to ‖a‖²) shrinks to the spread of the data.
    """
    centre = A.mean(axis=0)
    A = A - centre
    B = B - centre
    sq = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
    sq -= 2.0 * (A @ B.T)
    return np.maximum(sq, 0.0, out=sq)


def weighted_squared_differences(X: NDArray, M: NDArray) -> NDArray:
    """Σ_ab M_ab (x_aj − x_bj)² for every column j of X, for a symmetric n × n weight M.

    Fused, without the n × n × d tensor of differences: expanding the square and using M = Mᵀ,
    Σ_ab M_ab (x_aj − x_bj)² = 2 Σ_a x_aj² (M1)_a − 2 x_jᵀ M x_j, one n × n × d matrix product for all j.
    X is centred first (differences do not change) so the expansion loses only the data's spread.
    """
    X = X - X.mean(axis=0)
    return 2.0 * ((X * X).T @ M.sum(axis=1)) - 2.0 * np.einsum("aj,aj->j", X, M @ X)


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
        ls = np.array2string(self.lengthscale, precision=4) if self.ard else f"{self.lengthscale:.4g}"
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
        if self.ard and A.shape[1] != self.lengthscale.size:
            raise ValueError(
                f"ARD lengthscale has {self.lengthscale.size} entries but inputs have {A.shape[1]} columns"
            )
        return A / self.distance_lengthscale

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        """σ² ρ(d²) evaluated elementwise on squared scaled distances."""
        raise NotImplementedError

    def __call__(self, A: ArrayLike, B: ArrayLike) -> NDArray:
        sq = squared_distances(self.scale(A), self.scale(B))
        return self.profile(sq, out=sq)

    def diag(self, A: ArrayLike) -> NDArray:
        return np.full(np.shape(A)[0], self.variance)

    def _profile_log_lengthscale_factor(self, sq: NDArray, K: NDArray) -> NDArray:
        """g with ∂k/∂log l_j = g · Δ_j² / l_j² (Δ = a − b); for isotropic l the factor is g · d².

        ``K`` is ``profile(sq)``, so g can reuse its exponential instead of computing another."""
        raise NotImplementedError

    def log_parameter_gradients(self, X: ArrayLike) -> tuple[NDArray, NDArray]:
        """K(X, X) and its derivatives with respect to the log-parameters.

        Returns ``(K, dK)``, ``dK`` of shape (p, n, n) ordered as (log l_1, …, log l_p, log σ²) with
        p = 1 for isotropic kernels. ∂K/∂log σ² = K.
        """
        Xs = self.scale(X)
        sq = squared_distances(Xs, Xs)
        K = self.profile(sq)
        g = self._profile_log_lengthscale_factor(sq, K)
        if self.ard:
            diffs = (Xs[:, None, :] - Xs[None, :, :]) ** 2  # n × n × d: for checks; fitting uses the contraction
            d_ls = np.moveaxis(diffs, 2, 0) * g
        else:
            d_ls = (g * sq)[None]
        return K, np.concatenate([d_ls, K[None]], axis=0)


class FusedGradient:
    """For a :class:`StationaryKernel` whose ∂K/∂log l is the profile form g · Δ²/l² of
    :meth:`StationaryKernel.log_parameter_gradients` (subclasses that override that derivative, such as
    the noisy-inputs kernel, must not take this mixin): the gradient contraction without ∂K."""

    def gram_and_gradient_contraction(self, X: ArrayLike) -> tuple[NDArray, Callable[[NDArray], NDArray]]:
        """K(X, X) and ``contract(W)`` = (Σ_ab W_ab ∂K_ab/∂θ_j)_j for a symmetric W, θ ordered as in
        :meth:`StationaryKernel.log_parameter_gradients`.

        What marginal-likelihood fitting needs (R&W eq. 5.9 is ½ contract(W) with W = ααᵀ − K⁻¹), without
        building ∂K: with x̃ = x / l, ∂K_ab/∂log l_j = g_ab (x̃_aj − x̃_bj)², so the j-th entry is
        Σ_ab (W ∘ g)_ab (x̃_aj − x̃_bj)², fused by :func:`weighted_squared_differences` (isotropic:
        Σ W ∘ g ∘ d²); the signal variance's is Σ W ∘ K. K is returned as a copy the caller may change.
        """
        Xs = self.scale(X)
        sq = squared_distances(Xs, Xs)
        K = self.profile(sq)
        g = self._profile_log_lengthscale_factor(sq, K)

        def contract(W: NDArray) -> NDArray:
            weighted = W * g
            t_ls = weighted_squared_differences(Xs, weighted) if self.ard else [np.vdot(weighted, sq)]
            return np.append(t_ls, np.vdot(W, K))

        return K.copy(), contract


class SquaredExponential(FusedGradient, StationaryKernel):
    """k(a, b) = σ² exp(−‖(a − b) / l‖² / 2)."""

    name = "se"

    def profile(self, sq: NDArray, out: NDArray | None = None) -> NDArray:
        out = np.multiply(sq, -0.5, out=out)
        np.exp(out, out=out)
        out *= self.variance
        return out

    def _profile_log_lengthscale_factor(self, sq: NDArray, K: NDArray) -> NDArray:
        # ∂/∂log l_j of exp(−½ Σ Δ_i²/l_i²) = exp(·) · Δ_j²/l_j².
        return K


class Matern52(FusedGradient, StationaryKernel):
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

    def _profile_log_lengthscale_factor(self, sq: NDArray, K: NDArray) -> NDArray:
        # ∂k/∂d = −σ² (5/3) d (1 + √5 d) e^{−√5 d} and ∂d/∂log l_j = −Δ_j²/(l_j² d), so the d cancels;
        # σ² e^{−√5 d} = K / (1 + √5 d + 5 d²/3), a denominator ≥ 1.
        root5_d = SQRT5 * np.sqrt(sq)
        return K * (5.0 / 3.0) * (1.0 + root5_d) / (1.0 + root5_d + (5.0 / 3.0) * sq)


KERNELS: dict[str, type[StationaryKernel]] = {"se": SquaredExponential, "matern52": Matern52}
