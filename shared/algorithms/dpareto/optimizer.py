"""DPareto (Avent et al. 2020, Algorithm 2): map a DP learner's privacy–utility Pareto front by
multi-objective Bayesian optimization, with random-sampling and grid baselines.

The loop: evaluate k₀ random hyperparameter settings λ, then k times — fit independent GPs
(Matérn-5/2, ARD, hyperparameters by marginal likelihood) to log ε and logit(error) over the
hyperparameters mapped to the unit cube (log scale where the domain is), and evaluate the oracles at the
maximiser of HVPoI (:mod:`shared.algorithms.dpareto.pareto`). HVPoI is maximised by a dense uniform random search over
the cube followed by L-BFGS-B polishing from the best few candidates. When HVPoI is zero at every candidate
(the predicted mean is dominated everywhere) the candidate with the highest probability of improvement
is taken instead — a tie-break the paper does not specify. A proposal that rounds to a setting already
evaluated gives way to the best candidate that does not (the oracle would only repeat its answer).

Integer hyperparameters are optimised continuously and rounded before evaluation; the GPs see the
rounded values. Fronts are NOT differentially private (the paper's threat model): the utility oracle
reads the data directly, so results are for the curator's trusted analysts only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import expit, logit

from shared.algorithms.dpareto.authors import AuthorsProposer, authors_loop
from shared.algorithms.dpareto.pareto import HVPoI, hypervolume_2d, pareto_front, pareto_mask
from shared.gp.regression import FittedHyperparameters, GPRegressor, fit_hyperparameters

EPSILON_FLOOR = 1e-10
FIT_FTOL = 1e-6
"""L-BFGS-B stops the surrogates' fits when the negative log likelihood changes by less than this, relative
(~1e-3 nats at these sizes, far below its sampling noise); scipy's default 2.2e-9 took twice the evaluations."""
ERROR_CLIP = 1e-6


@dataclass(frozen=True)
class Hyperparameter:
    """One dimension of the domain Λ: [low, high], searched on a log scale when ``log``."""

    name: str
    low: float
    high: float
    log: bool = False
    integer: bool = False

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        value = self.low * (self.high / self.low) ** u if self.log else self.low + u * (self.high - self.low)
        return float(min(max(round(value), self.low), self.high)) if self.integer else float(value)

    def to_unit(self, value: float) -> float:
        if self.log:
            return math.log(value / self.low) / math.log(self.high / self.low)
        return (value - self.low) / (self.high - self.low)


@dataclass
class ParetoProblem:
    """A privacy–utility trade-off (Λ, P_δ, U_z): ``oracle(λ) -> (ε, error)`` with error = 1 − utility.

    ``sampler(rng) -> λ`` is the random-sampling distribution (uniform in the unit cube when None);
    DPareto's k₀ initial points come from it too, so both methods start from the same points.
    """

    name: str
    space: tuple[Hyperparameter, ...]
    oracle: Callable[[dict[str, float]], tuple[float, float]]
    anti_ideal: tuple[float, float] = (10.0, 1.0)
    sampler: Callable[[np.random.Generator], dict[str, float]] | None = None

    def from_unit(self, u: NDArray) -> dict[str, float]:
        return {h.name: h.from_unit(x) for h, x in zip(self.space, u)}

    def to_unit(self, params: dict[str, float]) -> NDArray:
        return np.array([h.to_unit(params[h.name]) for h in self.space])

    def sample(self, rng: np.random.Generator) -> dict[str, float]:
        return self.sampler(rng) if self.sampler else self.from_unit(rng.random(len(self.space)))


@dataclass
class Evaluation:
    params: dict[str, float]
    epsilon: float
    error: float
    seconds: float  # oracle time


