"""Pareto front, exact hypervolume and the HVPoI pieces, against brute force."""

import numpy as np
import pytest

from shared.algorithms.dpareto.pareto import (
    HVPoI,
    hvpoi,
    hypervolume_2d,
    hypervolume_gain,
    pareto_front,
    pareto_mask,
    probability_not_dominated,
)


def brute_front(P):
    keep = []
    for i, u in enumerate(P):
        dominated = any(np.all(v <= u) and np.any(v < u) for v in P)
        duplicate_earlier = any(np.array_equal(P[j], u) for j in range(i))
        if not dominated and not duplicate_earlier:
            keep.append(u)
    return np.array(sorted(map(tuple, keep)))


def monte_carlo_hypervolume(P, ref, rng, n=400_000):
    Z = rng.uniform(0, 1, (n, 2)) * ref
    dominated = np.zeros(n, bool)
    for p in P:
        dominated |= np.all(Z >= p, axis=1)
    return dominated.mean() * np.prod(ref)


def test_front_matches_brute_force_in_two_and_three_dimensions():
    rng = np.random.default_rng(0)
    for p in (2, 3):
        P = np.round(rng.random((200, p)), 1)  # rounding makes ties and duplicates
        np.testing.assert_array_equal(pareto_front(P), brute_front(P))
        assert pareto_mask(P).sum() == len(brute_front(P))


def test_hypervolume_small_example_and_monte_carlo():
    P = np.array([[1, 5], [2, 3], [3, 4], [4, 1], [2, 3], [7, 0.5]])
    # Front inside the box: (1,5), (2,3), (4,1); (7, 0.5) lies beyond the anti-ideal's first coordinate.
    assert hypervolume_2d(P, (6, 6)) == pytest.approx(1 * 1 + 2 * 3 + 2 * 5)
    assert hypervolume_2d(np.empty((0, 2)), (6, 6)) == 0.0
    rng = np.random.default_rng(1)
    Q = rng.random((30, 2)) * 3
    assert hypervolume_2d(Q, (3, 3)) == pytest.approx(monte_carlo_hypervolume(Q, np.array([3, 3]), rng), abs=0.02)


def test_hypervolume_gain_is_the_difference_of_hypervolumes():
    rng = np.random.default_rng(2)
    front = pareto_front(rng.random((12, 2)))
    candidates = rng.random((50, 2)) * 1.2
    expected = [hypervolume_2d(np.vstack([front, c]), (1, 1)) - hypervolume_2d(front, (1, 1)) for c in candidates]
    np.testing.assert_allclose(hypervolume_gain(candidates, front, (1, 1)), expected, atol=1e-12)
    assert np.any(np.asarray(expected) == 0) and np.any(np.asarray(expected) > 0)


def test_probability_not_dominated_matches_sampling():
    rng = np.random.default_rng(3)
    front = pareto_front(rng.random((8, 2)))
    mean, std = np.array([[0.4, 0.5], [0.9, 0.9]]), np.array([[0.2, 0.3], [0.05, 0.1]])
    exact = probability_not_dominated(mean, std, front)
    for m, s, p in zip(mean, std, exact):
        Z = m + s * rng.standard_normal((200_000, 2))
        dominated = np.zeros(len(Z), bool)
        for f in front:
            dominated |= np.all(Z >= f, axis=1)
        assert p == pytest.approx(1 - dominated.mean(), abs=0.005)


def test_hvpoi_is_gain_at_the_back_transformed_mean_times_poi():
    front_transformed = np.log(np.array([[0.5, 0.4], [1.0, 0.2], [3.0, 0.1]]))
    mean = np.log(np.array([[0.6, 0.15], [4.0, 0.5]]))  # the second one is dominated by the front
    std = np.full((2, 2), 0.3)
    alpha, poi = hvpoi(mean, std, front_transformed, (10, 1), inverse_transforms=(np.exp, np.exp))
    gain = hypervolume_gain(np.exp(mean), np.exp(front_transformed), (10, 1))
    np.testing.assert_allclose(alpha, gain * poi)
    assert alpha[0] > 0 and alpha[1] == 0 and 0 < poi[1] < poi[0] < 1
    # The acquisition built once and scored many times (DPareto's polish) gives the same numbers.
    acquisition = HVPoI(front_transformed, (10, 1), inverse_transforms=(np.exp, np.exp))
    for row in range(2):
        np.testing.assert_array_equal(acquisition(mean[row:row + 1], std[row:row + 1]),
                                      (alpha[row:row + 1], poi[row:row + 1]))
