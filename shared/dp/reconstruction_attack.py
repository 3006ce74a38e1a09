"""The reconstruction audit: how much of every record an attacker recovers from a release and K known records.

The attack (docs/design.md §4) assumes the attacker knows K records and their row indices. It fits the affine map
Z ≈ [X, 1] B (B is (d + 1) × r) by least squares on those K rows, then inverts it on every other row:
x̂ᵢ = argmin_x ‖[x, 1] B − zᵢ‖ = (zᵢ − b₀) B_x⁺, with B_x the first d rows of B and b₀ the last.

- ``po-gp-ucb`` releases are exactly affine (Z = (X − mean) B, lifted or not), so K = d + 1 affinely
  independent rows give B exactly and, when r ≥ d, every row back to rounding error.
- ``gaussian`` releases add noise of public std σ to every entry, so even the true map cannot do better
  than the *noise floor*: the per-coordinate RMS error σ · √(tr((B_x B_xᵀ)⁻¹) / d) of the least-squares
  inversion; the report puts the achieved error next to it and to σ.
- ``baseline_rms_error`` is what the attacker gets without the release: guess the known rows' mean for
  every other row. A release protects against this attack when the error is no better than the baseline.
- When r < d the inversion is not unique (``identifiable`` is False) and x̂ᵢ is the minimum-norm solution.

Only aggregate numbers are reported: never a row, a reconstruction or the fitted map.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class ReconstructionReport:
    """Aggregate errors of the reconstruction over the rows the attacker did not know.

    relative error of row i = ‖x̂ᵢ − xᵢ‖ / ‖xᵢ‖ (rows with xᵢ = 0 are divided by the RMS row norm instead);
    ``rms_error`` = √(mean over rows and coordinates of (x̂ − x)²), in the units of X;
    ``baseline_rms_error`` the same for the guess "every row is the mean of the known rows".
    """

    known: int
    reconstructed: int
    identifiable: bool
    max_relative_error: float
    median_relative_error: float
    rms_error: float
    baseline_rms_error: float
    noise_std: float | None = None
    noise_floor_rms: float | None = None

    def to_dict(self) -> dict[str, float | int | bool | None]:
        return asdict(self)


def reconstruction_audit(
    X: np.ndarray, Z: np.ndarray, known_indices: ArrayLike, *, noise_std: float | None = None
) -> ReconstructionReport:
    """Attack release ``Z`` of the (scaled) data ``X`` knowing the rows ``known_indices``; aggregates only.

    ``X`` must be the matrix the release was computed from (for ``gaussian``: the publicly scaled data).
    Pass the release's public ``noise_std`` to get the noise floor beside the achieved error.
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    if X.ndim != 2 or Z.ndim != 2 or X.shape[0] != Z.shape[0]:
        raise ValueError(f"X (n × d) and Z (n × r) must have the same number of rows, got {X.shape} and {Z.shape}")
    n, d = X.shape
    known = np.unique(np.asarray(known_indices, dtype=int))
    if known.size and (known[0] < 0 or known[-1] >= n):
        raise ValueError(f"known indices must lie in [0, {n})")
    if known.size < d + 1:
        raise ValueError(f"the attack needs at least d + 1 = {d + 1} known rows to fit the affine map, "
                         f"got {known.size}")
    unknown = np.setdiff1d(np.arange(n), known)
    if unknown.size == 0:
        raise ValueError("every row is known: nothing is left to reconstruct")

    lifted = np.hstack([X[known], np.ones((known.size, 1))])
    B = np.linalg.lstsq(lifted, Z[known], rcond=None)[0]
    B_x, b_0 = B[:d], B[d]
    # x B_x = z − b₀ for every unknown row at once: least squares on the transposed system.
    X_hat = np.linalg.lstsq(B_x.T, (Z[unknown] - b_0).T, rcond=None)[0].T

    errors = np.linalg.norm(X_hat - X[unknown], axis=1)
    norms = np.linalg.norm(X[unknown], axis=1)
    scale = float(np.sqrt(np.mean(norms**2))) or 1.0
    relative = errors / np.where(norms > 0, norms, scale)
    floor = None
    if noise_std is not None:
        floor = float(noise_std * np.sqrt(np.trace(np.linalg.pinv(B_x @ B_x.T)) / d))
    return ReconstructionReport(
        known=int(known.size),
        reconstructed=int(unknown.size),
        identifiable=bool(np.linalg.matrix_rank(B_x) == d),
        max_relative_error=float(relative.max()),
        median_relative_error=float(np.median(relative)),
        rms_error=float(np.sqrt(np.mean((X_hat - X[unknown]) ** 2))),
        baseline_rms_error=float(np.sqrt(np.mean((X[known].mean(axis=0) - X[unknown]) ** 2))),
        noise_std=None if noise_std is None else float(noise_std),
        noise_floor_rms=floor,
    )
