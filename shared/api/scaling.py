"""What the wire's public scaling (:class:`shared.api.schemas.ScalingSpec`) means: how it maps the features
before any release, and what one neighbouring step then is in the table's own units. It lives beside the
schema so the maths layers never see a wire model: the curator applies it, then hands them plain arrays.

Privacy's unit is "one row moves by ℓ2 ≤ 1 after this scaling", so the scaling must be fixed without
looking at the data: nothing here estimates anything from ``X``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shared.api.schemas import FeatureStep, NeighbouringStep, ScalingSpec

WHOLE_RECORD_TOLERANCE = 1e-12
"""Relative slack for 'box diameter ≤ 1': width = 1/√d rounds so that width·√d may be 1 + 2^-52."""


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


def neighbouring_step(spec: ScalingSpec, feature_columns: list[str]) -> NeighbouringStep:
    """What one neighbouring step (one row moving by ℓ2 ≤ 1 after ``spec``) means in the table's own units.

    Along feature j alone, ℓ2 distance 1 after scaling spans 1 raw unit (identity), scale_j (affine) or
    (upper_j − lower_j)/width (bounds). Only bounds scaling clips, so only there can one step cover a
    whole record: when the scaled box's ℓ2 diameter width·√d is at most 1.
    """
    d = len(feature_columns)
    if spec.kind == "bounds":
        ranges = [u - lo for lo, u in zip(_per_feature(spec.lower, d, "lower"), _per_feature(spec.upper, d, "upper"))]
        features = [FeatureStep(feature=name, raw_extent=float(span / spec.width), public_range=float(span),
                                covers_range=spec.width <= 1.0)
                    for name, span in zip(feature_columns, ranges)]
        diameter = spec.width * math.sqrt(d)
        whole = diameter <= 1.0 + WHOLE_RECORD_TOLERANCE
        summary = (f"features are clipped to the public bounds and the scaled box has ℓ2 diameter {diameter:.3g}: "
                   + ("one neighbouring step is a whole record (any row may change into any other)" if whole else
                      "one neighbouring step is a change of ℓ2 ≤ 1 after scaling, NOT a whole record "
                      f"(e.g. {_extent(features[0])} alone)"))
        return NeighbouringStep(scaling_kind="bounds", clipped=True, box_diameter=diameter, whole_record=whole,
                                features=features, summary=summary)
    extents = [1.0] * d if spec.kind == "identity" else _per_feature(spec.scale, d, "scale").tolist()
    features = [FeatureStep(feature=name, raw_extent=float(extent)) for name, extent in zip(feature_columns, extents)]
    summary = (f"{spec.kind} scaling does not clip: one neighbouring step is a change of ℓ2 ≤ 1 after scaling "
               f"(e.g. {_extent(features[0])} alone), NOT a whole record")
    return NeighbouringStep(scaling_kind=spec.kind, clipped=False, whole_record=False, features=features,
                            summary=summary)


def unit_diameter_bounds(lower: Sequence[float], upper: Sequence[float]) -> ScalingSpec:
    """Bounds scaling whose public box has ℓ2 diameter 1: each feature maps to [0, 1/√d], so replacing one
    record by *any* other record of the box is one neighbouring step (the relation hides a whole record)."""
    return ScalingSpec(kind="bounds", lower=list(lower), upper=list(upper), diameter=1.0)


def scaling_warning(step: NeighbouringStep) -> str | None:
    """The warning a release carries when one neighbouring step is less than a whole record."""
    if step.whole_record:
        return None
    return (f"This release hides less than a whole record: {step.summary}. Register the table with bounds "
            "scaling of diameter 1 to hide a whole record.")


def _extent(step: FeatureStep) -> str:
    return f"{step.raw_extent:.4g} raw units of {step.feature}"


def step_line(feature: FeatureStep) -> str:
    """What the guarantee hides along one feature, in the feature's own units and plain words."""
    if feature.covers_range:
        return f"{feature.feature}: any change within its public range (width {feature.public_range:.3g}) is hidden"
    of_range = "" if feature.public_range is None else f" (its public range is {feature.public_range:.3g} wide)"
    return (f"{feature.feature}: a change of up to {feature.raw_extent:.3g} in the file's units is hidden{of_range}; "
            "a larger one is not")
