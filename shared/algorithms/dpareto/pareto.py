"""Pareto fronts, exact 2-D hypervolume and DPareto's HVPoI acquisition (Avent et al. 2020, §3.1).

Every objective is minimised (DPareto's points are (ε, 1 − utility)). u dominates v when u ≤ v in every
coordinate and u ≠ v (Definition 2); the front is the set of non-dominated points.

HVPoI (their eq. 3) for independent Gaussian predictions N(m_j(λ), s_j²(λ)) of the objectives:

    α(λ) = Δ_PF(m(λ)) · PoI(λ),
    Δ_PF(v) = HV(PF(V ∪ {v})) − HV(PF(V)),         the hypervolume gain at the predicted mean,
    PoI(λ) = P[(f_1(λ), f_2(λ)) not dominated by PF(V)],

with the hypervolume HV bounded by the anti-ideal point v†. In two dimensions with the front sorted by
the first objective (a_1 < … < a_k, b_1 > … > b_k) the dominated region is the union of quadrants
[a_i, ∞) × [b_i, ∞), so P[dominated] = Σ_i (Φ₁(a_{i+1}) − Φ₁(a_i)) (1 − Φ₂(b_i)) with a_{k+1} = ∞.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr


def pareto_mask(points: ArrayLike) -> NDArray:
    """Boolean mask of the non-dominated rows of an (n, p) array (minimisation); of identical
    non-dominated rows only the first is kept."""
    P = np.atleast_2d(np.asarray(points, dtype=float))
    n = len(P)
    mask = np.ones(n, dtype=bool)
    for start in range(0, n, 512):  # blocks keep the (block, n, p) comparison small
        block = P[start : start + 512]
        weakly = np.all(P[None, :, :] <= block[:, None, :], axis=2)  # [i, j]: P_j ≤ block_i everywhere
        strictly = weakly & np.any(P[None, :, :] < block[:, None, :], axis=2)
        rows = np.arange(start, start + len(block))
        equal_earlier = weakly & np.all(P[None, :, :] == block[:, None, :], axis=2)
        equal_earlier &= np.arange(n)[None, :] < rows[:, None]
        mask[rows] = ~(strictly.any(axis=1) | equal_earlier.any(axis=1))
    return mask


def pareto_front(points: ArrayLike) -> NDArray:
    """The non-dominated points (minimisation in every coordinate), sorted by the first coordinate."""
    P = np.atleast_2d(np.asarray(points, dtype=float))
    if P.size == 0:
        return P.reshape(0, P.shape[1] if P.ndim == 2 else 0)
    front = P[pareto_mask(P)]
    return front[np.lexsort(front.T[::-1])]


def _hypervolumes(a: NDArray, b: NDArray, anti_ideal: NDArray) -> NDArray:
    """Hypervolume of each row's point set, given first coordinates ``a`` sorted ascending along the
    last axis and the matching second coordinates ``b``: Σ_i (a_{i+1} − a_i)(r₂ − min_{j≤i} b_j)."""
    r1, r2 = anti_ideal
    a = np.minimum(a, r1)
    lowest_b = np.minimum.accumulate(np.minimum(b, r2), axis=-1)
    widths = np.diff(a, axis=-1, append=np.full(a.shape[:-1] + (1,), r1))
    return np.sum(widths * (r2 - lowest_b), axis=-1)


def hypervolume_2d(points: ArrayLike, anti_ideal: ArrayLike) -> float:
    """Exact area dominated by ``points`` (n, 2) and bounded by the anti-ideal point (minimisation).

    Points that do not dominate the anti-ideal point contribute nothing; the front need not be
    extracted first.
    """
    P = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(P) == 0:
        return 0.0
    P = P[np.argsort(P[:, 0], kind="stable")]
    return float(_hypervolumes(P[:, 0], P[:, 1], np.asarray(anti_ideal, dtype=float)))


def hypervolume_gain(candidates: ArrayLike, front: ArrayLike, anti_ideal: ArrayLike) -> NDArray:
    """Δ_PF(v) = HV(front ∪ {v}) − HV(front) for each candidate v (rows of an (m, 2) array), exactly.

    Gain = area of the box [v, v†] minus the part the front already dominates; that part is the
    hypervolume of the front clipped to the box (each point p becomes max(p, v)).
    """
    V = np.asarray(candidates, dtype=float).reshape(-1, 2)
    r = np.asarray(anti_ideal, dtype=float)
    F = np.asarray(front, dtype=float).reshape(-1, 2)
    box = np.prod(np.maximum(r - np.minimum(V, r), 0.0), axis=1)
    if len(F) == 0:
        return box
    F = F[np.argsort(F[:, 0], kind="stable")]
    a = np.maximum(F[None, :, 0], V[:, :1])  # clipping keeps the order of the first coordinate
    b = np.maximum(F[None, :, 1], V[:, 1:])
    return np.maximum(box - _hypervolumes(a, b, r), 0.0)


def probability_not_dominated(mean: ArrayLike, std: ArrayLike, front: ArrayLike) -> NDArray:
    """P[v not dominated by the front] for v ~ N(mean, diag(std²)) in two dimensions (independent).

    ``mean`` and ``std`` are (m, 2); the front (k, 2) must be in the same (possibly transformed)
    coordinates — monotone transforms of each objective preserve dominance.
    """
    return _probability_not_dominated(mean, std, pareto_front(np.asarray(front, dtype=float).reshape(-1, 2)))


def _probability_not_dominated(mean: ArrayLike, std: ArrayLike, F: NDArray) -> NDArray:
    """:func:`probability_not_dominated` for ``F`` already a front sorted by the first coordinate."""
    M = np.asarray(mean, dtype=float).reshape(-1, 2)
    S = np.maximum(np.asarray(std, dtype=float).reshape(-1, 2), 1e-12)
    if len(F) == 0:
        return np.ones(len(M))
    cdf_first = ndtr((F[None, :, 0] - M[:, :1]) / S[:, :1])  # Φ₁(a_i)
    cdf_first = np.concatenate([cdf_first, np.ones((len(M), 1))], axis=1)
    above_second = 1.0 - ndtr((F[None, :, 1] - M[:, 1:]) / S[:, 1:])  # 1 − Φ₂(b_i)
    dominated = np.sum(np.diff(cdf_first, axis=1) * above_second, axis=1)
    return np.clip(1.0 - dominated, 0.0, 1.0)


class HVPoI:
    """HVPoI α = Δ_PF(m) · PoI and PoI itself against one front, for predictions in the surrogates' coordinates.

    ``front`` (k, 2) is in the GP coordinates (e.g. log ε, logit error); ``inverse_transforms`` (one
    function per objective) map them back to the objective space where the anti-ideal point and the
    hypervolume live (identity when None). The front's extraction and transform are done once here, not
    at every scoring (the acquisition is scored thousands of times per proposal).
    """

    def __init__(self, front: ArrayLike, anti_ideal: ArrayLike, *,
                 inverse_transforms: Sequence[Callable[[NDArray], NDArray]] | None = None) -> None:
        self.front = pareto_front(np.asarray(front, dtype=float).reshape(-1, 2))
        self.inverse_transforms = inverse_transforms
        self.objective_front = pareto_front(self._to_objectives(self.front)) if len(self.front) else self.front
        self.anti_ideal = anti_ideal

    def _to_objectives(self, M: NDArray) -> NDArray:
        if self.inverse_transforms is None:
            return M
        return np.column_stack([f(M[:, j]) for j, f in enumerate(self.inverse_transforms)])

    def __call__(self, mean: ArrayLike, std: ArrayLike) -> tuple[NDArray, NDArray]:
        M = np.asarray(mean, dtype=float).reshape(-1, 2)
        poi = _probability_not_dominated(M, std, self.front)
        return hypervolume_gain(self._to_objectives(M), self.objective_front, self.anti_ideal) * poi, poi


def hvpoi(
    mean: ArrayLike, std: ArrayLike, front: ArrayLike, anti_ideal: ArrayLike, *,
    inverse_transforms: Sequence[Callable[[NDArray], NDArray]] | None = None,
) -> tuple[NDArray, NDArray]:
    """HVPoI α and PoI of predictions ``mean``/``std`` (m, 2) against ``front``: :class:`HVPoI` once."""
    return HVPoI(front, anti_ideal, inverse_transforms=inverse_transforms)(mean, std)
