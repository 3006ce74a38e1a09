"""The DP mechanisms every release path uses: Laplace, Gaussian (analytic calibration), exponential, and the
Laplace release of a model's held-out scores.

The noise itself comes from a :class:`shared.dp.noise.NoiseSource`; the floating-point-safe source rounds
inputs to a grid, which can move each coordinate of a neighbouring pair by one more grid step, so the
mechanisms here calibrate to the sensitivity *plus* that rounding slack (at most ~1e-13 relative).
Callers that compute the noised value as a floating-point sum widen the sensitivity by
:func:`summation_error` too (float sums are not exact; Casacuberta et al. 2022).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from shared.checks import finite_vector, open_unit, positive
from shared.dp.noise import NoiseSource


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of the Gaussian mechanism N(0, σ²) with ℓ2 sensitivity Δ (Balle & Wang 2018, Thm 8).

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space so large ε cannot overflow.
    """
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    log_first = log_ndtr(a - b)
    log_second = epsilon + log_ndtr(-a - b)
    if log_second >= log_first:
        return 0.0
    return float(math.exp(log_first) * -math.expm1(log_second - log_first))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ for which N(0, σ²) noise makes a query of ℓ2 sensitivity Δ (ε, δ)-DP (Balle & Wang 2018).

    Solves :func:`gaussian_delta`(σ) = δ; δ(σ) is decreasing in σ, and the root is bracketed in σ/Δ.
    The returned σ is rounded up so that gaussian_delta(σ) ≤ δ holds in floating point too.
    """
    epsilon = positive(epsilon, "epsilon")
    sensitivity = positive(sensitivity, "sensitivity")
    log_delta = math.log(open_unit(delta, "delta"))

    def excess(log_ratio: float) -> float:
        d = gaussian_delta(math.exp(log_ratio), epsilon)
        return (math.log(d) if d > 0 else -math.inf) - log_delta

    lo, hi = -1.0, 1.0
    while excess(lo) < 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    sigma = math.exp(brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15)) * sensitivity
    while gaussian_delta(sigma, epsilon, sensitivity) > delta:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def exponential_mechanism_probabilities(scores: np.ndarray, sensitivity: float, epsilon: float) -> np.ndarray:
    """Exact output distribution of the exponential mechanism: p_i ∝ exp(ε · score_i / (2 · Δ)).

    Computed as a softmax with the maximum subtracted, so no score can overflow.
    """
    scores = finite_vector(scores, "scores")
    logits = (positive(epsilon, "epsilon") / (2.0 * positive(sensitivity, "sensitivity"))) * scores
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def laplace_mechanism(value: float | np.ndarray, sensitivity: float, epsilon: float,
                      noise: NoiseSource) -> float | np.ndarray:
    """ε-DP release of ``value`` (a number or array) of ℓ1 sensitivity Δ: value + Laplace(Δ'/ε) noise.

    Δ' = Δ + (number of coordinates) · grid: the sampler's rounding can move each coordinate by one step.
    """
    values = np.asarray(value, dtype=float)
    grid = noise.grid(positive(sensitivity, "sensitivity"))
    scale = (sensitivity + values.size * grid) / positive(epsilon, "epsilon")
    released = noise.add_laplace(values, scale, grid)
    return float(released) if np.ndim(value) == 0 else released


UNIT_ROUNDOFF = 2.0**-53


def summation_error(terms: int) -> float:
    """γ_n = n·u / (1 − n·u), u = 2⁻⁵³: |fl(Σ a_i) − Σ a_i| ≤ γ_{n−1} Σ |a_i| for a sum of n doubles in any
    order, and |fl(Σ a_i b_i) − Σ a_i b_i| ≤ γ_n Σ |a_i b_i| for an inner product (Higham 2002, §3.1 and §4.2).
    """
    bound = terms * UNIT_ROUNDOFF
    if not 0 <= bound < 0.5:
        raise ValueError(f"cannot bound the rounding error of a sum of {terms} terms")
    return bound / (1.0 - bound)


def bounded_mean_sensitivity(lower: float, upper: float, n: int) -> float:
    """Δ = (upper − lower)/n + 2γ_n·max(|lower|, |upper|): replacing one of n values in [lower, upper] moves
    their mean by (upper − lower)/n (Dwork & Roth 2014, Def. 3.1 with Thm 3.6), and the float mean (a sum in any
    order, one division) is off by at most γ_n·max(|lower|, |upper|) on either neighbour (:func:`summation_error`).
    Without the second term, bounds far from zero (1e12, 1e12 + 1e-3) let the rounding exceed the calibration."""
    return (upper - lower) / n + 2.0 * summation_error(n) * max(abs(lower), abs(upper))


def release_held_out_scores(model: Any, X: np.ndarray, y: np.ndarray, epsilon: float,
                            noise: NoiseSource) -> dict[str, Any]:
    """A model's accuracy and the majority-class baseline on held-out rows, ε-DP for those rows.

    The accuracy and the rate r of label 1 are means of n_test values in [0, 1], each released by the
    Laplace mechanism at ε/2 (:func:`bounded_mean_sensitivity`; basic composition, Dwork & Roth 2014, Thm 3.16);
    the baseline is max(r̃, 1 − r̃), post-processing. The model is already a DP release of the other rows, so
    scoring it is post-processing for them. ``model`` (anything with scikit-learn's ``score(X, y)``) None
    releases the baseline only.
    """
    n = len(y)
    sensitivity, half = bounded_mean_sensitivity(0.0, 1.0, n), epsilon / 2.0
    rate = laplace_mechanism(float(np.mean(y)), sensitivity, half, noise)
    accuracy = laplace_mechanism(model.score(X, y), sensitivity, half, noise) if model is not None else None
    return {"rows": n, "accuracy": accuracy, "majority_baseline": max(rate, 1.0 - rate), "epsilon": epsilon,
            "noise_scale": sensitivity / half}


def l2_sensitivity_with_grid(sensitivity: float, coordinates: int, noise: NoiseSource) -> float:
    """Δ + √coordinates · grid: the ℓ2 sensitivity once ``noise`` has rounded one record's values to its grid."""
    return sensitivity + math.sqrt(coordinates) * noise.grid(positive(sensitivity, "sensitivity"))


def gaussian_mechanism(
    value: float | np.ndarray, sensitivity: float, epsilon: float, delta: float, noise: NoiseSource
) -> float | np.ndarray:
    """(ε, δ)-DP release of ``value`` (one record's contribution) of ℓ2 sensitivity Δ with analytic σ."""
    values = np.asarray(value, dtype=float)
    std = analytic_gaussian_sigma(epsilon, delta, l2_sensitivity_with_grid(sensitivity, values.size, noise))
    released = noise.add_gaussian(values, std, noise.grid(sensitivity))
    return float(released) if np.ndim(value) == 0 else released
