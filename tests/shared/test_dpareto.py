"""The DPareto loop and its baselines on the paper's SVT example (cheap oracle, exact front by grid)."""

import numpy as np
import pytest
from scipy.optimize._numdiff import approx_derivative
from threadpoolctl import threadpool_limits

from shared.algorithms.dpareto.optimizer import (
    HVPoIProposer,
    Hyperparameter,
    ParetoProblem,
    dpareto,
    estimated_reference,
    forward_difference_points,
    grid_search,
    random_search,
    surrogate_targets,
)
from shared.algorithms.dpareto.pareto import HVPoI, pareto_front
from shared.algorithms.dpareto.problems import svt_problem, table4_sampler


@pytest.fixture(autouse=True)
def single_threaded_blas():
    with threadpool_limits(1):  # 2 shared cores: threaded BLAS only spins in the small GP fits
        yield


@pytest.fixture(scope="module")
def svt():
    return svt_problem()


def test_hyperparameter_maps_round_trip_and_round_integers():
    h = Hyperparameter("lot", 8, 512, log=True, integer=True)
    assert h.from_unit(0) == 8 and h.from_unit(1) == 512 and h.from_unit(0.5) == 64
    g = Hyperparameter("rate", 1e-3, 1e-1, log=True)
    assert g.to_unit(g.from_unit(0.3)) == pytest.approx(0.3)


def test_table4_sampler_stays_in_table1_domain():
    rng = np.random.default_rng(0)
    draws = [table4_sampler(rng) for _ in range(300)]
    lots = np.array([d["lot_size"] for d in draws])
    assert lots.min() >= 8 and lots.max() <= 512 and 100 < np.median(lots) < 160
    assert all(5e-4 <= d["learning_rate"] <= 5e-2 and 0.1 <= d["noise_variance"] <= 16 for d in draws)


def test_dpareto_shares_initial_points_with_random_and_records_everything(svt):
    calls = []
    def progress(method, done, total, evaluation):
        calls.append((method, done, total))

    bo = dpareto(svt, initial_points=6, iterations=6, rng=3, progress=progress)
    rs = random_search(svt, evaluations=12, rng=3)
    assert [e.params for e in bo.evaluations[:6]] == [e.params for e in rs.evaluations[:6]]
    assert len(bo.evaluations) == 12 and len(bo.overhead_seconds) == 6
    assert calls[-1] == ("dpareto", 12, 12)
    trace = bo.hypervolume_trace()
    assert np.all(np.diff(trace) >= 0) and trace[-1] == pytest.approx(bo.hypervolume())
    for e in bo.evaluations:  # BO proposals stay inside Λ
        assert 1 <= e.params["C"] <= 30 and 1e-2 <= e.params["b"] <= 1e2
    front = bo.front()
    assert np.all(np.diff(front[:, 0]) > 0) and np.all(np.diff(front[:, 1]) < 0)
    assert [[e.epsilon, e.error] for e in bo.front_evaluations()] == front.tolist()
    assert bo.to_dict()["hypervolume"] == pytest.approx(bo.hypervolume())


def test_map_fn_evaluates_independent_points_and_keeps_the_serial_order(svt):
    batches = []

    def reversed_map(function, settings):
        """A stand-in for a cluster: evaluates the batch last-first, returns results in input order."""
        settings = list(settings)
        batches.append(len(settings))
        return [function(s) for s in settings[::-1]][::-1]

    serial = dpareto(svt, initial_points=5, iterations=2, rng=7)
    mapped = dpareto(svt, initial_points=5, iterations=2, rng=7, map_fn=reversed_map)
    assert batches == [5]  # the k₀ initial points in one batch; the HVPoI steps stay sequential
    assert [(e.params, e.epsilon, e.error) for e in mapped.evaluations] == \
        [(e.params, e.epsilon, e.error) for e in serial.evaluations]
    rs = random_search(svt, evaluations=4, rng=7, map_fn=reversed_map)
    grid = grid_search(svt, points_per_dimension=2, map_fn=reversed_map)
    assert batches == [5, 4, 4]
    serial_random = random_search(svt, evaluations=4, rng=7)
    serial_grid = grid_search(svt, points_per_dimension=2)
    assert [e.params for e in rs.evaluations] == [e.params for e in serial_random.evaluations]
    assert [e.params for e in grid.evaluations] == [e.params for e in serial_grid.evaluations]


