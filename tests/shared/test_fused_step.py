"""The compiled step's own arithmetic: its exp against numpy's."""

import numpy as np
from numba import njit

from shared.gp.fused_step import _exp_in_place


@njit
def _exp(x):
    y = x.copy()
    _exp_in_place(y, len(y), np.empty(len(y)), np.empty(len(y)))
    return y


def test_the_vectorised_exp_is_within_one_ulp_of_numpy_over_the_kernel_range():
    # Every exponent the step can meet: −d²/2 ∈ [−745, 0] (below that both round to 0), tiny ones near 0,
    # the libm hand-off at −707 and the subnormal results below it.
    x = np.concatenate([
        -np.logspace(-300, np.log10(745.2), 200_001), np.linspace(-745.2, 0.0, 200_001),
        np.linspace(-708.0, -706.0, 1001), [0.0, -0.0, -746.0],
    ])
    exact = np.exp(x)
    ulps = np.abs(_exp(x) - exact) / np.spacing(exact)
    assert ulps.max() <= 1.0, f"{ulps.max()} ulp at x = {x[np.argmax(ulps)]!r}"
