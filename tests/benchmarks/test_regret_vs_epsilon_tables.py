"""benchmarks/regret_vs_epsilon.py on the real tables: their problems carry the public unit-diameter scaling."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
regret_vs_epsilon = pytest.importorskip("regret_vs_epsilon")

from shared.api.scaling import apply_scaling  # noqa: E402
from shared.datasets.paths import DatasetUnavailable  # noqa: E402


def test_the_property_table_is_scaled_to_its_public_box_of_diameter_one():
    try:
        problem = regret_vs_epsilon.properties(0)
    except DatasetUnavailable as missing:
        pytest.skip(f"property data absent: {missing}")
    assert problem.width == pytest.approx(1 / math.sqrt(2))
    X = apply_scaling(problem.raw, problem.scaling)
    assert X.min() >= 0.0 and X.max() <= problem.width
    assert np.sqrt(2) * problem.width == pytest.approx(1.0)  # one neighbouring step is a whole record
    variant = regret_vs_epsilon.Variant(regret_vs_epsilon.DEFAULT)
    release = regret_vs_epsilon.make_release(problem, X, problem.values, variant, 1.0, seed=[0, 0, 0])
    assert release.Z.shape == X.shape
