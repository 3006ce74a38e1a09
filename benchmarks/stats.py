"""The statistics a reproduction's verdict rests on: paired contrasts over shared runs, one-sided where the paper
claims an order, Holm's correction over a table, the power of each test against the paper's own effect, and one
verdict rule.

The reproductions pair their runs: run i of every setting shares its initial rows (and its noise stream), so two
settings are compared run by run on the differences d_i = a_i − b_i.

* :func:`sign_flip_p_value`: the permutation test of the mean difference that flips the signs of the d_i (valid
  under the null of a distribution symmetric about 0, whatever its shape, discrete outcomes included). Exact: by
  enumeration while at most ``EXACT_ENUMERATION`` differences are non-zero; by convolving the binomial counts of
  each distinct |d| when the |d| take few values (runs that end at one of a few regret values); otherwise
  ``MONTE_CARLO_DRAWS`` seeded random flips, p = (k + 1) / (N + 1) (a valid test too).
* :func:`sign_test_p_value`: the exact sign test (how many pairs favour a, ties dropped): ordinal, for outcomes
  whose sizes mean little.
* :func:`category_homogeneity_p_value`: whether several settings' outcomes, each one of a few discrete values, share
  one distribution: the χ² statistic of the settings × outcomes table, its p-value from permutations of the
  setting labels within each run (which keeps the pairing).
* :func:`holm`: Holm's step-down adjustment over a family of p-values.
* :func:`paired_power`: the power of the one-sided paired test at level α against an effect of the paper's size,
  normal approximation with our differences' standard deviation.
* :func:`ordering_verdict`: THE rule. A claim "setting ``best`` has lower regret than each of ``others``" (the
  contrasts where the paper's own numbers show that order) **reproduces** when every contrast rejects one-sided at
  α after Holm; **does not reproduce** when a contrast is significant the other way, or fails while its test had
  power ≥ ``ADEQUATE_POWER`` against the paper's effect; otherwise it is **untestable** here, with the power stated.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from scipy import stats as sps

ALPHA = 0.05
ADEQUATE_POWER = 0.8
EXACT_ENUMERATION = 20  # non-zero differences up to which the sign flips are enumerated (2^20 sums)
MAX_SUPPORT = 2_000_000  # support points of the exact convolution before falling back to Monte Carlo
MONTE_CARLO_DRAWS = 200_000
SD_FLOOR = 1e-3  # a standard deviation below the tables' printed precision is raised to it (power of equal runs)
Alternative = Literal["less", "greater", "two-sided"]
Verdict = Literal["reproduces", "does not reproduce", "untestable"]


def _differences(a: Sequence[float], b: Sequence[float] | None) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if b is None:
        return a
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples must have one value per run each, not {a.shape} and {b.shape}")
    return a - b


def _tail(null_sums: np.ndarray, probabilities: np.ndarray | None, observed: float, alternative: Alternative,
          tolerance: float) -> float:
    weights = np.full(len(null_sums), 1.0 / len(null_sums)) if probabilities is None else probabilities
    if alternative == "greater":
        return float(weights[null_sums >= observed - tolerance].sum())
    if alternative == "less":
        return float(weights[null_sums <= observed + tolerance].sum())
    return float(weights[np.abs(null_sums) >= abs(observed) - tolerance].sum())


def sign_flip_p_value(a: Sequence[float], b: Sequence[float] | None = None, *, alternative: Alternative = "less",
                      seed: int = 0) -> tuple[float, str]:
    """p-value of the paired sign-flip permutation test of mean(a − b) (or mean(a) with ``b`` None) against 0;
    ``alternative="less"``: the claim is a < b. Returns (p, how it was computed: "exact enumeration", "exact
    convolution" or "Monte Carlo N")."""
    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(f"alternative must be 'less', 'greater' or 'two-sided', not {alternative!r}")
    d = _differences(a, b)
    d = d[d != 0]
    if d.size == 0:
        return 1.0, "exact enumeration"
    observed = float(d.sum())
    tolerance = 1e-9 * float(np.abs(d).sum())
    magnitudes = np.abs(d)
    if d.size <= EXACT_ENUMERATION:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d.size)))
        return _tail(signs @ magnitudes, None, observed, alternative, tolerance), "exact enumeration"
    values, counts = np.unique(np.round(magnitudes, 12), return_counts=True)
    if math.prod(int(c) + 1 for c in counts) <= MAX_SUPPORT:
        support, probability = np.zeros(1), np.ones(1)
        for value, count in zip(values, counts):
            k = np.arange(count + 1)
            part = value * (2 * k - count)
            support = (support[:, None] + part[None, :]).ravel()
            probability = (probability[:, None] * sps.binom.pmf(k, count, 0.5)[None, :]).ravel()
        return _tail(support, probability, observed, alternative, tolerance), "exact convolution"
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, MONTE_CARLO_DRAWS, 20_000):
        signs = rng.choice((-1.0, 1.0), size=(min(20_000, MONTE_CARLO_DRAWS - start), d.size))
        exceed += round(_tail(signs @ magnitudes, None, observed, alternative, tolerance) * len(signs))
    return (exceed + 1) / (MONTE_CARLO_DRAWS + 1), f"Monte Carlo {MONTE_CARLO_DRAWS}"


