"""Differentially private Bayesian optimization (Kusner, Gardner, Garnett, Weinberger, ICML 2015).

After Bayesian optimization has run on a sensitive validation set V, release

* λ̃, a near-best hyperparameter, by the exponential mechanism over the GP posterior mean μ_T on the
  public grid Λ (Algorithm 1, line 12; Theorems 1–2), and
* ṽ / f̃, a near-best validation value, by the Laplace mechanism (Algorithm 1 lines 13–15 with
  observation noise, Theorem 3; Algorithm 2 without it, Theorem 5; Algorithm 3 for Lipschitz and convex
  learners without the GP assumption, Theorem 7).

Only the training set is public in the paper's threat model; neighbouring validation sets differ in
one record. The GP-based guarantees (Algorithms 1–2) are (ε, δ)-DP *under Assumption 1*: every
dataset's validation function is a draw from GP(0, k₁(V, V′) ⊗ k₂(λ, λ′)) with a known dataset kernel
k₁, and the sensitivity bounds hold with probability ≥ 1 − δ over that prior. Algorithm 3's guarantee
is pure ε-DP and needs no GP.

Formula reconstruction. Both extractions of the paper drop square roots, ε and δ in places. Each
function below gives the formula we use and how it follows from the theorem it comes from; the
second extraction (``…_other-extraction.txt``) keeps the ``/δ`` inside the logarithms of c and q, the
σ⁻² in C₁ and the 1/(mλ_min) in Algorithm 3, which the first one loses.

Signal scale. The paper normalises the kernels (k₂(λ, λ) = k₁(V, V) = 1), so f is in units of its prior
standard deviation. We allow a public ``signal_std`` s: f = s·g with g satisfying Assumption 1 and
observation noise σ/s in g's units; every sensitivity is the paper's bound for g, times s. With s = 1
this is exactly the paper.

The range floor (our addition; Algorithms 1 and 2). The paper's sensitivities are sizes of the GP
model: whoever picks s, σ and k₁ picks the noise (s = 1e-6, σ = 1e-9, k₁ = 1 shrink ṽ's Laplace scale
from 37 to 1.6e-4 at ε = 0.1). So the objective has a public range [lo, hi] (``value_range``; [0, 1] for
an accuracy), every value a mechanism sees is clipped to it first (μ_T before the exponential mechanism,
max_t v_t or f(λ_T) before the Laplace), and every sensitivity used is

    Δ_used = max(Δ_paper, hi − lo).

A clipped value moves by at most hi − lo under *any* change of the data, so each release is then ε-DP
(δ = 0) for every record, whatever the prior parameters and whether or not Assumption 1 holds; a
Δ_paper above the range only adds noise (the paper's calibration, kept for fidelity). Algorithm 3's Δ_f
is already a worst-case theorem about the learner (no prior); its constants describe the caller's own
learner and validation set, so it has no floor.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from shared.checks import open_unit, positive
from shared.dp.mechanisms import laplace_mechanism
from shared.dp.noise import NoiseSource
from shared.gp.kernels import Kernel, Matern52, SquaredExponential, StationaryKernel
from shared.gp.regression import CandidatePosterior
from shared.gp.ucb import GPUCB, gp_ucb_beta

SCORE_RANGE = (0.0, 1.0)
"""The public range of both validation scores (accuracy, soft accuracy), which DP-BO clips to (its range floor)."""

Objective = Callable[[int], float]
"""f_V evaluated at the candidate with this index of Λ (runs on the curator, touches V)."""
Progress = Callable[[int, int], None]
"""Called with (iterations done, T) after every Bayesian-optimization step."""


# --- the paper's quantities, one function each ------------------------------------------------------


def kusner_beta(t: int, n_candidates: int, delta: float) -> float:
    """UCB exploration weight, Algorithm 1 line 4: β_t = 2 log(|Λ| t² π² / (3δ)).

    That is GP-UCB's finite-domain β (Srinivas et al. 2010, π²/(6δ)) at confidence δ/2, so it is computed
    by :func:`shared.gp.ucb.gp_ucb_beta`, the one copy of the formula."""
    return gp_ucb_beta(t, n_candidates, open_unit(delta, "delta") / 2.0)


def dataset_shift_bound(dataset_kernel: float, n_candidates: int, delta: float, *, parts: int = 3) -> float:
    """c: with probability ≥ 1 − δ/parts, |f_V(λ) − f_V′(λ)| ≤ c for every λ ∈ Λ.

    c = 2 √((1 − k₁(V, V′)) log(parts·|Λ| / δ)); parts = 3 in Algorithm 1 (line 9), 2 in Algorithm 2 (line 3).

    Reconstructed from Theorem 1's proof: f_V(λ) − f_V′(λ) ~ N(0, σ₁²) with σ₁² = 2(1 − k₁(V, V′)), and the
    union bound |Λ| e^(−γ²/2) = δ/parts gives γ = √(2 log(parts·|Λ|/δ)), so c = σ₁γ. (The first
    extraction drops the /δ; the second keeps it.)
    """
    open_unit(delta, "delta")
    if not -1.0 <= dataset_kernel <= 1.0:
        raise ValueError(f"the dataset kernel value k1(V, V') must lie in [-1, 1], got {dataset_kernel}")
    return 2.0 * math.sqrt((1.0 - dataset_kernel) * math.log(parts * n_candidates / delta))


def noise_max_bound(noise_std: float, delta: float) -> float:
    """q = σ √(8 log(3/δ)), Algorithm 1 line 10: with probability ≥ 1 − δ/3, 2|α̂| ≤ q.

    From Theorem 3's proof: Pr[|Z| ≥ γ] ≤ e^(−γ²/2) = δ/3 for Z = α̂/σ gives γ = √(2 log(3/δ)), so
    2|α̂| ≤ 2σγ = σ√(8 log(3/δ)).
    """
    open_unit(delta, "delta")
    return noise_std * math.sqrt(8.0 * math.log(3.0 / delta))


def regret_constant(noise_variance: float) -> float:
    """C₁ = 8 / log(1 + σ⁻²), Algorithm 1 line 11 (Srinivas et al. 2010, Theorem 1); σ² in units of k(λ, λ) = 1."""
    if noise_variance <= 0:
        raise ValueError("C1 needs a positive observation-noise variance; use Algorithm 2 for noise-free observations")
    return 8.0 / math.log(1.0 + 1.0 / noise_variance)


def mean_sensitivity(iterations: int, n_candidates: int, delta: float, dataset_kernel: float) -> float:
    """Theorem 1: |μ′_T(λ) − μ_T(λ)| ≤ Δ = 2√β_{T+1} + c for all λ ∈ Λ, with probability ≥ 1 − δ.

    The exponential-mechanism sensitivity of line 12 and Theorem 2 (unit signal variance).
    """
    return 2.0 * math.sqrt(kusner_beta(iterations + 1, n_candidates, delta)) + dataset_shift_bound(
        dataset_kernel, n_candidates, delta, parts=3
    )


def average_regret_bound(iterations: int, n_candidates: int, delta: float, noise_std: float, info_gain: float) -> float:
    """Ω/T = √(C₁ β_T γ_T / T): GP-UCB's average-regret bound R_T/T (Srinivas et al. 2010, Theorem 1), unit signal
    variance."""
    if info_gain < 0:
        raise ValueError(f"the information gain bound gamma_T must be non-negative, got {info_gain}")
    beta = kusner_beta(iterations, n_candidates, delta)
    return math.sqrt(regret_constant(noise_std**2) * beta * info_gain / iterations)


def max_value_sensitivity(
    iterations: int,
    n_candidates: int,
    delta: float,
    dataset_kernel: float,
    noise_std: float,
    info_gain: float,
) -> float:
    """Theorem 3: |max_t v′_t − max_t v_t| ≤ √(C₁ β_T γ_T / T) + c + q, with probability ≥ 1 − δ.

    Ω/T with Ω = √(C₁ T β_T γ_T) is GP-UCB's average-regret bound (Srinivas et al. 2010, Theorem 1);
    line 14 of Algorithm 1 draws θ ~ Lap(this / ε). (Reconstructed: the extraction loses the square
    root and the 1/ε, restored from the proof, where Ω/T is the regret term, and Definition 3.)
    Unit signal variance: ``noise_std`` is σ in units of the prior standard deviation.
    """
    regret = average_regret_bound(iterations, n_candidates, delta, noise_std, info_gain)
    return (regret + dataset_shift_bound(dataset_kernel, n_candidates, delta, parts=3)
            + noise_max_bound(noise_std, delta))


def noise_free_sensitivity(
    iterations: int, dim: int, A: float, tau: float, n_candidates: int, delta: float, dataset_kernel: float
) -> float:
    """Theorem 5: |f′(λ′_T) − f(λ_T)| ≤ A e^(−τT / (log T)^(d/4)) + c, c with parts = 2, w.p. ≥ 1 − δ.

    A and τ are the constants of de Freitas et al. (2012, Theorem 2) for the problem at hand; d = dim Λ.
    The first term is in units of the prior standard deviation, like c.
    """
    if iterations < 2:
        raise ValueError("Algorithm 2 needs T >= 2 (its bound divides by (log T)^(d/4))")
    if A < 0 or tau <= 0:
        raise ValueError(f"A must be >= 0 and tau > 0, got A={A}, tau={tau}")
    regret = A * math.exp(-tau * iterations / math.log(iterations) ** (dim / 4.0))
    return regret + dataset_shift_bound(dataset_kernel, n_candidates, delta, parts=2)


def lipschitz_convex_sensitivity(
    validation_size: int, g_max: float, lipschitz: float, lambda_min: float, lambda_max: float
) -> float:
    """Total global sensitivity of f over V and λ (Theorem 7 at the extremes of Λ, Algorithm 3 line 5).

    Δ_f ≤ min{g*/m, L/(m λ_min)} + (λ_max − λ_min) L / (λ_max λ_min),

    for learners w_λ = argmin λ/2‖w‖² + (1/n) Σ ℓ(w, x_i, y_i) with ℓ convex and 1-Lipschitz in w, and a
    validation score f_V = −(1/m) Σ g(w_λ, x_i, y_i) with g L-Lipschitz in w and 0 ≤ g ≤ g*. (The first
    extraction drops the m of L/(mλ_min); the second extraction and the proof of Theorem 7 keep it.)
    """
    if validation_size < 1 or g_max < 0 or lipschitz < 0 or not 0 < lambda_min <= lambda_max:
        raise ValueError("need m >= 1, g* >= 0, L >= 0 and 0 < lambda_min <= lambda_max")
    stability = min(g_max / validation_size, lipschitz / (validation_size * lambda_min))
    return stability + (lambda_max - lambda_min) * lipschitz / (lambda_max * lambda_min)


def selection_utility_bound(sensitivity: float, epsilon: float, n_candidates: int, a: float) -> float:
    """Theorem 2 (McSherry & Talwar 2007): max_λ μ_T(λ) − μ_T(λ̃) ≤ (2Δ/ε)(log|Λ| + a) w.p. ≥ 1 − (δ + e^(−a)).

    Given μ_T, the exponential mechanism alone meets the bound with probability ≥ 1 − e^(−a); the δ is
    the chance that Δ (Theorem 1) fails. (The extraction loses the 1/ε; restored from McSherry–Talwar.)
    """
    positive(epsilon, "epsilon")
    return 2.0 * sensitivity / epsilon * (math.log(n_candidates) + a)


def value_utility_bound(regret: float, sensitivity: float, epsilon: float, a: float, noise_term: float = 0.0) -> float:
    """Theorems 4, 6 and 8: |ṽ − f(λ*)| ≤ noise_term + regret + a·sensitivity/ε w.p. ≥ 1 − (δ + e^(−a)).

    Theorem 4 (Algorithm 1): noise_term = σ√(8 log(1/δ)), regret = Ω/T, sensitivity = Ω/T + c + q.
    Theorem 6 (Algorithm 2): noise_term = 0, regret = A e^(−τT/(log T)^(d/4)), sensitivity = regret + c.
    Theorem 8 (Algorithm 3, relative to f_BO instead of f(λ*)): noise_term = regret = 0, probability 1 − e^(−a).
    (Reconstructed from the proofs: Pr[|Lap(b)| ≤ ab] = 1 − e^(−a) with b = sensitivity/ε.)
    """
    positive(epsilon, "epsilon")
    return noise_term + regret + a * sensitivity / epsilon


def range_floor(paper_sensitivity: float, value_range: tuple[float, float]) -> float:
    """Δ_used = max(Δ_paper, hi − lo): never below what a value clipped to [lo, hi] can move (module docstring)."""
    low, high = value_range
    return max(paper_sensitivity, high - low)


@overload
def clip_to_range(values: float, value_range: tuple[float, float]) -> float: ...
@overload
def clip_to_range(values: np.ndarray, value_range: tuple[float, float]) -> np.ndarray: ...
def clip_to_range(values: float | np.ndarray, value_range: tuple[float, float]) -> float | np.ndarray:
    """The values a mechanism sees, clipped to the objective's public range [lo, hi]."""
    return np.clip(values, *value_range)


