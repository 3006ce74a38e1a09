"""A DP-SGD training calls the installed stop check every few hundred steps (otherwise a cancelled job's training
runs to its last epoch), stops at the check that raises, and trains the same weights when nothing stops it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shared.dp.noise import SeededNoise
from shared.learners import DPLogisticRegression
from shared.learners.dpsgd import STOP_CHECK_ROWS
from shared.learners.stopping import check_stop, stop_check


class Stop(Exception):
    pass


def data(n=300):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, 3)) / 2
    return X, (X.sum(axis=1) > 0.75).astype(int)


def fit(batch_size, epochs=4):
    X, y = data()
    model = DPLogisticRegression(learning_rate=0.1, batch_size=batch_size, epochs=epochs, noise_multiplier=1.0,
                                 clip_norm=1.0, optimizer="adam")
    return model.fit(X, y, SeededNoise(1), rng=np.random.default_rng(2))


@pytest.mark.parametrize("batch_size", [1, 7, 300])
def test_a_training_consults_the_check_every_few_hundred_rows_and_trains_as_without_it(batch_size):
    alone = fit(batch_size)
    calls = []
    with stop_check(lambda: calls.append(1)):
        checked = fit(batch_size)
    steps = 4 * round(300 / batch_size)
    assert len(calls) == math.ceil(steps / max(1, STOP_CHECK_ROWS // batch_size))
    np.testing.assert_array_equal(checked.coef_, alone.coef_)  # ran to its end, the same lots and noise
    assert checked.intercept_ == alone.intercept_


def test_a_training_stops_at_the_check_that_raises():
    calls = []

    def stop_at_the_third():
        calls.append(1)
        if len(calls) == 3:
            raise Stop

    with stop_check(stop_at_the_third), pytest.raises(Stop):
        fit(batch_size=1, epochs=100)  # 30,000 steps: 118 checks if it ran to the end
    assert len(calls) == 3


def test_outside_a_block_nothing_stops_and_the_block_restores_the_outer_check():
    check_stop()  # the default: never stops

    def outer():
        raise Stop

    with stop_check(outer):
        with stop_check(lambda: None):
            check_stop()
        with pytest.raises(Stop):
            check_stop()
    check_stop()
