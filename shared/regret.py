"""Best so far and simple regret: how every run, benchmark and chart of pobo scores a sequence of answers.

For a goal of maximising, the best so far after t answers is b_t = max_{s ≤ t} y_s (min when minimising)
and the simple regret is r_t = |y* − b_t| / scale, with y* the optimum and scale a spread (σ_y) or 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Goal = Literal["maximize", "minimize"]


def best_so_far(values: Sequence[float] | np.ndarray, goal: Goal) -> np.ndarray:
    """b_t after each of ``values`` (empty for no values)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return values
    return np.minimum.accumulate(values) if goal == "minimize" else np.maximum.accumulate(values)


def simple_regret(best: float | np.ndarray, optimum: float, scale: float = 1.0) -> float | np.ndarray:
    """r = |y* − best| / scale: how far the best answer found is from the optimum."""
    return np.abs(optimum - np.asarray(best, dtype=float)) / scale
