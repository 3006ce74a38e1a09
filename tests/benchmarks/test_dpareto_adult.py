"""benchmarks/dpareto_adult.py's two "as the authors ran it" switches, on a problem with a recording oracle."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from shared.algorithms.dpareto.optimizer import ParetoProblem
from shared.algorithms.dpareto.problems import DPSGD_SPACE, table4_sampler
from shared.dp.accounting import dpsgd_epsilon

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.fixture(scope="module")
def dpareto_adult():
    """The benchmark, imported by the tests rather than at collection (it loads matplotlib)."""
    return pytest.importorskip("dpareto_adult")


N = 30_956
PARAMS = {"epochs": 2.0, "lot_size": 32.0, "learning_rate": 0.01, "noise_variance": 1.0, "clip_norm": 1.0}


def recording_problem(seen: list, epsilon=lambda p: dpsgd_epsilon(N, int(p["lot_size"]), int(p["epochs"]),
                                                                  math.sqrt(p["noise_variance"]), 1e-5)):
    """adult_dpsgd_problem's space, sampler and ε, with a constant error instead of a training."""
    def oracle(params):
        seen.append(dict(params))
        return epsilon(params), 0.25
    return ParetoProblem("adult-like", DPSGD_SPACE, oracle, sampler=table4_sampler)


def test_classic_conversion_replaces_the_problems_epsilon_and_guards_the_mapping(dpareto_adult):
    problem = dpareto_adult.with_conversion(recording_problem([]), "classic", N)
    # (2, 32, σ = 1) at N = 30,956: the authors' 1.04 instead of our 0.745.
    assert problem.oracle(PARAMS) == (pytest.approx(1.04, rel=0.01), 0.25)
    drifted = dpareto_adult.with_conversion(recording_problem([], epsilon=lambda p: 0.5), "classic", N)
    with pytest.raises(RuntimeError, match="privacy oracle changed"):
        drifted.oracle(PARAMS)
    same = recording_problem([])
    assert dpareto_adult.with_conversion(same, "tight", N) is same


def test_authors_noise_domain_bounds_the_multiplier_not_the_variance(dpareto_adult):
    seen = []
    problem = dpareto_adult.with_noise_domain(recording_problem(seen), "authors")
    assert [h.name for h in problem.space] == ["epochs", "lot_size", "learning_rate", "noise_multiplier", "clip_norm"]
    bounds = {h.name: (h.low, h.high) for h in problem.space}
    assert bounds["noise_multiplier"] == (0.1, 16.0)
    sample = problem.sample(np.random.default_rng(0))
    assert "noise_variance" not in sample and 0.1 <= sample["noise_multiplier"] <= 16.0
    z = 4.0
    problem.oracle({**{k: v for k, v in PARAMS.items() if k != "noise_variance"}, "noise_multiplier": z})
    assert seen[-1]["noise_variance"] == z**2  # the learner and accountant see σ = z
    table1 = recording_problem([])
    assert dpareto_adult.with_noise_domain(table1, "table1") is table1
