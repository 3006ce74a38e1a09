"""A privacy–utility planner: what a ``gaussian`` release at ε buys, said before anything is charged.

For a table's public shape (n rows, d features, each publicly scaled to [0, w]) and a release setting, at each ε:

* **the noise**: every public parameter of the release (:func:`shared.releases.gaussian_release` run on a
  stand-in of zeros, so the calibration is the release's own), and the **noise-to-spread ratio** σ_x / s,
  with s the standard deviation per released coordinate of rows spread uniformly over the public box:
  w/√12 for identity, Haar and PCA coordinates, √(d/r)·w/√12 for JL (E‖x M/√r‖² = ‖x‖²).
* **a bound for any modeler.** The release is μ-GDP with μ = √(Σ_i (Δ_i/σ_i)²) over its Gaussian parts, so for
  every event E and neighbouring D, D': P_D(E) ≤ Φ(Φ⁻¹(P_D'(E)) + μ) (Dong, Roth & Su 2019). Take a target
  set T of q·n rows and, for each i ∈ T, D⁽ⁱ⁾ = D with record i replaced by an ordinary record (one
  neighbouring step when the scaling has unit diameter). If, facing D⁽ⁱ⁾, a modeler picks row i with
  probability p_i whose mean over T is ≤ 1/n (row i then looks like any other; row order is independent of
  the values), then since p ↦ Φ(Φ⁻¹(p) + μ) is concave (Jensen),

      P(the query hits T) ≤ Σ_{i∈T} Φ(Φ⁻¹(p_i) + μ) ≤ q·n·Φ(Φ⁻¹(1/n) + μ),

  i.e. at most n·Φ(Φ⁻¹(1/n) + μ) × random search (whose chance is q), on each query until the first hit.
  Replacing a whole record is one neighbouring step only in a box of ℓ2 diameter D = w·√d ≤ 1; in a larger
  box it moves the row by up to D, and every part's sensitivity grows at most linearly in the row change,
  so the bound uses μ·max(1, D) (:func:`record_mu`).
  It covers the whole adaptive transcript only when measurements are private too (then every answer is
  post-processing of the same release); with measurements returned as computed it covers choices made
  from Z alone.
* **a simulated regret-vs-ε curve** on synthetic stand-in data of the same n, d and public box (never the
  raw rows): rows uniform in the box, f a GP draw (random Fourier features, lengthscale ``lengthscale``,
  by default (w/8)·√(d/2): the synthetic GP problem's ratio at d = 2, growing with √d so that rows stay as
  many lengthscales apart as d grows — with w/8 at d = 10 the stand-in is white noise),
  GP-UCB with the expected-SE kernel fitted by marginal likelihood and no repeated rows, beside random
  search (exact expectation) and non-private GP-UCB on the same stand-in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln
from scipy.stats import norm

from shared.dp.noise import SeededNoise
from shared.gp.kernels import SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential
from shared.gp.ucb import run_gp_ucb
from shared.releases import GaussianRelease, PcaOption, gaussian_release
from shared.releases.gaussian import Projection
from shared.releases.measurements import MeasurementOption
from shared.releases.noise_ratio import box_spread

UCB_DELTA = 0.025
REFIT_EVERY = 5
RANDOM_FEATURES = 512
ROW_CHUNK = 4096


@dataclass(frozen=True)
class ReleaseSetting:
    """A release as the curator would ask for it, and the table's public shape.

    ``width``: each feature lies in [0, width] after the public scaling (1/√d for a unit-diameter box).
    ``measurements``: private measurements' public clip and share (None: measurements as computed).
    """

    n: int
    d: int
    width: float
    delta: float = 1e-5
    r: int | None = None
    projection: Projection = "auto"
    pca: PcaOption | None = None
    measurements: MeasurementOption | None = None

    def __post_init__(self) -> None:
        if self.n < 2 or self.d < 1:
            raise ValueError(f"the planner needs n ≥ 2 rows and d ≥ 1 features, got n = {self.n}, d = {self.d}")
        if not (math.isfinite(self.width) and self.width > 0):
            raise ValueError(f"width (each feature's public range after scaling) must be positive, got {self.width!r}")

    @property
    def dim(self) -> int:
        return self.r or self.d

    def release(self, X: np.ndarray, epsilon: float, seed: int, y: np.ndarray | None = None) -> GaussianRelease:
        """The release of ``X`` (stand-in data only) with seeded, reproducible noise."""
        noise_rng, projection_rng = np.random.default_rng(seed).spawn(2)
        return gaussian_release(
            X, epsilon, self.delta, self.dim, projection_rng, noise=SeededNoise(noise_rng),
            projection=self.projection, pca=self.pca, y=y, measurements=self.measurements,
        )


def release_mu(parameters: dict) -> float:
    """μ = √(Σ (Δ_i/σ_i)²) over a release's Gaussian parts, from its public parameters."""
    parts = [parameters] + [parameters[k] for k in ("pca", "measurements") if parameters.get(k)]
    return math.hypot(*(p["sensitivity"] / p["noise_std"] for p in parts))


