"""The candidate posterior's rank-one step as one compiled pass over the candidates.

A step at large n is memory-bound: it must read the t × n factor V and the scaled candidates once. In
numpy calls every part (kernel column, Vᵀ l, μ, σ², the UCB scores) was its own pass and none overlapped
with the reads; here each tile of candidates (small enough to stay in L1/L2) goes through all of them
before the next tile:

    e_j  = c_j · c_i − ½‖c_j‖² − ½‖c_i‖²  (= −½ d², clipped at 0; exactly 0 at j = i)
    v_j  = (scale/d) ρ(e_j) − Σ_k (l_k/d) V_kj,       V_tj = v_j
    μ_j += w v_j,   σ²_j −= v_j²,   score_j = μ_j + √β √max(σ²_j, 0)  → the tile's argmax outside the skip set

float64 throughout (σ² cancels from 1 to ~1e-5 near observations). No fastmath: the scores, and so the
picks, are computed with the same roundings as numpy's ``μ + √β σ``. Compiled with ``nogil`` and without
numba's own threading (``parallel=True`` aborts when two Python threads launch parallel kernels at once,
as Dask workers do): the caller shares candidate ranges among its own threads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.typed import List

GIVEN_COLUMN, SQUARED_EXPONENTIAL, MATERN52 = 0, 1, 2  # how a tile's kernel column is made
SQRT5 = math.sqrt(5.0)
LOG2E = 1.4426950408889634
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # fdlibm's split: k·LN2_HI is exact
ROUNDING_SHIFT = 6755399441055744.0  # 1.5 · 2⁵²: x + it rounds x to an integer held in the low bits
NORMAL_EXPONENT = -707.0  # below it 2^k · p is subnormal: left to libm
EXP_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))  # degree 13: truncation < 4e-18 at |r| ≤ ln2/2


@njit(cache=True)
def new_block_list(first: np.ndarray) -> List:
    """A typed list of V's blocks (made in compiled code: a typed list built from Python compiles its methods
    in every process, ~0.7 s)."""
    blocks = List()
    blocks.append(first)
    return blocks


@njit(cache=True)
def append_block(blocks: List, block: np.ndarray) -> None:
    blocks.append(block)


@njit(cache=True)
def stored_column(blocks: List, t: int, index: int) -> np.ndarray:
    """V[:t, index], read in compiled code (indexing a typed list from Python is slow)."""
    block = blocks[0].shape[0]
    column = np.empty(t)
    for k in range(t):
        column[k] = blocks[k // block][k % block, index]
    return column


@njit(nogil=True, cache=True)
def best_upper_confidence_bound(lo, hi, tile, mean, variance, sqrt_beta, excluded):
    """(score, index) of the largest μ + √β √max(σ², 0) in [lo, hi) outside ``excluded`` (sorted), ties to the
    lowest index; (−∞, −1) if there is none."""
    scores = np.empty(min(tile, hi - lo))
    skip = np.searchsorted(excluded, lo)
    best_score, best_index = -np.inf, -1
    for a in range(lo, hi, tile):
        b = min(a + tile, hi)
        _tile_scores(mean, variance, a, b, sqrt_beta, scores)
        best_score, best_index, skip = _tile_argmax(scores, a, b, excluded, skip, best_score, best_index)
    return best_score, best_index


@njit(nogil=True, cache=True, inline="always")
def _tile_scores(mean, variance, a, b, sqrt_beta, scores):
    """μ + √β √max(σ², 0) over [a, b) into ``scores`` (numpy's ``μ + √β σ``, rounding for rounding)."""
    mean, variance = mean[a:b], variance[a:b]  # indexed from 0: a loop over j + a does not vectorise
    for j in range(b - a):
        scores[j] = _ucb(mean[j], variance[j], sqrt_beta)


@njit(nogil=True, cache=True, inline="always")
def _ucb(mean, variance, sqrt_beta):
    """μ + √β √max(σ², 0) of one candidate (a function of scalars: the loops calling it still vectorise)."""
    return mean + sqrt_beta * math.sqrt(max(variance, 0.0))


@njit(nogil=True, cache=True, inline="always")
def _tile_argmax(scores, a, b, excluded, skip, best_score, best_index):
    """Folds tile [a, b)'s ``scores`` into the running best (strictly greater wins: ties to the lowest index),
    first knocking out the excluded indices from position ``skip`` on; returns the best and the next ``skip``."""
    while skip < len(excluded) and excluded[skip] < b:
        scores[excluded[skip] - a] = -np.inf
        skip += 1
    m = b - a
    top0 = top1 = top2 = top3 = -np.inf  # the tile's maximum in four independent lanes (vectorisable)
    for j in range(0, m - m % 4, 4):
        top0 = scores[j] if scores[j] > top0 else top0
        top1 = scores[j + 1] if scores[j + 1] > top1 else top1
        top2 = scores[j + 2] if scores[j + 2] > top2 else top2
        top3 = scores[j + 3] if scores[j + 3] > top3 else top3
    for j in range(m - m % 4, m):
        top0 = scores[j] if scores[j] > top0 else top0
    tile_best = max(max(top0, top1), max(top2, top3))
    if tile_best > best_score:  # strictly: an equal score in a later tile loses the tie
        for j in range(m):
            if scores[j] == tile_best:
                return tile_best, a + j, skip
    return best_score, best_index, skip


@njit(nogil=True, cache=True, inline="always")
def _exp_in_place(values, m, shifts, exponents):
    """values[:m] = exp(values[:m]) for arguments ≤ 0, vectorisable (LLVM calls scalar libm for ``math.exp``):
    Cody–Waite reduction x = k ln2 + r, |r| ≤ ln2/2, with k rounded by adding 1.5 · 2⁵² (its low bits then
    hold k), e^r by its Taylor polynomial of degree 13 (truncation < 4e-18 relative) in Horner form, and
    2^k · e^r by adding k to the exponent field. Within 2 ulp of numpy's exp over [−745, 0] (tested; the
    polynomial's and the reduction's roundings, each ≤ 1 ulp). Arguments below −707 (results near or
    below the smallest normal number) go to libm."""
    for j in range(m):
        exponents[j] = values[j]
        values[j], shifts[j] = _exp_reduced(values[j])
    _exp_scale(values, m, shifts, exponents)


@njit(nogil=True, cache=True, inline="always")
def _exp_reduced(x):
    """:func:`_exp_in_place`'s first part for one argument: (e^r, 1.5 · 2⁵² + k). A function of scalars, so
    the loops calling it still vectorise (one taking the arrays and an index did not: 3× slower)."""
    x = max(x, NORMAL_EXPONENT)
    shifted = x * LOG2E + ROUNDING_SHIFT
    k = shifted - ROUNDING_SHIFT
    r = (x - k * LN2_HI) - k * LN2_LO
    p = EXP_TAYLOR[13]
    for i in range(12, -1, -1):
        p = p * r + EXP_TAYLOR[i]
    return p, shifted


@njit(nogil=True, cache=True, inline="always")
def _exp_scale(values, m, shifts, exponents):
    """:func:`_exp_in_place`'s second part: 2^k · e^r, and libm's exp below the normal range."""
    shift_bits, value_bits = shifts.view(np.int64), values.view(np.int64)
    for j in range(m):
        value_bits[j] += shift_bits[j] << 52  # the low bits of 1.5·2⁵² + k are k's two's complement
    for j in range(m):
        if exponents[j] < NORMAL_EXPONENT:
            values[j] = math.exp(exponents[j])


@njit(nogil=True, cache=True, inline="always")
def _exp_reduced_beside_rows(values, m, shifts, exponents, sums, a, rows, weights):
    """:func:`_exp_in_place`'s first part over values[:m] and, in the same loop, sums[:m] = Σ_{k<4} weights[k] ·
    rows(k)[a : a + m] (the first sweep of :func:`_add_rows`, same roundings): four rows stream in while the
    polynomial computes, which alone left the memory idle (the exp is ~10 % of a step at n = 10⁶, t = 50, and
    15 % at 4 · 10⁶, t = 8)."""
    block, b = rows[0].shape[0], a + m
    r0, r1 = rows[0][0, a:b], rows[1 // block][1 % block, a:b]
    r2, r3 = rows[2 // block][2 % block, a:b], rows[3 // block][3 % block, a:b]
    c0, c1, c2, c3 = weights[0], weights[1], weights[2], weights[3]
    for j in range(m):
        sums[j] = c0 * r0[j] + c1 * r1[j] + c2 * r2[j] + c3 * r3[j]
        exponents[j] = values[j]
        values[j], shifts[j] = _exp_reduced(values[j])


@njit(nogil=True, cache=True, inline="always")
def _add_rows(buffer, a, m, rows, first, count, weights):
    """buffer[:m] += Σ_k weights[k] · rows(k)[a : a + m] for k in [first, first + count), four rows a sweep
    (the buffer is read and written a quarter as often); ``rows`` is a list of blocks of ``block`` rows. Each
    row is sliced to the tile first: indexed from 0 the loop vectorises (with ``a + j`` it did not, 3× slower
    in cache)."""
    block = rows[0].shape[0]
    b = a + m
    k, stop = first, first + count
    while k + 4 <= stop:
        r0, r1 = rows[k // block][k % block, a:b], rows[(k + 1) // block][(k + 1) % block, a:b]
        r2, r3 = rows[(k + 2) // block][(k + 2) % block, a:b], rows[(k + 3) // block][(k + 3) % block, a:b]
        c0, c1, c2, c3 = weights[k - first], weights[k + 1 - first], weights[k + 2 - first], weights[k + 3 - first]
        for j in range(m):
            buffer[j] += c0 * r0[j] + c1 * r1[j] + c2 * r2[j] + c3 * r3[j]
        k += 4
    while k < stop:
        r0, c0 = rows[k // block][k % block, a:b], weights[k - first]
        for j in range(m):
            buffer[j] += c0 * r0[j]
        k += 1


@njit(nogil=True, cache=True)
def fused_step(
    lo, hi, tile, profile, scaled, query, query_offset, coincident_exponent, coincident_value, column, index,
    blocks, coefficients, kernel_weight, w, mean, variance, new_row, score, sqrt_beta, excluded,
):
    """One rank-one step on candidates [lo, hi), tile by tile; returns the range's best (score, index) when
    ``score``, else (−∞, −1).

    ``profile``: GIVEN_COLUMN takes the kernel column from ``column`` (length n); otherwise the exponent is
    e = ``query`` · ``scaled``[:, j] + ``query_offset`` (``scaled``: the (r + 1) × n centred, scaled candidates
    with −½‖c‖² as the last row; ``query`` = (c_i, 1)), clipped at 0 and set to 0 at ``index``, and
    ρ = exp(e) (SQUARED_EXPONENTIAL) or (1 + √5 d + 5 d²/3) exp(−√5 d), d = √(−2e) (MATERN52); where
    e ≥ ``coincident_exponent`` (≤ 0; pass 1 for none) ρ is ``coincident_value`` instead (the expected-SE
    kernel's own row: σ², not σ² a).
    ``coefficients`` = −l/d over the t rows of V stored in ``blocks`` (a list of equally tall blocks);
    ``kernel_weight`` = scale/d; v goes into ``new_row`` (V's row t)."""
    size = min(tile, hi - lo)
    buffer, shifts, exponents, factors, sums = (np.empty(size), np.empty(size), np.empty(size), np.empty(size),
                                                np.empty(size))
    # V's first four rows are summed beside the exp polynomial (kernel profiles only): then v = kernel_weight ρ + sums
    beside = 4 if profile != GIVEN_COLUMN and len(coefficients) >= 4 else 0
    skip = np.searchsorted(excluded, lo)
    best_score, best_index = -np.inf, -1
    for a in range(lo, hi, tile):
        b = min(a + tile, hi)
        m = b - a
        if profile == GIVEN_COLUMN:
            buffer[:m] = column[a:b]
        else:
            buffer[:m] = query_offset
            _add_rows(buffer, a, m, (scaled,), 0, len(query), query)
            for j in range(m):
                buffer[j] = min(buffer[j], 0.0)
            if a <= index < b:
                buffer[index - a] = 0.0  # d² = 0 exactly, whatever the expansion's rounding
            if profile == MATERN52:
                for j in range(m):
                    squared = -2.0 * buffer[j]
                    factors[j] = squared * (5.0 / 3.0) + 1.0 + SQRT5 * math.sqrt(squared)
                    buffer[j] = -SQRT5 * math.sqrt(squared)
            if beside:
                _exp_reduced_beside_rows(buffer, m, shifts, exponents, sums, a, blocks, coefficients)
                _exp_scale(buffer, m, shifts, exponents)
            else:
                _exp_in_place(buffer, m, shifts, exponents)
            if coincident_exponent <= 0.0:
                for j in range(m):
                    if exponents[j] >= coincident_exponent:
                        buffer[j] = coincident_value
            if profile == MATERN52:
                for j in range(m):
                    buffer[j] *= factors[j]
        if beside:
            for j in range(m):
                buffer[j] = buffer[j] * kernel_weight + sums[j]  # rounds as *= then the first sweep's +=
        else:
            for j in range(m):
                buffer[j] *= kernel_weight
        _add_rows(buffer, a, m, blocks, beside, len(coefficients) - beside, coefficients[beside:])
        tile_row, tile_mean, tile_variance = new_row[a:b], mean[a:b], variance[a:b]
        if score:  # the scores from the updated μ and σ² while they are in registers: no second loop over them
            for j in range(m):
                v = buffer[j]
                tile_row[j] = v
                updated_mean, updated_variance = tile_mean[j] + w * v, tile_variance[j] - v * v
                tile_mean[j], tile_variance[j] = updated_mean, updated_variance
                buffer[j] = _ucb(updated_mean, updated_variance, sqrt_beta)
            best_score, best_index, skip = _tile_argmax(buffer[:m], a, b, excluded, skip, best_score, best_index)
        else:
            for j in range(m):
                v = buffer[j]
                tile_row[j] = v
                tile_mean[j] += w * v
                tile_variance[j] -= v * v
    return best_score, best_index
