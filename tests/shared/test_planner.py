"""The privacy–utility planner: the issue's bound numbers, that the bound holds, exact random search, the curve."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from shared.algorithms.planner import (
    ReleaseSetting,
    half_gap_epsilon,
    noise_to_spread,
    plan,
    random_search_multiple,
    random_search_regret,
    release_mu,
)
from shared.dp.noise import SeededNoise
from shared.releases import PcaOption, gaussian_release, gdp_mu
from shared.releases.measurements import MeasurementOption


def test_loans_bound_is_the_issues_1_8_3_7_5_and_34_times_random_search():
    loans = ReleaseSetting(n=36_000, d=3, width=1 / math.sqrt(3))
    planned = plan(loans, [0.5, 1.0, 2.0, 4.0])
    assert [round(row.random_search_multiple, 1) for row in planned.rows] == [1.8, 3.0, 7.5, 34.1]
    assert all(row.parameters["projection"] == "identity" for row in planned.rows)
    assert "released inputs alone" in planned.bound_covers


def test_mu_of_a_composed_release_is_the_mu_its_epsilon_delta_allows():
    X = np.random.default_rng(0).uniform(size=(50, 4)) / 2
    release = gaussian_release(X, 3.0, 1e-6, 2, 0, noise=SeededNoise(0), projection="pca", pca=PcaOption(0.2, 1.0),
                               y=X.sum(axis=1), measurements=MeasurementOption((0.0, 2.0), 0.5))
    assert release_mu(release.public_parameters()) == pytest.approx(gdp_mu(3.0, 1e-6), rel=1e-9)


@pytest.mark.parametrize("mu", [0.5, 1.5])
def test_no_modeler_beats_the_bound_and_an_understated_mu_would_be_beaten(mu):
    """n rows released with unit Gaussian noise, the one target row shifted by μ (μ-GDP: its record moved one
    step). The strongest single pick, the largest released value, hits it with probability ≤ Φ(Φ⁻¹(1/n) + μ),
    i.e. at most n·Φ(Φ⁻¹(1/n) + μ) × random search; the bound for μ/2 is exceeded (the check has teeth)."""
    n, trials = 50, 200_000
    released = np.random.default_rng(1).standard_normal((trials, n))
    released[:, 0] += mu
    hit = np.mean(released.argmax(axis=1) == 0)
    se = math.sqrt(hit * (1 - hit) / trials)
    assert hit <= random_search_multiple(n, mu) / n + 4 * se
    assert hit > 1.0 / n + 4 * se  # the release does help: it is not a vacuous bound
    assert hit > random_search_multiple(n, mu / 2) / n + 4 * se


def test_random_search_regret_is_the_exact_expectation():
    values = np.random.default_rng(2).gamma(2.0, size=300)
    rng = np.random.default_rng(3)
    draws = [values.max() - values[rng.choice(300, 20, replace=False)].max() for _ in range(40_000)]
    assert random_search_regret(values, 20) == pytest.approx(np.mean(draws), abs=4 * np.std(draws) / 200)
    assert random_search_regret(values, 300) == 0.0


def test_noise_to_spread_compares_sigma_with_a_uniform_spread_over_the_box():
    setting = ReleaseSetting(n=100, d=4, width=2.0)
    identity = {"projection": "identity", "noise_std": 0.5}
    assert noise_to_spread(identity, setting) == pytest.approx(0.5 * math.sqrt(12) / 2.0)
    jl = ReleaseSetting(n=100, d=4, width=2.0, r=1)
    assert noise_to_spread({"projection": "jl", "noise_std": 0.5}, jl) == pytest.approx(0.5 * math.sqrt(12) / 2.0 / 2.0)


def test_simulated_curve_improves_with_epsilon_and_names_the_half_gap():
    setting = ReleaseSetting(n=400, d=2, width=10.0, measurements=MeasurementOption((-3.0, 3.0), 0.5))
    planned = plan(setting, [0.25, 4096.0], simulate_runs=3, queries=25, seed=4)
    low, high = planned.rows
    assert low.regret > high.regret
    assert planned.non_private_regret < planned.random_search_regret
    assert "every query" in planned.bound_covers
    assert planned.half_gap_epsilon == half_gap_epsilon([r.epsilon for r in planned.rows],
                                                        [r.regret for r in planned.rows],
                                                        planned.random_search_regret, planned.non_private_regret)
    # a box of width 10 in 2-D has diameter 10√2: a whole record is that many neighbouring steps
    assert low.random_search_multiple == pytest.approx(400 * norm.cdf(norm.ppf(1 / 400) + low.mu * 10 * math.sqrt(2)))


def test_the_bound_is_per_whole_record_so_a_box_wider_than_one_step_weakens_it():
    unit = plan(ReleaseSetting(n=36_000, d=2, width=1 / math.sqrt(2)), [1.0]).rows[0]
    wide = plan(ReleaseSetting(n=36_000, d=2, width=10.0), [1.0]).rows[0]
    assert unit.random_search_multiple == pytest.approx(random_search_multiple(36_000, unit.mu))
    assert wide.random_search_multiple == pytest.approx(random_search_multiple(36_000, wide.mu * 10 * math.sqrt(2)))
    assert wide.random_search_multiple > 100 * unit.random_search_multiple


def test_half_gap_is_where_the_curve_stays_below_the_midpoint_not_a_chance_dip():
    epsilons = [1, 2, 4, 8, 16]
    assert half_gap_epsilon(epsilons, [0.9, 0.3, 0.8, 0.4, 0.2], random=1.0, non_private=0.0) == 8
    assert half_gap_epsilon(epsilons, [0.9, 0.8, 0.7, 0.6, 0.55], random=1.0, non_private=0.0) is None
    assert half_gap_epsilon(epsilons, [0.1] * 5, random=1.0, non_private=0.0) == 1


@pytest.mark.parametrize("kwargs", [dict(n=1, d=2, width=1.0), dict(n=10, d=0, width=1.0), dict(n=10, d=2, width=0.0)])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        ReleaseSetting(**kwargs)