def record_mu(mu: float, setting: ReleaseSetting) -> float:
    """The μ of replacing a whole record: μ per neighbouring step times the public box's diameter w·√d (≥ 1)."""
    return mu * max(1.0, setting.width * math.sqrt(setting.d))


def random_search_multiple(n: int, mu: float) -> float:
    """n·Φ(Φ⁻¹(1/n) + μ): at most this many times random search's chance of hitting a target, per query."""
    return float(n * norm.cdf(norm.ppf(1.0 / n) + mu))


def noise_to_spread(parameters: dict, setting: ReleaseSetting) -> float:
    """σ_x over the per-coordinate spread of rows uniform in the public box (:mod:`shared.releases.noise_ratio`)."""
    return parameters["noise_std"] / box_spread(setting.width, setting.d, setting.dim, parameters["projection"])


def random_search_regret(values: np.ndarray, queries: int) -> float:
    """E[max f − max of ``queries`` distinct uniformly random rows], exactly: the k-th largest value is the
    best of the draw with probability C(n − k, T − 1)/C(n, T)."""
    ordered = np.sort(np.asarray(values, dtype=float))[::-1]
    n = len(ordered)
    k = np.arange(1, n - queries + 2)
    log_p = _log_binomial(n - k, queries - 1) - _log_binomial(n, queries)
    return float(ordered[0] - np.exp(log_p) @ ordered[: len(k)])


