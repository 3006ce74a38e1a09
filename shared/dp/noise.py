"""Sources of privacy noise: floating-point-safe (OpenDP) for production, seeded numpy for research.

Textbook mechanisms written with ``numpy.random`` leak through floating point: the set of doubles
``x + noise`` can reach depends on ``x`` (Mironov 2012), so an observer can tell neighbouring inputs
apart with certainty. :class:`OpenDPNoise` avoids this the way OpenDP proves it does: the exact input
is rounded to a grid of spacing ``2**k`` and an *exact* discrete Laplace or discrete Gaussian multiple of
that grid is added (Canonne, Kamath & Steinke 2020), sampled with exact integer arithmetic. The grid is
chosen ``GRID_BITS`` binary orders below the mechanism's sensitivity, so the discrete distribution is
indistinguishable from the continuous one at any sample size we could draw, and the rounding's extra
sensitivity (at most one grid step per coordinate) is added to the calibration by
:mod:`shared.dp.mechanisms` via :meth:`NoiseSource.grid`.

:class:`SeededNoise` draws from ``numpy.random.Generator``: reproducible, for research and tests, and
**not floating-point-safe**. The curator service refuses seeds in production mode.

Noise is only ever *added to a value* (:meth:`NoiseSource.add_laplace` / :meth:`NoiseSource.add_gaussian`,
or the mechanisms in :mod:`shared.dp.mechanisms`), with the grid the caller calibrated to. There is
deliberately no way to draw safe noise around zero: ``value + noise_around_zero`` keeps ``value``'s
residue modulo the grid, so the sum identifies the input exactly. Simulations that
need raw draws and release nothing (DPareto's common random numbers) use a ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from shared.checks import finite_vector, positive

if TYPE_CHECKING:
    from opendp.mod import Measurement

GRID_BITS = 45
"""The sampler's grid is ``2**(floor(log2(sensitivity)) - GRID_BITS)``: ~3e-14 of the sensitivity."""

BATCH = 1 << 16
"""Values passed to OpenDP per call: bounds the temporary Python lists to a few MB."""


class NoiseSource(ABC):
    """Where privacy noise comes from. ``floating_point_safe`` says whether releases may use it in production."""

    floating_point_safe: bool

    @abstractmethod
    def add_laplace(self, values: np.ndarray, scale: float, grid: float) -> np.ndarray:
        """``values`` rounded to ``grid`` + i.i.d. Laplace(0, ``scale``) noise (``grid`` from :meth:`grid`).

        The rounding can move each coordinate of a neighbouring pair one grid step further apart: the
        caller's calibration must include that slack (see :mod:`shared.dp.mechanisms`)."""

    @abstractmethod
    def add_gaussian(self, values: np.ndarray, std: float, grid: float) -> np.ndarray:
        """``values`` rounded to ``grid`` + i.i.d. N(0, ``std``²) noise (``grid`` from :meth:`grid`), as above."""

    @abstractmethod
    def exponential_index(self, scores: np.ndarray, sensitivity: float, epsilon: float) -> int:
        """An index drawn with probability ∝ exp(ε · score / (2 · sensitivity)) (McSherry & Talwar 2007)."""

    @abstractmethod
    def grid(self, sensitivity: float) -> float:
        """Spacing of the lattice this source rounds inputs to for a mechanism of this sensitivity (0: none)."""


class SeededNoise(NoiseSource):
    """Reproducible noise from ``numpy.random.default_rng(seed)``. NOT floating-point-safe: research only."""

    floating_point_safe = False

    def __init__(self, seed: int | np.random.Generator) -> None:
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def add_laplace(self, values: np.ndarray, scale: float, grid: float) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        return values + self.rng.laplace(0.0, positive(scale, "scale"), size=values.shape)

    def add_gaussian(self, values: np.ndarray, std: float, grid: float) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        return values + self.rng.normal(0.0, positive(std, "std"), size=values.shape)

    def exponential_index(self, scores: np.ndarray, sensitivity: float, epsilon: float) -> int:
        # The Gumbel-max trick, as the safe source: argmax(score + Gumbel(2Δ/ε)) ∝ exp(ε·score/(2Δ)).
        scores = finite_vector(scores, "scores")
        scale = 2.0 * positive(sensitivity, "sensitivity") / positive(epsilon, "epsilon")
        return int(np.argmax(scores + self.rng.gumbel(0.0, scale, size=scores.size)))

    def grid(self, sensitivity: float) -> float:
        return 0.0


