"""benchmarks/ding_fig3.py: every curve runs to the longest run's T and ends at that run's final fidelity."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.fixture(scope="module")
def ding_fig3():
    """The benchmark, imported by the test rather than at collection (it loads Numba and dp_accounting)."""
    return pytest.importorskip("ding_fig3")


OLD_CUT = 60  # the length the curves used to be cut at


def test_curves_cover_every_iteration_and_end_at_alpha_T(ding_fig3):
    # g = 1e-5 makes n = u*/g ≈ 10⁵, so T ≈ 5–8·ln n runs well past the old cut at kϵ = 0.5.
    curves, selections = ding_fig3.fidelity_curves(runs=3, sizes=(100,), k_epsilons=(0.5, 100.0), g=1e-5)
    runs = [s for by_ke in selections.values() for runs_ in by_ke.values() for s in runs_]
    longest = max(s.iterations for s in runs)
    assert longest > OLD_CUT
    utilities = np.random.default_rng(100).uniform(size=100)  # the benchmark's utilities for |S| = 100
    for ke, runs_ in selections["100"].items():
        assert curves["100"][ke].shape == (3, longest)
        for curve, selection in zip(curves["100"][ke], runs_):
            alpha_T = utilities[selection.index] / utilities.max() if selection.index is not None else 0.0
            assert curve[-1] == alpha_T
            assert curve[selection.iterations - 1] == alpha_T  # reached at T, kept afterwards