def stand_in_problem(setting: ReleaseSetting, lengthscale: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows uniform in [0, width]^d and f ~ GP(0, SE(lengthscale, 1)) by random Fourier features, standardised."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, setting.width, size=(setting.n, setting.d))
    frequencies = rng.standard_normal((setting.d, RANDOM_FEATURES)) / lengthscale
    phases = rng.uniform(0.0, 2.0 * np.pi, RANDOM_FEATURES)
    weights = rng.standard_normal(RANDOM_FEATURES)
    f = np.concatenate([np.cos(X[s : s + ROW_CHUNK] @ frequencies + phases) @ weights
                        for s in range(0, setting.n, ROW_CHUNK)])
    return X, (f - f.mean()) / f.std()


def gp_ucb_regret(Z: np.ndarray, f: np.ndarray, queries: int, *, input_noise_std: float | None,
                  answers: np.ndarray | None = None, noise_floor: float = 0.0, seed: int = 0) -> float:
    """Simple regret (in std of f) of GP-UCB on Z: expected-SE kernel when Z is noisy, fitted by maximum marginal
    likelihood every ``REFIT_EVERY`` answers (``prior=None``: the fit the planner's curves in docs/planner.md were
    measured with), no repeated rows."""
    start = 0.25 * float(np.linalg.norm(np.ptp(Z, axis=0))) or 1.0
    kernel = (SquaredExponential(start, 1.0) if not input_noise_std
              else ExpectedSquaredExponential(start, 1.0, input_noise_std=input_noise_std, dim=Z.shape[1]))
    run = run_gp_ucb(Z, f, queries, answers=answers, rng=seed, kernel=kernel, refit_kernel=kernel,
                     refit_every=REFIT_EVERY, noise_variance=1e-6, noise_variance_floor=noise_floor,
                     delta=UCB_DELTA, requery=False, prior=None)
    return float((f.max() - run.values.max()) / f.std())


UNIT_RATIO_RANGE = (1e-4, 1e8)
"""The ε searched for noise/spread ≈ 1 (:func:`epsilon_for_ratio`)."""


def epsilon_for_ratio(setting: ReleaseSetting, target: float = 1.0, *, tolerance: float = 0.01,
                      seed: int = 0) -> float | None:
    """The ε at which the release's noise-to-spread ratio is ``target`` (within ``tolerance``, relative), by
    bisection on log ε over the release's own calibration (σ_x falls as ε grows); None outside ``UNIT_RATIO_RANGE``."""
    zeros = np.zeros((setting.n, setting.d))
    y_zeros = np.zeros(setting.n) if setting.measurements else None

    def ratio(epsilon: float) -> float:
        return noise_to_spread(setting.release(zeros, epsilon, seed, y_zeros).public_parameters(), setting)

    low, high = (math.log(e) for e in UNIT_RATIO_RANGE)
    if ratio(math.exp(high)) > target or ratio(math.exp(low)) < target:
        return None
    while high - low > tolerance:
        middle = 0.5 * (low + high)
        if ratio(math.exp(middle)) > target:
            low = middle
        else:
            high = middle
    return float(math.exp(high))


@dataclass(frozen=True)
class PlanRow:
    epsilon: float
    mu: float
    noise_to_spread: float
    random_search_multiple: float
    parameters: dict
    regret: float | None = None
    regret_stderr: float | None = None


@dataclass(frozen=True)
class Plan:
    setting: ReleaseSetting
    rows: list[PlanRow]
    queries: int
    random_search_regret: float | None = None
    non_private_regret: float | None = None
    bound_covers: str = field(default="")
    unit_noise_epsilon: float | None = None
    """The ε at which noise/spread ≈ 1 (:func:`epsilon_for_ratio`): below it the released inputs are mostly noise."""

    @property
    def half_gap_epsilon(self) -> float | None:
        """Where the simulated curve reaches half the gap (:func:`half_gap_epsilon`)."""
        regrets = [r.regret for r in self.rows if r.regret is not None]
        if self.random_search_regret is None or self.non_private_regret is None or len(regrets) < len(self.rows):
            return None
        return half_gap_epsilon([r.epsilon for r in self.rows], regrets, self.random_search_regret,
                                self.non_private_regret)


def half_gap_epsilon(epsilons: list[float], regrets: list[float], random: float, non_private: float) -> float | None:
    """The smallest ε from which on the regret stays at most halfway from random search to non-private.

    "From which on", not "first at": a mean over a few runs of a heavy-tailed regret can dip below the line
    once by chance at an ε that buys nothing."""
    target = 0.5 * (random + non_private)
    reached = None
    for epsilon, regret in sorted(zip(epsilons, regrets), reverse=True):
        if regret > target:
            break
        reached = epsilon
    return reached


def plan(setting: ReleaseSetting, epsilons: list[float], *, simulate_runs: int = 0, queries: int = 50,
         lengthscale: float | None = None, seed: int = 0) -> Plan:
    """The noise, the bound and (with ``simulate_runs`` > 0) the simulated regret at each ε; nothing is charged.

    ``lengthscale`` of the stand-in f in scaled units (default: (width/8)·√(d/2), module docstring).
    Each run draws its own stand-in table (seed + run) and the same table serves every ε and the baselines.
    """
    rows = []
    zeros = np.zeros((setting.n, setting.d))
    y_zeros = np.zeros(setting.n) if setting.measurements else None
    for epsilon in epsilons:
        parameters = setting.release(zeros, epsilon, seed, y_zeros).public_parameters()
        mu = release_mu(parameters)
        rows.append(PlanRow(epsilon, mu, noise_to_spread(parameters, setting),
                            random_search_multiple(setting.n, record_mu(mu, setting)), parameters))
    covers = ("every query of any modeler, adaptive or not (measurements are private)" if setting.measurements
              else "choices made from the released inputs alone (measurements are returned as computed)")
    unit = epsilon_for_ratio(setting, seed=seed)
    if simulate_runs <= 0:
        return Plan(setting, rows, queries, bound_covers=covers, unit_noise_epsilon=unit)

    lengthscale = lengthscale or setting.width / 8.0 * math.sqrt(setting.d / 2.0)
    regrets = np.empty((simulate_runs, len(epsilons)))
    random_regret, non_private = [], []
    for run in range(simulate_runs):
        X, f = stand_in_problem(setting, lengthscale, seed + run)
        random_regret.append(random_search_regret(f, queries))
        non_private.append(gp_ucb_regret(X, f, queries, input_noise_std=None, seed=run))
        y = _stand_in_measurements(f, setting.measurements)
        for j, epsilon in enumerate(epsilons):
            release = setting.release(X, epsilon, 1000 * (seed + run) + j, y)
            private_y = release.measurements
            regrets[run, j] = gp_ucb_regret(
                release.Z, f, queries, input_noise_std=release.noise_std, seed=run,
                answers=None if private_y is None else private_y.values,
                noise_floor=0.0 if private_y is None else private_y.noise_std**2)
    stderr = regrets.std(axis=0) / math.sqrt(simulate_runs)
    rows = [PlanRow(**{**vars(row), "regret": float(m), "regret_stderr": float(s)})
            for row, m, s in zip(rows, regrets.mean(axis=0), stderr)]
    return Plan(setting, rows, queries, float(np.mean(random_regret)), float(np.mean(non_private)), covers, unit)


def _stand_in_measurements(f: np.ndarray, option: MeasurementOption | None) -> np.ndarray | None:
    """The stand-in's measurements in the table's units: centred in [a, b] with std (b − a)/6 (clipped at ±3σ)."""
    if option is None:
        return None
    low, high = option.clip
    return 0.5 * (low + high) + f * (high - low) / 6.0


def _log_binomial(n: np.ndarray | int, k: int) -> np.ndarray:
    return gammaln(np.asarray(n) + 1.0) - gammaln(k + 1.0) - gammaln(np.asarray(n) - k + 1.0)
