"""Ding et al.'s Algorithm 1: the elastic-step loop, the cap, and subsample-and-aggregate utilities."""

import math

import numpy as np
import pytest
from sklearn.neighbors import NearestCentroid

from shared.algorithms.ding.dptune import (
    ElasticSparseVector,
    GPBatchOptimiser,
    PrivateLogisticRegression,
    RandomBatchOptimiser,
    adaptive_select,
    constant_overhead_select,
    noiseless_iterations,
    partition,
    partition_utilities,
    suggested_cap,
    tune_and_train,
)
from shared.dp.noise import noise_source

# kϵ so large that the Laplace noise (scale 4/(kϵ) ≈ 4e-9) cannot flip any comparison below.
NOISELESS = dict(epsilon=1e9, rng=np.random.default_rng(0))


@pytest.mark.parametrize("j", range(1, 8))
def test_noiseless_world_takes_2j_plus_1_iterations_when_n_is_2_to_the_j_minus_1(j):
    # Lemma 1: j accepted steps 1, 2, …, 2^(j−1) reach u* exactly, then step = 2^j halves to 0 in j + 1.
    g = 0.01
    assert noiseless_iterations(u_star=(2**j - 1) * g + 1e-9, u0=0.0, g=g) == 2 * j + 1


def test_selection_with_vanishing_noise_is_the_noiseless_world():
    utilities = np.array([[0.30, 0.32], [0.71, 0.69], [0.55, 0.57], [0.695, 0.705]])  # means .31 .70 .56 .70
    g, u0 = 0.03, 0.05
    result = constant_overhead_select(utilities, u0=u0, g=g, max_iterations=100, **NOISELESS)
    assert result.iterations == noiseless_iterations(0.70, u0=u0, g=g)
    assert not result.truncated
    # The level climbs by multiples of g to the largest u0 + m·g ≤ u* = 0.70, i.e. 0.05 + 21·0.03 = 0.68.
    assert result.level == pytest.approx(u0 + math.floor((0.70 - u0) / g) * g)
    # The last accepted threshold is passed only by utilities ≥ it: the first of the two 0.70 rows in scan order.
    assert result.index == 1


def test_nothing_is_selected_when_every_utility_is_below_the_first_threshold():
    utilities = np.full((5, 3), 0.1)
    result = constant_overhead_select(utilities, u0=0.2, g=0.05, max_iterations=10, **NOISELESS)
    assert result.index is None
    assert result.iterations == 1  # step 1 → 0 at once
    assert result.level == 0.2


def test_the_cap_stops_the_loop_and_sets_the_cost():
    utilities = np.random.default_rng(1).uniform(size=(50, 4))
    result = constant_overhead_select(
        utilities, epsilon=0.25, u0=0.0, g=0.001, max_iterations=3, rng=noise_source(7)
    )
    assert result.iterations == 3
    assert result.truncated  # n ≈ 1000 needs about 20 iterations, so step ≠ 0 after 3
    assert result.epsilon_spent == pytest.approx(0.75)
    assert len(result.history) == 3


def test_same_seed_same_run_and_history_is_consistent():
    utilities = np.random.default_rng(2).uniform(size=(30, 5))
    kwargs = dict(epsilon=2.0, u0=0.0, g=0.02, max_iterations=200)
    first = constant_overhead_select(utilities, rng=noise_source(11), **kwargs)
    second = constant_overhead_select(utilities, rng=noise_source(11), **kwargs)
    assert (first.index, first.iterations, first.level) == (second.index, second.iterations, second.level)
    # Replay the state from the history: accept → level += g·step, step doubles; reject → step halves.
    level, step, selected = 0.0, 1, None
    for it in first.history:
        if it.accepted is None:
            step //= 2
        else:
            level, step, selected = level + 0.02 * step, step * 2, it.accepted
        assert (it.level, it.step) == (pytest.approx(level), step)
    assert selected == first.index and step == 0


def test_a_numpy_generator_is_accepted_and_reproducible():
    utilities = np.random.default_rng(3).uniform(size=(10, 2))
    kwargs = dict(epsilon=1.0, u0=0.0, g=0.05, max_iterations=100)
    a = constant_overhead_select(utilities, rng=np.random.default_rng(5), **kwargs)
    b = constant_overhead_select(utilities, rng=np.random.default_rng(5), **kwargs)
    assert (a.index, a.iterations) == (b.index, b.iterations)


@pytest.mark.parametrize(
    "utilities, kwargs, message",
    [
        (np.full((3, 2), 1.5), {}, r"\[0, 1\]"),
        (np.full(3, 0.5), {}, "k array"),
        (np.full((3, 2), 0.5), {"epsilon": 0.0}, "epsilon"),
        (np.full((3, 2), 0.5), {"g": 1.0}, "granularity"),
        (np.full((3, 2), 0.5), {"u0": 1.0}, "u0"),
        (np.full((3, 2), 0.5), {"max_iterations": 0}, "max_iterations"),
    ],
)
def test_bad_arguments_are_refused(utilities, kwargs, message):
    arguments = dict(epsilon=1.0, u0=0.0, g=0.1, max_iterations=10, rng=noise_source(0)) | kwargs
    with pytest.raises(ValueError, match=message):
        constant_overhead_select(utilities, **arguments)


def test_the_state_machine_returns_caller_labels_and_refuses_to_run_past_the_end():
    tuner = ElasticSparseVector(epsilon=1e9, k=1, u0=0.0, g=0.25, max_iterations=50, rng=noise_source(0))
    assert tuner.iterate([0.1, 0.9], labels=["a", "b"]) == "b"  # threshold 0.25: only "b" passes
    while not tuner.done:
        tuner.iterate([0.1, 0.9], labels=["a", "b"])
    assert tuner.result().index == "b" and tuner.level == pytest.approx(0.75)
    with pytest.raises(RuntimeError):
        tuner.iterate([0.5])