def information_gain_bound(
    candidates: np.ndarray, kernel: Kernel, noise_variance: float, iterations: int
) -> float:
    """An upper bound on γ_T = max_{|A| = T} ½ log det(I + σ⁻² K_A) over the finite grid Λ.

    γ_T is an input of Algorithm 1. The greedy choice (largest posterior variance each step, points may
    repeat) reaches at least (1 − 1/e) of the maximum of this submodular function (Nemhauser et al.
    1978; Srinivas et al. 2010, Lemma 5.4), so greedy/(1 − 1/e) ≥ γ_T. Depends on Λ and the kernel only.
    """
    posterior = CandidatePosterior(_as_grid(candidates), kernel, noise_variance)
    gain = 0.0
    for _ in range(iterations):
        index = int(np.argmax(posterior.variance))
        gain += 0.5 * math.log1p(float(posterior.variance[index]) / noise_variance)
        posterior.observe(index, 0.0)  # the variance does not depend on the observed value
    return gain / (1.0 - 1.0 / math.e)


# --- parameters ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPPrior:
    """The public GP model of f_V on Λ (Assumption 1), fixed before looking at V.

    ``lengthscale`` of k₂ (squared exponential, or Matérn-5/2 with ``kernel="matern52"``), in the units
    of the candidate coordinates; ``signal_std`` s, the prior standard deviation of f (the paper has
    s = 1); ``prior_mean``, a public constant subtracted before and added after (the paper's μ = 0).
    """

    lengthscale: float
    signal_std: float = 1.0
    prior_mean: float = 0.0
    kernel: Literal["se", "matern52"] = "se"

    def __post_init__(self) -> None:
        if self.lengthscale <= 0 or self.signal_std <= 0:
            raise ValueError("lengthscale and signal_std must be positive")

    def covariance(self) -> StationaryKernel:
        """k(λ, λ′) = s² k₂(λ, λ′)."""
        kind = SquaredExponential if self.kernel == "se" else Matern52
        return kind(self.lengthscale, variance=self.signal_std**2)