@dataclass
class ParetoResult:
    """All evaluated points of one run, in order; ``overhead_seconds`` is the method's own time per
    proposal (GP fitting and acquisition for DPareto; excludes the oracles)."""

    method: str
    problem: str
    anti_ideal: tuple[float, float]
    evaluations: list[Evaluation] = field(default_factory=list)
    overhead_seconds: list[float] = field(default_factory=list)

    @property
    def points(self) -> NDArray:
        """(k, 2) array of (ε, error)."""
        return np.array([[e.epsilon, e.error] for e in self.evaluations]).reshape(-1, 2)

    def front(self) -> NDArray:
        return pareto_front(self.points)

    def front_evaluations(self) -> list[Evaluation]:
        """The evaluations on the front (hyperparameters included), sorted by ε."""
        on_front = [e for e, keep in zip(self.evaluations, pareto_mask(self.points)) if keep]
        return sorted(on_front, key=lambda e: (e.epsilon, e.error))

    def hypervolume(self, upto: int | None = None) -> float:
        return hypervolume_2d(self.points[:upto], self.anti_ideal)

    def hypervolume_trace(self) -> NDArray:
        """Hypervolume after each evaluation."""
        return np.array([self.hypervolume(k) for k in range(1, len(self.evaluations) + 1)])

    def to_dict(self) -> dict:
        return {**asdict(self), "hypervolume": self.hypervolume(),
                "front": [asdict(e) for e in self.front_evaluations()]}


Progress = Callable[[str, int, int, Evaluation], None]
MapFn = Callable[[Callable, Iterable], Iterable]


def _evaluate(problem: ParetoProblem, params: dict[str, float]) -> Evaluation:
    start = time.perf_counter()
    epsilon, error = problem.oracle(params)
    return Evaluation(dict(params), float(epsilon), float(error), time.perf_counter() - start)


def _setting_key(params: dict[str, float]) -> tuple:
    return tuple(sorted(params.items()))


def _record_all(result: ParetoResult, problem: ParetoProblem, settings: list[dict], total: int,
                progress: Progress | None, map_fn: MapFn = map, known: Iterable[Evaluation] = ()) -> None:
    """Evaluate independent settings through ``map_fn`` (``map``, or a cluster's map that returns results in
    input order) and record them in that order, so a parallel run equals the serial one. A setting with an
    evaluation in ``known`` takes that one instead of being evaluated again."""
    reuse = {_setting_key(e.params): e for e in known}
    fresh = iter(map_fn(partial(_evaluate, problem), [s for s in settings if _setting_key(s) not in reuse]))
    for setting in settings:
        evaluation = reuse[key] if (key := _setting_key(setting)) in reuse else next(fresh)
        result.evaluations.append(evaluation)
        if progress:
            progress(result.method, len(result.evaluations), total, evaluation)


def surrogate_targets(points: NDArray) -> NDArray:
    """(log ε, logit error): the fixed output transforms of §3.2 (ε floored, error clipped away from 0, 1)."""
    return np.column_stack([np.log(np.maximum(points[:, 0], EPSILON_FLOOR)),
                            logit(np.clip(points[:, 1], ERROR_CLIP, 1.0 - ERROR_CLIP))])


INVERSE_TRANSFORMS = (np.exp, expit)

HVPOI_SPACES = ("objective", "transformed")
"""Where HVPoI's hypervolume gain is measured. "objective": in (ε, error), against the problem's anti-ideal point.
"transformed": in the surrogates' (log ε, logit error), against a reference point estimated from the front there,
as the authors' code does (GPflowOpt's ``HVProbabilityOfImprovement``; the anti-ideal's logit(1) is infinite)."""


def estimated_reference(front: NDArray) -> NDArray:
    """GPflowOpt's reference point for HVPoI: the front's maximum plus twice its range over its size, per
    objective (``HVProbabilityOfImprovement._estimate_reference``)."""
    return front.max(axis=0) + 2.0 * (front.max(axis=0) - front.min(axis=0)) / len(front)


FORWARD_STEP = float(np.sqrt(np.finfo(float).eps))
"""scipy's 2-point finite-difference step for unit-cube inputs (rel_step · max(1, |u|) = rel_step)."""


def forward_difference_points(u: NDArray) -> tuple[NDArray, NDArray]:
    """The d + 1 points of a forward-difference gradient at u in [0, 1]^d and the steps taken, as scipy's
    '2-point' scheme under bounds takes them (a step that would leave the cube goes backwards)."""
    steps = np.where(u + FORWARD_STEP > 1.0, -FORWARD_STEP, FORWARD_STEP)
    steps = (u + steps) - u  # the step actually representable, as scipy uses it
    return np.vstack([u, u + np.diag(steps)]), steps


