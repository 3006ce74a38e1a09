"""Shared pieces of the ding_* benchmarks: the console and the utility tables."""

from __future__ import annotations

import harness  # noqa: F401  (one BLAS thread and the repository on sys.path, before numpy loads)
import numpy as np
from rich.console import Console

console = Console()


def replicate_columns(mean_utilities: np.ndarray, k: int) -> np.ndarray:
    """An |S| × k table whose row means are the given utilities (the paper draws mean utilities directly)."""
    return np.repeat(np.asarray(mean_utilities, dtype=float)[:, None], k, axis=1)