@dataclass(frozen=True)
class NoisyObservations:
    """Inputs of Algorithm 1 beyond V and Λ.

    ``epsilon``, ``delta``: each of the two releases is (ε, δ)-DP under Assumption 1, and ε-DP for any
    data by the range floor; both together cost (2ε, 2δ). ``iterations``: T. ``dataset_kernel``: k₁(V, V′)
    for neighbouring validation sets (1 − k₁ sets how far apart the model lets two neighbours' validation
    functions be: Var[f_V − f_V′] = 2s²(1 − k₁)). ``noise_std``: σ of the observation noise
    v_t = f(λ_t) + α_t, in the units of f. ``info_gain``: an upper bound on γ_T for this Λ, kernel and σ;
    None computes :func:`information_gain_bound`. ``value_range``: the public range [lo, hi] of f
    (keyword only, required: the floor of every sensitivity).
    """

    epsilon: float
    delta: float
    iterations: int
    dataset_kernel: float
    noise_std: float
    info_gain: float | None = None
    value_range: tuple[float, float] = field(kw_only=True)

    def __post_init__(self) -> None:
        _check_common(self.epsilon, self.delta, self.iterations)
        _check_range(self.value_range)
        if self.noise_std <= 0:
            raise ValueError("Algorithm 1 needs noise_std > 0; use NoiseFreeObservations (Algorithm 2) otherwise")


