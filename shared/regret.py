"""Best so far and simple regret: how every run, benchmark and chart of pobo scores a sequence of answers.

For a goal of maximising, the best so far after t answers is b_t = max_{s ≤ t} y_s (min when minimising)
and the simple regret is r_t = |y* − b_t| / scale, with y* the optimum and scale a spread (σ_y) or 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, overload

import numpy as np

Goal = Literal["maximize", "minimize"]


def best_so_far(values: Sequence[float | None] | np.ndarray, goal: Goal) -> np.ndarray:
    """b_t after each of ``values`` (empty for no values). A missing value (NaN or None: not answered yet) is
    skipped: b_t carries the best before it, and is NaN until the first answer."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return values
    return np.fmin.accumulate(values) if goal == "minimize" else np.fmax.accumulate(values)


@overload
def simple_regret(best: float, optimum: float, scale: float = 1.0) -> float: ...


@overload
def simple_regret(best: np.ndarray, optimum: float, scale: float = 1.0) -> np.ndarray: ...


def simple_regret(best: float | np.ndarray, optimum: float, scale: float = 1.0) -> float | np.ndarray:
    """r = |y* − best| / scale: how far the best answer found is from the optimum."""
    return np.abs(optimum - np.asarray(best, dtype=float)) / scale
