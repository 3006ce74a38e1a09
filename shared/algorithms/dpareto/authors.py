"""DPareto's acquisition as the authors' public code runs it (``dpareto/hypervolume_improvement/harness.py`` of
github.com/amzn/differential-privacy-bayesian-optimization, with GPflowOpt 0.1's ``HVProbabilityOfImprovement``).

What the harness does, and this module with it:

* **Inputs** are the raw hyperparameter values divided, per dimension, by their maximum over the k₀ initial points
  (no log scale: the learning rate and the lot size are searched linearly); the search box is the domain Λ divided
  the same way. Integer hyperparameters are rounded for the oracle only: the GPs see the continuous proposal.
* **Outputs**: privacy y₁ = log ε / c with c = max log ε over the initial points (fixed thereafter), utility
  y₂ = logit(error).
* **Surrogates**: one GP per output, Matérn-5/2 with ARD, zero prior mean. The privacy GP's noise variance is fixed
  at 0 (here 1e-10, a jitter: ε is a deterministic function of λ); the utility GP's starts at 0.01 and is fitted.
  Hyperparameters by marginal likelihood from 5 starts (GPflowOpt's ``optimize_restarts``): the previous optimum
  (at first GPflow's defaults: lengthscales 1, variance 1), the middle of the box and 3 random points.
* **Front**: the non-dominated set of the GP *means* at the evaluated inputs (GPflowOpt's ``_setup``), not of the
  observations.
* **Reference point**: estimated from that front, max + 2·range/size per output (``_estimate_reference``). The
  harness sets the transformed anti-ideal point as the reference, but ``_setup`` overwrites it before every use.
* **HVPoI** α(x) = I(μ(x)) · P(x): I is the hypervolume gained by adding the predicted mean μ(x) to the front,
  bounded by the reference; P is the probability that the prediction falls in the non-dominated region *below the
  reference*, Σ_cells Π_j (Φ_j(ub_j) − Φ_j(lb_j)) over GPflowOpt's 2-D cells [a_i, a_{i+1}) × (−∞, b_i), with
  a_0 = −∞, b_0 = r₂, a_{k+1} = r₁. Predictive variances are floored at 1e-6 (GPflow's jitter).
* **Maximisation**: 5,000 uniform random candidates in the scaled box, then L-BFGS-B (up to 1,000 iterations) from
  the best one (GPflowOpt's ``StagedOptimizer([MCOptimizer(domain, 5000), SciPyOptimizer(domain)])``); the gradient
  is taken by forward differences here (GPflowOpt's by TensorFlow). Where α vanishes at every candidate the first
  candidate wins, a uniform random point, as GPflowOpt's argmax does.

Differences kept: random restarts are uniform in the log-box of the fit's bounds (GPflow draws them from its
parameters' transformed N(0, 1)); hyperparameters stay inside wide bounds (GPflow's are unbounded).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from scipy.special import logit, ndtr

from shared.algorithms.dpareto.pareto import hypervolume_gain, pareto_front
from shared.gp.kernels import Matern52
from shared.gp.regression import GPRegressor, HyperparameterBounds, fit_hyperparameters

CANDIDATES = 5000
"""GPflowOpt's ``MCOptimizer(domain, 5000)`` in the harness."""
POLISH_ITERATIONS = 1000
"""GPflowOpt's ``SciPyOptimizer`` default ``maxiter``."""
RESTARTS = 5
"""GPflowOpt's ``Acquisition(optimize_restarts=5)``."""
VARIANCE_FLOOR = 1e-6
"""GPflow 0.5's ``settings.numerics.jitter_level``, GPflowOpt's floor on the candidates' predictive variances."""
PRIVACY_NOISE = 1e-10
"""The privacy GP's noise variance: the harness fixes it at 0; a jitter keeps the Cholesky factor finite."""
UTILITY_NOISE_START = 0.01
"""The utility GP's initial noise variance in the harness."""
ERROR_CLIP = 1e-6
BOUNDS = {"privacy": HyperparameterBounds((1e-3, 1e3), (1e-4, 1e4), (PRIVACY_NOISE, PRIVACY_NOISE)),
          "utility": HyperparameterBounds((1e-3, 1e3), (1e-4, 1e4), (1e-6, 1e2))}
FORWARD_STEP = float(np.sqrt(np.finfo(float).eps))