@dataclass(frozen=True)
class NoiseFreeObservations:
    """Inputs of Algorithm 2: ε, δ, T ≥ 2, k₁(V, V′) as in Algorithm 1, de Freitas et al.'s A and τ
    (the constants of their exponential regret bound r_T ≤ A e^(−τT/(log T)^(d/4)), in f's units for A),
    and f's public ``value_range`` as in :class:`NoisyObservations`.
    """

    epsilon: float
    delta: float
    iterations: int
    dataset_kernel: float
    A: float
    tau: float
    value_range: tuple[float, float] = field(kw_only=True)

    def __post_init__(self) -> None:
        _check_common(self.epsilon, self.delta, self.iterations)
        _check_range(self.value_range)


@dataclass(frozen=True)
class LipschitzConvex:
    """Inputs of Algorithm 3 (no GP assumption; pure ε-DP).

    ``validation_size`` m = |V|; ``lipschitz`` L of the validation loss g in w; ``g_max`` g* = max g;
    ``lambda_min``, ``lambda_max``: the smallest and largest regularisation strengths in Λ (the λ of
    λ/2‖w‖² + (1/n) Σ ℓ, with ℓ convex and 1-Lipschitz in w); ``noise_std``: the observation noise
    the Bayesian optimization assumes (any acquisition keeps the guarantee; we use GP-UCB).
    """

    epsilon: float
    iterations: int
    validation_size: int
    lipschitz: float
    g_max: float
    lambda_min: float
    lambda_max: float
    delta_ucb: float = 0.1
    noise_std: float = 1e-3

    def __post_init__(self) -> None:
        _check_common(self.epsilon, self.delta_ucb, self.iterations)


