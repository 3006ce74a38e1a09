"""The privacy–utility problems of the DPareto paper, as :class:`shared.algorithms.dpareto.optimizer.ParetoProblem`
objects.

* :func:`svt_problem` (§2.2): Algorithm 1 on m = 100 binary queries with exactly 10 positives;
  λ = (C ∈ [1, 30], b ∈ [1e-2, 1e2] log); ε in closed form; utility = mean F₁ over R = 50 runs, each
  with a random query order.
* :func:`output_perturbation_problem` (§2.2): output-perturbation logistic regression on Adult;
  λ = (γ ∈ [1e-4, 1] log, σ ∈ [0.1, 10] log); ε from the exact Gaussian mechanism at δ = 1e-6 for the
  sensitivity the safe release is calibrated to (2/(nγ) plus 10⁻⁶ of it and the grid slack);
  utility = mean test accuracy over R = 50 noise draws.
* :func:`adult_dpsgd_problem` (§4): DP-SGD / DP-Adam logistic regression or linear SVM on Adult over
  Table 1's domain (epochs, lot size, learning rate, noise variance σ², clipping norm), with Table 4's
  random-sampling distributions; ε by :func:`shared.dp.accounting.dpsgd_epsilon` at δ = 1e-5.

The oracles use *common random numbers*: one seeded set of unit noise draws (and query orders) is
reused for every λ, so each oracle is a deterministic function of λ and methods are compared on the
same function. That noise is research noise for measuring utility — nothing here is released.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache

import numpy as np

from shared.algorithms.dpareto.optimizer import Hyperparameter, ParetoProblem
from shared.datasets.adult import load_adult
from shared.dp.accounting import dpsgd_epsilon, svt_epsilon
from shared.dp.noise import NoiseSource, OpenDPNoise, noise_source
from shared.dp.sparse_vector import f1_scores, svt_from_unit_noise
from shared.learners.dpsgd import DPSGDClassifier, Loss, Optimizer
from shared.learners.output_perturbation import OutputPerturbationLogisticRegression, regularized_logistic_minimizer

ANTI_IDEAL = (10.0, 1.0)  # the paper's v† (§4.1): ε ≤ 10, any error


def svt_problem(*, queries: int = 100, positives: int = 10, runs: int = 50, seed: int = 0) -> ParetoProblem:
    """SVT with the F₁ utility; the same query orders and unit Laplace draws for every (C, b)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(queries)
    truth[:positives] = 1.0
    answers = np.array([rng.permutation(truth) for _ in range(runs)])
    unit = np.random.default_rng(int(rng.integers(2**31)))  # simulation draws: nothing is released
    threshold_noise, query_noise = unit.laplace(0.0, 1.0, runs), unit.laplace(0.0, 1.0, (runs, queries))

    def oracle(params: dict[str, float]) -> tuple[float, float]:
        bound, level = params["C"], params["b"]
        released = svt_from_unit_noise(answers, threshold_noise, query_noise, level, bound)
        return svt_epsilon(level, bound), 1.0 - float(f1_scores(answers, released).mean())

    space = (Hyperparameter("C", 1.0, 30.0), Hyperparameter("b", 1e-2, 1e2, log=True))
    return ParetoProblem("svt", space, oracle, ANTI_IDEAL)


def output_perturbation_problem(*, runs: int = 50, delta: float = 1e-6, seed: int = 0) -> ParetoProblem:
    """Output-perturbation logistic regression on Adult (raises ``DatasetUnavailable`` without it)."""
    X, y = load_adult("train")
    X_test, y_test = load_adult("test")
    n, d = X.shape
    unit = np.random.default_rng(seed).normal(0.0, 1.0, (d, runs))  # simulation draws: nothing is released
    noise_margins = X_test @ unit  # test margins of the unit noise directions, (n_test, R)
    correct_sign = 2.0 * y_test - 1.0

    @cache
    def clean_margins(regularization: float) -> np.ndarray:
        return X_test @ regularized_logistic_minimizer(X, y, regularization)

    def oracle(params: dict[str, float]) -> tuple[float, float]:
        gamma, sigma = params["gamma"], params["sigma"]
        margins = clean_margins(gamma)[:, None] + sigma * noise_margins
        accuracy = float(np.mean((margins > 0) == (correct_sign[:, None] > 0)))
        epsilon = OutputPerturbationLogisticRegression(gamma, sigma).epsilon(n, d, delta, OpenDPNoise())
        return epsilon, 1.0 - accuracy

    space = (Hyperparameter("gamma", 1e-4, 1.0, log=True), Hyperparameter("sigma", 0.1, 10.0, log=True))
    return ParetoProblem("output_perturbation", space, oracle, ANTI_IDEAL)


TABLE_1_LEARNING_RATES = (5e-4, 5e-2)
TABLE_1_ROWS = 32_561
"""Adult's training rows (adult.data), the table Table 1's learning rates were chosen for."""
MAX_LEARNING_RATE = 10.0


def learning_rates_for(n_train: int) -> tuple[float, float]:
    """Table 1's learning-rate range scaled by 32,561 / ``n_train`` (never below Table 1's, its top at most 10).

    An epoch is round(n/m) steps, so on n rows the weights move about n/32,561 as far per epoch as on Adult's: on a
    few hundred rows Table 1's rates leave every learner at its starting point, the majority class. Scaling the rates
    keeps the distance per epoch. The learning rate does not enter ε (:func:`dpsgd_privacy`), and n_train is public
    (n and the held-out fraction are), so this default changes no privacy figure.
    """
    low, high = TABLE_1_LEARNING_RATES
    scale = min(max(1.0, TABLE_1_ROWS / n_train), MAX_LEARNING_RATE / high)
    return low * scale, high * scale


