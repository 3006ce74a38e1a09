"""DPareto's acquisition as the authors' code runs it: GPflowOpt's HVPoI on the GP-mean front, in their transformed
and scaled space."""

import numpy as np
import pytest
from scipy.special import logit

from shared.algorithms.dpareto.authors import (
    AuthorsProposer,
    AuthorsTransform,
    authors_hvpoi,
    estimated_reference,
    probability_in_nondominated_cells,
)
from shared.algorithms.dpareto.optimizer import Hyperparameter, ParetoProblem, dpareto, random_search
from shared.algorithms.dpareto.pareto import pareto_front

FRONT = np.array([[0.0, 1.0], [1.0, 0.0]])
REFERENCE = np.array([2.0, 2.0])


def test_hypervolume_gain_of_the_mean_is_the_area_it_adds_inside_the_reference():
    # Mean (0.5, 0.5) dominates [0.5, 2]² (area 2.25); the front already dominates [0.5, 2]×[1, 2] ∪ [1, 2]×[0.5, 2]
    # inside it (0.5·1 + 1·1.5 = 2.0), so the gain is 0.25. With a tiny std the PoI is 1.
    alpha = authors_hvpoi([[0.5, 0.5]], [[1e-9, 1e-9]], FRONT, REFERENCE)
    assert alpha == pytest.approx([0.25], rel=1e-9)


def test_a_mean_dominated_by_the_front_or_beyond_the_reference_gains_nothing():
    alpha = authors_hvpoi([[1.5, 1.5], [2.5, -1.0], [-1.0, 2.5]], np.ones((3, 2)), FRONT, REFERENCE)
    assert alpha.tolist() == [0.0, 0.0, 0.0]


def test_probability_is_of_the_nondominated_cells_below_the_reference():
    mean, std = np.array([[0.5, 0.5]]), np.array([[1.0, 0.7]])
    rng = np.random.default_rng(0)
    draws = mean + std * rng.standard_normal((400_000, 2))
    dominated = np.any(np.all(draws[:, None, :] >= FRONT[None], axis=2), axis=1)
    inside = np.all(draws < REFERENCE, axis=1)
    monte_carlo = np.mean(~dominated & inside)
    exact = probability_in_nondominated_cells(mean, std, FRONT, REFERENCE)[0]
    assert exact == pytest.approx(monte_carlo, abs=3e-3)
    # Unbounded by the reference (the project's own PoI) it would be larger by the mass above r₂ or r₁:
    assert exact < np.mean(~dominated) - 0.02


def test_hvpoi_is_gain_times_probability_with_the_variance_floored():
    mean, std = np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])  # std 0 is floored at √1e-6
    expected = 0.25 * probability_in_nondominated_cells(mean, [[1.0, 1e-3]], FRONT, REFERENCE)[0]
    assert authors_hvpoi(mean, std, FRONT, REFERENCE) == pytest.approx([expected], rel=1e-12)


def test_reference_is_the_front_maximum_plus_twice_its_range_over_its_size():
    front = np.array([[0.0, 3.0], [1.0, 1.0], [2.0, 0.0]])
    assert estimated_reference(front) == pytest.approx([2.0 + 4.0 / 3.0, 3.0 + 2.0])


def test_transform_scales_by_the_initial_points_maxima():
    t = AuthorsTransform([[2.0, 0.01], [4.0, 0.05]], [np.e, np.e**2])
    assert t.inputs([[4.0, 0.05], [1.0, 0.025]]) == pytest.approx(np.array([[1.0, 1.0], [0.25, 0.5]]))
    assert t.raw_inputs([[0.25, 0.5]]) == pytest.approx(np.array([[1.0, 0.025]]))
    y = t.outputs([np.e**4, 1.0], [0.25, 0.5])
    assert y == pytest.approx(np.array([[2.0, logit(0.25)], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="initial ε above 1"):
        AuthorsTransform([[1.0]], [0.5, 0.9])


def _noisy_problem_data(seed=0, n=14):
    rng = np.random.default_rng(seed)
    X = rng.uniform([1.0, 0.1], [10.0, 2.0], size=(n, 2))
    epsilon = np.exp(3.0 * X[:, 1] - 1.0)
    error = np.clip(0.1 + 0.3 / X[:, 1] ** 0.5 / 2 + 0.05 * rng.standard_normal(n), 0.02, 0.9)
    return X, np.column_stack([epsilon, error])


def test_acquisition_uses_the_front_of_the_gp_means_and_its_estimated_reference():
    X, points = _noisy_problem_data()
    proposer = AuthorsProposer([1.0, 0.1], [10.0, 2.0], np.random.default_rng(1))
    alpha, front, reference = proposer.acquisition(X, points, initial=8)
    # The same fits from a twin proposer: a second call on ``proposer`` refits from its warm start and agrees only to
    # the optimiser's tolerance.
    twin = AuthorsProposer([1.0, 0.1], [10.0, 2.0], np.random.default_rng(1))
    models, Z = twin.surrogates(X, points, initial=8)
    means = np.column_stack([m.predict(Z) for m in models])
    assert front == pytest.approx(pareto_front(means))
    observed = pareto_front(proposer.transform.outputs(points[:, 0], points[:, 1]))
    assert not (front.shape == observed.shape and np.allclose(front, observed))  # noisy error: the fronts differ
    assert reference == pytest.approx(estimated_reference(front))
    C = proposer.transform.inputs(X[:3] * 0.97)
    predictions = [m.predict(C, return_std=True) for m in models]
    expected = authors_hvpoi(np.column_stack([p[0] for p in predictions]), np.column_stack([p[1] for p in predictions]),
                             front, reference)
    assert alpha(C) == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_transforms_are_set_from_the_initial_points_only():
    X, points = _noisy_problem_data()
    proposer = AuthorsProposer([1.0, 0.1], [10.0, 2.0], np.random.default_rng(1))
    proposer.surrogates(X, points, initial=5)
    assert proposer.transform.input_scale == pytest.approx(X[:5].max(axis=0))
    assert proposer.transform.privacy_scale == pytest.approx(np.log(points[:5, 0]).max())


def _integer_problem():
    def oracle(params):
        lot, rate = params["lot"], params["rate"]
        return float(np.exp(rate * 3.0) * 8.0 / lot), float(0.1 + 0.5 * np.exp(-rate) * (1 + lot / 64.0) / 3)

    space = (Hyperparameter("lot", 8, 64, integer=True), Hyperparameter("rate", 0.1, 2.0))
    return ParetoProblem("toy", space, oracle, (10.0, 1.0))


def test_dpareto_with_the_authors_acquisition_keeps_the_shared_start_and_the_domain():
    problem = _integer_problem()
    result = dpareto(problem, initial_points=6, iterations=3, rng=4, acquisition="authors")
    start = random_search(problem, evaluations=6, rng=4)
    assert [e.params for e in result.evaluations[:6]] == [e.params for e in start.evaluations]
    assert len(result.evaluations) == 9 and len(result.overhead_seconds) == 3
    for e in result.evaluations[6:]:
        assert 8 <= e.params["lot"] <= 64 and e.params["lot"] == round(e.params["lot"])
        assert 0.1 <= e.params["rate"] <= 2.0


def test_an_unknown_acquisition_is_refused():
    with pytest.raises(ValueError, match="acquisition must be one of"):
        dpareto(_integer_problem(), initial_points=3, iterations=1, rng=0, acquisition="gpflowopt")