# --- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """What leaves the curator: the released hyperparameter index and value, the sensitivities the two
    mechanisms used (range floor included) and ṽ's Laplace scale — public: they depend only on public
    parameters — and the total privacy cost."""

    hyperparameter_index: int | None
    value: float
    epsilon: float
    delta: float
    selection_sensitivity: float | None
    value_sensitivity: float
    value_noise_scale: float


@dataclass(frozen=True)
class Run:
    """The non-private Bayesian-optimization trace. Depends on V: it stays on the curator."""

    indices: list[int]
    values: list[float]
    posterior_mean: np.ndarray
    best_observed: float


@dataclass(frozen=True)
class DPBOResult:
    release: Release
    run: Run = field(repr=False)


# --- the algorithms --------------------------------------------------------------------------------


def gp_ucb(
    objective: Objective,
    candidates: np.ndarray,
    prior: GPPrior,
    *,
    iterations: int,
    delta: float,
    noise_variance: float,
    progress: Progress | None = None,
) -> Run:
    """Lines 2–8 of Algorithm 1: λ_t = argmax_λ μ_{t−1}(λ) + √β_t σ_{t−1}(λ) (ties to the lowest index),
    observe v_t, update the posterior (2) by a rank-one step. ``noise_variance`` is σ² in f's units.

    The paper's β_t = 2 log(|Λ|t²π²/(3δ)) is GPUCB's 2 log(nt²π²/(6δ′)) with δ′ = δ/2.
    """
    engine = GPUCB(candidates, kernel=prior.covariance(), noise_variance=noise_variance, delta=delta / 2.0,
                   prior_mean=prior.prior_mean)
    values: list[float] = []
    for t in range(1, iterations + 1):
        index = engine.suggest()
        values.append(float(objective(index)))
        engine.observe(index, values[-1])
        if progress is not None:
            progress(t, iterations)
    posterior = engine.posterior
    return Run(posterior.observed_indices.tolist(), values, posterior.mean.copy(), max(values))


def private_hyperparameter(posterior_mean: np.ndarray, sensitivity: float, epsilon: float, noise: NoiseSource) -> int:
    """Algorithm 1 line 12: λ̃ drawn with Pr[λ] ∝ exp(ε μ_T(λ) / (2Δ)) by a floating-point-safe sampler.

    (The extraction drops the ε of Definition 4; restored: the exponential mechanism with sensitivity
    Δ = 2√β_{T+1} + c, Theorem 1.)
    """
    positive(epsilon, "epsilon")
    return int(noise.exponential_index(np.asarray(posterior_mean, dtype=float), sensitivity, epsilon))


def dp_bo_noisy(
    objective: Objective,
    candidates: np.ndarray,
    prior: GPPrior,
    params: NoisyObservations,
    noise: NoiseSource,
    *,
    progress: Progress | None = None,
) -> DPBOResult:
    """Algorithm 1: GP-UCB for T steps, then λ̃ (exponential mechanism over clip(μ_T)) and
    ṽ = clip(max_t v_t) + Lap(max(√(C₁β_Tγ_T/T) + c + q, hi − lo)/ε), each with the range floor
    (:func:`range_floor`). Releasing both is (2ε, 2δ)-DP under Assumption 1 and 2ε-DP for any data.
    """
    candidates = _as_grid(candidates)
    n, s = len(candidates), prior.signal_std
    run = gp_ucb(objective, candidates, prior, iterations=params.iterations, delta=params.delta,
                 noise_variance=params.noise_std**2, progress=progress)
    relative_noise = params.noise_std / s  # σ in units of the prior standard deviation
    info_gain = params.info_gain
    if info_gain is None:
        info_gain = information_gain_bound(candidates, GPPrior(prior.lengthscale, 1.0, 0.0, prior.kernel).covariance(),
                                           relative_noise**2, params.iterations)
    selection, value_sens = noisy_sensitivities(n, s, params, info_gain)
    index = private_hyperparameter(clip_to_range(run.posterior_mean, params.value_range), selection,
                                   params.epsilon, noise)
    value = float(laplace_mechanism(clip_to_range(run.best_observed, params.value_range), value_sens,
                                    params.epsilon, noise))
    release = Release(index, value, 2 * params.epsilon, 2 * params.delta, selection, value_sens,
                      value_sens / params.epsilon)
    return DPBOResult(release, run)


def noisy_sensitivities(n_candidates: int, signal_std: float, params: NoisyObservations,
                        info_gain: float) -> tuple[float, float]:
    """Algorithm 1's (λ̃, ṽ) sensitivities with the range floor: public, so they can be stated before a run."""
    relative_noise = params.noise_std / signal_std
    selection = range_floor(signal_std * mean_sensitivity(params.iterations, n_candidates, params.delta,
                                                          params.dataset_kernel), params.value_range)
    value = range_floor(signal_std * max_value_sensitivity(params.iterations, n_candidates, params.delta,
                                                           params.dataset_kernel, relative_noise, info_gain),
                        params.value_range)
    return selection, value


