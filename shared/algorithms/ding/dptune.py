"""Constant-overhead private hyperparameter selection (Ding, Wu, Xu, Pan; their Algorithm 1).

Subsample and aggregate (lines 1–11): the training set is split into k disjoint parts, every candidate
is trained on every part, and its utility is the mean of the k per-part accuracies u_s^(i) ∈ [0, 1].
One record lives in one part, so each mean utility u_s moves by at most 1/k (their Lemma 2).

Elastic-step sparse vector (lines 12–34): starting from level u = u₀ and step = 1, every iteration
proposes the noisy threshold û = u + step·g + Lap(2/(kϵ)) and scans the candidates in order with fresh
noise γ_s ~ Lap(4/(kϵ)); the first s with u_s + γ_s ≥ û becomes s*, the level rises by step·g and the
step doubles; when nobody passes the step halves (⌊step/2⌋). The loop stops when step = 0.

Privacy. One iteration is AboveThreshold with query sensitivity 1/k, hence ϵ-DP (their Theorem 3,
part I). The paper bounds the number of iterations T = O(log((u* − u₀)/g)) only with high probability,
which gives an (ε, δ′) statement. We add a hard cap: the loop runs at most ``max_iterations``
iterations, so the selection is ``max_iterations · ϵ``-DP by basic composition of ϵ-DP steps (the
data-dependent stopping is a function of the released outputs, i.e. post-processing), with no δ′.
The cap, not the realised number of iterations, is what the ledger must be charged.

Noise comes from :mod:`shared.dp.noise` (floating-point-safe by default); a numpy ``Generator`` is
accepted for research and tests only and seeds the research noise source.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, Protocol

import numpy as np
from scipy.optimize import brentq

from shared.checks import positive
from shared.dp.accounting import dpsgd_epsilon
from shared.dp.mechanisms import summation_error
from shared.dp.noise import NoiseSource, noise_source
from shared.gp.ucb import GPUCB
from shared.learners import DPLogisticRegression, DPSGDClassifier
from shared.learners.stopping import check_stop

NO_SELECTION = -1  # how :func:`iteration_outputs` encodes "no candidate passed the threshold"


def as_noise_source(rng: NoiseSource | np.random.Generator | None) -> NoiseSource:
    """The noise source for ``rng``.

    ``None`` gives the floating-point-safe production source; a :class:`NoiseSource` is used as is; a
    numpy ``Generator`` only supplies a seed for the (not floating-point-safe) research source.
    """
    if isinstance(rng, np.random.Generator):
        return noise_source(int(rng.integers(2**63 - 1)))
    if rng is None:
        return noise_source(None)
    return rng


def iteration_outputs(
    mean_utilities: np.ndarray,
    *,
    level: float,
    step: int,
    g: float,
    k: int,
    epsilon: float,
    noise: NoiseSource,
    trials: int = 1,
) -> np.ndarray:
    """``trials`` independent outputs of one iteration (lines 16–29) from the same state.

    Each output is the first candidate s with u_s + Lap(4/(kϵ)) ≥ level + step·g + Lap(2/(kϵ)), or
    ``NO_SELECTION``. Drawing the noise of the candidates after the accepted one is harmless: it is
    never looked at. ``trials > 1`` serves privacy audits of the iteration's output distribution.
    The noise is the sampler's own ``add_laplace`` on the threshold and on the scores. The sensitivity
    1/k is widened twice in the calibration: by 2γ_k, because each score is a floating-point mean of k
    utilities in [0, 1] (off from the exact mean by ≤ γ_k, :func:`shared.dp.mechanisms.summation_error`),
    and, as in :func:`shared.dp.mechanisms.laplace_mechanism`, by one step of the grid the floating-point-safe
    sampler rounds its inputs to (together ~1e-13 of 1/k at most).
    """
    scores = np.asarray(mean_utilities, dtype=float)
    sensitivity = 1.0 / k + 2.0 * summation_error(k)
    grid = noise.grid(sensitivity)
    unit = (sensitivity + grid) / epsilon
    threshold = noise.add_laplace(np.full(trials, level + step * g), 2.0 * unit, grid)  # line 16
    noisy = noise.add_laplace(np.tile(scores, (trials, 1)), 4.0 * unit, grid)  # line 20
    passed = noisy >= threshold[:, None]  # line 21
    return np.where(passed.any(axis=1), passed.argmax(axis=1), NO_SELECTION)


@dataclass(frozen=True)
class Iteration:
    """What one iteration did: the candidate it accepted (or None) and the state it left."""

    accepted: int | None
    level: float
    step: int


@dataclass(frozen=True)
class Selection:
    """Result of :func:`constant_overhead_select`.

    ``index`` is s* (None when no threshold was ever passed); ``iterations`` the realised T;
    ``max_iterations`` the cap; ``truncated`` says the cap, not step = 0, ended the loop;
    ``epsilon_spent`` = ``max_iterations · ϵ`` is the selection's privacy cost.
    """

    index: int | None
    iterations: int
    max_iterations: int
    epsilon: float
    level: float
    truncated: bool
    history: tuple[Iteration, ...] = field(repr=False)

    @property
    def epsilon_spent(self) -> float:
        return self.max_iterations * self.epsilon


class ElasticSparseVector:
    """The state machine of lines 12–34: level u, step, s* and the iteration count T.

    Each :meth:`iterate` call is one ϵ-DP iteration over whatever candidates it is given (a fixed set
    for Algorithm 1, an optimiser's batch for the adaptive variant of §4.1); it returns s* after the
    iteration. Candidates are identified by the caller's labels so batches may differ between calls.
    """

    def __init__(
        self,
        *,
        epsilon: float,
        k: int,
        u0: float,
        g: float,
        max_iterations: int,
        rng: NoiseSource | np.random.Generator | None = None,
    ) -> None:
        positive(epsilon, "epsilon")
        if k < 1:
            raise ValueError(f"k (number of partitions) must be at least 1, got {k}")
        if not 0 <= u0 < 1:
            raise ValueError(f"u0 must lie in [0, 1), got {u0}")
        if not 0 < g < 1:
            raise ValueError(f"g (utility granularity) must lie in (0, 1), got {g}")
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
        self.epsilon, self.k, self.g, self.max_iterations = float(epsilon), int(k), float(g), int(max_iterations)
        self.noise = as_noise_source(rng)
        self.level = float(u0)  # u
        self.step = 1
        self.selected: Any = None  # s*
        self.history: list[Iteration] = []

    @property
    def iterations(self) -> int:
        return len(self.history)

    @property
    def done(self) -> bool:
        """Line 14 (step = 0) or the hard cap."""
        return self.step == 0 or self.iterations >= self.max_iterations

    def iterate(self, mean_utilities: Sequence[float] | np.ndarray, labels: Sequence[Any] | None = None) -> Any:
        """One iteration over candidates with these mean utilities (in scan order); returns s*."""
        if self.done:
            raise RuntimeError("the selection has finished (step reached 0 or the iteration cap)")
        scores = np.asarray(mean_utilities, dtype=float)
        if scores.ndim != 1 or scores.size == 0:
            raise ValueError("mean_utilities must be a non-empty 1-d array")
        position = int(
            iteration_outputs(
                scores, level=self.level, step=self.step, g=self.g, k=self.k, epsilon=self.epsilon, noise=self.noise
            )[0]
        )
        if position == NO_SELECTION:
            self.step //= 2  # line 31: elastic decrease
            accepted = None
        else:
            accepted = position if labels is None else labels[position]
            self.selected = accepted  # line 22
            self.level += self.g * self.step  # line 23: accumulate utility
            self.step *= 2  # line 25: elastic increase
        self.history.append(Iteration(accepted, self.level, self.step))
        return self.selected

    def result(self) -> Selection:
        return Selection(
            index=self.selected,
            iterations=self.iterations,
            max_iterations=self.max_iterations,
            epsilon=self.epsilon,
            level=self.level,
            truncated=self.step != 0,
            history=tuple(self.history),
        )


def constant_overhead_select(
    utilities: np.ndarray,
    *,
    epsilon: float,
    u0: float,
    g: float,
    max_iterations: int,
    rng: NoiseSource | np.random.Generator | None,
) -> Selection:
    """Algorithm 1, lines 12–34, on an |S| × k matrix of per-partition utilities in [0, 1].

    u_s is the row mean (sensitivity 1/k); the loop runs until step = 0 or ``max_iterations``.
    ``rng``: a :class:`shared.dp.noise.NoiseSource`, ``None`` (floating-point-safe production source) or a
    numpy ``Generator`` (seeds the research source; not floating-point-safe, research only).
    Cost: ``max_iterations · epsilon`` (pure DP), reported as ``Selection.epsilon_spent``.
    """
    table = np.asarray(utilities, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError("utilities must be a non-empty |S| x k array")
    if not np.all((table >= 0) & (table <= 1)):
        raise ValueError("per-partition utilities must lie in [0, 1]")
    tuner = ElasticSparseVector(
        epsilon=epsilon, k=table.shape[1], u0=u0, g=g, max_iterations=max_iterations, rng=rng
    )
    scores = table.mean(axis=1)  # line 9
    while not tuner.done:
        tuner.iterate(scores)
    return tuner.result()


def noiseless_iterations(u_star: float, *, u0: float, g: float) -> int:
    """T in the paper's non-randomized world (Definition 5, Lemma 1) for the best utility u*.

    The accept test there is u* ≥ u + step·g; returns the number of iterations until step = 0.
    """
    level, step, iterations = u0, 1, 0
    while step:
        iterations += 1
        if u_star >= level + step * g:
            level += step * g
            step *= 2
        else:
            step //= 2
    return iterations


def suggested_cap(*, u0: float, g: float, k: int, epsilon: float, slack: float = 2.0) -> int:
    """A cap that the loop rarely reaches: ``slack`` times the noiseless worst case over u* ∈ [u₀, 1]
    plus room for the noise, 8·⌈log₂(1 + 4/(kϵg))⌉ extra iterations (the noise scale in units of g).

    Lemma 1's worst case is 2(⌈log₂ n⌉ + m) ≤ 4 log₂(n + 1) + 2 with n = (1 − u₀)/g. This is a
    heuristic default; the guarantee comes from the cap itself, whatever value is chosen.
    """
    n = (1.0 - u0) / g
    noiseless = 4 * math.log2(n + 1) + 2
    noise_room = 8 * math.ceil(math.log2(1 + 4 / (k * epsilon * g)))
    return int(math.ceil(slack * noiseless + noise_room))


# --- subsample and aggregate (lines 1–11) ---------------------------------------------------------


class Classifier(Protocol):
    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...

    def score(self, X: np.ndarray, y: np.ndarray) -> float: ...


def partition(n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Line 1: k disjoint parts of {0, …, n−1} of near-equal size, by a data-independent permutation."""
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in [1, n={n}], got {k}")
    return np.array_split(rng.permutation(n), k)


def partition_utilities(
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[Any],
    make_model: Callable[[Any], Classifier],
    *,
    k: int,
    rng: np.random.Generator,
    validation: tuple[np.ndarray, np.ndarray] | None = None,
    holdout: float = 0.3,
    map_fn: Callable[[Callable[[Any], float], list[Any]], Iterable[float]] = map,
) -> np.ndarray:
    """Lines 1–11: the |S| × k table u_s^(i) = accuracy of candidate s trained on part i.

    ``validation`` (X_valid, y_valid) is the paper's setting: a public validation set scored by every
    part's model, so the 1/k sensitivity is with respect to the training set only. Without it each part
    is split into a fit portion and a ``holdout`` portion it is scored on; then u_s^(i) depends on part
    i alone and the 1/k sensitivity holds for the whole private dataset.

    The |S|·k cells are independent: ``map_fn(fn, cells)`` computes them (``map`` here; a job passes its
    ``ctx.map`` to spread them over a cluster). Every model is made by ``make_model`` here, in cell order,
    before any is fitted, so a model that draws randomness gets the same stream however the cells are spread.
    """
    X, y = np.asarray(X), np.asarray(y)
    cells = []
    for part in partition(len(y), k, rng):
        cut = len(part) if validation is not None else int(round(len(part) * (1 - holdout)))
        cells += [(make_model(candidate), part[:cut], part[cut:]) for candidate in candidates]
    utilities = list(map_fn(partial(_cell_utility, X, y, validation), cells))
    return np.asarray(utilities, dtype=float).reshape(k, len(candidates)).T


def _cell_utility(X: np.ndarray, y: np.ndarray, validation: tuple[np.ndarray, np.ndarray] | None,
                  cell: tuple[Classifier, np.ndarray, np.ndarray]) -> float:
    """One u_s^(i): the model fitted on its part's fit rows, scored on the part's held-out rows (or ``validation``)."""
    model, fit_rows, score_rows = cell
    X_score, y_score = validation if validation is not None else (X[score_rows], y[score_rows])
    model.fit(X[fit_rows], y[fit_rows])
    return float(model.score(X_score, y_score))


# --- the adaptive variant (§4.1) ------------------------------------------------------------------


class BatchOptimiser(Protocol):
    """What §4.1 calls the stateful machine: proposes candidate batches, sees only s* back."""

    def propose(self, q: int) -> list[int]: ...

    def feedback(self, batch: Sequence[int], selected: int | None) -> None: ...


class GPBatchOptimiser:
    """GP-UCB (``shared.gp.ucb.GPUCB``, batches by GP-BUCB) over a hyperparameter grid, fed the §4.1
    feedback: candidate i of the batch observes 1 if i = s* after the iteration and 0 otherwise."""

    def __init__(self, candidates: np.ndarray, *, lengthscale: float, noise_variance: float = 0.1,
                 delta: float = 0.1, rng: np.random.Generator | int | None = None) -> None:
        self.engine = GPUCB(candidates, lengthscale=lengthscale, signal_variance=1.0,
                            noise_variance=noise_variance, delta=delta, rng=rng)

    def propose(self, q: int) -> list[int]:
        return list(dict.fromkeys(self.engine.suggest_batch(q)))  # GP-BUCB may repeat an index

    def feedback(self, batch: Sequence[int], selected: int | None) -> None:
        for index in batch:
            self.engine.observe(index, 1.0 if index == selected else 0.0)


class RandomBatchOptimiser:
    """The non-adaptive reference: uniformly random batches, feedback ignored."""

    def __init__(self, n_candidates: int, rng: np.random.Generator) -> None:
        self.n_candidates, self.rng = n_candidates, rng

    def propose(self, q: int) -> list[int]:
        return [int(i) for i in self.rng.choice(self.n_candidates, size=min(q, self.n_candidates), replace=False)]

    def feedback(self, batch: Sequence[int], selected: int | None) -> None:
        pass


@dataclass(frozen=True)
class AdaptiveSelection:
    """:class:`Selection` of the adaptive run plus the candidates whose utilities were computed."""

    selection: Selection
    evaluated: tuple[int, ...]


def adaptive_select(
    evaluate: Callable[[int], np.ndarray],
    optimiser: BatchOptimiser,
    *,
    batch_size: int,
    k: int,
    epsilon: float,
    u0: float,
    g: float,
    max_iterations: int,
    rng: NoiseSource | np.random.Generator | None,
) -> AdaptiveSelection:
    """§4.1: each iteration the optimiser proposes a batch, one ϵ-DP iteration runs over the batch's
    mean utilities and only s* goes back. ``evaluate(i)`` returns candidate i's k per-part utilities
    (computed on first use, so only proposed candidates are ever trained). Privacy as in Algorithm 1:
    the batch depends on past outputs only, so the cap·ϵ bound holds by adaptive composition.
    """
    tuner = ElasticSparseVector(epsilon=epsilon, k=k, u0=u0, g=g, max_iterations=max_iterations, rng=rng)
    scores: dict[int, float] = {}
    while not tuner.done:
        batch = optimiser.propose(batch_size)
        for index in batch:
            if index not in scores:
                per_part = np.asarray(evaluate(index), dtype=float)
                if per_part.shape != (k,) or not np.all((per_part >= 0) & (per_part <= 1)):
                    raise ValueError(f"evaluate({index}) must return {k} utilities in [0, 1]")
                scores[index] = float(per_part.mean())
        selected = tuner.iterate([scores[i] for i in batch], labels=batch)
        optimiser.feedback(batch, selected)
    return AdaptiveSelection(tuner.result(), tuple(scores))


# --- the final private training (line 35) and the whole pipeline ---------------------------------


@lru_cache(maxsize=256)
def calibrate_noise_multiplier(n: int, batch_size: int, epochs: int, epsilon: float, delta: float) -> float:
    """The smallest DP-SGD noise multiplier σ with ``dpsgd_epsilon(n, batch_size, epochs, σ, δ) ≤ ε``
    (bisection on log σ; the accountant is monotone in σ), rounded up to 0.1 % so the target holds. Each of its
    accountant evaluations (14 at batch 1, 100 epochs, n = 1,350: 23 s on a loaded machine) starts with a stop
    check, so a cancelled job's calibration stops too (:mod:`shared.learners.stopping`)."""

    def excess(log_sigma: float) -> float:
        check_stop()
        return dpsgd_epsilon(n, batch_size, epochs, math.exp(log_sigma), delta) - epsilon

    low, high = math.log(0.05), math.log(2.0)
    while excess(low) < 0:
        low -= 1.0
    while excess(high) > 0:
        high += 1.0
    sigma = math.exp(brentq(excess, low, high, xtol=1e-4)) * 1.001
    if dpsgd_epsilon(n, batch_size, epochs, sigma, delta) > epsilon:  # a privacy post-condition: never assert
        raise RuntimeError(f"the calibrated noise multiplier {sigma} does not reach epsilon = {epsilon}")
    return sigma


@dataclass(frozen=True)
class PrivateLogisticRegression:
    """A candidate for DP-SGD logistic regression (``shared.learners.DPLogisticRegression``): the
    hyperparameters to tune. The noise multiplier is not one of them: it is calibrated to (ε, δ)."""

    learning_rate: float
    batch_size: int
    epochs: int
    clip_norm: float
    optimizer: str = "sgd"

    def learner(self, n: int, noise_multiplier: float) -> DPSGDClassifier:
        """The DP-SGD learner for n rows with this noise multiplier (0: plain clipped SGD)."""
        return DPLogisticRegression(learning_rate=self.learning_rate, batch_size=min(self.batch_size, n),
                                    epochs=self.epochs, noise_multiplier=noise_multiplier,
                                    clip_norm=self.clip_norm, optimizer=self.optimizer)

    def private_learner(self, n: int, epsilon: float, delta: float) -> DPSGDClassifier:
        """The DP-SGD learner on n rows whose training is (ε, δ)-DP (replace-one neighbours)."""
        sigma = calibrate_noise_multiplier(n, min(self.batch_size, n), self.epochs, epsilon, delta)
        return self.learner(n, sigma)


class PartTrainer:
    """Line 5 in the ``fit``/``score`` shape of :func:`partition_utilities`: PrivTrain(D_i, S_s, ε, δ)
    when ``private``, else Train(D_i, S_s) (the same clipped SGD without noise).

    The part models only feed utilities that the sparse vector then protects, so their noise is not a
    release: it is drawn from a seeded research source (OpenDP's exact sampler costs hundreds of times more a draw:
    benchmarks/results/regret_vs_epsilon_sampler_cost.json).
    ``rng`` is this model's own generator (one per cell, so cells may be fitted anywhere in any order).
    """

    def __init__(self, candidate: PrivateLogisticRegression, *, epsilon: float, delta: float,
                 rng: np.random.Generator, private: bool = True) -> None:
        self.candidate, self.epsilon, self.delta, self.rng, self.private = candidate, epsilon, delta, rng, private

    def fit(self, X: np.ndarray, y: np.ndarray) -> PartTrainer:
        n = len(y)
        learner = (self.candidate.private_learner(n, self.epsilon, self.delta) if self.private
                   else self.candidate.learner(n, 0.0))
        self.model = learner.fit(X, y, noise_source(int(self.rng.integers(2**63 - 1))), rng=self.rng)
        return self

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        return self.model.score(X, y)


@dataclass(frozen=True)
class TunedModel:
    """Algorithm 1 end to end: the selection, the privately trained model (None when nothing was
    selected) and the total cost ``cap·ϵ + ε_final`` with δ = δ_final (pure-DP selection adds no δ)."""

    selection: Selection
    candidate: PrivateLogisticRegression | None
    model: Any
    final_epsilon: float
    final_delta: float

    @property
    def epsilon_spent(self) -> float:
        return self.selection.epsilon_spent + (self.final_epsilon if self.model is not None else 0.0)

    @property
    def delta_spent(self) -> float:
        return self.final_delta if self.model is not None else 0.0


def tune_and_train(
    X: np.ndarray,
    y: np.ndarray,
    candidates: Sequence[PrivateLogisticRegression],
    *,
    k: int,
    epsilon: float,
    u0: float,
    g: float,
    max_iterations: int,
    final_epsilon: float,
    final_delta: float,
    noise: NoiseSource | np.random.Generator | None,
    rng: np.random.Generator,
    validation: tuple[np.ndarray, np.ndarray] | None = None,
    private_parts: bool = True,
    map_fn: Callable[[Callable[[Any], float], list[Any]], Iterable[float]] = map,
) -> TunedModel:
    """Algorithm 1: utilities by subsample and aggregate (PrivTrain on each part at (ε_final, δ_final)
    when ``private_parts``, else plain training with σ = 0), the capped selection with ``noise``, then
    DP-SGD on the whole training set with the selected hyperparameters at (ε_final, δ_final).
    ``rng`` only partitions and draws lots (not privacy noise); ``map_fn`` computes the candidates ×
    parts utilities (:func:`partition_utilities`)."""
    noise = as_noise_source(noise)

    def make(candidate: PrivateLogisticRegression) -> PartTrainer:
        cell_rng = np.random.default_rng(rng.integers(2**63))
        return PartTrainer(candidate, epsilon=final_epsilon, delta=final_delta, rng=cell_rng, private=private_parts)

    table = partition_utilities(X, y, candidates, make, k=k, rng=rng, validation=validation, map_fn=map_fn)
    selection = constant_overhead_select(table, epsilon=epsilon, u0=u0, g=g, max_iterations=max_iterations, rng=noise)
    if selection.index is None:
        return TunedModel(selection, None, None, final_epsilon, final_delta)
    chosen = candidates[selection.index]
    model = chosen.private_learner(len(y), final_epsilon, final_delta).fit(X, y, noise, rng=rng)  # line 35
    return TunedModel(selection, chosen, model, final_epsilon, final_delta)