def dpsgd_space(
    *,
    max_epochs: int = 64,
    lot_size: tuple[int, int] = (8, 512),
    learning_rate: tuple[float, float] = TABLE_1_LEARNING_RATES,
    noise_variance: tuple[float, float] = (0.1, 16.0),
    clip_norm: tuple[float, float] = (0.1, 4.0),
) -> tuple[Hyperparameter, ...]:
    """DP-SGD's hyperparameters λ as DPareto searches them; the defaults are Table 1's ADULT rows."""
    return (
        Hyperparameter("epochs", 1, max_epochs, integer=True),
        Hyperparameter("lot_size", *lot_size, log=True, integer=True),
        Hyperparameter("learning_rate", *learning_rate, log=True),
        Hyperparameter("noise_variance", *noise_variance, log=True),
        Hyperparameter("clip_norm", *clip_norm, log=True),
    )


DPSGD_SPACE = dpsgd_space()


def dpsgd_learner(params: dict[str, float], *, loss: Loss, optimizer: Optimizer) -> DPSGDClassifier:
    """λ → the learner. Table 1 tunes the noise *variance* σ²; the learner's noise multiplier is σ."""
    return DPSGDClassifier(learning_rate=params["learning_rate"], batch_size=int(params["lot_size"]),
                           epochs=int(params["epochs"]), noise_multiplier=float(np.sqrt(params["noise_variance"])),
                           clip_norm=params["clip_norm"], loss=loss, optimizer=optimizer)


def dpsgd_privacy(params: dict[str, float], n: int, delta: float, *, conversion: str = "tight") -> float:
    """ε of one training at λ on n rows (:func:`shared.dp.accounting.dpsgd_epsilon`)."""
    return dpsgd_epsilon(n, int(params["lot_size"]), int(params["epochs"]), float(np.sqrt(params["noise_variance"])),
                         delta, conversion=conversion)


def dpsgd_oracle(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    *,
    loss: Loss,
    optimizer: Optimizer,
    delta: float,
    draws: Callable[[], Iterable[tuple[NoiseSource, np.random.Generator]]],
) -> Callable[[dict[str, float]], tuple[float, float]]:
    """DPareto's oracle for DP-SGD: λ → (ε, test error), the error averaged over the trainings ``draws()``
    gives noise for (one (noise source, generator) pair per training)."""
    (X, y), (X_test, y_test) = train, test

    def oracle(params: dict[str, float]) -> tuple[float, float]:
        model = dpsgd_learner(params, loss=loss, optimizer=optimizer)
        accuracies = [model.fit(X, y, noise, rng=rng).score(X_test, y_test) for noise, rng in draws()]
        return dpsgd_privacy(params, len(X), delta), 1.0 - float(np.mean(accuracies))

    return oracle


def _shifted_exponential(rng: np.random.Generator, rate: float, shift: float, low: float, high: float) -> float:
    while not low <= (value := shift + rng.exponential(1.0 / rate)) <= high:
        pass
    return float(value)


def table4_sampler(rng: np.random.Generator) -> dict[str, float]:
    """Table 4's random-sampling distributions for ADULT, restricted to Table 1's domain (Table 4 accepts
    learning rates up to 1e-1, Table 1 stops at 5e-2; all methods must search the same Λ)."""
    while not 8 <= (lot := round(rng.normal(128.0, 64.0))) <= 512:
        pass
    return {
        "epochs": float(rng.integers(1, 65)),
        "lot_size": float(lot),
        "learning_rate": _shifted_exponential(rng, 10.0, 1e-3, 1e-3, 5e-2),
        "noise_variance": _shifted_exponential(rng, 0.1, 0.1, 0.1, 16.0),
        "clip_norm": _shifted_exponential(rng, 0.1, 0.1, 0.1, 4.0),
    }


def adult_dpsgd_problem(
    loss: Loss = "logistic", optimizer: Optimizer = "sgd", *, runs: int = 1, delta: float = 1e-5, seed: int = 0,
    train_rows: int | None = None,
) -> ParetoProblem:
    """DP-SGD/DP-Adam on Adult: ``loss`` "logistic" (LogReg) or "hinge" (SVM), ``optimizer`` "sgd"/"adam".

    The noise variance σ² of Table 1 is the hyperparameter; the learner's noise multiplier is σ.
    Utility = mean test accuracy over ``runs`` trainings (seeded lots and noise, the same per λ). Training uses
    the first ``train_rows`` rows of adult.data (all when None); ε is accounted for that many.
    """
    draws = lambda: [(noise_source(seed + r), np.random.default_rng(seed + r)) for r in range(runs)]  # noqa: E731
    X, y = load_adult("train")
    oracle = dpsgd_oracle((X[:train_rows], y[:train_rows]), load_adult("test"), loss=loss, optimizer=optimizer,
                          delta=delta, draws=draws)
    name = f"{'logreg' if loss == 'logistic' else 'svm'}_{optimizer}"
    return ParetoProblem(name, DPSGD_SPACE, oracle, ANTI_IDEAL, sampler=table4_sampler)
