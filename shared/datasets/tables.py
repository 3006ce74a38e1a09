"""A real table ready to register with the curator: features, objective and its public bounds."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class RealTable:
    """Features (n × d), the objective to optimise and everything the curator declares about them.

    ``public_lower``/``public_upper``: per-feature bounds fixed without looking at the data, for the
    registration's bounds scaling (:func:`shared.api.scaling.unit_diameter_bounds`)."""

    name: str
    features: np.ndarray
    feature_names: tuple[str, ...]
    objective: np.ndarray
    objective_name: str
    goal: Literal["maximize", "minimize"]
    public_lower: tuple[float, ...]
    public_upper: tuple[float, ...]
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