class OpenDPNoise(NoiseSource):
    """Floating-point-safe noise from OpenDP's exact discrete Laplace / Gaussian and Gumbel noisy max.

    Unseeded (OpenDP draws from the operating system's CSPRNG); one exact sample at a time, hundreds of times the
    cost of numpy's (``benchmarks/regret_vs_epsilon.py --sampler-cost``,
    benchmarks/results/regret_vs_epsilon_sampler_cost.json).
    """

    floating_point_safe = True

    def add_laplace(self, values: np.ndarray, scale: float, grid: float) -> np.ndarray:
        return self._add(values, "laplace", positive(scale, "scale"), grid)

    def add_gaussian(self, values: np.ndarray, std: float, grid: float) -> np.ndarray:
        return self._add(values, "gaussian", positive(std, "std"), grid)

    def exponential_index(self, scores: np.ndarray, sensitivity: float, epsilon: float) -> int:
        scores = finite_vector(scores, "scores")
        # Report-noisy-max with Gumbel noise of scale 2Δ/ε samples exactly ∝ exp(ε·score/(2Δ)) (the
        # Gumbel-max trick). OpenDP uses Gumbel noise when the output measure is zCDP; with MaxDivergence it
        # would use exponential noise (permute-and-flip), a different distribution. The privacy guarantee we
        # claim is the exponential mechanism's ε-DP, not OpenDP's zCDP map.
        measurement = _noisy_max(2.0 * positive(sensitivity, "sensitivity") / positive(epsilon, "epsilon"))
        return int(measurement(scores.tolist()))

    def grid(self, sensitivity: float) -> float:
        return 2.0 ** _grid_exponent(sensitivity)

    @staticmethod
    def _add(values: np.ndarray, kind: str, scale: float, grid: float) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError("values to be noised must be finite")
        k = int(round(math.log2(positive(grid, "grid"))))
        if 2.0**k != grid:
            raise ValueError("the sampler's grid must be a power of two (use NoiseSource.grid)")
        flat = values.ravel()
        out = np.empty_like(flat)
        for start in range(0, flat.size, BATCH):
            chunk = flat[start : start + BATCH]
            out[start : start + chunk.size] = _additive(kind, chunk.size, scale, k)(chunk.tolist())
        return out.reshape(values.shape)


def noise_source(seed: int | None) -> NoiseSource:
    """``None`` → the floating-point-safe OpenDP source (production); an int → a seeded research source."""
    return OpenDPNoise() if seed is None else SeededNoise(seed)


def seeded_streams(seed: int | None) -> tuple[NoiseSource, np.random.Generator]:
    """The privacy-noise source for ``seed`` and an independent generator for everything else (M, splits).

    Two generators built from the same seed draw the same numbers, so the noise would repeat M or the lots;
    spawning keeps the streams independent and still reproducible."""
    noise_rng, rng = np.random.default_rng(seed).spawn(2)
    return (noise_source(None) if seed is None else SeededNoise(noise_rng)), rng


def _grid_exponent(sensitivity: float) -> int:
    return math.floor(math.log2(positive(sensitivity, "sensitivity"))) - GRID_BITS


def _opendp() -> ModuleType:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@lru_cache(maxsize=32)
def _additive(kind: str, size: int, scale: float, k: int) -> Measurement:
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)
    if kind == "gaussian":
        return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=k)
    return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale, k=k)


@lru_cache(maxsize=32)
def _noisy_max(scale: float) -> Measurement:
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)
