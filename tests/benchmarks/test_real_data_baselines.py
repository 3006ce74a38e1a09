"""The reproductions' in-process loop (non-private baselines, timing) builds the surrogate as the product's loop
does: with answers that repeat (the tables' column evaluator), no row is asked twice."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
real_data_run = pytest.importorskip("real_data_run")

from modeler_client.runfile import RunSettings  # noqa: E402


def metadata(answers_repeat: bool):
    return real_data_run.in_process_metadata(300, 2, "maximize").model_copy(update={"answers_repeat": answers_repeat})


def test_the_in_process_loop_never_asks_a_row_twice_when_answers_repeat():
    # Heavy-tailed answers with little signal: the fit explains them as noise, and GP-UCB with repeats allowed
    # goes back to the best rows it has measured (the control below), as Algorithm 2 may.
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 2))
    y = 0.3 * np.sin(3 * X[:, 0]) + rng.standard_exponential(300) ** 2
    settings = RunSettings(iterations=60)
    repeats_allowed, _, _ = real_data_run.in_process_loop(X, metadata(False), settings, y, [0, 1, 2, 3, 4])
    assert len(set(repeats_allowed)) < len(repeats_allowed)
    assert real_data_run.in_process_metadata(300, 2, "maximize").answers_repeat  # what the baselines are given
    indices, _, _ = real_data_run.in_process_loop(X, metadata(True), settings, y, [0, 1, 2, 3, 4])
    assert len(indices) == 60 and len(set(indices)) == 60