def estimated_reference(front: ArrayLike) -> NDArray:
    """GPflowOpt's reference point: the front's maximum plus twice its range over its size, per objective."""
    F = np.asarray(front, dtype=float).reshape(-1, 2)
    return F.max(axis=0) + 2.0 * (F.max(axis=0) - F.min(axis=0)) / len(F)


def probability_in_nondominated_cells(mean: ArrayLike, std: ArrayLike, front: ArrayLike,
                                      reference: ArrayLike) -> NDArray:
    """GPflowOpt's PoI in two dimensions: P[prediction in the non-dominated region and below ``reference``] for
    independent N(mean_j, std_j²), summed over the cells [a_i, a_{i+1}) × (−∞, b_i), i = 0 … k, of the front
    (a_1 < … < a_k, b_1 > … > b_k) with a_0 = −∞, b_0 = r₂ and a_{k+1} = r₁."""
    M = np.asarray(mean, dtype=float).reshape(-1, 2)
    S = np.asarray(std, dtype=float).reshape(-1, 2)
    F = pareto_front(np.asarray(front, dtype=float).reshape(-1, 2))
    r = np.asarray(reference, dtype=float)
    a = np.concatenate([[-np.inf], F[:, 0], [r[0]]])
    b = np.concatenate([[r[1]], F[:, 1]])
    cdf_first = ndtr((a[None, :] - M[:, :1]) / S[:, :1])
    cdf_second = ndtr((b[None, :] - M[:, 1:]) / S[:, 1:])
    return np.sum(np.diff(cdf_first, axis=1) * cdf_second, axis=1)


def authors_hvpoi(mean: ArrayLike, std: ArrayLike, front: ArrayLike, reference: ArrayLike) -> NDArray:
    """α = (hypervolume gained by adding the mean to ``front``, bounded by ``reference``) × the cells' PoI, as
    GPflowOpt's ``HVProbabilityOfImprovement`` computes it from the GP means' front (variances floored)."""
    M = np.asarray(mean, dtype=float).reshape(-1, 2)
    S = np.sqrt(np.maximum(np.asarray(std, dtype=float).reshape(-1, 2) ** 2, VARIANCE_FLOOR))
    return hypervolume_gain(M, front, reference) * probability_in_nondominated_cells(M, S, front, reference)


class AuthorsTransform:
    """The harness's fixed transforms, set from the k₀ initial points: inputs ÷ their per-dimension maximum,
    privacy log ε ÷ the largest initial log ε, error → logit(error)."""

    def __init__(self, initial_inputs: ArrayLike, initial_epsilons: ArrayLike) -> None:
        X0 = np.asarray(initial_inputs, dtype=float)
        self.input_scale = X0.max(axis=0)
        if np.any(self.input_scale <= 0):
            raise ValueError("the authors' input scaling needs positive hyperparameter values")
        self.privacy_scale = float(np.log(np.asarray(initial_epsilons, dtype=float)).max())
        if not self.privacy_scale > 0:
            # Every initial ε ≤ 1: dividing by a negative maximum would turn minimising ε into maximising it.
            raise ValueError("the authors' privacy scaling needs an initial ε above 1 (the largest log ε divides)")

    def inputs(self, X: ArrayLike) -> NDArray:
        return np.asarray(X, dtype=float) / self.input_scale

    def raw_inputs(self, Z: ArrayLike) -> NDArray:
        return np.asarray(Z, dtype=float) * self.input_scale

    def outputs(self, epsilon: ArrayLike, error: ArrayLike) -> NDArray:
        return np.column_stack([np.log(np.asarray(epsilon, dtype=float)) / self.privacy_scale,
                                logit(np.clip(np.asarray(error, dtype=float), ERROR_CLIP, 1.0 - ERROR_CLIP))])


