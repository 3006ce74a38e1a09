"""shared.regret: the one best-so-far and simple regret every run, benchmark and chart uses."""

from __future__ import annotations

import numpy as np

from shared.regret import best_so_far, simple_regret


def test_best_so_far_follows_the_goal():
    np.testing.assert_array_equal(best_so_far([3.0, 1.0, 8.0], "maximize"), [3.0, 3.0, 8.0])
    np.testing.assert_array_equal(best_so_far([3.0, 1.0, 8.0], "minimize"), [3.0, 1.0, 1.0])
    assert best_so_far([], "maximize").size == 0


def test_an_unanswered_value_keeps_the_best_before_it():
    """A pending query (None/NaN) must not erase the best so far (np.maximum.accumulate would carry NaN on)."""
    np.testing.assert_array_equal(best_so_far([None, 2.0, float("nan"), 1.0, 5.0], "maximize"),
                                  [np.nan, 2.0, 2.0, 2.0, 5.0])
    np.testing.assert_array_equal(best_so_far([2.0, None, 1.0], "minimize"), [2.0, 2.0, 1.0])


def test_simple_regret_is_the_scaled_distance_to_the_optimum():
    np.testing.assert_allclose(simple_regret(np.array([1.0, 3.0]), 4.0, scale=2.0), [1.5, 0.5])
