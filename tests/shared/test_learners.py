"""DP learners: the noise convention of Algorithm 3, clipping, Adam, SVT (Algorithm 1), output perturbation."""

import numpy as np
import pytest

from shared.dp.noise import noise_source
from shared.dp.sparse_vector import f1_scores, sparse_vector_technique, svt_from_unit_noise
from shared.learners import DPLinearSVM, DPLogisticRegression, DPSGDClassifier
from shared.learners.output_perturbation import (
    OutputPerturbationLogisticRegression,
    gradient_tolerance,
    regularized_logistic_minimizer,
)


def test_noise_on_the_summed_gradient_has_std_sigma_times_2L():
    # With all-zero features and no intercept the clipped gradients vanish, so one SGD step moves w by
    # −η (1/m) σ Δ Z exactly: m · Δw / η has standard deviation σ · Δ, Δ ≈ 2L (the sum's replace-one sensitivity).
    d, m, eta, L, sigma = 20_000, 10, 0.5, 0.7, 3.0
    X, y = np.zeros((m, d)), np.arange(m) % 2
    model = DPSGDClassifier(learning_rate=eta, batch_size=m, epochs=1, noise_multiplier=sigma, clip_norm=L,
                            fit_intercept=False).fit(X, y, noise_source(0), rng=np.random.default_rng(0))
    assert model.steps_per_epoch(m) == 1
    assert np.std(-model.coef_ * m / eta) == pytest.approx(sigma * 2 * L, rel=0.02)


@pytest.mark.parametrize("m, features, intercept", [(1, 1, False), (64, 10, True), (512, 123, True)])
def test_sum_sensitivity_covers_floating_point_and_grid_and_costs_almost_nothing(m, features, intercept):
    """Δ = 2L'(1 + m γ_m) + √p · grid exceeds 2L (the exact-arithmetic sensitivity) by ≤ 1e-10 of it."""
    model = DPSGDClassifier(learning_rate=0.1, batch_size=m, epochs=1, noise_multiplier=1.5, clip_norm=0.7,
                            fit_intercept=intercept)
    safe = noise_source(None)
    sensitivity = model.sum_sensitivity(features)
    assert 2 * 0.7 < sensitivity < 2 * 0.7 * (1 + 1e-10)
    p = features + intercept
    assert model.noise_std(features, safe) == 1.5 * (sensitivity + np.sqrt(p) * safe.grid(sensitivity))
    assert model.noise_std(features, noise_source(0)) == 1.5 * sensitivity  # no grid, no slack


def test_clipping_bounds_every_step_without_noise():
    # One huge example: without clipping one step would move w by ‖x‖·|ℓ'|·η; with clipping by ≤ ηL/m.
    X = np.array([[1000.0, 0.0], [0.0, 0.0]])
    y = np.array([1, 0])
    model = DPLogisticRegression(learning_rate=1.0, batch_size=2, epochs=1, noise_multiplier=0.0, clip_norm=0.1,
                                 fit_intercept=True).fit(X, y, noise_source(0), rng=np.random.default_rng(0))
    step = np.append(model.coef_, model.intercept_)
    assert np.linalg.norm(step) <= 2 * 0.1 / 2 + 1e-12
    assert model.coef_[0] > 0  # it still moves the right way


@pytest.mark.parametrize("make, optimizer", [(DPLogisticRegression, "sgd"), (DPLogisticRegression, "adam"),
                                             (DPLinearSVM, "sgd")])
def test_learners_fit_a_separable_problem(make, optimizer):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5)) / 3
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) > 0.1).astype(int)
    model = make(learning_rate=0.5 if optimizer == "sgd" else 0.05, batch_size=50, epochs=5,
                 noise_multiplier=0.5, clip_norm=1.0, optimizer=optimizer)
    model.fit(X, y, noise_source(1), rng=np.random.default_rng(1))
    assert model.score(X, y) > 0.9
    assert set(np.unique(model.predict(X))) <= {0, 1}
    assert model.epsilon(2000, 1e-5) > 0


def test_learner_rejects_bad_hyperparameters():
    X, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ValueError):
        DPLogisticRegression(learning_rate=0.1, batch_size=20, epochs=1, noise_multiplier=1, clip_norm=1).fit(
            X, y, noise_source(0))
    with pytest.raises(ValueError):
        DPLogisticRegression(learning_rate=0.1, batch_size=2, epochs=1, noise_multiplier=1, clip_norm=1).fit(
            X, y + 2, noise_source(0))