def test_suggested_cap_covers_the_noiseless_worst_case():
    for g in (0.1, 0.01, 0.001):
        worst = max(noiseless_iterations(u, u0=0.0, g=g) for u in np.linspace(0.0, 1.0, 997))
        assert suggested_cap(u0=0.0, g=g, k=10, epsilon=1.0) >= 2 * worst


def test_partition_is_disjoint_and_covers_every_row():
    parts = partition(103, 7, np.random.default_rng(0))
    joined = np.concatenate(parts)
    assert len(parts) == 7 and sorted(joined) == list(range(103))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def _two_blobs(n, rng):
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2)) + 2.0 * y[:, None]
    return X, y


def test_without_a_validation_set_one_changed_row_moves_only_its_own_part():
    # The 1/k sensitivity of u_s = mean over parts needs u_s^(i) to depend on part i alone.
    rng = np.random.default_rng(4)
    X, y = _two_blobs(300, rng)
    candidates = ["euclidean", "manhattan"]
    make = lambda metric: NearestCentroid(metric=metric)  # noqa: E731
    base = partition_utilities(X, y, candidates, make, k=5, rng=np.random.default_rng(9))
    assert base.shape == (2, 5) and np.all((base >= 0) & (base <= 1)) and base.mean() > 0.8
    parts = partition(300, 5, np.random.default_rng(9))
    row = next(r for r in parts[3][::-1] if y[r] == 0 and X[r].sum() < 2)  # a scored, well-classified row
    X2, y2 = X.copy(), y.copy()
    X2[row], y2[row] = -10.0, 1  # now a class-1 row deep in class 0: misclassified by every candidate
    moved = partition_utilities(X2, y2, candidates, make, k=5, rng=np.random.default_rng(9))
    changed = np.flatnonzero(np.any(moved != base, axis=0))
    assert list(changed) == [3]


def test_with_a_public_validation_set_every_part_scores_on_it():
    rng = np.random.default_rng(5)
    X, y = _two_blobs(200, rng)
    X_valid, y_valid = _two_blobs(100, rng)
    table = partition_utilities(
        X, y, ["euclidean"], lambda m: NearestCentroid(metric=m), k=4, rng=rng, validation=(X_valid, y_valid)
    )
    assert table.shape == (1, 4)
    # every entry is an accuracy on the 100 validation rows
    assert np.allclose(table * 100, np.round(table * 100))


def test_the_floating_point_safe_source_runs_the_selection():
    utilities = np.random.default_rng(6).uniform(size=(8, 4))
    result = constant_overhead_select(utilities, epsilon=1.0, u0=0.0, g=0.1, max_iterations=40, rng=None)
    assert 1 <= result.iterations <= 40
    assert result.index is None or 0 <= result.index < 8


def _smooth_landscape(n=60, k=8):
    grid = np.linspace(0.0, 1.0, n)[:, None]
    utility = 0.2 + 0.7 * np.exp(-((grid[:, 0] - 0.73) ** 2) / 0.01)  # one peak at 0.73
    return grid, np.repeat(utility[:, None], k, axis=1)


def test_adaptive_variant_only_trains_proposed_candidates_and_returns_its_labels():
    grid, table = _smooth_landscape()
    calls = []

    def evaluate(i):
        calls.append(i)
        return table[i]

    out = adaptive_select(
        evaluate, RandomBatchOptimiser(len(grid), np.random.default_rng(0)), batch_size=5, k=8,
        epsilon=1e9, u0=0.0, g=0.05, max_iterations=30, rng=noise_source(1),
    )
    assert len(calls) == len(set(calls)) == len(out.evaluated)  # each candidate trained at most once
    assert out.selection.index in out.evaluated
    assert out.selection.iterations <= 30


def test_gp_optimiser_fed_only_s_star_finds_near_the_peak():
    grid, table = _smooth_landscape()
    best = table.mean(axis=1).max()
    fidelities = []
    for seed in range(5):
        out = adaptive_select(
            lambda i: table[i], GPBatchOptimiser(grid, lengthscale=0.1, rng=seed), batch_size=4, k=8,
            epsilon=5.0, u0=0.0, g=0.02, max_iterations=60, rng=noise_source(100 + seed),
        )
        fidelities.append(0.0 if out.selection.index is None else table[out.selection.index].mean() / best)
    assert np.median(fidelities) >= 0.9


@pytest.mark.slow  # the DP-SGD noise calibration runs the RDP accountant ~10 times (~15–35 s)
def test_tune_and_train_charges_cap_times_epsilon_plus_the_final_training():
    rng = np.random.default_rng(8)
    X, y = _two_blobs(400, rng)
    X /= np.linalg.norm(X, axis=1).max()  # rows of norm ≤ 1, as DP-SGD's clipping assumes
    candidates = [PrivateLogisticRegression(learning_rate=lr, batch_size=50, epochs=2, clip_norm=1.0)
                  for lr in (1e-4, 0.5, 2.0)]
    tuned = tune_and_train(
        X, y, candidates, k=4, epsilon=0.5, u0=0.5, g=0.05, max_iterations=20,
        final_epsilon=2.0, final_delta=1e-5, noise=noise_source(3), rng=rng, private_parts=False,
    )
    assert tuned.selection.max_iterations == 20
    assert tuned.epsilon_spent == pytest.approx(20 * 0.5 + 2.0)
    assert tuned.delta_spent == 1e-5
    assert tuned.model.noise_multiplier > 0
    from shared.dp.accounting import dpsgd_epsilon

    assert dpsgd_epsilon(400, 50, 2, tuned.model.noise_multiplier, 1e-5) <= 2.0