class HVPoIProposer:
    """Fits the two GP surrogates and proposes the next point of the unit cube by maximising HVPoI.

    Hyperparameters are searched from several starts (the previous optimum, the bounds' midpoint and
    ``restarts`` random points) at the first proposal and every ``full_search_every``-th; in between the
    previous optimum alone is polished, the data having grown by one point. The polish's finite-difference
    gradient scores its d + 1 points in one batch (one GP prediction per model, not d + 1). ``space`` says where
    the hypervolume gain is measured (:data:`HVPOI_SPACES`)."""

    def __init__(self, dim: int, anti_ideal: tuple[float, float], rng: np.random.Generator, *,
                 candidates: int = 1000, polish: int = 2, restarts: int = 1, full_search_every: int = 8,
                 space: str = "objective") -> None:
        if space not in HVPOI_SPACES:
            raise ValueError(f"HVPoI space must be one of {HVPOI_SPACES}, not {space!r}")
        self.dim, self.anti_ideal, self.rng, self.space = dim, anti_ideal, rng, space
        self.candidates, self.polish, self.restarts = candidates, polish, restarts
        self.full_search_every = full_search_every
        self._fitted: list[FittedHyperparameters | None] = [None, None]
        self._proposals = 0

    def _surrogates(self, U: NDArray, Y: NDArray) -> list[GPRegressor]:
        warm_only = self._proposals % self.full_search_every != 0
        models = []
        for j in range(2):
            previous = self._fitted[j]
            fitted = fit_hyperparameters(
                U, Y[:, j], kernel="matern52", ard=True, n_restarts=self.restarts, rng=self.rng,
                initial=(previous.kernel, previous.noise_variance) if previous else None, warm_start_only=warm_only,
                ftol=FIT_FTOL,
            )
            self._fitted[j] = fitted
            models.append(GPRegressor(fitted.kernel, fitted.noise_variance, fitted.prior_mean).fit(U, Y[:, j]))
        self._proposals += 1
        return models

    def propose(self, U: NDArray, points: NDArray, evaluated: Callable[[NDArray], bool] = lambda u: False) -> NDArray:
        """The point of highest acquisition value (HVPoI, or PoI where HVPoI vanishes) among the polished and random
        candidates that ``evaluated`` does not reject: a setting already evaluated (integers round many points of the
        cube to one, and the optimum often sits on a corner) would only repeat a known answer. When every candidate
        is rejected the best one is returned."""
        Y = surrogate_targets(points)
        models = self._surrogates(U, Y)
        front = pareto_front(Y)
        if self.space == "transformed":
            acquisition = HVPoI(front, estimated_reference(front))
        else:
            acquisition = HVPoI(front, self.anti_ideal, inverse_transforms=INVERSE_TRANSFORMS)

        def scores(X: NDArray) -> tuple[NDArray, NDArray]:
            predictions = [m.predict(X, return_std=True) for m in models]
            return acquisition(np.column_stack([p[0] for p in predictions]),
                               np.column_stack([p[1] for p in predictions]))

        X = self.rng.random((self.candidates, self.dim))
        alpha, poi = scores(X)
        use_poi = not np.any(alpha > 0)  # HVPoI vanishes everywhere: fall back to PoI
        values = poi if use_poi else alpha

        def negative_value_and_gradient(u: NDArray) -> tuple[float, NDArray]:
            points, steps = forward_difference_points(u)
            at = scores(points)[1 if use_poi else 0]
            return -at[0], -(at[1:] - at[0]) / steps

        order = np.argsort(values)[::-1]
        ranked = [(values[i], X[i]) for i in order]
        for start in X[order[: self.polish]]:
            result = minimize(negative_value_and_gradient, start, jac=True, method="L-BFGS-B",
                              bounds=[(0.0, 1.0)] * self.dim, options={"maxiter": 30})
            ranked.append((-result.fun, np.clip(result.x, 0.0, 1.0)))
        ranked.sort(key=lambda pair: -pair[0])  # stable: a polished point ties after the candidate it started from
        return next((u for _, u in ranked if not evaluated(u)), ranked[0][1])


ACQUISITIONS = ("hvpoi", "authors")
"""DPareto's proposal step: this module's HVPoI (:class:`HVPoIProposer`) or the authors' code's
(:mod:`shared.algorithms.dpareto.authors`)."""


