import numpy as np
import pytest

from shared.api.scaling import apply_scaling
from shared.api.schemas import ScalingSpec


def test_identity_copies():
    X = np.arange(6.0).reshape(3, 2)
    out = apply_scaling(X, ScalingSpec())
    np.testing.assert_array_equal(out, X)
    assert out is not X


def test_affine():
    X = np.array([[1.0, 10.0], [3.0, 30.0]])
    out = apply_scaling(X, ScalingSpec(kind="affine", offset=[1.0, 10.0], scale=[2.0, 20.0]))
    np.testing.assert_allclose(out, [[0.0, 0.0], [1.0, 1.0]])


def test_bounds_clip_to_the_public_box():
    X = np.array([[-5.0, 0.5], [0.5, 2.0], [1.0, 99.0]])
    out = apply_scaling(X, ScalingSpec(kind="bounds", lower=[0.0, 0.0], upper=[1.0, 4.0], width=2.0))
    np.testing.assert_allclose(out, [[0.0, 0.25], [1.0, 1.0], [2.0, 2.0]])


def test_wrong_number_of_features_is_refused():
    with pytest.raises(ValueError, match="one number per feature"):
        apply_scaling(np.ones((2, 3)), ScalingSpec(kind="affine", offset=[0.0], scale=[1.0]))
    with pytest.raises(ValueError, match="n × d"):
        apply_scaling(np.ones(3), ScalingSpec())
