"""GP-UCB over a discrete candidate set (Srinivas et al. 2010; the modeler part of PO-GP-UCB,
Kharkovskii, Dai & Low 2020, Algorithm 2).

In iteration t (after t − 1 observations) the suggestion is

    argmax_i  μ_{t}(c_i) + √β_t σ_{t}(c_i),      β_t = 2 log(n t² π² / (6 δ))   (natural log),

ties going to the lowest index. Non-private GP-UCB is the same engine run on the original inputs;
PO-GP-UCB runs it on the released Z. :class:`GPUCB` can instead pick by log expected improvement
(:func:`log_expected_improvement`), an option outside the paper's algorithm.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import erfcx, log_ndtr

from shared.checks import open_unit, positive_int
from shared.gp.kernels import FittableKernel, Kernel, SquaredExponential
from shared.gp.regression import (
    CandidatePosterior,
    FittedHyperparameters,
    HyperparameterBounds,
    HyperparameterPrior,
    default_bounds,
    fit_hyperparameters,
    kernel_prototype,
)


def engine_device(device: str | None) -> str | None:
    """The torch device of the candidate posterior, or None for the Numba engine (``device`` as in :class:`GPUCB`)."""
    if device is None:
        return None
    try:
        from shared.gp.torch_posterior import resolve_device
    except ImportError:
        if device == "auto":
            return None
        raise ImportError(f"device={device!r} needs torch: pip install 'pobo[gpu]'") from None
    return resolve_device(device)


def describe_engine(device: str | None, workers: int = 1, precision: str = "float64") -> str:
    """The engine :func:`engine_device`'s answer selects, in words."""
    if device is None:
        return f"CPU (Numba, {workers} thread{'s' if workers > 1 else ''})"
    from shared.gp.torch_posterior import describe_device

    return f"{describe_device(device)}, {precision}"


def gp_ucb_beta(t: int, n: int, delta: float) -> float:
    """β_t = 2 log(n t² π² / (6 δ)) (Algorithm 2, line 3)."""
    positive_int(t, "t (the iteration)"), positive_int(n, "n (the number of candidates)"), open_unit(delta, "delta")
    return 2.0 * np.log(n * t**2 * np.pi**2 / (6.0 * delta))


_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_HALF_LOG_PI_OVER_2 = 0.5 * np.log(np.pi / 2.0)
_VARIANCE_FLOOR = 1e-12  # BoTorch's analytic acquisitions clamp σ² there (min_var)


def log_h(z: NDArray) -> NDArray:
    """log h(z), h(z) = φ(z) + z Φ(z), evaluated stably for every z (Ament et al. 2023, "Unexpected improvements to
    expected improvement for Bayesian optimization", eq. 9): directly for z > −1; below, with
    Φ(z)/φ(z) = √(π/2) erfcx(−z/√2),

        log h(z) = log φ(z) + log(1 − √(π/2) |z| erfcx(−z/√2)),

    the second log by log1mexp; below −1/√ε (ε the float64 epsilon) erfcx's asymptote gives
    log h(z) = log φ(z) − 2 log |z|, where the bracket would round to 0."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    upper = z > -1.0
    zu = z[upper]
    out[upper] = np.log(np.exp(-0.5 * zu * zu - _LOG_SQRT_2PI) + zu * np.exp(log_ndtr(zu)))
    tail = ~upper
    zt = z[tail]
    log_phi = -0.5 * zt * zt - _LOG_SQRT_2PI
    asymptotic = zt < -1.0 / np.sqrt(np.finfo(float).eps)
    middle = np.where(asymptotic, -2.0, zt)  # any z of the middle branch, so no warning where it is unused
    x = np.log(erfcx(-middle / np.sqrt(2.0)) * np.abs(middle)) + _HALF_LOG_PI_OVER_2  # < 0
    log1mexp = np.where(x > -np.log(2.0), np.log(-np.expm1(np.minimum(x, -1e-300))), np.log1p(-np.exp(x)))
    out[tail] = log_phi + np.where(asymptotic, -2.0 * np.log(np.abs(zt)), log1mexp)
    return out


def log_expected_improvement(mean: NDArray, std: NDArray, best: float) -> NDArray:
    """log E[max(f − best, 0)] = log h((μ − best)/σ) + log σ under f ~ N(μ, σ²) (Ament et al. 2023, LogEI), with σ²
    floored at 1e-12 as BoTorch's ``LogExpectedImprovement`` does."""
    sigma = np.sqrt(np.maximum(np.square(np.asarray(std, dtype=float)), _VARIANCE_FLOOR))
    return log_h((np.asarray(mean, dtype=float) - best) / sigma) + np.log(sigma)


