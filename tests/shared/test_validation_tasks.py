"""The curator-side learner of DP-BO: eq. (9) through scikit-learn, and Theorem 7's stability on real data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from shared.algorithms.kusner.validation_tasks import SIGMOID_LIPSCHITZ, breast_cancer_task


@pytest.fixture(scope="module")
def task():
    return breast_cancer_task("soft_accuracy")


def test_weights_minimise_equation_9(task):
    """∇[λ/2 ‖w‖² + (1/n) Σ log(1 + e^(−y wᵀx))] = λw − (1/n) Σ y x σ(−y wᵀx) vanishes at w_λ (C = 1/(λn))."""
    X, signs = task.X_train, 2.0 * task.y_train - 1.0
    for lam in (1e-3, 1e-2, 1.0):
        w = task.weights(lam)
        gradient = lam * w - X.T @ (signs * expit(-signs * (X @ w))) / len(signs)
        assert np.linalg.norm(gradient) < 1e-7
        assert np.linalg.norm(lam * w) > 1e-3  # not trivially zero: the two terms balance


def test_theorem_7_stability_holds_on_the_learner(task):
    """‖w_λ − w_λ′‖ ≤ (λ′ − λ)/(λλ′) (proof of Theorem 7) and |f(w_λ) − f(w_λ′)| ≤ L ‖w_λ − w_λ′‖."""
    lambdas = [1e-3, 3e-3, 1e-2, 0.1, 1.0]
    for lam, lam_prime in zip(lambdas, lambdas[1:]):
        gap = np.linalg.norm(task.weights(lam) - task.weights(lam_prime))
        assert gap <= (lam_prime - lam) / (lam * lam_prime)
        assert abs(task(lam) - task(lam_prime)) <= SIGMOID_LIPSCHITZ * gap + 1e-12


def test_scores_lie_in_the_unit_interval_and_accuracy_is_high(task):
    accuracy = task.evaluate(1e-3, "accuracy")
    assert 0.9 < accuracy <= 1.0
    assert 0.0 <= task(1e-3) <= 1.0
    assert task.validation_size == 284  # round(0.5 · 569), half to even


def test_rows_beyond_unit_norm_are_refused(task):
    with pytest.raises(ValueError, match="norm"):
        type(task)(task.X_train * 2, task.y_train, task.X_val, task.y_val)



def test_a_training_part_of_one_class_still_minimises_equation_9(task):
    """A small random split can leave one class in the training part; scikit-learn refuses it, eq. (9) does not."""
    one_class = type(task)(task.X_train[:20], np.ones(20, dtype=int), task.X_val, task.y_val)
    for lam in (1e-3, 1.0):
        w = one_class.weights(lam)
        gradient = lam * w - one_class.X_train.T @ expit(-(one_class.X_train @ w)) / 20
        assert np.linalg.norm(gradient) < 1e-7 and np.linalg.norm(w) > 0
    assert 0.0 <= one_class.evaluate(1e-3, "accuracy") <= 1.0