def validation_size(n: int, fraction: float) -> int:
    """m = |V| (public: n and the fraction are); the same rounding as
    :func:`shared.algorithms.kusner.validation_tasks.split_task`."""
    return round(fraction * n)


def default_dataset_kernel(validation_size: int, signal_std: float) -> float:
    """k₁(V, V′) = 1 − 1/(2 m² s²): the model's neighbour standard deviation is then 1/m, the most one record can
    move an accuracy over m validation rows."""
    return max(-1.0, 1.0 - 1.0 / (2.0 * validation_size**2 * signal_std**2))


@dataclass(frozen=True)
class PlannedNoise:
    """What a ``dp-bo`` job will add, from its public parameters alone: both sensitivities, ṽ's Laplace scale and
    the job's total charge (two releases of (ε, δ) each)."""

    selection_sensitivity: float
    value_sensitivity: float
    value_noise_scale: float
    total_epsilon: float
    total_delta: float
    info_gain: float


def planned_noise(grid: ArrayLike, *, epsilon: float, delta: float, iterations: int, validation_size: int,
                  lengthscale: float, signal_std: float, noise_std: float, dataset_kernel: float | None,
                  value_range: tuple[float, float]) -> PlannedNoise:
    """Algorithm 1's noise as the ``dp-bo`` job computes it (the same functions), before it runs."""
    grid = np.asarray(grid, dtype=float).reshape(-1, 1)
    kernel = default_dataset_kernel(validation_size, signal_std) if dataset_kernel is None else dataset_kernel
    info_gain = information_gain_bound(grid, GPPrior(lengthscale).covariance(), (noise_std / signal_std) ** 2,
                                       iterations)
    settings = NoisyObservations(epsilon, delta, iterations, kernel, noise_std, info_gain, value_range=value_range)
    selection, value = noisy_sensitivities(len(grid), signal_std, settings, info_gain)
    return PlannedNoise(selection, value, value / epsilon, 2 * epsilon, 2 * delta, info_gain)


