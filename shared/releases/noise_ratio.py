"""The noise-to-spread ratio of a release's inputs and a sentence that says what it means.

σ_x / s, with σ_x the input noise std and s the standard deviation per released coordinate of the rows
themselves. Where the release states a public box (bounds scaling: each feature in [0, w] after scaling,
w = box diameter / √d), s is that of rows spread uniformly over the box, w/√12 for identity, Haar and PCA
coordinates and √(d/r)·w/√12 for JL (E‖x M/√r‖² = ‖x‖²): the planner's ratio, known before anything is
released. Without a box, s is read off the released rows Z (post-processing of the release): the variance of Z
along a coordinate is the rows' variance plus σ_x², so s² = mean over coordinates of var(Z_j) − σ_x² (infinite
ratio when that is not positive: Z is then as spread as its noise alone).

Above 1 the noise is larger than the rows' own spread: the released inputs say little about where a row lies,
and anything fitted on them (a surrogate, parameter importance) mostly fits noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

LIMIT = 1.0
"""Above this the released inputs are mostly noise."""

Basis = Literal["public box", "released rows"]


@dataclass(frozen=True)
class NoiseToSpread:
    value: float
    basis: Basis

    @property
    def too_noisy(self) -> bool:
        return self.value > LIMIT

    def text(self) -> str:
        """``29 (σ over the spread of rows uniform in the public box)``."""
        shown = "∞" if math.isinf(self.value) else f"{self.value:.2g}"
        where = ("the spread of rows uniform in the public box" if self.basis == "public box"
                 else "the rows' spread read off the released inputs")
        return f"{shown} (input noise σ over {where})"

    def sentence(self) -> str:
        return meaning(self.value)


def box_spread(width: float, d: int, r: int, projection: str | None) -> float:
    """The standard deviation per released coordinate of rows uniform in [0, width]^d."""
    spread = width / math.sqrt(12.0)
    if projection == "jl":
        spread *= math.sqrt(d / r)
    return spread


def rows_spread(Z: ArrayLike, noise_std: float) -> float:
    """The rows' own standard deviation per coordinate, from released rows ``Z`` with input noise ``noise_std``
    (0 when Z is no more spread than its noise)."""
    Z = np.asarray(Z, dtype=float)
    excess = float(np.mean(np.var(Z, axis=0))) - noise_std**2
    return math.sqrt(excess) if excess > 0 else 0.0


def noise_to_spread(noise_std: float | None, *, d: int, r: int, projection: str | None,
                    box_diameter: float | None = None, Z: ArrayLike | None = None) -> NoiseToSpread | None:
    """σ_x over the spread (module docstring): from the public box when there is one, else from ``Z``; None
    when the release adds no input noise or neither a box nor ``Z`` is at hand."""
    if noise_std is None:
        return None
    if box_diameter is not None and box_diameter > 0:
        return NoiseToSpread(noise_std / box_spread(box_diameter / math.sqrt(d), d, r, projection), "public box")
    if Z is None:
        return None
    spread = rows_spread(Z, noise_std)
    return NoiseToSpread(noise_std / spread if spread > 0 else math.inf, "released rows")


def release_noise_to_spread(release: Any, Z: ArrayLike | None = None) -> NoiseToSpread | None:
    """:func:`noise_to_spread` of a release as the API describes it (a ``ReleaseOut`` or its JSON dict)."""
    get = release.get if isinstance(release, dict) else lambda key: getattr(release, key, None)
    step = get("neighbouring_step")
    if isinstance(step, dict):
        box, features = step.get("box_diameter"), step.get("features") or []
    else:
        box, features = (None, []) if step is None else (step.box_diameter, step.features)
    r = int(get("dim") or 0)
    d = len(features) or len(get("feature_columns") or []) or r
    return noise_to_spread(get("noise_std"), d=d, r=r, projection=get("projection"), box_diameter=box, Z=Z)


def meaning(value: float) -> str:
    """What a noise-to-spread ratio means for whoever fits a model on the released inputs."""
    if value > LIMIT:
        return ("Above 1: the input noise is larger than the rows' own spread, so the released inputs say little "
                "about where a row lies; a model fitted on them, and its parameter importance, mostly fits noise.")
    if value > 0.3:
        return ("Between 0.3 and 1: the noise is a sizeable part of the rows' spread; nearby rows blur together "
                "while distant ones stay apart, so a model finds broad trends, not fine detail.")
    return ("Below 0.3: the noise is small beside the rows' spread; the released inputs keep where each row lies "
            "and a model fitted on them sees the data's shape.")
