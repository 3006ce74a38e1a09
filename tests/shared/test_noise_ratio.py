"""The noise-to-spread ratio: the planner's box formula and the estimate read off released rows."""

import math

import numpy as np
import pytest

from shared.algorithms.planner import ReleaseSetting, epsilon_for_ratio, plan
from shared.algorithms.planner import noise_to_spread as planner_ratio
from shared.releases.noise_ratio import meaning, noise_to_spread, release_noise_to_spread


def test_the_box_ratio_is_the_planners_and_jl_widens_the_spread():
    setting = ReleaseSetting(n=100, d=4, width=0.5, r=2)
    for projection in ("identity", "jl"):
        ratio = noise_to_spread(0.3, d=4, r=2, projection=projection, box_diameter=0.5 * 2.0)
        assert ratio.basis == "public box"
        assert ratio.value == pytest.approx(planner_ratio({"noise_std": 0.3, "projection": projection}, setting))
    identity = noise_to_spread(0.3, d=4, r=2, projection="identity", box_diameter=1.0).value
    assert identity == pytest.approx(0.3 / (0.5 / math.sqrt(12)))
    assert noise_to_spread(0.3, d=4, r=2, projection="jl", box_diameter=1.0).value == pytest.approx(identity / 2**0.5)


@pytest.mark.parametrize("ratio", [0.2, 2.0])
def test_without_a_box_the_ratio_is_read_off_the_released_rows(ratio):
    rng = np.random.default_rng(3)
    rows = rng.normal(0.0, 1.0, size=(40_000, 3))
    Z = rows + rng.normal(0.0, ratio, size=rows.shape)
    found = noise_to_spread(ratio, d=3, r=3, projection="identity", Z=Z)
    assert found.basis == "released rows"
    assert found.value == pytest.approx(ratio, rel=0.05)
    assert found.too_noisy == (ratio > 1)


def test_rows_no_more_spread_than_their_noise_give_an_infinite_ratio_and_the_warning_sentence():
    Z = np.random.default_rng(0).normal(0.0, 1.0, size=(1000, 2)) * 0.5
    found = noise_to_spread(1.0, d=2, r=2, projection="identity", Z=Z)
    assert math.isinf(found.value) and found.too_noisy and "∞" in found.text()
    assert found.sentence().startswith("Above 1") and "mostly fits noise" in found.sentence()
    assert meaning(0.1).startswith("Below 0.3")


def test_a_release_dict_without_noise_or_box_and_rows_has_no_ratio():
    release = {"noise_std": None, "dim": 2, "projection": None, "neighbouring_step": None, "feature_columns": ["a"]}
    assert release_noise_to_spread(release) is None
    release = {**release, "noise_std": 0.1, "projection": "identity",
               "neighbouring_step": {"box_diameter": 1.0, "features": [{}, {}]}}
    assert release_noise_to_spread(release).value == pytest.approx(0.1 / (1 / math.sqrt(2) / math.sqrt(12)))


def test_the_epsilon_for_unit_noise_gives_a_ratio_of_one_and_the_plan_states_it():
    setting = ReleaseSetting(n=500, d=3, width=1 / 3**0.5)
    needed = epsilon_for_ratio(setting)
    below, at, above = plan(setting, [needed / 2, needed, needed * 2]).rows
    assert below.noise_to_spread > 1.5 and at.noise_to_spread == pytest.approx(1.0, rel=0.02)
    assert above.noise_to_spread < 0.7
    assert plan(setting, [1.0]).unit_noise_epsilon == needed