ACQUISITIONS = ("paper-ucb", "logei")
NOTHING_LEFT = "every candidate has been queried (requery=False) or excluded: nothing is left to suggest"

ARD_MAX_DIM = 16
"""With a prior, one lengthscale per input dimension up to this many dimensions (BoTorch always uses ARD; beyond
this the t × t gradient contractions cost r passes each and few runs have the answers to fit them)."""


class GPUCB:
    """Ask/tell GP-UCB over the rows of ``candidates`` (n × r).

    The kernel is ``kernel`` if given, else ``SquaredExponential(lengthscale, signal_variance)``.
    Options:

    * ``n_init``: the first ``n_init`` suggestions are distinct candidates drawn uniformly with ``rng``
      (they still count as iterations for β_t).
    * ``refit_every``: after every ``refit_every``-th observation, refit the kernel (``refit_kernel``,
      ``ard``) and σ_n² on the observations so far (and the prior mean: fitted as BoTorch fits its constant mean
      under a prior, else the sample mean), then rebuild the candidate posterior once by replaying the
      observations. ``prior="dim-scaled"`` (the default): the maximum-a-posteriori fit of
      :func:`shared.gp.regression.fit_hyperparameters` with BoTorch's priors
      (:meth:`HyperparameterPrior.dim_scaled`), lengthscales in units of ``input_scale`` (the widths of the
      public input box; default the candidates' extent per dimension) and, with ``ard=None`` (the default),
      one lengthscale per dimension when r ≤ ``ARD_MAX_DIM``. ``prior=None``: maximum marginal likelihood
      inside ``bounds`` (default: data-driven from the candidates and the observed values), one lengthscale
      unless ``ard``. ``refit_kernel`` is a kernel name or an instance whose kind and fixed settings the fit
      keeps (e.g. :class:`shared.gp.noisy_inputs.ExpectedSquaredExponential` with the release's public
      noise). ``last_fit`` holds the newest fit.
    * ``requery=False``: never suggest a candidate already observed (or pending in a batch). Right when a
      row's answer cannot change (memoised private measurements, a deterministic evaluator) or the kernel
      gives each row its own nugget; Algorithm 2 itself allows repeats (the default).
    * ``noise_variance_floor``: σ_n² never goes below it, in the start value or a refit (private
      measurements' public σ_y²).
    * ``acquisition``: ``"paper-ucb"`` (Algorithm 2's μ + √β_t σ, the default: the paper's algorithm) or
      ``"logei"``: the candidate of largest :func:`log_expected_improvement` over the best value observed so far
      (BoTorch's default acquisition and the modeler's, outside the paper's algorithm and its regret bound); the
      first ``n_init`` picks are random either way, and
      with nothing observed yet (nothing to improve on) the pick is GP-UCB's.
    * ``workers``: threads sharing each posterior update's candidates (large n); the picks do not depend on it.
    * ``reserve``: observations to allocate the posterior's factor for up front (with a known budget at
      large n: no step then pays for fresh memory; see :class:`CandidatePosterior`).
    * ``device``: None (the Numba engine on this CPU), ``"cuda"`` (``"cuda:1"``, …) or ``"cpu"`` for the torch
      engine (:class:`shared.gp.torch_posterior.TorchCandidatePosterior`, the ``pobo[gpu]`` extra: the same
      picks in float64), or ``"auto"``: a GPU torch can see, else the Numba engine. ``precision="float32"``
      (torch engine only) halves its memory and changes the picks. :attr:`engine` says which one runs.
    """

    def __init__(
        self,
        candidates: ArrayLike,
        *,
        lengthscale: float | ArrayLike | None = None,
        signal_variance: float | None = None,
        noise_variance: float,
        delta: float,
        kernel: Kernel | None = None,
        prior_mean: float = 0.0,
        n_init: int = 0,
        rng: np.random.Generator | int | None = None,
        refit_every: int | None = None,
        refit_kernel: Literal["se", "matern52"] | FittableKernel = "se",
        ard: bool | None = None,
        n_restarts: int = 3,
        bounds: HyperparameterBounds | None = None,
        prior: Literal["dim-scaled"] | HyperparameterPrior | None = "dim-scaled",
        input_scale: float | ArrayLike | None = None,
        jitter: float = 1e-10,
        requery: bool = True,
        noise_variance_floor: float = 0.0,
        workers: int = 1,
        reserve: int = 0,
        device: str | None = None,
        precision: Literal["float64", "float32"] = "float64",
        acquisition: Literal["paper-ucb", "logei"] = "paper-ucb",
    ):
        if kernel is None:
            if lengthscale is None or signal_variance is None:
                raise ValueError("give either kernel or both lengthscale and signal_variance")
            kernel = SquaredExponential(lengthscale, signal_variance)
        open_unit(delta, "delta")
        if refit_every is not None and refit_every < 1:
            raise ValueError("refit_every must be a positive number of observations")
        if acquisition not in ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {ACQUISITIONS}, not {acquisition!r}")
        self.acquisition_name = acquisition
        self.delta = float(delta)
        self.rng = np.random.default_rng(rng)
        self.refit_every = refit_every
        self.refit_kernel = kernel_prototype(refit_kernel)
        self.requery = requery
        self.excluded: set[int] = set()
        self._excluded_sorted = np.zeros(0, dtype=np.int64)  # ``excluded`` as the step takes it, made once per change
        self._betas: dict[int, float] = {}  # β_t by t: a step asks for its t and the next (~4 µs each to compute)
        self.noise_variance_floor = float(noise_variance_floor)
        noise_variance = max(noise_variance, self.noise_variance_floor)
        self.n_restarts = n_restarts
        self.bounds = bounds
        self.jitter = jitter
        self.workers = positive_int(workers, "workers (threads of a posterior update)")
        self.reserve = reserve
        self.device = engine_device(device)
        if precision != "float64" and self.device is None:
            raise ValueError("precision applies to the torch engine only: give a device")
        self.precision = precision
        self.posterior = self._new_posterior(candidates, kernel, noise_variance, prior_mean)
        n, r = self.posterior.candidates.shape
        self.prior = HyperparameterPrior.dim_scaled(r) if prior == "dim-scaled" else prior
        self.ard = (self.prior is not None and r <= ARD_MAX_DIM) if ard is None else ard
        self.input_scale = np.ptp(self.posterior.candidates, axis=0) if input_scale is None else input_scale
        self.last_fit: FittedHyperparameters | None = None
        if not 0 <= n_init <= n:
            raise ValueError(f"n_init must lie in 0..{n} (the number of candidates)")
        self.initial_indices = self.rng.choice(n, size=n_init, replace=False) if n_init else np.zeros(0, int)

    def _new_posterior(self, candidates: ArrayLike, kernel: Kernel, noise_variance: float,
                       prior_mean: float) -> CandidatePosterior:
        if self.device is None:
            return CandidatePosterior(candidates, kernel, noise_variance, prior_mean, workers=self.workers,
                                      jitter=self.jitter, reserve=self.reserve)
        from shared.gp.torch_posterior import TorchCandidatePosterior

        return TorchCandidatePosterior(candidates, kernel, noise_variance, prior_mean, device=self.device,
                                       precision=self.precision, jitter=self.jitter, reserve=self.reserve)

    @property
    def engine(self) -> str:
        """Which engine holds the candidate posterior, in words (e.g. for a command line to print)."""
        return describe_engine(self.device, self.workers, self.precision)

    @property
    def n_candidates(self) -> int:
        return self.posterior.n_candidates

    @property
    def n_observations(self) -> int:
        return self.posterior.n_observations

    @property
    def kernel(self) -> Kernel:
        return self.posterior.kernel

    @property
    def noise_variance(self) -> float:
        return self.posterior.noise_variance

    @property
    def prior_mean(self) -> float:
        return self.posterior.prior_mean

    def beta(self, t: int) -> float:
        """β_t for this candidate set and δ."""
        if t not in self._betas:
            self._betas[t] = gp_ucb_beta(t, self.n_candidates, self.delta)
        return self._betas[t]

    def acquisition(self, t: int | None = None) -> NDArray:
        """μ + √β_t σ over all candidates (t defaults to the next iteration)."""
        return self.posterior.upper_confidence_bound(self.beta(t or self.n_observations + 1))

    def never_suggested(self, post: CandidatePosterior, also: Iterable[int] = ()) -> NDArray:
        """Sorted indices a pick must skip: the excluded ones, and without requery the observed ones (and ``also``)."""
        if self.requery:
            return self._excluded_sorted  # no per-step set → array → sort (~12 µs a step at small n)
        return np.union1d(self._excluded_sorted, np.array([*post.observed_indices, *also], dtype=np.int64))

    def _pick(self, t: int) -> int:
        if t <= len(self.initial_indices):
            return int(self.initial_indices[t - 1])
        if self.acquisition_name == "logei" and self.posterior.n_observations:
            return self._best_log_ei(self.posterior)
        beta = self.beta(t)
        if self.posterior.ucb_argmax is not None and self.posterior.ucb_argmax[0] == beta:
            best = self.posterior.ucb_argmax[1]  # ranked by the last observation's own pass
        else:
            best = self.posterior.best_upper_confidence_bound(beta, self.never_suggested(self.posterior))
        if best < 0:
            raise ValueError(NOTHING_LEFT)
        return best

    def _best_log_ei(self, post: CandidatePosterior) -> int:
        """argmax of log EI over the best observed value, outside :meth:`never_suggested` (ties to the lowest
        index)."""
        best_value = float(post.observed_values.max())
        scores = log_expected_improvement(np.asarray(post.mean), np.asarray(post.std), best_value)
        scores[self.never_suggested(post)] = -np.inf
        best = int(np.argmax(scores))
        if scores[best] == -np.inf:
            raise ValueError(NOTHING_LEFT)
        return best

    def _observe(self, post: CandidatePosterior, index: int, y: float) -> None:
        """One rank-one update whose pass over the candidates also ranks them for the pick after it (GP-UCB)."""
        t_next = post.n_observations + 2
        if t_next <= len(self.initial_indices) or self.acquisition_name != "paper-ucb":
            post.observe(index, y)
        else:
            post.observe(index, y, next_beta=self.beta(t_next), excluded=self.never_suggested(post, also=[index]))

    def exclude(self, indices: Iterable[int]) -> None:
        """Never suggest these candidates again (e.g. rows the curator could not measure)."""
        self.excluded.update(int(i) for i in indices)
        self._excluded_sorted = np.array(sorted(self.excluded), dtype=np.int64)
        self.posterior.ucb_argmax = None  # ranked with the old exclusions

    def suggest(self) -> int:
        """The candidate index for iteration t = (observations so far) + 1."""
        return self._pick(self.n_observations + 1)

    def suggest_batch(self, q: int, pending: Iterable[int] = ()) -> list[int]:
        """q indices by GP-BUCB (Desautels, Krause & Burdick 2014): after each pick, and for every
        ``pending`` index, a hallucinated observation equal to the current posterior mean is added. It
        leaves μ unchanged and shrinks σ, so later picks explore elsewhere; pick j uses β_{t+j}. The
        real posterior is untouched. With q = 1 and nothing pending this equals ``suggest()``."""
        if q < 1:
            raise ValueError("q must be ≥ 1")
        picks: list[int] = []
        with self.posterior.hallucinating() as post:
            for index in pending:
                self._observe(post, index, post.mean_at(index))
            for _ in range(q):
                picks.append(self._pick(post.n_observations + 1))
                if len(picks) < q:
                    self._observe(post, picks[-1], post.mean_at(picks[-1]))
        return picks

    def observe(self, index: int, y: float) -> None:
        """Record y at candidate ``index`` (one rank-one posterior update; a refit when scheduled)."""
        self._observe(self.posterior, index, y)
        t = self.n_observations
        if self.refit_every is not None and t >= 2 and t % self.refit_every == 0:
            self.refit()

    def refit(self, *, warm_start_only: bool = False) -> None:
        """Fit hyperparameters on the observations and rebuild the candidate posterior once; ``warm_start_only``
        starts the fit from the current hyperparameters alone (a cheap refit after one more answer)."""
        post = self.posterior
        indices, values = post.observed_indices, post.observed_values
        current = post.kernel
        same_kind = type(current) is type(self.refit_kernel) and current.ard == self.ard
        bounds = (None if self.prior is not None
                  else self.bounds or default_bounds(post.candidates, values, ard=self.ard))
        self.last_fit = fitted = fit_hyperparameters(
            post.candidates[indices],
            values,
            kernel=self.refit_kernel,
            ard=self.ard,
            bounds=bounds,
            n_restarts=self.n_restarts,
            rng=self.rng,
            # same_kind: the current kernel is of refit_kernel's (fittable) type
            initial=(cast(FittableKernel, current), post.noise_variance) if same_kind else None,
            warm_start_only=warm_start_only,
            prior=self.prior,
            prior_mean="fitted" if self.prior is not None else "sample_mean",
            input_scale=self.input_scale,
            noise_variance_floor=self.noise_variance_floor,
        )
        rebuilt = self._new_posterior(post.candidates, fitted.kernel, fitted.noise_variance, fitted.prior_mean)
        for index, y in zip(indices, values):  # replayed where the posterior lives (on the device for torch)
            rebuilt.observe(index, y)
        self.posterior = rebuilt

    @property
    def best_index(self) -> int | None:
        """The observed candidate with the largest observed value (first one on ties)."""
        if not self.n_observations:
            return None
        return int(self.posterior.observed_indices[np.argmax(self.posterior.observed_values)])

    @property
    def best_value(self) -> float | None:
        return float(self.posterior.observed_values.max()) if self.n_observations else None


