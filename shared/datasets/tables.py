"""A real table ready to register with the curator: features, objective and the public scaling."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from shared.api.schemas import ScalingSpec


@dataclass(frozen=True)
class RealTable:
    """Features (n × d), the objective to optimise and everything the curator declares about them."""

    name: str
    features: np.ndarray
    feature_names: tuple[str, ...]
    objective: np.ndarray
    objective_name: str
    goal: Literal["maximize", "minimize"]
    scaling: ScalingSpec
    description: str

    @property
    def n(self) -> int:
        return self.features.shape[0]

    def write_csv(self, path: Path) -> Path:
        """Writes features and objective as a CSV the curator service can register by path or upload."""
        path = Path(path)
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow([*self.feature_names, self.objective_name])
            writer.writerows(np.column_stack([self.features, self.objective]).tolist())
        return path


def unit_diameter_bounds(lower: list[float], upper: list[float]) -> ScalingSpec:
    """Public per-feature bounds scaled so the whole domain has ℓ2 diameter 1.

    Each feature maps to [0, 1/√d], so replacing one record by *any* other record in the public domain
    is a change of ℓ2 norm ≤ 1: the neighbouring relation then hides a whole record, not only small
    edits of it.
    """
    return ScalingSpec(kind="bounds", lower=lower, upper=upper, width=1.0 / np.sqrt(len(lower)))