def test_svt_stops_after_C_positive_answers_and_is_exact_without_noise():
    answers = np.array([[1, 0, 1, 1, 0, 1, 1.0]])
    zeros = np.zeros((1, 7))
    # With (almost) no noise SVT answers q exactly, up to the ⌈C⌉-th positive.
    np.testing.assert_array_equal(svt_from_unit_noise(answers, np.zeros(1), zeros, 1e-9, 2.0)[0],
                                  [1, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(svt_from_unit_noise(answers, np.zeros(1), zeros, 1e-9, 2.5)[0],
                                  [1, 0, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(svt_from_unit_noise(answers, np.zeros(1), zeros, 1e-9, 30)[0], answers[0])
    w = sparse_vector_technique(answers[0], 1e-9, 30, noise_source(0))
    np.testing.assert_array_equal(w, answers[0])


def test_svt_f1_degrades_with_noise():
    rng = np.random.default_rng(0)
    truth = np.zeros((200, 100))
    truth[:, :10] = 1
    truth = np.array([rng.permutation(row) for row in truth])
    rho, nu = rng.laplace(0.0, 1.0, 200), rng.laplace(0.0, 1.0, (200, 100))
    f1 = [f1_scores(truth, svt_from_unit_noise(truth, rho, nu, b, 10)).mean() for b in (0.01, 0.5, 5.0)]
    assert f1[0] == 1.0 and f1[0] > f1[1] > f1[2]
    assert f1_scores(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0])) == pytest.approx(0.5)


def test_output_perturbation_sensitivity_bounds_replace_one_change():
    rng = np.random.default_rng(0)
    n, d, gamma = 400, 5, 0.05
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] > 0).astype(int)
    w = regularized_logistic_minimizer(X, y, gamma)
    model = OutputPerturbationLogisticRegression(gamma, 1.0)
    worst = 0.0
    for i in range(20):  # replace row i by an adversarial row (norm 1, flipped label)
        X2, y2 = X.copy(), y.copy()
        X2[i] = -X[i] / np.linalg.norm(X[i])
        y2[i] = 1 - y[i]
        worst = max(worst, np.linalg.norm(regularized_logistic_minimizer(X2, y2, gamma) - w))
    assert 0 < worst <= 2 / (n * gamma) < model.sensitivity(n, d, noise_source(None)) <= 2 / (n * gamma) * (1 + 2e-6)
    # The minimiser is a stationary point of the objective to the tolerance the sensitivity includes.
    signs = 2 * y - 1
    grad = -(X.T @ (signs / (1 + np.exp(signs * (X @ w))))) / n + gamma * w
    assert np.linalg.norm(grad) <= gradient_tolerance(n)
    fitted = model.fit(X, y, noise_source(0))
    assert np.linalg.norm(fitted.coef_ - w) > 0 and fitted.score(X, y) > 0.5
    with pytest.raises(ValueError):
        model.fit(X * 2, y, noise_source(0))


@pytest.mark.parametrize("gamma", [1e-6, 1e-2, 1e2])
def test_minimizer_reaches_the_certified_gradient_tolerance_even_on_separable_data(gamma):
    # Separable rows drive w toward ‖w*‖ ~ 1/γ; a stopping rule on the Newton decrement (² < 1e-10) stops with
    # ‖∇f‖ = 1.3e-8 on Adult at γ = 1e-4, i.e. w off w* by 2e-4 of the sensitivity it is released with.
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.6, 0.8], [-0.6, -0.8]])
    y = np.array([1, 0, 1, 0])
    w = regularized_logistic_minimizer(X, y, gamma)
    signs = 2 * y - 1
    grad = -(X.T @ (signs / (1 + np.exp(signs * (X @ w))))) / 4 + gamma * w
    assert np.linalg.norm(grad) <= gradient_tolerance(4)


def test_output_perturbation_epsilon_is_the_gaussian_mechanism_at_the_widened_sensitivity():
    from shared.dp.accounting import gaussian_mechanism_epsilon

    model = OutputPerturbationLogisticRegression(0.01, 0.5)
    safe = noise_source(None)
    assert model.epsilon(1000, 8, 1e-6, safe) == gaussian_mechanism_epsilon(0.5, model.sensitivity(1000, 8, safe), 1e-6)
    assert model.epsilon(1000, 8, 1e-6, safe) > gaussian_mechanism_epsilon(0.5, 2 / (1000 * 0.01), 1e-6)
