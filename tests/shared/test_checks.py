"""One module of argument checks (shared.checks), used by every layer: the checks and what they fixed."""

import math

import numpy as np
import pytest

from shared.checks import finite_vector, open_unit, positive, positive_int
from shared.dp.accounting import svt_epsilon
from shared.releases import omega


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_positive_refuses_what_is_not_a_positive_finite_number(bad):
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        positive(bad, "epsilon")


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, math.nan])
def test_open_unit_refuses_the_ends_and_nan(bad):
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        open_unit(bad, "delta")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_positive_int_refuses_zero_fractions_and_booleans(bad):
    with pytest.raises(ValueError, match="r must be an integer ≥ 1"):
        positive_int(bad, "r")


def test_the_checks_return_the_converted_value():
    assert positive(np.float32(2.0), "x") == 2.0 and type(positive(3, "x")) is float
    assert open_unit(0.25, "x") == 0.25 and positive_int(np.int64(4), "r") == 4
    np.testing.assert_array_equal(finite_vector([[1, 2], [3, 4]], "scores"), [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="scores must be a non-empty vector"):
        finite_vector([], "scores")


@pytest.mark.parametrize(
    "call",
    [
        lambda: svt_epsilon(math.nan, 1.0),  # returned nan before
        lambda: omega(math.inf, 1e-5, 2),  # returned ω = 0: any σ_min passed the guideline
    ],
)
def test_a_non_finite_privacy_parameter_is_refused_not_computed_with(call):
    with pytest.raises(ValueError):
        call()