@dataclass(frozen=True)
class GPUCBRun:
    indices: NDArray  # chosen candidate index per iteration
    observations: NDArray  # what GP-UCB saw: values[index] + noise
    values: NDArray  # the noise-free values[index]


def run_gp_ucb(
    candidates: ArrayLike,
    values: ArrayLike,
    iterations: int,
    *,
    noise_std: float = 0.0,
    answers: ArrayLike | None = None,
    rng: np.random.Generator | int | None = None,
    **gpucb_options: Any,
) -> GPUCBRun:
    """Run GP-UCB for ``iterations`` steps against a table of values: observing index i yields
    values[i] + N(0, noise_std²) (simulation noise from ``rng``, which also draws the initial points), or
    answers[i] on every query when ``answers`` is given (memoised measurements, e.g. private ones).
    ``gpucb_options`` go to ``GPUCB`` (lengthscale, signal_variance, noise_variance, delta, …; ``reserve``
    defaults to ``iterations``)."""
    values = np.asarray(values, dtype=float).ravel()
    answers = None if answers is None else np.asarray(answers, dtype=float)
    rng = np.random.default_rng(rng)
    engine = GPUCB(candidates, rng=rng, **{"reserve": iterations, **gpucb_options})  # the budget is known
    if len(values) != engine.n_candidates or (answers is not None and np.shape(answers) != values.shape):
        raise ValueError("values (and answers) must hold one entry per candidate")
    indices = np.empty(iterations, dtype=int)
    observations = np.empty(iterations)
    for t in range(iterations):
        i = engine.suggest()
        if answers is not None:
            y = float(answers[i])
        else:
            y = values[i] + (noise_std * rng.standard_normal() if noise_std > 0 else 0.0)
        engine.observe(i, y)
        indices[t], observations[t] = i, y
    return GPUCBRun(indices, observations, values[indices])
