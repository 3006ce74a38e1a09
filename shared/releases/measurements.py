"""Private measurements: one noisy answer per row, drawn at release time and jointly charged with the inputs.

PO-GP-UCB returns measurements as computed and names private ones as future work. This module is the
measurement half of a ``gaussian`` release that covers them (:func:`shared.releases.gaussian_release`
with ``measurements=``). With public bounds [a, b] every row's clipped value clip(yᵢ, a, b) gets noise
once, when the release is made:

    ỹᵢ = clip(yᵢ, a, b) + N(0, σ_y²)

and every query of row i returns the same ỹᵢ (:meth:`PrivateMeasurements.answer`). Together with the inputs
this is ONE Gaussian mechanism on the row [xᵢ Q, yᵢ / c] with noise N(0, σ_x² I) (c = σ_y / σ_x):
neighbouring rows move xᵢ Q by at most Δ_x and clip(yᵢ) by at most b − a at the same time, so its ℓ2
sensitivity is

    Δ = √(Δ_x² + ((b − a)/c)²)      and      μ = Δ / σ_x = √((Δ_x/σ_x)² + ((b − a)/σ_y)²) = √(μ_x² + μ_y²).

The public share ρ fixes c by giving the measurements the fraction ρ of μ²: μ_y² = ρ μ², so
σ_y = (b − a)/(√ρ μ) and c = σ_y/σ_x = (b − a)/(√ρ Δ) (the inputs keep the rest, see the release). The
modeler's whole transcript (adaptive queries, repeats, rows never queried) is post-processing of that one
release, so nothing more is charged. Conditions: row order independent of the values; no errors, pending
states or timing that depend on y; deterministic evaluators (a manual evaluator's answers are not covered).

Noise is added by the sampler itself on the rounded clipped value (:meth:`shared.dp.noise.NoiseSource.add_gaussian`),
with the rounding slack in Δ_y, like every other mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.checks import open_unit, ordered_interval
from shared.dp.mechanisms import l2_sensitivity_with_grid
from shared.dp.noise import NoiseSource


@dataclass(frozen=True)
class MeasurementOption:
    """Public choices of private measurements: the clipping interval [a, b] and the share ρ of μ²."""

    clip: tuple[float, float]
    share: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "clip", ordered_interval(self.clip, "measurements 'clip'"))
        open_unit(self.share, "measurements 'share' (ρ, the fraction of the privacy budget)")

    @property
    def range(self) -> float:
        """b − a: how far one row's clipped measurement can move."""
        return self.clip[1] - self.clip[0]

    def sensitivity(self, noise: NoiseSource) -> float:
        """Δ_y = (b − a) + the sampler's grid step (its rounding of the one value)."""
        return l2_sensitivity_with_grid(self.range, 1, noise)


@dataclass(frozen=True)
class PrivateMeasurements:
    """The memoised noisy measurements ỹ (one per row) and their public parameters."""

    values: np.ndarray
    clip: tuple[float, float]
    share: float
    noise_std: float
    sensitivity: float

    def answer(self, index: int) -> float:
        """ỹ of row ``index``: the value drawn at release time, identical on every query."""
        if not 0 <= index < len(self.values):
            raise IndexError(f"row index {index} is outside 0..{len(self.values) - 1}")
        return float(self.values[index])

    def public_parameters(self) -> dict:
        return {"clip": list(self.clip), "share": self.share, "noise_std": self.noise_std,
                "sensitivity": self.sensitivity}


def checked_measurements(y: np.ndarray | None, n: int) -> np.ndarray:
    """The n measurements as a finite float vector (a sentence saying what is wrong otherwise)."""
    if y is None:
        raise ValueError("private measurements need y, one value per row")
    y = np.asarray(y, dtype=float)
    if y.shape != (n,):
        raise ValueError(f"y must hold one measurement per row ({n}), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must hold finite numbers only")
    return y


def release_measurements(y: np.ndarray, option: MeasurementOption, noise_std: float,
                         noise: NoiseSource) -> PrivateMeasurements:
    """ỹ = clip(y, a, b) + N(0, ``noise_std``²), drawn once per row by the sampler on the rounded value.

    ``noise_std`` comes from the release's joint calibration (σ_y above); this function only draws.
    """
    values = noise.add_gaussian(np.clip(y, *option.clip), noise_std, noise.grid(option.range))
    values.setflags(write=False)
    return PrivateMeasurements(values, option.clip, option.share, noise_std, option.sensitivity(noise))