def sign_test_p_value(a: Sequence[float], b: Sequence[float], *, alternative: Alternative = "less") -> float:
    """Exact sign test of the paired (a, b): under the null a pair favours either side with probability 1/2 (ties
    dropped). ``alternative="less"``: the claim is that a is below b more often."""
    d = _differences(a, b)
    below, above = int(np.sum(d < 0)), int(np.sum(d > 0))
    if below + above == 0:
        return 1.0
    test = {"less": "greater", "greater": "less", "two-sided": "two-sided"}[alternative]
    return float(sps.binomtest(below, below + above, 0.5, alternative=test).pvalue)


def _chi2(tables: np.ndarray) -> np.ndarray:
    """χ² of each settings × outcomes table in the stack ``tables`` (..., k, c)."""
    expected = tables.sum(-1, keepdims=True) * tables.sum(-2, keepdims=True) / tables.sum((-2, -1), keepdims=True)
    safe = np.where(expected > 0, expected, 1.0)
    return np.where(expected > 0, (tables - expected) ** 2 / safe, 0.0).sum((-2, -1))


def category_homogeneity_p_value(outcomes: Sequence[Sequence[float]], *, draws: int = 20_000,
                                 seed: int = 0) -> tuple[float, int]:
    """Do k settings (rows, one value per run, runs paired across rows) share one distribution over their discrete
    outcomes? χ² of the settings × outcomes table; its p-value from ``draws`` permutations of the settings' labels
    within each run (each run's k outcomes shuffled among the settings), p = (k + 1) / (N + 1). Returns (p, the number
    of distinct outcomes)."""
    values = np.round(np.asarray(outcomes, dtype=float), 12)
    if values.ndim != 2 or values.shape[0] < 2:
        raise ValueError("outcomes must be one row of paired runs per setting, at least two settings")
    categories, codes = np.unique(values, return_inverse=True)
    codes = codes.reshape(values.shape)
    k, n = codes.shape
    one_hot = np.eye(len(categories))
    observed = float(_chi2(one_hot[codes].sum(1)))
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, draws, 1_000):
        batch = min(1_000, draws - start)
        order = np.argsort(rng.random((batch, k, n)), axis=1)  # a random permutation of the k settings per run
        shuffled = np.take_along_axis(np.broadcast_to(codes, (batch, k, n)), order, axis=1)
        exceed += int(np.sum(_chi2(one_hot[shuffled].sum(2)) >= observed - 1e-9))
    return (exceed + 1) / (draws + 1), len(categories)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (reject the i-th hypothesis at family-wise level α when its adjusted
    p ≤ α)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted.tolist()


