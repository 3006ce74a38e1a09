"""Parameter importance of a run: :func:`shared.gp.importance.ard_importance` on the rows the run measured.

Under the identity projection each coordinate is one of the dataset's features (scaled and noised), so the
importance is per feature; under a random or PCA projection a coordinate mixes every feature and the names are
z0 … z{r−1}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from modeler_client.runfile import RunRecord
from shared.gp.importance import ard_importance

MIN_OBSERVATIONS = 3


@dataclass(frozen=True)
class Importance:
    """One entry per released coordinate: its name, fitted lengthscale and relative importance (largest = 1)."""

    names: list[str]
    lengthscales: list[float]
    relative: list[float]
    observations: int
    per_feature: bool

    def lines(self) -> list[str]:
        """``name  relative  (lengthscale …)`` lines, most important first."""
        order = np.argsort(self.relative)[::-1]
        width = max(len(name) for name in self.names)
        return [f"{self.names[j].ljust(width)}  {self.relative[j]:.2f}  (lengthscale {self.lengthscales[j]:.3g})"
                for j in order]


def coordinate_names(record: RunRecord) -> tuple[list[str], bool]:
    """The feature names under the identity projection (and True), else ``z0 …`` (and False)."""
    release = record.release
    if release.projection == "identity" and len(release.feature_columns) == release.dim:
        return list(release.feature_columns), True
    return [f"z{j}" for j in range(release.dim)], False


def parameter_importance(Z: ArrayLike, record: RunRecord) -> Importance:
    """ARD lengthscales fitted on the run's measured rows of ``Z`` (the release's inputs) and their values."""
    done = record.done()
    if len(done) < MIN_OBSERVATIONS:
        raise ValueError(f"parameter importance needs at least {MIN_OBSERVATIONS} measured rows; this run has "
                         f"{len(done)}")
    X = np.asarray(Z, dtype=float)[[q.index for q in done]]
    y = np.array([q.value for q in done], dtype=float)
    lengthscales, relative = ard_importance(X, y, np.ptp(np.asarray(Z, dtype=float), axis=0),
                                            kernel=record.settings.kernel, seed=record.settings.seed)
    names, per_feature = coordinate_names(record)
    return Importance(names=names, lengthscales=lengthscales.tolist(), relative=relative.tolist(),
                      observations=len(done), per_feature=per_feature)
