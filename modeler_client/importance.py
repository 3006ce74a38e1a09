"""Parameter importance of a run: :func:`shared.gp.importance.importance_intervals` on the rows the run measured,
with the warnings of :func:`shared.gp.importance.importance_warnings` when the numbers may mean little.

Under the identity projection each coordinate is one of the dataset's features (scaled and noised), so the
importance is per feature; under a random or PCA projection a coordinate mixes every feature and the names are
z0 … z{r−1}. In Python the warnings are also raised as :class:`ImportanceWarning` (shown once per call in a
notebook; ``warnings.simplefilter("error", ImportanceWarning)`` turns them into errors).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from modeler_client.runfile import RunRecord
from shared.gp.importance import importance_intervals, importance_warnings
from shared.releases.noise_ratio import NoiseToSpread, release_noise_to_spread

MIN_OBSERVATIONS = 3


class ImportanceWarning(UserWarning):
    """The parameter importance of a run may mean little: a noisy release, few answers or an unsettled ranking."""


@dataclass(frozen=True)
class Importance:
    """One entry per released coordinate: its name, fitted lengthscale, relative importance (largest = 1), the
    half-samples' interval of it and the share of half-samples in which it came first; and the warnings."""

    names: list[str]
    lengthscales: list[float]
    relative: list[float]
    observations: int
    per_feature: bool
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    first_share: list[float] = field(default_factory=list)
    noise_to_spread: NoiseToSpread | None = None
    warnings: list[str] = field(default_factory=list)

    def order(self) -> list[int]:
        return [int(j) for j in np.argsort(self.relative)[::-1]]

    def lines(self) -> list[str]:
        """``name  relative  [low, high]  first in …  (lengthscale …)`` lines, most important first."""
        width = max(len(name) for name in self.names)
        return [f"{self.names[j].ljust(width)}  {self.relative[j]:.2f}  [{self.low[j]:.2f}, {self.high[j]:.2f}]  "
                f"first in {self.first_share[j]:.0%} of half-samples  (lengthscale {self.lengthscales[j]:.3g})"
                for j in self.order()]


def coordinate_names(record: RunRecord) -> tuple[list[str], bool]:
    """The feature names under the identity projection (and True), else ``z0 …`` (and False)."""
    release = record.release
    if release.projection == "identity" and len(release.feature_columns) == release.dim:
        return list(release.feature_columns), True
    return [f"z{j}" for j in range(release.dim)], False


def parameter_importance(Z: ArrayLike, record: RunRecord, *, warn: bool = True) -> Importance:
    """ARD lengthscales fitted on the run's measured rows of ``Z`` (the release's inputs), their half-sample
    intervals and the warnings (each also raised as an :class:`ImportanceWarning` when ``warn``)."""
    done = record.done()
    if len(done) < MIN_OBSERVATIONS:
        raise ValueError(f"parameter importance needs at least {MIN_OBSERVATIONS} measured rows; this run has "
                         f"{len(done)}")
    Z = np.asarray(Z, dtype=float)
    X = Z[[q.index for q in done]]
    y = np.array([q.value for q in done], dtype=float)
    found = importance_intervals(X, y, np.ptp(Z, axis=0), kernel=record.settings.kernel, seed=record.settings.seed)
    names, per_feature = coordinate_names(record)
    noise = release_noise_to_spread(record.release, Z)
    said = importance_warnings(names, found, len(done), noise)
    if warn:
        for sentence in said:
            warnings.warn(sentence, ImportanceWarning, stacklevel=2)
    return Importance(names=names, lengthscales=found.lengthscales.tolist(), relative=found.relative.tolist(),
                      observations=len(done), per_feature=per_feature, low=found.low.tolist(),
                      high=found.high.tolist(), first_share=found.first_share.tolist(), noise_to_spread=noise,
                      warnings=said)