VERDICT_CONFIDENCE = 0.9
USEFUL_GAP = 0.1
"""λ̃ is called useful when, with probability ``VERDICT_CONFIDENCE``, its posterior-mean accuracy is within
``USEFUL_GAP`` (ten accuracy points) of the best grid point's."""


@dataclass(frozen=True)
class LambdaVerdict:
    useful: bool
    gap: float
    epsilon_needed: float
    sentence: str


def lambda_verdict(selection_sensitivity: float, epsilon: float, grid_size: int) -> LambdaVerdict:
    """Whether λ̃ is worth having: the exponential mechanism's utility bound (:func:`selection_utility_bound`,
    a = ln 10) says that with probability 0.9 the chosen grid point's posterior-mean accuracy is within
    gap = 2Δ/ε·(ln |Λ| + ln 10) of the best one's. ``epsilon`` is the ε of the λ̃ release alone (half the job's
    charge). Useful when gap ≤ ``USEFUL_GAP``; otherwise the ε per release that brings it there."""
    a = -math.log(1.0 - VERDICT_CONFIDENCE)
    gap = selection_utility_bound(selection_sensitivity, epsilon, grid_size, a)
    needed = epsilon * gap / USEFUL_GAP
    if gap <= USEFUL_GAP:
        sentence = (f"λ̃ is useful: with probability {VERDICT_CONFIDENCE:.0%} its accuracy (the GP's posterior mean) "
                    f"is within {gap:.2g} of the best of the {grid_size} grid points'.")
    else:
        how = ("more than the whole range of an accuracy (0 to 1), so λ̃ is close to a random grid point"
               if gap >= 1 else "so λ̃ may miss the best λ by that much")
        sentence = (f"λ̃ is not useful: at ε = {epsilon:.3g} per release over {grid_size} grid points the exponential "
                    f"mechanism keeps its accuracy within only {gap:.2g} of the best (probability "
                    f"{VERDICT_CONFIDENCE:.0%}), {how}; --epsilon {needed:.3g} or more (charged twice) brings that "
                    f"to {USEFUL_GAP}.")
    return LambdaVerdict(gap <= USEFUL_GAP, gap, needed, sentence)


