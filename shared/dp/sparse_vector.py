"""The sparse vector technique as DPareto's Algorithm 1 (Avent et al. 2020; Lyu, Su & Li 2017, Alg. 7).

Non-interactive SVT over m binary queries (sensitivity 1, threshold 1/2) with total noise b and answer
bound C: b₁ = b / (1 + (2C)^(1/3)), b₂ = b − b₁, ρ ~ Lap(b₁); for each query in order, ν ~ Lap(b₂) and
answer 1 if q_i + ν ≥ 1/2 + ρ, stopping once C answers are 1. Its privacy is
ε = (1 + (2C)^(1/3))(1 + (2C)^(2/3)) / b (``shared.dp.accounting.svt_epsilon``). C may be real-valued
(the paper samples it from [1, 30]); "stop when c ≥ C" then allows ⌈C⌉ positive answers.

:func:`sparse_vector_technique` is the release: the sampler adds the noise to the answers and to the
threshold themselves, after rounding them to its grid, so both scales are widened by the rounding slack
(sensitivity 1 + grid) and the ε above holds as stated. :func:`svt_from_unit_noise` is the simulation
DPareto's oracle runs on shared unit draws; it releases nothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from shared.checks import positive
from shared.dp.noise import NoiseSource


def noise_split(noise_level: float, bound: float) -> tuple[float, float]:
    """(b₁, b₂): the threshold's and the queries' Laplace scales (Lyu et al.'s budget allocation)."""
    b1 = noise_level / (1.0 + (2.0 * bound) ** (1.0 / 3.0))
    return b1, noise_level - b1


def svt_from_unit_noise(
    answers: NDArray, threshold_noise: NDArray, query_noise: NDArray, noise_level: float, bound: float
) -> NDArray:
    """Algorithm 1 for R runs at once, given unit-scale Laplace draws ρ₁ (R,) and ν₁ (R, m).

    ``answers`` (R, m) are the true 0/1 answers in each run's query order. Scaling unit draws lets an
    oracle reuse the same randomness across hyperparameters (common random numbers). Returns w (R, m).
    """
    b1, b2 = noise_split(noise_level, bound)
    return _answered(answers + b2 * query_noise >= 0.5 + b1 * np.asarray(threshold_noise)[:, None], bound)


def sparse_vector_technique(answers: NDArray, noise_level: float, bound: float, noise: NoiseSource) -> NDArray:
    """One run of Algorithm 1 on the true answers q (m,) ∈ {0, 1}; returns w ∈ {0, 1}^m (as bool)."""
    positive(noise_level, "the noise b"), positive(bound, "the answer bound C")
    grid = noise.grid(1.0)
    b1, b2 = noise_split(noise_level * (1.0 + grid), bound)  # scales for sensitivity 1 + grid
    threshold = noise.add_laplace(np.array([0.5]), b1, grid)
    noisy_answers = noise.add_laplace(np.asarray(answers, dtype=float), b2, grid)
    return _answered((noisy_answers >= threshold)[None, :], bound)[0]


def _answered(hits: NDArray, bound: float) -> NDArray:
    """A hit is answered while fewer than C earlier hits were answered (the loop returns once c ≥ C)."""
    before = np.cumsum(hits, axis=1) - hits
    return hits & (before < bound)


def f1_scores(truth: NDArray, predicted: NDArray) -> NDArray:
    """F₁ = 2TP / (2TP + FP + FN) per row (1 when there is nothing to find and nothing is reported)."""
    truth, predicted = np.asarray(truth, bool), np.asarray(predicted, bool)
    tp = np.sum(truth & predicted, axis=-1)
    wrong = np.sum(truth ^ predicted, axis=-1)
    denominator = 2 * tp + wrong
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 1.0)