class AuthorsProposer:
    """Proposes the next raw hyperparameter vector as the authors' harness does (module docstring).

    ``low``/``high`` bound the raw domain Λ per dimension; ``propose`` takes every evaluated raw input (the
    continuous proposals, not their rounding) with its (ε, error) and returns the next raw input."""

    def __init__(self, low: Sequence[float], high: Sequence[float], rng: np.random.Generator, *,
                 candidates: int = CANDIDATES, restarts: int = RESTARTS,
                 polish_iterations: int = POLISH_ITERATIONS) -> None:
        self.low, self.high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        self.rng, self.candidates, self.restarts, self.polish_iterations = rng, candidates, restarts, polish_iterations
        self.transform: AuthorsTransform | None = None
        self._previous: dict[str, tuple] = {}

    def _fit(self, Z: NDArray, y: NDArray, name: str) -> GPRegressor:
        d = Z.shape[1]
        noise = PRIVACY_NOISE if name == "privacy" else UTILITY_NOISE_START
        initial = self._previous.get(name, (Matern52(lengthscale=np.ones(d), variance=1.0), noise))
        fitted = fit_hyperparameters(Z, y, kernel="matern52", ard=True, bounds=BOUNDS[name],
                                     n_restarts=self.restarts - 2, rng=self.rng, prior_mean=0.0, initial=initial)
        self._previous[name] = (fitted.kernel, fitted.noise_variance)
        return GPRegressor(fitted.kernel, fitted.noise_variance, 0.0).fit(Z, y)

    def surrogates(self, X: ArrayLike, points: ArrayLike, initial: int) -> tuple[list[GPRegressor], NDArray]:
        """The two fitted GPs on the transformed data and the scaled inputs; the transforms are set from the first
        ``initial`` rows at the first call."""
        X, P = np.asarray(X, dtype=float), np.asarray(points, dtype=float).reshape(-1, 2)
        if self.transform is None:
            self.transform = AuthorsTransform(X[:initial], P[:initial, 0])
        Z, Y = self.transform.inputs(X), self.transform.outputs(P[:, 0], P[:, 1])
        return [self._fit(Z, Y[:, 0], "privacy"), self._fit(Z, Y[:, 1], "utility")], Z

    def acquisition(self, X: ArrayLike, points: ArrayLike, initial: int) -> tuple[Callable[[NDArray], NDArray],
                                                                                  NDArray, NDArray]:
        """α over scaled inputs, with the GP-mean front and the reference point it is measured against."""
        models, Z = self.surrogates(X, points, initial)
        front = pareto_front(np.column_stack([m.predict(Z) for m in models]))
        reference = estimated_reference(front)

        def alpha(C: NDArray) -> NDArray:
            predictions = [m.predict(C, return_std=True) for m in models]
            return authors_hvpoi(np.column_stack([p[0] for p in predictions]),
                                 np.column_stack([p[1] for p in predictions]), front, reference)

        return alpha, front, reference

    def propose(self, X: ArrayLike, points: ArrayLike, initial: int) -> NDArray:
        """The next raw input: the best of 5,000 uniform candidates in the scaled box, polished by L-BFGS-B."""
        alpha, _, _ = self.acquisition(X, points, initial)
        transform = self.transform
        assert transform is not None  # set by the acquisition's first call
        low, high = transform.inputs(self.low), transform.inputs(self.high)
        C = low + self.rng.random((self.candidates, len(low))) * (high - low)
        start = C[int(np.argmax(alpha(C)))]

        def negative_and_gradient(z: NDArray) -> tuple[float, NDArray]:
            steps = np.where(z + FORWARD_STEP * np.maximum(1.0, np.abs(z)) > high, -1.0, 1.0) * FORWARD_STEP * \
                np.maximum(1.0, np.abs(z))
            steps = (z + steps) - z
            values = alpha(np.vstack([z, z + np.diag(steps)]))
            return -values[0], -(values[1:] - values[0]) / steps

        result = minimize(negative_and_gradient, start, jac=True, method="L-BFGS-B", bounds=list(zip(low, high)),
                          options={"maxiter": self.polish_iterations})
        best = np.clip(result.x, low, high) if -result.fun > alpha(start[None, :])[0] else start
        return transform.raw_inputs(best)


def authors_loop(problem: Any, result: Any, proposer: AuthorsProposer, iterations: int,
                 record: Callable[[dict[str, float]], None]) -> None:
    """The BO iterations after the k₀ initial evaluations already in ``result``: propose a raw input, round the
    integer hyperparameters for the oracle, and ``record(params)`` it; the GPs keep the continuous proposal."""
    names = [h.name for h in problem.space]
    X = [[e.params[name] for name in names] for e in result.evaluations]
    initial = len(X)
    for _ in range(iterations):
        start = time.perf_counter()
        x = proposer.propose(X, result.points, initial)
        params = {h.name: _rounded(h, value) for h, value in zip(problem.space, x)}
        result.overhead_seconds.append(time.perf_counter() - start)
        record(params)
        X.append(list(x))


def _rounded(h: Any, value: float) -> float:
    value = min(max(float(value), h.low), h.high)
    return float(min(max(round(value), h.low), h.high)) if h.integer else value  # the harness's int(round(·))
