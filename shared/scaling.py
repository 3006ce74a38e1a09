"""The dataset's public scaling (:class:`shared.schemas.ScalingSpec`), applied before any release.

Privacy's unit is "one row moves by ℓ2 ≤ 1 after this scaling", so the scaling must be fixed without
looking at the data: nothing here estimates anything from ``X``.
"""

from __future__ import annotations

import numpy as np

from shared.schemas import ScalingSpec


def apply_scaling(X: np.ndarray, spec: ScalingSpec) -> np.ndarray:
    """Scale the n × d features ``X`` by ``spec``; returns a new float array.

    identity: x. affine: (x − offset) / scale. bounds: (clip(x, lower, upper) − lower) / (upper − lower) · width,
    so every feature lies in [0, width] whatever the data holds.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be an n × d matrix, got an array of shape {X.shape}")
    if spec.kind == "identity":
        return X.copy()
    if spec.kind == "affine":
        offset, scale = _per_feature(spec.offset, X.shape[1], "offset"), _per_feature(spec.scale, X.shape[1], "scale")
        return (X - offset) / scale
    lower, upper = _per_feature(spec.lower, X.shape[1], "lower"), _per_feature(spec.upper, X.shape[1], "upper")
    return (np.clip(X, lower, upper) - lower) / (upper - lower) * spec.width


def _per_feature(values: list[float] | None, d: int, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.shape != (d,):
        raise ValueError(f"scaling '{name}' needs one number per feature column ({d}), got {array.size}")
    return array
