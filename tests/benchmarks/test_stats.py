"""benchmarks/stats.py: the paired tests, Holm's correction, power and the verdict rule, on cases with known answers."""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import stats


def test_sign_flip_enumeration_gives_the_exact_tail():
    # three positive differences: only the all-plus flip reaches the observed sum, 1 of 8
    assert stats.sign_flip_p_value([1.0, 2.0, 3.0], alternative="greater") == (0.125, "exact enumeration")
    # 1 + 2 − 3 = 0: the flips' sums are −6, −4, −2, 0, 0, 2, 4, 6, five of them ≤ 0
    assert stats.sign_flip_p_value([1.0, 2.0, -3.0], alternative="less")[0] == 0.625
    assert stats.sign_flip_p_value([1.0, 2.0, 3.0], alternative="two-sided")[0] == 0.25


def test_pairs_enter_as_differences_and_ties_are_dropped():
    a, b = [0.1, 0.2, 0.5, 0.7], [0.1, 0.4, 0.9, 0.8]  # a − b = 0, −0.2, −0.4, −0.1: three non-zero, all negative
    assert stats.sign_flip_p_value(a, b, alternative="less")[0] == pytest.approx(1 / 8)
    assert stats.sign_flip_p_value(a, b, alternative="greater")[0] == pytest.approx(1.0)


def test_few_distinct_magnitudes_use_the_exact_binomial_convolution():
    d = [1.0] * 25 + [-1.0] * 5  # 30 non-zero: too many to enumerate, one magnitude
    p, method = stats.sign_flip_p_value(d, alternative="greater")
    assert method == "exact convolution"
    assert p == pytest.approx(sps.binom.sf(24, 30, 0.5), rel=1e-9)


def test_convolution_and_monte_carlo_agree_with_enumeration(monkeypatch):
    rng = np.random.default_rng(3)
    d = rng.choice([0.25, 0.5, 1.0], size=16) * rng.choice([-1, 1], size=16, p=[0.3, 0.7])
    exact, _ = stats.sign_flip_p_value(d, alternative="greater")
    monkeypatch.setattr(stats, "EXACT_ENUMERATION", 0)
    convolved, method = stats.sign_flip_p_value(d, alternative="greater")
    assert method == "exact convolution" and convolved == pytest.approx(exact, rel=1e-9)
    monkeypatch.setattr(stats, "MAX_SUPPORT", 0)
    sampled, method = stats.sign_flip_p_value(d, alternative="greater")
    assert method.startswith("Monte Carlo") and sampled == pytest.approx(exact, abs=0.005)


def test_sign_test_is_the_exact_binomial_tail():
    a = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 5]
    b = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 5]  # 8 pairs favour a, 2 favour b, 1 tie
    assert stats.sign_test_p_value(a, b, alternative="less") == pytest.approx(56 / 1024)


def test_holm_step_down():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5]) == [0.5]


def test_power_normal_approximation():
    assert stats.paired_power(1.0, 1.0, 9) == pytest.approx(sps.norm.cdf(3 - sps.norm.ppf(0.95)))
    assert stats.paired_power(0.0, 1.0, 50) == pytest.approx(0.05)
    assert stats.paired_power(0.01, 0.2, 50) < 0.2


def test_category_homogeneity():
    same = [[0.1, 0.5, 0.5, 0.9] * 5] * 3
    assert stats.category_homogeneity_p_value(same, draws=500)[0] == 1.0
    apart = [[0.0] * 20, [1.0] * 20]
    p, categories = stats.category_homogeneity_p_value(apart, draws=500)
    assert categories == 2 and p == pytest.approx(1 / 501)


def _table(shift, n=50, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(0.5, 0.1, n)
    return {10: base, 3: base + shift + rng.normal(0, 0.05, n), 20: base + shift + rng.normal(0, 0.05, n)}


PAPER = {10: 0.45, 3: 0.60, 20: 0.55}  # the paper shows r = 10 best, by 0.15 and 0.10


def test_verdict_reproduces_when_every_claimed_contrast_holds():
    verdict = stats.ordering_verdict(_table(0.1), 10, PAPER)
    assert verdict["verdict"] == "reproduces"
    assert all(c["p_holm"] <= 0.05 for c in verdict["contrasts"])


def test_verdict_does_not_reproduce_when_the_order_is_reversed_or_missed_with_power():
    assert stats.ordering_verdict(_table(-0.1), 10, PAPER)["verdict"] == "does not reproduce"
    flat = stats.ordering_verdict(_table(0.0), 10, PAPER)  # no difference, though 50 runs would see 0.10
    assert flat["verdict"] == "does not reproduce" and min(flat["power_of_failing"].values()) >= 0.8


def test_verdict_untestable_states_the_power():
    paper = {10: 0.45, 3: 0.451, 20: 0.452}  # effects far below what 50 noisy runs resolve
    rng = np.random.default_rng(1)
    runs = {r: rng.normal(0.5, 0.3, 50) for r in paper}
    verdict = stats.ordering_verdict(runs, 10, paper)
    assert verdict["verdict"] == "untestable" and max(verdict["power_of_failing"].values()) < 0.8


def test_settings_the_paper_shows_no_worse_are_not_tested():
    verdict = stats.ordering_verdict(_table(0.1), 10, {10: 0.45, 3: 0.40, 20: 0.55})
    assert verdict["untested"] == [3] and [c["setting"] for c in verdict["contrasts"]] == [20]
