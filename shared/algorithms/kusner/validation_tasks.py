"""Curator-side validation objectives f_V(λ) for DP Bayesian optimization (Kusner et al. 2015).

The learner is the paper's eq. (9): w_λ = argmin_w λ/2 ‖w‖² + (1/n) Σ ℓ(w, x_i, y_i) with the logistic
loss ℓ, trained on a (public, fixed) training set; f_V(λ) is a score on the (sensitive) validation set
V. scikit-learn's LogisticRegression minimises ½‖w‖² + C Σ ℓ, which is eq. (9) times Cn for
C = 1/(λn); no intercept, as in eq. (9). Rows have ℓ2 norm ≤ 1, so ℓ is 1-Lipschitz in w
(Assumption 2). The paper has no experiments, so the setup (datasets, grid, splits) is ours.

Scores:

* ``accuracy`` — validation accuracy (one record moves it by at most 1/m);
* ``soft_accuracy`` — 1 − (1/m) Σ g(w, x, y) with the sigmoid loss g = 1/(1 + e^(y wᵀx)), y ∈ {±1}: the
  "normalised sigmoid" of Assumption 2, L-Lipschitz in w with L = max‖x‖/4 ≤ 1/4 and 0 ≤ g ≤ g* = 1
  (Algorithm 3 needs a Lipschitz score; the constant 1 does not change any sensitivity).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

Score = Literal["accuracy", "soft_accuracy"]
SIGMOID_LIPSCHITZ = 0.25  # |d/dm 1/(1 + e^m)| ≤ 1/4, times ‖x‖ ≤ 1
SIGMOID_MAX = 1.0


@dataclass
class LogisticValidationTask:
    """f_V(λ) for L2-regularised logistic regression (eq. 9) trained on (X_train, y_train), scored on V.

    Labels are in {0, 1}. Call with a regularisation strength λ > 0, or use :meth:`at_log10` on the
    public grid of log10 λ values. Weights are cached per λ (the learner is deterministic).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    score: Score = "accuracy"
    max_iter: int = 5000
    tol: float = 1e-8  # the stability bounds of Theorem 7 are about the exact minimiser
    _weights: dict[float, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for X in (self.X_train, self.X_val):
            if np.linalg.norm(X, axis=1).max() > 1.0 + 1e-9:
                raise ValueError("rows must have l2 norm <= 1 (the logistic loss is then 1-Lipschitz in w)")

    @property
    def validation_size(self) -> int:
        return len(self.y_val)

    def weights(self, lam: float) -> np.ndarray:
        """w_λ of eq. (9), cached per λ."""
        lam = float(lam)
        if not lam > 0:
            raise ValueError(f"the regularisation strength must be positive, got {lam}")
        if lam not in self._weights:
            if len(np.unique(self.y_train)) == 1:
                self._weights[lam] = self._single_class_weights(lam)
            else:
                model = LogisticRegression(C=1.0 / (lam * len(self.y_train)), fit_intercept=False, tol=self.tol,
                                           solver="newton-cholesky", max_iter=self.max_iter)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.fit(self.X_train, self.y_train)
                self._weights[lam] = model.coef_.ravel()
        return self._weights[lam]

    def _single_class_weights(self, lam: float) -> np.ndarray:
        """Eq. (9) when every training label is the same (scikit-learn refuses one class; a small random
        training part can have one): λ/2 ‖w‖² + (1/n) Σ log(1 + e^(−s wᵀx_i)) with one sign s, by L-BFGS."""
        signed = (2.0 * self.y_train[0] - 1.0) * self.X_train

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            margins = signed @ w
            loss = 0.5 * lam * w @ w + np.mean(np.logaddexp(0.0, -margins))
            return loss, lam * w - signed.T @ expit(-margins) / len(margins)

        return minimize(objective, np.zeros(signed.shape[1]), jac=True, method="L-BFGS-B",
                        options={"gtol": self.tol, "ftol": 0.0, "maxiter": self.max_iter}).x

    def evaluate(self, lam: float, score: Score | None = None) -> float:
        """f_V(λ) under ``score`` (default: the task's)."""
        margins = self.X_val @ self.weights(lam)
        if (score or self.score) == "accuracy":
            return float(np.mean((margins > 0) == (self.y_val == 1)))
        return float(1.0 - np.mean(expit(-(2.0 * self.y_val - 1.0) * margins)))

    def __call__(self, lam: float) -> float:
        return self.evaluate(lam)

    def at_log10(self, log10_lambda: float) -> float:
        return self(10.0 ** float(log10_lambda))


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Each row divided by its ℓ2 norm (a per-record map: it uses no other record)."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def adult_task(score: Score = "accuracy") -> LogisticValidationTask:
    """UCI Adult: train on adult.data (32,561 rows), validate on adult.test (16,281), unit-norm a9a rows."""
    from shared.datasets.adult import load_adult

    X_train, y_train = load_adult("train")
    X_val, y_val = load_adult("test")
    return LogisticValidationTask(X_train, y_train, X_val, y_val, score)


def split_task(
    X: np.ndarray, y: np.ndarray, *, validation_fraction: float, rng: np.random.Generator, score: Score = "accuracy"
) -> LogisticValidationTask:
    """A random train/validation split of (X, y), prepared for eq. (9).

    Standardised with the training part's statistics (the training set is public in the paper's
    model; only validation rows are protected), a constant feature appended for the bias, and every row
    scaled to unit norm (a per-record map).
    """
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must lie strictly between 0 and 1, got {validation_fraction}")
    order = rng.permutation(len(y))
    cut = len(y) - round(validation_fraction * len(y))
    if cut < 2 or cut > len(y) - 1:
        raise ValueError("the split leaves an empty training or validation part; use more rows")
    train, val = order[:cut], order[cut:]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)

    def prepare(A: np.ndarray) -> np.ndarray:
        return unit_rows(np.hstack([(A - mean) / std, np.ones((len(A), 1))]))

    return LogisticValidationTask(prepare(X[train]), y[train], prepare(X[val]), y[val], score)


def breast_cancer_task(score: Score = "accuracy", seed: int = 0) -> LogisticValidationTask:
    """scikit-learn's breast-cancer data, split half/half at random (fixed ``seed``), see :func:`split_task`."""
    X, y = load_breast_cancer(return_X_y=True)
    return split_task(X, y, validation_fraction=0.5, rng=np.random.default_rng(seed), score=score)
