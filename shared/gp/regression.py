"""Exact Gaussian-process regression: a general regressor, a rank-one-updated posterior over a fixed
candidate set, and hyperparameter fitting by maximising the log marginal likelihood.

With training inputs X_t, noisy outputs y_t, prior mean m and K = K(X_t, X_t) + σ_n² I = L Lᵀ, the
posterior at x is (PO-GP-UCB paper, eq. 1, with a constant prior mean added):

    μ(x)  = m + K(x, X_t) K⁻¹ (y_t − m)
    σ²(x) = k(x, x) − K(x, X_t) K⁻¹ K(X_t, x)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotrf, dpotri, dpotrs
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController

from shared.checks import positive_int
from shared.gp.fused_step import (
    GIVEN_COLUMN,
    MATERN52,
    SQUARED_EXPONENTIAL,
    append_block,
    best_upper_confidence_bound,
    fused_step,
    new_block_list,
    stored_column,
)
from shared.gp.kernels import KERNELS, FittableKernel, Kernel, Matern52, SquaredExponential, StationaryKernel
from shared.gp.se_objective import se_negative_lml_and_gradient

if TYPE_CHECKING:
    from shared.gp.noisy_inputs import ExpectedSquaredExponential

LOG_2PI = np.log(2.0 * np.pi)
_NONE, _NO_INDICES = np.zeros(0), np.zeros(0, dtype=np.int64)  # for the compiled pass's unused arguments


def cholesky_with_jitter(K: NDArray, jitter: float = 1e-10, max_tries: int = 8) -> NDArray:
    """Lower Cholesky factor of K, adding jitter · mean(diag K) · 10^k to the diagonal only if needed."""
    try:
        return cholesky(K, lower=True, check_finite=False)
    except LinAlgError:
        pass
    scale = float(np.mean(np.diag(K))) if K.size else 1.0
    for k in range(max_tries):
        try:
            return cholesky(K + (jitter * scale * 10.0**k) * np.eye(len(K)), lower=True, check_finite=False)
        except LinAlgError:
            continue
    raise LinAlgError("covariance matrix is not positive definite even with jitter; check the inputs")


def _gaussian_log_likelihood(L: NDArray, alpha: NDArray, residual: NDArray) -> float:
    """log N(residual; 0, L Lᵀ) = −½ rᵀ α − Σ log L_ii − (t/2) log 2π, with α = (L Lᵀ)⁻¹ r."""
    return float(-0.5 * residual @ alpha - np.log(np.diag(L)).sum() - 0.5 * len(residual) * LOG_2PI)


def _as_inputs(X: ArrayLike) -> NDArray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError("inputs must be a 2-D array (points × dimensions)")
    return X


class GPRegressor:
    """Exact GP regression at arbitrary test points (eq. 1 with a constant prior mean).

    ``fit`` factorises K(X, X) + σ_n² I once (O(t³)); ``predict`` costs O(t²) per test point.
    """

    def __init__(self, kernel: Kernel, noise_variance: float, prior_mean: float = 0.0, jitter: float = 1e-10):
        if noise_variance < 0:
            raise ValueError("noise_variance must be ≥ 0")
        self.kernel = kernel
        self.noise_variance = float(noise_variance)
        self.prior_mean = float(prior_mean)
        self.jitter = jitter

    def fit(self, X: ArrayLike, y: ArrayLike) -> GPRegressor:
        X = _as_inputs(X)
        y = np.asarray(y, dtype=float).ravel()
        if len(y) != len(X) or len(y) == 0:
            raise ValueError("X and y must hold the same positive number of points")
        K = np.asarray(self.kernel(X, X), dtype=float)
        K[np.diag_indices_from(K)] += self.noise_variance
        self.X_, self.residual_ = X, y - self.prior_mean
        self.L_ = cholesky_with_jitter(K, self.jitter)
        self.alpha_ = cho_solve((self.L_, True), self.residual_, check_finite=False)
        return self

    def predict(self, Xs: ArrayLike, return_std: bool = False) -> NDArray | tuple[NDArray, NDArray]:
        Xs = _as_inputs(Xs)
        Ks = np.asarray(self.kernel(Xs, self.X_), dtype=float)
        mean = self.prior_mean + Ks @ self.alpha_
        if not return_std:
            return mean
        v = solve_triangular(self.L_, Ks.T, lower=True, check_finite=False)
        variance = np.asarray(self.kernel.diag(Xs), dtype=float) - np.einsum("ij,ij->j", v, v)
        return mean, np.sqrt(np.maximum(variance, 0.0))

    def log_marginal_likelihood(self) -> float:
        """log p(y | X) = −½ (y − m)ᵀ K⁻¹ (y − m) − ½ log|K| − (t/2) log 2π."""
        return _gaussian_log_likelihood(self.L_, self.alpha_, self.residual_)


class CandidatePosterior:
    """Exact GP posterior over a fixed n × r candidate matrix C, updated by rank-one steps.

    State after t observations at candidate indices i_1..i_t (K = K(X_t, X_t) + σ_n² I = L Lᵀ):

        V = L⁻¹ K(X_t, C)           (t × n, one row appended per observation)
        w = L⁻¹ (y_t − m)
        μ = m + Vᵀ w,   σ² = diag k(C, C) − Σ_rows V²   (clipped at 0 when read)

    A new observation at index i has l = V[:, i] (the new row of L) and pivot
    d² = k(c_i, c_i) + σ_n² − ‖l‖² = σ²(c_i) + σ_n², so the update needs no triangular solve:
    v = (K(c_i, C) − Vᵀ l) / d, w_t = (y − μ(c_i)) / d, μ += w_t v, σ² −= v². That is O(n·r) for the
    kernel column plus O(n·t) for one pass over V, never a refit. V's rows live in preallocated blocks of
    ``block_rows`` full-length rows (default: ``reserve``, else 32) so appending never copies it; ``reserve``
    allocates and touches the blocks for that many observations up front, so no step pays for fresh memory
    (the OS zeroes and maps a page on its first write: 0.3–1.2 GB/s on the VM we measured, against ~20 GB/s for a
    read). Repeated indices are fine when σ_n² > 0; the pivot is floored at ``jitter`` · k(c_i, c_i) so even σ_n² = 0
    stays finite (exact only when that floor is not hit).

    A step is memory-bound at large n, so :meth:`observe` is one compiled pass over the candidates
    (:func:`shared.gp.fused_step.fused_step`), tile by tile of ``chunk`` candidates (small enough to stay in
    cache): kernel column, Vᵀ l, μ, σ² and, when given the next β, the argmax of μ + √β σ, so the next
    GP-UCB suggestion costs no further pass (:attr:`ucb_argmax`). The SE and Matérn-5/2 columns are made in
    that pass; any other kernel's column is computed by the kernel first (one more pass). ``workers`` > 1
    threads share contiguous candidate ranges (the compiled pass releases the GIL); results do not depend
    on it.
    """

    def __init__(
        self,
        candidates: ArrayLike,
        kernel: Kernel,
        noise_variance: float,
        prior_mean: float = 0.0,
        *,
        jitter: float = 1e-10,
        block_rows: int | None = None,
        chunk: int = 4096,
        workers: int = 1,
        reserve: int = 0,
    ):
        C = _as_inputs(candidates)
        if len(C) == 0:
            raise ValueError("candidates must hold at least one row")
        if noise_variance < 0:
            raise ValueError("noise_variance must be ≥ 0")
        self.candidates = C
        self.kernel = kernel
        self.noise_variance = float(noise_variance)
        self.prior_mean = float(prior_mean)
        self.jitter = jitter
        self.block_rows = block_rows or reserve or 32  # with a known budget V is one block
        self.chunk = chunk
        self.workers = workers
        self.prior_variance = np.asarray(kernel.diag(C), dtype=float).copy()
        self._profile, self._kernel_scale, coincident_exponent, coincident_value = _compiled_profile(kernel)
        self._coincident = (coincident_exponent, coincident_value)
        self.ucb_argmax: tuple[float, int] | None = None  # (β, argmax of μ + √β σ) after the last observe
        self._L_storage = np.zeros((max(reserve, 8),) * 2)  # L grows in place (doubling): no t² copy a step
        self._w: list[float] = []
        self._indices: list[int] = []
        self._values: list[float] = []
        # a compiled profile belongs to one of the stationary kernels of _compiled_profile
        scaled = (scaled_candidates(C, cast(StationaryKernel, kernel)) if self._profile != GIVEN_COLUMN
                  else np.zeros((1, 0)))
        self._allocate(scaled, reserve)

    def _allocate(self, scaled: NDArray, reserve: int) -> None:
        """The candidate-sized state: the scaled candidates, μ, σ² and V's blocks (touched for ``reserve`` rows)."""
        n, chunk, workers = self.n_candidates, self.chunk, self.workers
        edges = [min(n, -(-n * k // workers // chunk) * chunk) for k in range(workers + 1)]  # tile-aligned
        self._ranges = [(lo, hi) for lo, hi in zip(edges, edges[1:]) if hi > lo]
        self._scaled = scaled
        self._variance = self.prior_variance.copy()  # unclipped
        self._mean = np.full(n, self.prior_mean)  # m + Vᵀ w
        # V, block_rows full rows a block: the typed list for the compiled pass, the same arrays in a Python list
        # for Python's own indexing (indexing a typed list from Python is slow)
        self._block_arrays = [np.empty((self.block_rows, n))]
        self._blocks = new_block_list(self._block_arrays[0])
        while len(self._block_arrays) * self.block_rows < reserve:
            self._add_block()
        for k in range(reserve):
            self._row(k).fill(0.0)  # touched now: the OS zeroes and maps a fresh page on its first write
        self._query = np.ones(self.candidates.shape[1] + 1)  # (c_i, 1), refilled each step

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def n_observations(self) -> int:
        return len(self._indices)

    @property
    def observed_indices(self) -> NDArray:
        return np.array(self._indices, dtype=int)

    @property
    def observed_values(self) -> NDArray:
        return np.array(self._values, dtype=float)

    @property
    def mean(self) -> NDArray:
        return self._mean.copy()

    @property
    def variance(self) -> NDArray:
        return np.maximum(self._variance, 0.0)

    @property
    def std(self) -> NDArray:
        return np.sqrt(self.variance)

    def mean_at(self, index: int) -> float:
        return float(self._mean[index])

    def variance_at(self, index: int) -> float:
        """σ² at one candidate, clipped at 0."""
        return max(float(self._variance[index]), 0.0)

    def upper_confidence_bound(self, beta: float) -> NDArray:
        """μ + √β σ over all candidates (the reference the compiled pass's scores are tested against)."""
        return self._mean + np.sqrt(beta) * self.std

    @property
    def _L(self) -> NDArray:
        t = self.n_observations
        return self._L_storage[:t, :t]

    def _add_block(self) -> None:
        self._block_arrays.append(np.empty((self.block_rows, self.n_candidates)))
        append_block(self._blocks, self._block_arrays[-1])

    @property
    def cholesky_factor(self) -> NDArray:
        """L with L Lᵀ = K(X_t, X_t) + σ_n² I (pivots floored by the jitter)."""
        return self._L.copy()

    def log_marginal_likelihood(self) -> float:
        """log p(y_t) = −½ ‖w‖² − Σ log L_ii − (t/2) log 2π."""
        w = np.array(self._w)
        return _gaussian_log_likelihood(self._L, w, w) if len(w) else 0.0

    def _row(self, k: int) -> NDArray:
        """Row k of V (a view into its block)."""
        return self._block_arrays[k // self.block_rows][k % self.block_rows]

    def observe(self, index: int, y: float, *, next_beta: float | None = None, excluded: NDArray | None = None) -> None:
        """Condition on y = f(c_index) + noise: one rank-one step, O(n·(r + t)), in one compiled pass.

        With ``next_beta`` the same pass finds the argmax of μ + √β σ over the candidates not in
        ``excluded`` (sorted indices), ties to the lowest index, and keeps (β, index) in :attr:`ucb_argmax`
        (index −1 when every candidate is excluded)."""
        index = int(index)
        if not 0 <= index < self.n_candidates:
            raise IndexError(f"candidate index {index} is outside 0..{self.n_candidates - 1}")
        y = float(y)
        if not np.isfinite(y):
            raise ValueError("observed value must be finite")
        t = self.n_observations
        l_row = self._stored_column(index)  # the new row of L
        pivot = np.sqrt(max(self.variance_at(index) + self.noise_variance, self.jitter * self.prior_variance[index]))
        w = (y - self.mean_at(index)) / pivot
        excluded = _NO_INDICES if excluded is None else np.asarray(excluded, dtype=np.int64)
        best_index = self._step(index, l_row, pivot, w, next_beta, excluded)
        self.ucb_argmax = None if next_beta is None else (float(next_beta), best_index)

        if t == len(self._L_storage):
            grown = np.zeros((2 * t, 2 * t))
            grown[:t, :t] = self._L_storage
            self._L_storage = grown
        self._L_storage[t, :t] = l_row
        self._L_storage[t, t] = pivot
        self._w.append(w)
        self._indices.append(index)
        self._values.append(y)

    def _stored_column(self, index: int) -> NDArray:
        """V[:t, index] as float64."""
        return stored_column(self._blocks, self.n_observations, index)

    def _step(self, index: int, l_row: NDArray, pivot: float, w: float, next_beta: float | None,
              excluded: NDArray) -> int:
        """V's row t, μ and σ² for an observation at ``index`` (module docstring) and, with ``next_beta``, the
        argmax of the updated μ + √β σ outside ``excluded`` (−1 without ``next_beta`` or when all are excluded)."""
        t = self.n_observations
        if t == len(self._block_arrays) * self.block_rows:
            self._add_block()
        if self._profile == GIVEN_COLUMN:
            column = np.asarray(self.kernel(self.candidates, self.candidates[index : index + 1]), dtype=float).ravel()
            query, query_offset = _NONE, 0.0
        else:
            column, query, query_offset = _NONE, self._query, self._scaled[-1, index]
            query[:-1] = self._scaled[:-1, index]
        kernel_weight = self._kernel_scale / pivot
        sqrt_beta = 0.0 if next_beta is None else math.sqrt(next_beta)
        new_row, coefficients = self._row(t), -l_row / pivot

        def step(bounds: tuple[int, int]) -> tuple[float, int]:
            return fused_step(
                *bounds, self.chunk, self._profile, self._scaled, query, query_offset, *self._coincident, column,
                index, self._blocks, coefficients, kernel_weight, w, self._mean, self._variance, new_row,
                next_beta is not None, sqrt_beta, excluded,
            )

        return self._best_of_ranges(step)

    def best_upper_confidence_bound(self, beta: float, excluded: NDArray) -> int:
        """argmax of μ + √β σ over the candidates not in ``excluded`` (sorted indices), ties to the lowest
        index, −1 when every candidate is excluded: one compiled pass, no length-n temporary."""
        sqrt_beta, excluded = float(np.sqrt(beta)), np.asarray(excluded, dtype=np.int64)
        return self._best_of_ranges(
            lambda bounds: best_upper_confidence_bound(*bounds, self.chunk, self._mean, self._variance, sqrt_beta,
                                                       excluded)
        )

    def _best_of_ranges(self, range_best: Callable[[tuple[int, int]], tuple[float, int]]) -> int:
        """Runs ``range_best`` on every candidate range (one per worker thread) and returns the best index, −1 if
        none."""
        best_index, best_score = -1, -np.inf
        if len(self._ranges) == 1:
            return range_best(self._ranges[0])[1]
        for score, candidate in _thread_pool(self.workers).map(range_best, self._ranges):
            if score > best_score:  # strictly, in range order: an equal score in a later range loses the tie
                best_index, best_score = candidate, score
        return best_index

    @contextmanager
    def hallucinating(self) -> Iterator[CandidatePosterior]:
        """Observations made inside the block are undone on exit (used for batch suggestions)."""
        saved = (_copy(self._variance), _copy(self._mean), len(self._w), self.ucb_argmax)
        try:
            yield self
        finally:
            self._variance, self._mean, t, self.ucb_argmax = saved  # L's rows past t are simply reused
            del self._w[t:], self._indices[t:], self._values[t:]  # rows past t in V are simply reused


def _copy(array: Any) -> Any:
    """A copy of a numpy array or a torch tensor (the device engine's μ and σ²)."""
    return array.clone() if hasattr(array, "clone") else array.copy()


def scaled_candidates(C: NDArray, kernel: StationaryKernel) -> NDArray:
    """(r + 1) × n: the candidates centred and divided by the kernel's distance lengthscale(s), with −½‖c‖² as
    the last row, so (c_i, 1) · that + (−½‖c_i‖²) is the exponent −½ d² between c_i and every candidate. Rows
    are contiguous: a step streams each one."""
    kernel.scale(C[:1])  # validates the dimensions without an n × r temporary
    lengths = np.reshape(kernel.distance_lengthscale, (-1, 1))
    scaled = np.empty((C.shape[1] + 1, len(C)))
    np.divide(C.T, lengths, out=scaled[:-1])  # a fresh array: the caller's C is never modified
    scaled[:-1] -= C.mean(axis=0)[:, None] / lengths
    np.einsum("ij,ij->j", scaled[:-1], scaled[:-1], out=scaled[-1])
    scaled[-1] *= -0.5
    return scaled


def _compiled_profile(kernel: Kernel) -> tuple[int, float, float, float]:
    """(profile, scale, coincident exponent, coincident value) for :func:`fused_step`: the kernel column is
    scale · ρ. Exactly these types (a subclass may change the profile); any other kernel's column is given."""
    if type(kernel) is SquaredExponential:
        return SQUARED_EXPONENTIAL, kernel.variance, 1.0, 0.0
    if type(kernel) is Matern52:
        return MATERN52, kernel.variance, 1.0, 0.0
    # An instance implies its module is loaded: not imported here (its scipy.stats costs 0.6 s an import).
    noisy_inputs = sys.modules.get("shared.gp.noisy_inputs")
    if noisy_inputs is not None and type(kernel) is noisy_inputs.ExpectedSquaredExponential:
        expected = cast("ExpectedSquaredExponential", kernel)
        # σ² a e^e off a row's own position, σ² on it (d² ≤ SAME_ROW)
        return (SQUARED_EXPONENTIAL, expected.variance * expected.attenuation, -0.5 * noisy_inputs.SAME_ROW,
                1.0 / expected.attenuation)
    return GIVEN_COLUMN, 1.0, 1.0, 0.0


@cache
def _blas_controller() -> ThreadpoolController:
    """Found once: scanning the loaded libraries at every call cost more than a warm DPareto refit (docs/dpareto.md,
    "No library scan per fit")."""
    return ThreadpoolController()


@cache
def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """One pool per size, shared by every posterior (the compiled pass releases the GIL)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="candidate-posterior")


# ----------------------------------------------------------------------------------------------------
# Marginal-likelihood fitting


@dataclass(frozen=True)
class HyperparameterBounds:
    """Box bounds (low, high) for L-BFGS-B; ``lengthscale`` is one pair, or one pair per dimension (ARD)."""

    lengthscale: tuple[float, float] | Sequence[tuple[float, float]]
    signal_variance: tuple[float, float]
    noise_variance: tuple[float, float]


def default_bounds(X: ArrayLike, y: ArrayLike, *, ard: bool = False) -> HyperparameterBounds:
    """Data-driven bounds: lengthscales in [0.01, 10] × the extent of X (per dimension for ARD, the
    bounding-box diagonal otherwise); σ² in [0.01, 100] × var(y); σ_n² in [1e-8, 1] × var(y)."""
    X, y = _as_inputs(X), np.asarray(y, dtype=float)
    extent = np.ptp(X, axis=0)
    diagonal = float(np.linalg.norm(extent)) or 1.0
    vy = float(np.var(y)) if len(np.atleast_1d(y)) > 1 and np.var(y) > 0 else 1.0
    if ard:
        per_dim = np.where(extent > 0, extent, diagonal)
        lengthscale: tuple | list = [(1e-2 * e, 1e1 * e) for e in per_dim]
    else:
        lengthscale = (1e-2 * diagonal, 1e1 * diagonal)
    return HyperparameterBounds(lengthscale, (1e-2 * vy, 1e2 * vy), (1e-8 * vy, vy))


@dataclass(frozen=True)
class LogNormal:
    """x ~ LogNormal(loc, scale), i.e. log x ~ Normal(loc, scale²)."""

    loc: float
    scale: float

    @property
    def log_mode(self) -> float:
        """log of the mode of x's density, loc − scale²."""
        return self.loc - self.scale**2

    def log_density(self, log_x: NDArray) -> tuple[float, NDArray]:
        """Σ log p_x(x_i) = −Σ (log x_i − (loc − scale²))² / (2 scale²) + const and its gradient in log x: the
        density of x itself (log p_x(x) = log p(log x) − log x), which is what BoTorch's ``fit_gpytorch_mll``
        maximises (its constraints use ``transform=None``, so the prior is evaluated on the parameter's value).
        Its maximum sits at the mode exp(loc − scale²), e⁻³ ≈ 1/20 of the median for the lengthscale prior below:
        about half a box width in d = 6, where the median (≈ 10 widths) switches dimensions off on 25 answers
        (docs/modeler_quality.md has the measurement)."""
        z = (log_x - self.log_mode) / self.scale
        return float(-0.5 * np.sum(z * z)), -z / self.scale


@dataclass(frozen=True)
class HyperparameterPrior:
    """Priors for a maximum-a-posteriori fit on standardised outcomes (ỹ = (y − ȳ) / s_y, so the signal
    variance is 1) and inputs in units of the box (each lengthscale divided by its dimension's width, the
    isotropic one by the root-mean-square width): one per lengthscale, one on the noise variance, and box
    constraints in those units for L-BFGS-B."""

    lengthscale: LogNormal
    noise_variance: LogNormal
    lengthscale_bounds: tuple[float, float] = (2.5e-2, 1e3)
    noise_variance_bounds: tuple[float, float] = (1e-6, 10.0)

    @classmethod
    def dim_scaled(cls, dim: int) -> HyperparameterPrior:
        """The priors BoTorch's ``SingleTaskGP`` uses by default (Hvarfner, Hellsten & Nardi 2024, "Vanilla
        Bayesian optimization performs great in high dimensions"; ``botorch.models.utils.gpytorch_modules``:
        ``get_covar_module_with_dim_scaled_prior`` and ``get_gaussian_likelihood_with_lognormal_prior``):

            l_j ~ LogNormal(√2 + ½ log d, √3)   (inputs in the unit cube; the median lengthscale grows as √d)
            σ_n² ~ LogNormal(−4, 1)              (outcomes standardised)

        with BoTorch's lengthscale floor 0.025 and BoTorch's objective (:meth:`LogNormal.log_density`). Its noise
        floor (1e-4) is lowered to 1e-6: it exists for float32 and iterative solvers; exact
        float64 factorisations are stable there, and a deterministic objective's noise then stays off the floor
        unless the data insist."""
        positive_int(dim, "dim (the number of input dimensions)")
        return cls(LogNormal(math.sqrt(2.0) + 0.5 * math.log(dim), math.sqrt(3.0)), LogNormal(-4.0, 1.0))

    def peaking_at_medians(self) -> HyperparameterPrior:
        """The same priors shifted so that the MAP objective peaks at these priors' medians, not their modes (each
        loc raised by scale²): a fit that prefers long lengthscales, so a coordinate the answers do not need is
        switched off (what relevance determination wants; BoTorch's mode finds better rows to query)."""
        def shifted(p: LogNormal) -> LogNormal:
            return LogNormal(p.loc + p.scale**2, p.scale)

        return replace(self, lengthscale=shifted(self.lengthscale), noise_variance=shifted(self.noise_variance))


@dataclass(frozen=True)
class FittedHyperparameters:
    kernel: FittableKernel
    noise_variance: float
    prior_mean: float
    log_marginal_likelihood: float
    at_bound: tuple[str, ...] = ()  # the fitted parameters that ended at a bound of the search box


def kernel_prototype(kernel: Literal["se", "matern52"] | FittableKernel) -> FittableKernel:
    """The kernel whose kind (and fixed, non-fitted settings) a fit keeps: a name of ``KERNELS`` or an instance."""
    if isinstance(kernel, FittableKernel):
        return kernel
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)} or a kernel with fittable hyperparameters")
    return KERNELS[kernel](1.0, 1.0)


COMPILED_OBJECTIVE_MAX_T = 80
"""Up to this many points the compiled SE objective's plain O(t³) loops beat the numpy path's LAPACK calls (measured:
docs/gp_engine.md, "Hyperparameters")."""


def _negative_lml_and_gradient(
    theta: NDArray, prototype: FittableKernel, ard: bool, X: NDArray, residual: NDArray
) -> tuple[float, NDArray]:
    """−log p(y | θ) and its gradient in θ = (log l…, log σ², log σ_n²).

    ∂ log p / ∂θ_j = ½ tr((α αᵀ − K⁻¹) ∂K/∂θ_j) (Rasmussen & Williams eq. 5.9). The SE kernel on up to
    ``COMPILED_OBJECTIVE_MAX_T`` points takes the compiled :func:`shared.gp.se_objective.se_negative_lml_and_gradient`.
    """
    if type(prototype) is SquaredExponential and len(X) <= COMPILED_OBJECTIVE_MAX_T:
        return se_negative_lml_and_gradient(theta, ard, X, residual)
    n_ls = len(theta) - 2
    ls = np.exp(theta[:n_ls]) if ard else float(np.exp(theta[0]))
    kernel = prototype.with_parameters(ls, float(np.exp(theta[n_ls])))
    noise = float(np.exp(theta[-1]))
    if isinstance(kernel, StationaryKernel):  # no p × n × n ∂K (DPareto's ARD fits)
        K, contract = kernel.gram_and_gradient_contraction(X)
    else:
        K, dK = kernel.log_parameter_gradients(X)
        contract = lambda W: dK.reshape(len(dK), -1) @ W.ravel()  # noqa: E731
    K[np.diag_indices_from(K)] += noise
    # LAPACK directly: these t × t problems are small enough that scipy's wrappers dominated fitting time
    L, info = dpotrf(K, lower=1, clean=1, overwrite_a=1)  # K is this call's own
    if info != 0:
        return 1e25, np.zeros_like(theta)
    alpha, _ = dpotrs(L, residual, lower=1)
    log_likelihood = _gaussian_log_likelihood(L, alpha, residual)
    K_inv, _ = dpotri(L, lower=1, overwrite_c=1)  # L is not needed after this
    K_inv += np.tril(K_inv, -1).T
    W = np.outer(alpha, alpha)
    W -= K_inv
    grad = 0.5 * contract(W)
    grad_noise = 0.5 * noise * np.trace(W)
    return -log_likelihood, -np.append(grad, grad_noise)


def _log_starts(
    log_bounds: NDArray, first: NDArray, initial: NDArray | None, warm_start_only: bool, draws: Callable[[], NDArray]
) -> list[NDArray]:
    """L-BFGS-B's starts in log-parameters: ``initial`` (a warm start) if given, then ``first``, then ``draws()``
    (one row a start); with ``warm_start_only`` (and ``initial``) only ``initial``. All clipped to the box."""
    if initial is not None and warm_start_only:
        return [np.clip(initial, *log_bounds.T)]
    starts = ([initial] if initial is not None else []) + [first, *draws()]
    return [np.clip(x0, *log_bounds.T) for x0 in starts]


def _minimise(objective: Callable, starts: list[NDArray], log_bounds: NDArray, args: tuple,
              ftol: float) -> Any:  # scipy's OptimizeResult (scipy ships no types)
    """The best L-BFGS-B result over ``starts`` (scipy's ``minimize`` with the analytic gradient)."""
    best = None
    # The matrices are small (t × t): extra BLAS threads only add synchronisation, which on a busy
    # machine made fitting ~30× slower.
    with _blas_controller().limit(limits=1):
        for x0 in starts:
            result = minimize(objective, x0, args=args, jac=True, method="L-BFGS-B", bounds=log_bounds,
                              options={"ftol": ftol})
            if np.isfinite(result.fun) and (best is None or result.fun < best.fun):
                best = result
    if best is None or best.fun >= 1e25:
        raise LinAlgError("marginal-likelihood fitting failed at every start; check the data and the bounds")
    return best


def _at_bound(theta: NDArray, log_bounds: NDArray, names: Sequence[str]) -> tuple[str, ...]:
    """The names whose log-parameter ended within 10⁻³ (0.1 %) of its box (a degenerate box is no bound)."""
    low, high = log_bounds.T
    hit = (high > low) & ((theta - low < 1e-3) | (high - theta < 1e-3))
    return tuple(dict.fromkeys(name for name, h in zip(names, hit) if h))


def fit_hyperparameters(
    X: ArrayLike,
    y: ArrayLike,
    *,
    kernel: Literal["se", "matern52"] | FittableKernel = "se",
    ard: bool = False,
    bounds: HyperparameterBounds | None = None,
    n_restarts: int = 5,
    rng: np.random.Generator | int | None = None,
    prior_mean: float | Literal["sample_mean", "fitted"] = "sample_mean",
    initial: tuple[FittableKernel, float] | None = None,
    warm_start_only: bool = False,
    ftol: float = 2.2e-9,
    prior: HyperparameterPrior | None = None,
    input_scale: float | ArrayLike | None = None,
    noise_variance_floor: float = 0.0,
) -> FittedHyperparameters:
    """Fit the kernel's lengthscale(s) and σ_n² (and, without a prior, σ²) with L-BFGS-B from several starts.

    Without ``prior``: maximum marginal likelihood over log l…, log σ², log σ_n² inside ``bounds`` (default
    :func:`default_bounds`); starts: ``initial`` if given, the log-midpoint of the bounds, then ``n_restarts``
    points uniform in log-space.

    With ``prior`` (a :class:`HyperparameterPrior`): maximum a posteriori, as BoTorch's ``SingleTaskGP`` with
    ``fit_gpytorch_mll``. The outcomes are standardised, ỹ = (y − m) / s_y (m the prior mean, s_y the sample
    standard deviation), so the signal variance is 1 and only the lengthscales l̃ (in units of
    ``input_scale``: one width per dimension, default the extent of X; isotropic kernels use the
    root-mean-square width) and the noise σ̃_n² are fitted, maximising

        log p(ỹ | X, l̃, σ̃_n²) + Σ_j log p_prior(l̃_j) + log p_prior(σ̃_n²)

    inside ``prior``'s bounds (in the same units), each prior the density of the parameter itself
    (:meth:`LogNormal.log_density`). Starts: ``initial`` if given, the priors' modes (where BoTorch starts), then
    ``n_restarts`` draws from the priors. The result is in the data's units: l = l̃ · width, σ² = s_y²,
    σ_n² = σ̃_n² s_y².

    Either way ``warm_start_only`` (with ``initial``) starts from ``initial`` only (a cheap refit after a few
    new points); ``ftol`` is L-BFGS-B's relative tolerance; ``noise_variance_floor`` is a floor on σ_n² in
    the data's units (private measurements' σ_y²); the prior mean is held at the sample mean of y or the
    float given, or with ``"fitted"`` (with a prior only) fitted with the rest as BoTorch's ``ConstantMean`` is: for
    each θ the constant that maximises the likelihood, m̂(θ) = 1ᵀK⁻¹y / 1ᵀK⁻¹1 (profiled out, so the gradient in θ
    is the one at fixed m̂, by the envelope theorem). ``kernel`` names a kernel of ``KERNELS`` or is an instance
    whose kind (and other settings, e.g. a public input noise) the fit keeps.
    """
    X = _as_inputs(X)
    y = np.asarray(y, dtype=float).ravel()
    if len(y) != len(X) or len(y) < 2:
        raise ValueError("fitting hyperparameters needs X and y with the same number (≥ 2) of points")
    prototype = kernel_prototype(kernel)
    mean = float(np.mean(y)) if prior_mean in ("sample_mean", "fitted") else float(prior_mean)
    rng = np.random.default_rng(rng)
    if prior is not None:
        return _fit_map(X, y - mean, mean, prototype, ard, prior, input_scale, noise_variance_floor, n_restarts, rng,
                        initial, warm_start_only, ftol, fit_mean=prior_mean == "fitted")
    if prior_mean == "fitted":
        raise ValueError('prior_mean="fitted" needs a prior (the maximum-a-posteriori fit)')
    residual = y - mean
    bounds = bounds or default_bounds(X, y, ard=ard)

    ls_bounds = np.atleast_2d(np.asarray(bounds.lengthscale, dtype=float))
    if ard and len(ls_bounds) == 1:
        ls_bounds = np.repeat(ls_bounds, X.shape[1], axis=0)
    if (ard and len(ls_bounds) != X.shape[1]) or (not ard and len(ls_bounds) != 1):
        raise ValueError("lengthscale bounds must be one (low, high) pair, or one per dimension for ARD")
    noise_bounds = tuple(max(v, noise_variance_floor) for v in bounds.noise_variance)
    log_bounds = np.log(np.vstack([ls_bounds, bounds.signal_variance, noise_bounds]))
    if not np.all(log_bounds[:, 0] <= log_bounds[:, 1]):
        raise ValueError("every bound must satisfy 0 < low ≤ high")

    warm = None
    if initial is not None:
        init_kernel, init_noise = initial
        warm = np.log([*np.broadcast_to(init_kernel.lengthscale, (len(ls_bounds),)), init_kernel.variance, init_noise])
    starts = _log_starts(log_bounds, log_bounds.mean(axis=1), warm, warm_start_only,
                         lambda: rng.uniform(log_bounds[:, 0], log_bounds[:, 1], size=(n_restarts, len(log_bounds))))
    best = _minimise(_negative_lml_and_gradient, starts, log_bounds, (prototype, ard, X, residual), ftol)
    theta = best.x
    n_ls = len(ls_bounds)
    ls = np.exp(theta[:n_ls]) if ard else float(np.exp(theta[0]))
    return FittedHyperparameters(
        kernel=prototype.with_parameters(ls, float(np.exp(theta[n_ls]))),
        noise_variance=max(float(np.exp(theta[-1])), noise_variance_floor),
        prior_mean=mean,
        log_marginal_likelihood=float(-best.fun),
        at_bound=_at_bound(theta, log_bounds, ["lengthscale"] * n_ls + ["signal_variance", "noise_variance"]),
    )


def _likeliest_constant(theta: NDArray, prototype: FittableKernel, ard: bool, X: NDArray, residual: NDArray) -> float:
    """m̂ = 1ᵀK⁻¹r / 1ᵀK⁻¹1: the constant prior mean (added to the one ``residual`` is taken from) of largest
    likelihood under θ = (log l…, log σ², log σ_n²); 0 where K is not positive definite."""
    n_ls = len(theta) - 2
    kernel = prototype.with_parameters(np.exp(theta[:n_ls]) if ard else float(np.exp(theta[0])),
                                       float(np.exp(theta[n_ls])))
    K = kernel(X, X)
    K[np.diag_indices_from(K)] += float(np.exp(theta[-1]))
    L, info = dpotrf(K, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        return 0.0
    solved, _ = dpotrs(L, np.column_stack([np.ones(len(residual)), residual]), lower=1)
    return float(solved[:, 1].sum() / solved[:, 0].sum())


def _negative_log_posterior(
    phi: NDArray, prototype: FittableKernel, ard: bool, X: NDArray, residual: NDArray, log_width: float | NDArray,
    prior: HyperparameterPrior, fit_mean: bool = False,
) -> tuple[float, NDArray]:
    """−(log p(ỹ | θ) + log prior) and its gradient in φ = (log l̃…, log σ̃_n²), with log l = log l̃ + log width
    and σ² = 1 (so ∂/∂log l̃ = ∂/∂log l, and the σ² component of the likelihood's gradient is dropped); with
    ``fit_mean`` the residual is taken from the likeliest constant under θ (:func:`_likeliest_constant`)."""
    n_ls = len(phi) - 1
    theta = np.concatenate([phi[:n_ls] + log_width, [0.0], phi[n_ls:]])
    if fit_mean:
        residual = residual - _likeliest_constant(theta, prototype, ard, X, residual)
    value, grad = _negative_lml_and_gradient(theta, prototype, ard, X, residual)
    if value >= 1e25:
        return value, np.zeros_like(phi)
    log_ls, d_ls = prior.lengthscale.log_density(phi[:n_ls])
    log_noise, d_noise = prior.noise_variance.log_density(phi[n_ls:])
    return value - log_ls - log_noise, np.append(grad[:n_ls] - d_ls, grad[-1] - d_noise)


def _fit_map(
    X: NDArray, residual: NDArray, mean: float, prototype: FittableKernel, ard: bool, prior: HyperparameterPrior,
    input_scale: float | ArrayLike | None, noise_variance_floor: float, n_restarts: int, rng: np.random.Generator,
    initial: tuple[FittableKernel, float] | None, warm_start_only: bool, ftol: float, fit_mean: bool = False,
) -> FittedHyperparameters:
    """:func:`fit_hyperparameters` with a prior (its docstring has the model)."""
    t, d = X.shape
    scale_y = float(np.std(residual, ddof=1)) or 1.0
    widths = np.broadcast_to(np.asarray(np.ptp(X, axis=0) if input_scale is None else input_scale, dtype=float), (d,))
    fallback = float(np.sqrt(np.mean(widths**2))) or 1.0  # a dimension without extent gets the typical width
    widths = np.where(widths > 0, widths, fallback)
    log_width = np.log(widths) if ard else 0.5 * float(np.log(np.mean(widths**2)))
    n_ls = d if ard else 1
    noise_low = max(prior.noise_variance_bounds[0], noise_variance_floor / scale_y**2)
    noise_bounds = (noise_low, max(prior.noise_variance_bounds[1], noise_low))
    log_bounds = np.log(np.array([prior.lengthscale_bounds] * n_ls + [noise_bounds], dtype=float))
    mode = np.array([prior.lengthscale.log_mode] * n_ls + [prior.noise_variance.log_mode])
    loc = np.array([prior.lengthscale.loc] * n_ls + [prior.noise_variance.loc])
    spread = np.array([prior.lengthscale.scale] * n_ls + [prior.noise_variance.scale])

    warm = None
    if initial is not None:
        init_kernel, init_noise = initial
        init_ls = np.broadcast_to(init_kernel.lengthscale, (n_ls,))
        warm = np.append(np.log(init_ls) - log_width, np.log(init_noise / scale_y**2))
    starts = _log_starts(log_bounds, mode, warm, warm_start_only,
                         lambda: rng.normal(loc, spread, size=(n_restarts, len(loc))))
    residual = residual / scale_y
    args = (prototype, ard, X, residual, log_width, prior, fit_mean)
    best = _minimise(_negative_log_posterior, starts, log_bounds, args, ftol)
    phi = best.x
    log_ls = phi[:n_ls] + log_width
    ls = np.exp(log_ls) if ard else float(np.exp(log_ls[0]))
    theta = np.concatenate([log_ls, [0.0], phi[n_ls:]])
    constant = _likeliest_constant(theta, prototype, ard, X, residual) if fit_mean else 0.0
    nlml, _ = _negative_lml_and_gradient(theta, prototype, ard, X, residual - constant)
    return FittedHyperparameters(
        kernel=prototype.with_parameters(ls, scale_y**2),
        # exp(log(floor)) may round below
        noise_variance=max(float(np.exp(phi[-1])) * scale_y**2, noise_variance_floor),
        prior_mean=mean + constant * scale_y,
        log_marginal_likelihood=float(-nlml) - t * math.log(scale_y),
        at_bound=_at_bound(phi, log_bounds, ["lengthscale"] * n_ls + ["noise_variance"]),
    )
