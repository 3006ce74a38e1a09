"""Privacy oracles: DP-SGD RDP accounting against the DPareto authors' numbers, SVT, Gaussian."""

import math

import numpy as np
import pytest

from shared.dp.accounting import dpsgd_epsilon, gaussian_mechanism_epsilon, svt_epsilon
from shared.dp.mechanisms import analytic_gaussian_sigma

N, DELTA = 30_956, 1e-5


# The DPareto authors' accountant at their Adult size N = 30,956 (the cross-check numbers; autodp 0.1's
# anaRDPacct, Wang et al.'s Theorem 27 bound, classic conversion, gives 1.0386 and 0.15856).
@pytest.mark.parametrize("epochs, lot, sigma, authors", [(2, 32, 1.0, 1.04), (4, 128, 8.0, 0.159)])
def test_classic_conversion_reproduces_the_dpareto_authors(epochs, lot, sigma, authors):
    classic = dpsgd_epsilon(N, lot, epochs, sigma, DELTA, conversion="classic")
    assert classic == pytest.approx(authors, rel=0.01)
    # The default (tight) conversion is a different objective: 28% lower here, so it must not pass as theirs.
    tight = dpsgd_epsilon(N, lot, epochs, sigma, DELTA)
    assert tight == pytest.approx(0.72 * classic, rel=0.02)
    assert dpsgd_epsilon(N, lot, epochs, sigma, DELTA, conversion="tight") == tight


@pytest.mark.parametrize("n, lot, epochs, sigma, delta", [
    (30_956, 8, 64, 0.32, 1e-5), (30_956, 512, 1, 4.0, 1e-5), (1_000, 10, 3, 1.0, 1e-3),
    (50, 50, 1, 0.5, 1e-6), (32_561, 215, 1, 2.14, 1e-5), (32_561, 96, 58, 1.62, 1e-5),
])
def test_classic_conversion_is_never_below_ours(n, lot, epochs, sigma, delta):
    tight = dpsgd_epsilon(n, lot, epochs, sigma, delta)
    classic = dpsgd_epsilon(n, lot, epochs, sigma, delta, conversion="classic")
    assert tight <= classic
    # Same RDP curve: at any order α the two differ by log(α/(α−1)) + log(α)/(α−1) ≤ log 4 (at α = 2).
    assert classic <= tight + math.log(4.0)


def test_unknown_conversion_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="tight.*classic"):
        dpsgd_epsilon(N, 32, 1, 1.0, DELTA, conversion="moments")


def test_dpsgd_epsilon_monotone_and_edge_cases():
    base = dpsgd_epsilon(10_000, 100, 2, 1.0, DELTA)
    assert dpsgd_epsilon(10_000, 100, 4, 1.0, DELTA) > base  # more epochs
    assert dpsgd_epsilon(10_000, 100, 2, 2.0, DELTA) < base  # more noise
    assert dpsgd_epsilon(10_000, 100, 2, 1.0, 1e-3) < base  # larger δ
    assert dpsgd_epsilon(10, 10, 1, 1.0, DELTA) == pytest.approx(
        # full batch, one step: a Gaussian mechanism (RDP is looser)
        gaussian_mechanism_epsilon(1.0, 1.0, DELTA), rel=0.3)
    assert dpsgd_epsilon(10_000, 100, 1, 0.0, DELTA) == math.inf
    with pytest.raises(ValueError):
        dpsgd_epsilon(100, 200, 1, 1.0, DELTA)
    with pytest.raises(ValueError):
        dpsgd_epsilon(100, 10, 1, 1.0, 1.5)


def test_svt_closed_form_matches_lyu_et_al_budget_split():
    from shared.dp.sparse_vector import noise_split

    for bound in (1.0, 2.5, 30.0):
        b1, b2 = noise_split(2.0, bound)
        # Appendix B: ε = ε₁ + ε₂ with ε₁ = 1/b₁ (threshold) and ε₂ = 2C/b₂ (queries).
        assert svt_epsilon(2.0, bound) == pytest.approx(1 / b1 + 2 * bound / b2)
    assert svt_epsilon(1.0, 1.0) == pytest.approx((1 + 2 ** (1 / 3)) * (1 + 2 ** (2 / 3)))


def test_gaussian_mechanism_epsilon_inverts_the_analytic_gaussian():
    for epsilon, sensitivity in [(0.1, 1.0), (1.0, 0.3), (5.0, 2.0)]:
        sigma = analytic_gaussian_sigma(epsilon, 1e-6, sensitivity)
        assert gaussian_mechanism_epsilon(sigma, sensitivity, 1e-6) == pytest.approx(epsilon, rel=1e-6)
    assert gaussian_mechanism_epsilon(1e6, 1.0, 1e-6) == 0.0
    eps = [gaussian_mechanism_epsilon(s, 1.0, 1e-6) for s in np.linspace(0.5, 5, 10)]
    assert np.all(np.diff(eps) < 0)