def dpareto(
    problem: ParetoProblem,
    *,
    initial_points: int = 16,
    iterations: int = 64,
    rng: np.random.Generator | int | None = None,
    candidates: int = 1000,
    polish: int = 2,
    progress: Progress | None = None,
    map_fn: MapFn = map,
    hvpoi_space: str = "objective",
    acquisition: str = "hvpoi",
) -> ParetoResult:
    """Algorithm 2: k₀ = ``initial_points`` random settings, then k = ``iterations`` HVPoI steps, the hypervolume
    gain measured in ``hvpoi_space`` (:data:`HVPOI_SPACES`). ``acquisition="authors"`` runs the steps as the
    authors' public code does instead (:mod:`shared.algorithms.dpareto.authors`: their input scaling, output
    transforms, GP settings and GPflowOpt's HVPoI on the GP-mean front); ``hvpoi_space`` does not apply to it.

    The k₀ initial evaluations are independent and go through ``map_fn`` (e.g. a cluster's map); the
    HVPoI steps are sequential by nature. The oracle runs wherever ``map_fn`` sends it: state it mutates
    there does not come back."""
    rng = np.random.default_rng(rng)
    result = ParetoResult("dpareto", problem.name, problem.anti_ideal)
    total = initial_points + iterations
    initial = np.random.default_rng(rng.integers(2**63))  # the same stream random_search uses first
    _record_all(result, problem, [problem.sample(initial) for _ in range(initial_points)], total, progress, map_fn)
    if acquisition not in ACQUISITIONS:
        raise ValueError(f"acquisition must be one of {ACQUISITIONS}, not {acquisition!r}")
    if acquisition == "authors":
        authors = AuthorsProposer([h.low for h in problem.space], [h.high for h in problem.space], rng)
        authors_loop(problem, result, authors, iterations,
                     lambda params: _record_all(result, problem, [params], total, progress, known=result.evaluations))
        return result
    proposer = HVPoIProposer(len(problem.space), problem.anti_ideal, rng, candidates=candidates, polish=polish,
                             space=hvpoi_space)
    for _ in range(iterations):
        start = time.perf_counter()
        U = np.array([problem.to_unit(e.params) for e in result.evaluations])
        seen = {_setting_key(e.params) for e in result.evaluations}

        def evaluated(u: NDArray, seen: set[tuple] = seen) -> bool:
            return _setting_key(problem.from_unit(u)) in seen

        params = problem.from_unit(proposer.propose(U, result.points, evaluated))
        result.overhead_seconds.append(time.perf_counter() - start)
        _record_all(result, problem, [params], total, progress, known=result.evaluations)
    return result


def random_search(
    problem: ParetoProblem, *, evaluations: int, rng: np.random.Generator | int | None = None,
    progress: Progress | None = None, map_fn: MapFn = map, known: Iterable[Evaluation] = (),
) -> ParetoResult:
    """Random sampling from the problem's distribution; with the same seed its first points are
    DPareto's initial points. All evaluations are independent and go through ``map_fn``, except settings
    already evaluated in ``known`` (e.g. that DPareto run's: valid when the oracle is a deterministic
    function of the setting), which are taken from there."""
    rng = np.random.default_rng(rng)
    initial = np.random.default_rng(rng.integers(2**63))
    result = ParetoResult("random", problem.name, problem.anti_ideal)
    _record_all(result, problem, [problem.sample(initial) for _ in range(evaluations)], evaluations, progress, map_fn,
                known)
    return result


def grid_points_per_dimension(budget: int, dimensions: int) -> int:
    """The largest k with k^dimensions ≤ budget (at least 1): the finest regular grid within a budget."""
    k = 1
    while (k + 1) ** dimensions <= budget:
        k += 1
    return k


def grid_search(problem: ParetoProblem, *, points_per_dimension: int, progress: Progress | None = None,
                map_fn: MapFn = map) -> ParetoResult:
    """Every point of the regular grid with ``points_per_dimension`` values per dimension (evenly spaced
    on each dimension's scale, ends included), evaluated through ``map_fn``."""
    axes = np.linspace(0.0, 1.0, points_per_dimension) if points_per_dimension > 1 else np.array([0.5])
    grid = np.stack(np.meshgrid(*[axes] * len(problem.space), indexing="ij"), axis=-1).reshape(-1, len(problem.space))
    result = ParetoResult("grid", problem.name, problem.anti_ideal)
    _record_all(result, problem, [problem.from_unit(u) for u in grid], len(grid), progress, map_fn)
    return result