def paired_power(effect: float, sd: float, n: int, *, alpha: float = ALPHA) -> float:
    """Power of a one-sided paired test at level ``alpha`` with n runs against a true mean difference ``effect``
    (> 0 in the claimed direction), the differences' standard deviation ``sd`` (floored at ``SD_FLOOR``): the normal
    approximation Φ(effect·√n / sd − z_{1−α})."""
    if n < 2:
        return 0.0
    return float(sps.norm.cdf(effect * math.sqrt(n) / max(sd, SD_FLOOR) - sps.norm.ppf(1 - alpha)))


def ordering_verdict(runs: Mapping[object, Sequence[float]], best: object, paper: Mapping[object, float], *,
                     alpha: float = ALPHA, lower_is_better: bool = True) -> dict:
    """The verdict on "``best`` is better than every other setting whose paper value is worse than ``best``'s".

    ``runs``: each setting's final values, run i of every setting paired; ``paper``: the paper's value of each
    setting. The contrasts are best vs each setting the paper shows worse (settings the paper shows level with or
    better than ``best`` carry no claimed order and are listed untested). Each contrast: one-sided paired sign-flip
    test (:func:`sign_flip_p_value`), Holm over the contrasts, power (:func:`paired_power`) at level α / m (the
    first Holm step) against the paper's difference. Verdict (module docstring): ``reproduces`` / ``does not
    reproduce`` / ``untestable``, with each contrast's numbers."""
    sign = 1.0 if lower_is_better else -1.0
    claimed = [s for s in runs if s != best and sign * (paper[s] - paper[best]) > 0]
    untested = [s for s in runs if s != best and s not in claimed]
    n = len(runs[best])
    contrasts = []
    for other in claimed:
        d = sign * _differences(runs[other], runs[best])  # > 0 when best is better, as the paper claims
        p_claimed, method = sign_flip_p_value(d, alternative="greater")
        p_opposite, _ = sign_flip_p_value(d, alternative="less")
        contrasts.append(dict(setting=other, runs=n, mean_difference=float(d.mean()),
                              stderr=float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
                              paper_difference=float(sign * (paper[other] - paper[best])),
                              p=p_claimed, p_opposite=p_opposite, method=method,
                              sign_test_p=sign_test_p_value(d, np.zeros_like(d), alternative="greater"),
                              sd=float(d.std(ddof=1)) if n > 1 else 0.0))
    m = len(contrasts)
    for c, adjusted, adjusted_opposite in zip(contrasts, holm([c["p"] for c in contrasts]),
                                              holm([c["p_opposite"] for c in contrasts])):
        c["p_holm"], c["p_opposite_holm"] = adjusted, adjusted_opposite
        c["power"] = paired_power(c["paper_difference"], c["sd"], c["runs"], alpha=alpha / m)
        c["holds"] = adjusted <= alpha
    if not contrasts:
        verdict: Verdict = "untestable"
        reason = "the paper's own numbers show no setting worse than the claimed best"
    elif all(c["holds"] for c in contrasts):
        verdict, reason = "reproduces", f"every contrast one-sided p ≤ {alpha} after Holm"
    elif any(c["p_opposite_holm"] <= alpha for c in contrasts):
        verdict, reason = "does not reproduce", "a contrast is significant in the opposite direction"
    elif any(not c["holds"] and c["power"] >= ADEQUATE_POWER for c in contrasts):
        verdict, reason = "does not reproduce", (f"a contrast fails although its test had power ≥ {ADEQUATE_POWER} "
                                                 "against the paper's difference")
    else:
        verdict, reason = "untestable", (f"the contrasts that fail had power < {ADEQUATE_POWER} against the paper's "
                                         "differences")
    return dict(verdict=verdict, reason=reason, best=best, runs=n, alpha=alpha, contrasts=contrasts,
                untested=untested, power_of_failing={c["setting"]: c["power"] for c in contrasts if not c["holds"]})
