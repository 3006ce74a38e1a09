"""Exact Gaussian-process regression: a general regressor, a rank-one-updated posterior over a fixed
candidate set, and hyperparameter fitting by maximising the log marginal likelihood.

With training inputs X_t, noisy outputs y_t, prior mean m and K = K(X_t, X_t) + σ_n² I = L Lᵀ, the
posterior at x is (PO-GP-UCB paper, eq. 1, with a constant prior mean added):

    μ(x)  = m + K(x, X_t) K⁻¹ (y_t − m)
    σ²(x) = k(x, x) − K(x, X_t) K⁻¹ K(X_t, x)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotrf, dpotri, dpotrs
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController

from shared.gp.kernels import KERNELS, FittableKernel, Kernel, StationaryKernel

LOG_2PI = np.log(2.0 * np.pi)


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
    kernel column plus O(n·t) for one pass over V, never a refit. V lives in preallocated blocks of
    ``block_rows`` rows (after a carry row each) so appending never copies it; ``reserve`` allocates and
    touches the blocks for that many observations up front, so no step pays for fresh memory (the OS
    zeroes and maps a page on its first write: 0.3–1.2 GB/s on the VM we measured, against ~20 GB/s for
    a read). Repeated indices are fine when σ_n² > 0; the pivot
    is floored at ``jitter`` · k(c_i, c_i) so even σ_n² = 0 stays finite (exact only when that floor is
    not hit).

    A step is memory-bound at large n, so :meth:`observe` makes its passes over the candidates in one:
    chunk by chunk of ``chunk`` candidates (small enough to stay in cache) it computes the kernel column,
    subtracts Vᵀ l, updates μ and σ² and, when given the next β, scores μ + √β σ and keeps the argmax, so
    the next GP-UCB suggestion costs no further pass (:attr:`ucb_argmax`). Chunks are independent, so
    ``workers`` > 1 threads share them (numpy and its BLAS calls release the GIL); results do not depend
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
        block_rows: int = 19,  # with the carry row 20, a multiple of 4: no leftover column in OpenBLAS's gemv
        chunk: int = 65536,
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
        self.block_rows = block_rows
        self.chunk = chunk
        self.workers = workers
        self.prior_variance = np.asarray(kernel.diag(C), dtype=float).copy()
        self._chunks = [(lo, min(lo + chunk, len(C))) for lo in range(0, len(C), chunk)]
        if isinstance(kernel, StationaryKernel):
            # Fast path: per chunk an (r + 1) × (chunk) array, the scaled centred candidates c with −½‖c‖² as
            # the last row, so one matrix-vector product with (c_i, 1) gives c·c_i − ½‖c‖² and the exponent
            # −½ d² = that − ½‖c_i‖². Rows of the chunk are contiguous: the product streams them.
            kernel.scale(C[:1])  # validates the dimensions without an n × r temporary
            lengths = np.reshape(kernel.distance_lengthscale, (-1, 1))
            centre = C.mean(axis=0)[:, None] / lengths
            self._scaled = [np.empty((C.shape[1] + 1, hi - lo)) for lo, hi in self._chunks]
            for S, (lo, hi) in zip(self._scaled, self._chunks):
                np.divide(C[lo:hi].T, lengths, out=S[:-1])  # fresh arrays: the caller's C is never modified
                S[:-1] -= centre
                np.einsum("ij,ij->j", S[:-1], S[:-1], out=S[-1])
                S[-1] *= -0.5
        self._variance = self.prior_variance.copy()  # unclipped
        self._mean = np.full(len(C), self.prior_mean)  # m + Vᵀ w
        self._blocks: list[list[NDArray]] = []  # V: blocks of a carry row and block_rows rows, chunk by chunk
        while len(self._blocks) * block_rows < reserve:
            rows = 1 + min(block_rows, reserve - len(self._blocks) * block_rows)  # with the carry row
            self._blocks.append(self._allocate_block())
            for chunk_rows in self._blocks[-1]:
                chunk_rows[:rows].fill(0.0)  # touched now: the OS zeroes and maps a fresh page on its first write
        self.ucb_argmax: tuple[float, int] | None = None  # (β, argmax of μ + √β σ) after the last observe
        self._L = np.zeros((0, 0))
        self._w: list[float] = []
        self._indices: list[int] = []
        self._values: list[float] = []

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

    def upper_confidence_bound(self, beta: float) -> NDArray:
        """μ + √β σ over all candidates, with a single n-sized allocation."""
        return _upper_confidence_bound(self._mean, self._variance, np.sqrt(beta), np.empty(self.n_candidates))

    @property
    def cholesky_factor(self) -> NDArray:
        """L with L Lᵀ = K(X_t, X_t) + σ_n² I (pivots floored by the jitter)."""
        return self._L.copy()

    def log_marginal_likelihood(self) -> float:
        """log p(y_t) = −½ ‖w‖² − Σ log L_ii − (t/2) log 2π."""
        w = np.array(self._w)
        return _gaussian_log_likelihood(self._L, w, w) if len(w) else 0.0

    def _kernel_column(self, index: int, c: int, query: NDArray | None, out: NDArray) -> float:
        """k(C[lo:hi], c_index) for the c-th chunk [lo, hi), written into ``out`` (length hi − lo) up to the
        returned scale (k = scale · out); ``query`` is (c_i, 1, −½‖c_i‖²) on the fast path."""
        lo, hi = self._chunks[c]
        if query is not None:
            np.matmul(query[:-1], self._scaled[c], out=out)  # c·c_i − ½‖c‖², streaming the chunk once
            out += query[-1]
            np.minimum(out, 0.0, out=out)  # d² ≥ 0
            if lo <= index < hi:
                out[index - lo] = 0.0
            return self.kernel.profile_from_exponent(out, out=out)[1]
        out[:] = np.asarray(self.kernel(self.candidates[lo:hi], self.candidates[index : index + 1]), dtype=float).ravel()
        return 1.0

    def _allocate_block(self) -> list[NDArray]:
        return [np.empty((1 + self.block_rows, hi - lo)) for lo, hi in self._chunks]

    def _new_row(self) -> list[NDArray]:
        """Row t of V, chunk by chunk (each a contiguous view into its block, after the block's carry row)."""
        t = self.n_observations
        if t == len(self._blocks) * self.block_rows:
            self._blocks.append(self._allocate_block())
        return [chunk[1 + t % self.block_rows] for chunk in self._blocks[t // self.block_rows]]

    def _filled_blocks(self) -> Iterator[list[NDArray]]:
        t = self.n_observations
        for b, block in enumerate(self._blocks):
            rows = min(self.block_rows, t - b * self.block_rows)
            if rows <= 0:
                return
            yield [chunk[: 1 + rows] for chunk in block]  # with the carry row

    def observe(self, index: int, y: float, *, next_beta: float | None = None, excluded: NDArray | None = None) -> None:
        """Condition on y = f(c_index) + noise: one rank-one step, O(n·(r + t)), in one chunked pass.

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
        filled = list(self._filled_blocks())
        home, offset = divmod(index, self.chunk)
        parts = [block[home][1:, offset].copy() for block in filled]  # the new row of L, block by block
        l = np.concatenate(parts) if t else np.zeros(0)
        pivot2 = max(self._variance[index], 0.0) + self.noise_variance
        pivot = np.sqrt(max(pivot2, self.jitter * self.prior_variance[index]))
        w = (y - self.mean_at(index)) / pivot
        query = None
        if isinstance(self.kernel, StationaryKernel):
            S = self._scaled[home]
            query = np.append(S[:-1, offset], [1.0, S[-1, offset]])
        # Block b's product takes its carry row with weight 1 (block 0's: the kernel column, weight scale/d)
        # and its rows with −l_b/d, and writes the next carry row (the last block: the new row of V).
        weights = [np.append(1.0, -part / pivot) for part in parts]

        row = self._new_row()
        sqrt_beta = None if next_beta is None else np.sqrt(next_beta)
        excluded = np.zeros(0, dtype=int) if excluded is None else excluded

        def update(c: int) -> tuple[float, int]:
            """The step on chunk c, in cache: returns its best (score, index), or (−∞, −1). Only numpy calls,
            which release the GIL (scipy's BLAS wrappers hold it), so threads overlap."""
            lo, hi = self._chunks[c]
            v, scratch = row[c], np.empty(hi - lo)
            # v = (k − Vᵀ l)/d: one product per block of V, chained through the carry rows
            carries = [block[c][0] for block in filled] + [v]
            scale = self._kernel_column(index, c, query, out=carries[0])
            if filled:
                first = weights[0].copy()
                first[0] = scale / pivot
                for b, block in enumerate(filled):
                    np.matmul(first if b == 0 else weights[b], block[c], out=carries[b + 1])
            else:
                v *= scale / pivot
            mean, variance = self._mean[lo:hi], self._variance[lo:hi]
            mean += np.multiply(v, w, out=scratch)
            variance -= np.multiply(v, v, out=scratch)
            return (-np.inf, -1) if sqrt_beta is None else self._best_in_chunk(c, sqrt_beta, excluded, scratch)

        best_index = self._best_of_chunks(update)
        self.ucb_argmax = None if next_beta is None else (float(next_beta), best_index)

        L = np.zeros((t + 1, t + 1))
        L[:t, :t] = self._L
        L[t, :t] = l
        L[t, t] = pivot
        self._L = L
        self._w.append(w)
        self._indices.append(index)
        self._values.append(y)

    def best_upper_confidence_bound(self, beta: float, excluded: NDArray) -> int:
        """argmax of μ + √β σ over the candidates not in ``excluded`` (sorted indices), ties to the lowest
        index, −1 when every candidate is excluded: one chunked pass, no length-n temporary."""
        sqrt_beta = np.sqrt(beta)

        def chunk_best(c: int) -> tuple[float, int]:
            lo, hi = self._chunks[c]
            return self._best_in_chunk(c, sqrt_beta, excluded, np.empty(hi - lo))

        return self._best_of_chunks(chunk_best)

    def _best_in_chunk(self, c: int, sqrt_beta: float, excluded: NDArray, scratch: NDArray) -> tuple[float, int]:
        """The best (score, index) of μ + √β σ in chunk c outside ``excluded``, scored into ``scratch``."""
        lo, hi = self._chunks[c]
        scores = _upper_confidence_bound(self._mean[lo:hi], self._variance[lo:hi], sqrt_beta, scratch)
        scores[excluded[np.searchsorted(excluded, lo) : np.searchsorted(excluded, hi)] - lo] = -np.inf
        best = int(np.argmax(scores))
        return scores[best], lo + best

    def _best_of_chunks(self, chunk_best: Callable[[int], tuple[float, int]]) -> int:
        """Runs ``chunk_best`` on every chunk (on ``workers`` threads) and returns the best index, −1 if none."""
        best_index, best_score = -1, -np.inf
        chunks = range(len(self._chunks))
        for score, candidate in (_thread_pool(self.workers).map(chunk_best, chunks) if self.workers > 1 else map(chunk_best, chunks)):
            if score > best_score:  # strictly, in chunk order: an equal score in a later chunk loses the tie
                best_index, best_score = candidate, score
        return best_index

    @contextmanager
    def hallucinating(self) -> Iterator[CandidatePosterior]:
        """Observations made inside the block are undone on exit (used for batch suggestions)."""
        saved = (self._variance.copy(), self._mean.copy(), self._L, len(self._w), self.ucb_argmax)
        try:
            yield self
        finally:
            self._variance, self._mean, self._L, t, self.ucb_argmax = saved
            del self._w[t:], self._indices[t:], self._values[t:]  # rows past t in V are simply reused


@cache
def _blas_controller() -> ThreadpoolController:
    """Found once: scanning the loaded libraries took ~30 ms a call, more than a warm DPareto refit."""
    return ThreadpoolController()


@cache
def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """One pool per size, shared by every posterior (numpy and BLAS release the GIL on each chunk)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="candidate-posterior")


def _upper_confidence_bound(mean: NDArray, variance: NDArray, sqrt_beta: float, out: NDArray) -> NDArray:
    """μ + √β σ into ``out``, σ² clipped at 0 (one formula for the full scores and the chunked pass)."""
    np.maximum(variance, 0.0, out=out)
    np.sqrt(out, out=out)
    out *= sqrt_beta
    out += mean
    return out


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
    X = _as_inputs(X)
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
class FittedHyperparameters:
    kernel: FittableKernel
    noise_variance: float
    prior_mean: float
    log_marginal_likelihood: float


def kernel_prototype(kernel: Literal["se", "matern52"] | FittableKernel) -> FittableKernel:
    """The kernel whose kind (and fixed, non-fitted settings) a fit keeps: a name of ``KERNELS`` or an instance."""
    if isinstance(kernel, FittableKernel):
        return kernel
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)} or a kernel with fittable hyperparameters")
    return KERNELS[kernel](1.0, 1.0)


def _negative_lml_and_gradient(
    theta: NDArray, prototype: FittableKernel, ard: bool, X: NDArray, residual: NDArray
) -> tuple[float, NDArray]:
    """−log p(y | θ) and its gradient in θ = (log l…, log σ², log σ_n²).

    ∂ log p / ∂θ_j = ½ tr((α αᵀ − K⁻¹) ∂K/∂θ_j) (Rasmussen & Williams eq. 5.9).
    """
    n_ls = len(theta) - 2
    ls = np.exp(theta[:n_ls]) if ard else float(np.exp(theta[0]))
    kernel = prototype.with_parameters(ls, float(np.exp(theta[n_ls])))
    noise = float(np.exp(theta[-1]))
    if isinstance(kernel, StationaryKernel):  # no p × n × n ∂K (DPareto's ARD fits: issue 15)
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


def fit_hyperparameters(
    X: ArrayLike,
    y: ArrayLike,
    *,
    kernel: Literal["se", "matern52"] | FittableKernel = "se",
    ard: bool = False,
    bounds: HyperparameterBounds | None = None,
    n_restarts: int = 5,
    rng: np.random.Generator | int | None = None,
    prior_mean: float | Literal["sample_mean"] = "sample_mean",
    initial: tuple[FittableKernel, float] | None = None,
    warm_start_only: bool = False,
    ftol: float = 2.2e-9,
) -> FittedHyperparameters:
    """Maximise the log marginal likelihood over log lengthscale(s), log σ² and log σ_n² with L-BFGS-B.

    Starts: ``initial`` (kernel, noise variance) if given, the log-midpoint of the bounds, then
    ``n_restarts`` points drawn uniformly in log-space within the bounds (``rng``-seeded); with
    ``warm_start_only`` (and ``initial`` given) only ``initial`` — a cheap refit after a few new points;
    ``ftol`` is L-BFGS-B's relative tolerance on the objective (scipy's default unless given). The prior
    mean is held fixed: the sample mean of y, or the float given. ``kernel`` names a kernel of ``KERNELS``
    or is an instance whose kind (and other settings, e.g. a public input noise) the fit keeps.
    """
    X = _as_inputs(X)
    y = np.asarray(y, dtype=float).ravel()
    if len(y) != len(X) or len(y) < 2:
        raise ValueError("fitting hyperparameters needs X and y with the same number (≥ 2) of points")
    prototype = kernel_prototype(kernel)
    bounds = bounds or default_bounds(X, y, ard=ard)
    mean = float(np.mean(y)) if prior_mean == "sample_mean" else float(prior_mean)
    residual = y - mean

    ls_bounds = np.atleast_2d(np.asarray(bounds.lengthscale, dtype=float))
    if ard and len(ls_bounds) == 1:
        ls_bounds = np.repeat(ls_bounds, X.shape[1], axis=0)
    if (ard and len(ls_bounds) != X.shape[1]) or (not ard and len(ls_bounds) != 1):
        raise ValueError("lengthscale bounds must be one (low, high) pair, or one per dimension for ARD")
    log_bounds = np.log(np.vstack([ls_bounds, bounds.signal_variance, bounds.noise_variance]))
    if not np.all(log_bounds[:, 0] <= log_bounds[:, 1]):
        raise ValueError("every bound must satisfy 0 < low ≤ high")

    rng = np.random.default_rng(rng)
    starts = [log_bounds.mean(axis=1)]
    if initial is not None:
        init_kernel, init_noise = initial
        init_ls = np.broadcast_to(init_kernel.lengthscale, (len(ls_bounds),))
        starts.insert(0, np.clip(np.log([*init_ls, init_kernel.variance, init_noise]), *log_bounds.T))
    if warm_start_only and initial is not None:
        starts = starts[:1]
    else:
        starts += list(rng.uniform(log_bounds[:, 0], log_bounds[:, 1], size=(n_restarts, len(log_bounds))))

    best = None
    # The matrices are small (t × t): extra BLAS threads only add synchronisation, which on a busy
    # machine made fitting ~30× slower.
    with _blas_controller().limit(limits=1):
        for x0 in starts:
            result = minimize(
                _negative_lml_and_gradient,
                x0,
                args=(prototype, ard, X, residual),
                jac=True,
                method="L-BFGS-B",
                bounds=log_bounds,
                options={"ftol": ftol},
            )
            if np.isfinite(result.fun) and (best is None or result.fun < best.fun):
                best = result
    if best is None or best.fun >= 1e25:
        raise LinAlgError("marginal-likelihood fitting failed at every start; check the data and the bounds")
    theta = best.x
    n_ls = len(ls_bounds)
    ls = np.exp(theta[:n_ls]) if ard else float(np.exp(theta[0]))
    return FittedHyperparameters(
        kernel=prototype.with_parameters(ls, float(np.exp(theta[n_ls]))),
        noise_variance=float(np.exp(theta[-1])),
        prior_mean=mean,
        log_marginal_likelihood=float(-best.fun),
    )