def dp_bo_noise_free(
    objective: Objective,
    candidates: np.ndarray,
    prior: GPPrior,
    params: NoiseFreeObservations,
    noise: NoiseSource,
    *,
    jitter: float = 1e-8,
    progress: Progress | None = None,
) -> DPBOResult:
    """Algorithm 2: observe f_V(λ_1), …, f_V(λ_T) exactly and release
    f̃ = clip(f_V(λ_T)) + Lap(max(A e^(−τT/(log T)^(d/4)) + c, hi − lo)/ε) (the range floor,
    :func:`range_floor`).

    (ε, δ)-DP under Assumption 1 and de Freitas et al.'s assumptions, ε-DP for any data. The paper
    samples with de Freitas et al.'s branch-and-bound UCB; we use GP-UCB with a practically noise-free likelihood (σ² =
    ``jitter`` · s², for numerical stability), so A and τ must be valid for that sampler. The last sample is released
    as the algorithm states (not the maximum).
    """
    candidates = _as_grid(candidates)
    n, s = len(candidates), prior.signal_std
    run = gp_ucb(objective, candidates, prior, iterations=params.iterations, delta=params.delta,
                 noise_variance=jitter * s**2, progress=progress)
    # A is in f's units; the theorem's bound is in prior-standard-deviation units.
    value_sens = range_floor(s * noise_free_sensitivity(params.iterations, candidates.shape[1], params.A / s,
                                                        params.tau, n, params.delta, params.dataset_kernel),
                             params.value_range)
    value = float(laplace_mechanism(clip_to_range(run.values[-1], params.value_range), value_sens, params.epsilon,
                                    noise))
    release = Release(None, value, params.epsilon, params.delta, None, value_sens, value_sens / params.epsilon)
    return DPBOResult(release, run)


def dp_bo_lipschitz_convex(
    objective: Objective,
    candidates: np.ndarray,
    prior: GPPrior,
    params: LipschitzConvex,
    noise: NoiseSource,
    *,
    progress: Progress | None = None,
) -> DPBOResult:
    """Algorithm 3: Bayesian optimization for T steps, f_BO = max_t f_V(w_λt), released as
    f̃_L = f_BO + Lap(Δ_f/ε) with Δ_f from :func:`lipschitz_convex_sensitivity`; ε-DP (δ = 0).
    """
    candidates = _as_grid(candidates)
    run = gp_ucb(objective, candidates, prior, iterations=params.iterations, delta=params.delta_ucb,
                 noise_variance=params.noise_std**2, progress=progress)
    value_sens = lipschitz_convex_sensitivity(params.validation_size, params.g_max, params.lipschitz,
                                              params.lambda_min, params.lambda_max)
    value = float(laplace_mechanism(run.best_observed, value_sens, params.epsilon, noise))
    release = Release(None, value, params.epsilon, 0.0, None, value_sens, value_sens / params.epsilon)
    return DPBOResult(release, run)


# --- checks ----------------------------------------------------------------------------------------


def _as_grid(candidates: np.ndarray) -> np.ndarray:
    """A private (|Λ|, d) float copy: the GP engine may work in place on the array it is given."""
    grid = np.array(candidates, dtype=float, copy=True)
    grid = grid.reshape(-1, 1) if grid.ndim == 1 else grid
    if grid.ndim != 2 or len(grid) < 1 or not np.all(np.isfinite(grid)):
        raise ValueError("the grid of candidates must be a finite, non-empty array of shape (|Λ|, d)")
    return grid


def _check_range(value_range: tuple[float, float]) -> None:
    low, high = value_range
    if not (math.isfinite(high - low) and low < high):
        raise ValueError(f"value_range must be two finite numbers lo < hi, got {value_range}")


def _check_common(epsilon: float, delta: float, iterations: int) -> None:
    positive(epsilon, "epsilon"), open_unit(delta, "delta")
    if iterations < 1:
        raise ValueError(f"the number of iterations T must be at least 1, got {iterations}")