@pytest.mark.parametrize("u", [np.array([0.3, 0.7, 0.1]), np.array([1.0, 0.0, 1.0 - 1e-9])])
def test_the_polish_gradient_is_scipys_forward_difference_from_one_batch(u):
    # The polish scores the d + 1 points in one batch; the gradient must be what scipy's own 2-point scheme
    # (one point at a time, stepping backwards at the cube's upper face) gives.
    def f(v):
        return np.sin(3.0 * v).sum() + v[0] * v[1] ** 2

    points, steps = forward_difference_points(u)
    values = np.array([f(p) for p in points])
    np.testing.assert_array_equal((values[1:] - values[0]) / steps,
                                  approx_derivative(f, u, method="2-point", bounds=(0.0, 1.0)))
    assert np.all((points >= 0.0) & (points <= 1.0))


def test_grid_search_covers_the_corners(svt):
    result = grid_search(svt, points_per_dimension=3)
    params = [(e.params["C"], e.params["b"]) for e in result.evaluations]
    assert len(params) == 9 and (1.0, 1e-2) in params and params[-1] == pytest.approx((30.0, 1e2))


def test_dpareto_finds_a_known_front_on_a_toy_problem():
    # ε = e^{4(1−x)}/20, error = x²·(0.5 + y) / 1.5: the front is y = 0, so every point with y > 0 is wasted.
    def oracle(p):
        return np.exp(4 * (1 - p["x"])) / 20, p["x"] ** 2 * (0.5 + p["y"]) / 1.5

    problem = ParetoProblem("toy", (Hyperparameter("x", 0, 1), Hyperparameter("y", 0, 1)), oracle)
    exact = grid_search(ParetoProblem("toy", problem.space[:1], lambda p: oracle({**p, "y": 0.0})),
                        points_per_dimension=400).hypervolume()
    bo = dpareto(problem, initial_points=5, iterations=15, rng=0)
    rs = random_search(problem, evaluations=20, rng=0)
    assert bo.hypervolume() >= 0.95 * exact and bo.hypervolume() > rs.hypervolume()


def test_a_proposal_never_repeats_an_evaluated_setting():
    # Integers round many points of the cube to one setting and the front's low-ε end sits on a corner: the best
    # proposal keeps rounding to a setting already evaluated, whose answer the oracle would only repeat.
    def oracle(p):
        return 0.1 * p["epochs"] / p["noise"], 1.0 / (1.0 + p["epochs"] + 0.1 * p["noise"])

    space = (Hyperparameter("epochs", 1, 3, integer=True), Hyperparameter("noise", 1, 3, integer=True))
    bo = dpareto(ParetoProblem("corner", space, oracle), initial_points=2, iterations=6, rng=0)
    settings = [(e.params["epochs"], e.params["noise"]) for e in bo.evaluations]
    assert all(settings[i] not in settings[:i] for i in range(2, len(settings))), settings


def test_the_transformed_reference_is_gpflowopts_estimate():
    # GPflowOpt's HVProbabilityOfImprovement._estimate_reference: max(front) + 2·(max − min)/|front|, per objective.
    front = np.array([[-2.0, 1.0], [0.0, -1.0], [1.0, -3.0]])
    assert estimated_reference(front).tolist() == pytest.approx([1.0 + 2 * 3.0 / 3, 1.0 + 2 * 4.0 / 3])


def test_the_transformed_space_scores_gain_in_log_and_logit_coordinates(svt):
    # The same fitted surrogates, two spaces: the objective space measures the gain against (10, 1) after exp/expit,
    # the transformed one in (log ε, logit error) against the estimated reference, so their proposals differ.
    evaluations = random_search(svt, evaluations=12, rng=0).evaluations
    U = np.array([svt.to_unit(e.params) for e in evaluations])
    points = np.array([[e.epsilon, e.error] for e in evaluations])
    proposals = {space: HVPoIProposer(2, svt.anti_ideal, np.random.default_rng(0), space=space).propose(U, points)
                 for space in ("objective", "transformed")}
    assert not np.allclose(proposals["objective"], proposals["transformed"])
    front = pareto_front(surrogate_targets(points))
    beyond = estimated_reference(front) + 0.1  # a predicted mean outside the reference box gains nothing there
    assert HVPoI(front, estimated_reference(front))(beyond[None, :], np.ones((1, 2)))[0][0] == 0.0
    with pytest.raises(ValueError, match="HVPoI space"):
        HVPoIProposer(2, svt.anti_ideal, np.random.default_rng(0), space="linear")


@pytest.mark.slow
def test_svt_dpareto_reaches_95_percent_of_exact_and_beats_random(svt):
    exact = grid_search(svt, points_per_dimension=200).hypervolume()
    wins, reached = 0, 0
    for seed in range(10):
        bo = dpareto(svt, initial_points=16, iterations=64, rng=seed).hypervolume()
        rs = random_search(svt, evaluations=80, rng=seed).hypervolume()
        wins += bo > rs
        reached += bo >= 0.95 * exact
    assert reached == 10 and wins >= 8
