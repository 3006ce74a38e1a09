"""benchmarks/real_data_report.py: an r table whose entries lie within noise of each other cannot confirm the
guideline, and says so instead of "reproduces"."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
report = pytest.importorskip("real_data_report")
harness = pytest.importorskip("harness")


def entry(mean: float, stderr: float, lifted: bool) -> dict:
    return {"mean": [mean], "stderr": [stderr], "lifted": lifted}


def test_a_row_of_entries_within_noise_is_not_testable_here():
    # Table 9's shape: the admissible r = 20 is not the best, but no entry differs from the others beyond noise.
    row = [entry(0.783, 0.014, False), entry(0.805, 0.001, False), entry(0.801, 0.003, False),
           entry(0.791, 0.015, False), entry(0.804, 0.002, True), entry(0.813, 0.005, True)]
    verdict = report.guideline_verdict([5, 10, 15, 20, 30, 50], row)
    assert verdict["holds"] is None and verdict["p_value"] > 0.05


def test_a_row_with_signal_is_judged():
    row = [entry(0.30, 0.02, False), entry(0.10, 0.02, False), entry(0.35, 0.02, True)]
    assert report.guideline_verdict([3, 10, 20], row)["holds"] is True
    row = [entry(0.10, 0.02, False), entry(0.30, 0.02, False), entry(0.30, 0.02, False), entry(0.35, 0.02, True)]
    assert report.guideline_verdict([3, 6, 10, 20], row)["holds"] is False  # the best is two r below the largest


def test_equal_means_p_value_floors_zero_standard_errors():
    assert harness.equal_means_p_value([(0.806, 0.0), (0.806, 0.0)]) == pytest.approx(1.0)
    assert harness.equal_means_p_value([(0.80, 0.0), (0.90, 0.0)]) < 1e-6
