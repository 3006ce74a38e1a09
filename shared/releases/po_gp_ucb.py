"""The PO-GP-UCB curator transform (Kharkovskii, Dai & Low, ICML 2020, Algorithm 1).

**This release is NOT differentially private** (docs/design.md §4), whatever the paper's Theorem 1 says. Its
output Z = r^(-1/2) X̃ M is an affine image of the data: Z = (X - mean) B for a d × r matrix B (lifting
the singular values only changes B). Anyone who knows d + 1 records and their row indices can solve
for B and the mean and reconstruct every other record exactly; even without side knowledge Z reveals
the column space of the centred data, so neighbouring datasets give outputs with disjoint supports; the
data-dependent branch on σ_min leaks too. It is implemented faithfully so that the paper's experiments
can be reproduced, and it is never to be called DP. Its randomness is plain ``numpy.random`` on
purpose: the mechanism is uncertified anyway, and seeded draws make the reproduction repeatable.

Algorithm 1, with X the n × d data::

    2: X ← X − 1 1ᵀ X / n                                  (centre the columns)
    3: M ← d × r matrix of i.i.d. N(0, 1)
    4: X = U Σ Vᵀ                                           (full SVD)
    5: ω ← 16 √(r log(2/δ)) ε⁻¹ log(16 r/δ)                 (natural logarithms; Blocki et al.'s form, see ``omega``)
    6: if σ_min(X) ≥ ω:  Z ← r^(-1/2) X M
    9: else:             X̃ ← U √(Σ² + ω² I_{n×d}) Vᵀ,  Z ← r^(-1/2) X̃ M

σ_min is the smallest of the min(n, d) singular values (so it is 0 whenever n ≤ d, because centred data
has rank at most n − 1).

**Gram-matrix route.** Neither U nor any n × n matrix is formed. One streaming pass accumulates the
column means and the centred Gram matrix XᵀX (chunk statistics merged with Chan et al.'s update, which
avoids the cancellation of ΣxxᵀT − n x̄x̄ᵀ); its eigendecomposition gives σᵢ² (eigenvalues, tiny
negatives clipped) and V. For σᵢ > 0, uᵢ = X vᵢ / σᵢ, hence the lifted part of X̃ M is
X V diag(√(σ² + ω²)/σ) Vᵀ M = X B, a d × r matrix B, and Z is computed chunk by chunk: O(d² + d r) memory
beyond X and Z.

**Rank-deficient data (σᵢ = 0, i ≤ min(n, d)).** Line 9 lifts these singular values to ω too, but the
matching columns uᵢ of U are not determined by X: any orthonormal vectors in the orthogonal complement
of X's column space (dimension n − rank) will do, and they contribute ω U₀ V₀ᵀ M to X̃ M. V₀ᵀ M is an
i.i.d. N(0, 1) matrix independent of the rest whichever null-space basis V₀ is taken, so the choice of
V₀ does not matter. The choice of U₀ does: r^(-1/2) ω U₀ G has column covariance ω² U₀U₀ᵀ / r, which
depends on span(U₀), so different "SVDs" give differently distributed Z whenever n > d (for n ≤ d the
complement has dimension exactly min(n, d) − rank, span(U₀) is forced and Z's distribution is unique —
for full-rank centred data with n ≤ d, U₀ = 1/√n and the lift adds one common random vector to every
row). The paper does not say which SVD it means, so we take the choice that depends on no particular
SVD routine: U₀ uniformly distributed (Haar) on the orthonormal p-frames of that complement, drawn as
the polar factor of a Gaussian n × p matrix projected onto it. This needs a second streaming pass and
O(d p + p²) extra memory; the Gaussian rows are drawn in fixed blocks so that Z does not depend on the
chunk size. Eigenvalues below ``λ_max · max(n, d) · machine-ε`` (the accuracy of a Gram matrix's
eigenvalues, plus the rounding floor of the centring) count as zero: the Gram route cannot resolve singular values
below about
1.5e-8 σ_max · √max(n, d), and treating such a direction as exactly null changes X̃ by at most that σᵢ.

**Randomness contract.** M is the first d·r standard normals drawn from ``rng`` (row-major), so a test
can rebuild M; the rank-deficient lift then draws one integer seed for the Gaussian blocks behind U₀ and
a d × p Gaussian matrix whose projection onto the null space gives V₀ (Haar there, so V₀ᵀM is N(0, 1)
as for any basis, and the result does not hinge on which null-space basis the eigensolver returns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shared.checks import open_unit, positive, positive_int

DEFAULT_CHUNK_ROWS = 65_536
# Rows per block of the Gaussian matrix behind U₀; fixed so that Z is independent of chunk_rows.
_NULL_BASIS_BLOCK_ROWS = 4_096


def _check_privacy_parameters(epsilon: float, delta: float, r: int) -> None:
    positive(epsilon, "epsilon"), open_unit(delta, "delta"), positive_int(r, "r")


OmegaForm = Literal["blocki", "literal"]


def omega(epsilon: float, delta: float, r: int, *, form: OmegaForm = "blocki") -> float:
    """Line 5 of Algorithm 1, natural logarithms.

    ``"blocki"`` (default): ω = 16 √(r log(2/δ)) ε⁻¹ log(16 r/δ), the threshold of Blocki, Blum, Datta &
    Sheffet (2012, Algorithm 3), which the paper says Algorithm 1 adapts. Our text of the paper reads
    "16 √r log(2/δ)": the extraction lost the bracket that puts log(2/δ) under the root (reconstructed).
    Only Blocki's form reproduces the paper's own crossing statements on its stated normalisation (a
    centred 100 × 100 grid of maximal norm 25, σ_min ≈ 1,031; ``docs/po_gp_ucb.md``).
    ``"literal"``: ω = 16 √r log(2/δ) ε⁻¹ log(16 r/δ), the extraction as printed, √log(2/δ) ≈ 3.5 times
    larger at δ = 1e-5; kept to compare with.
    """
    _check_privacy_parameters(epsilon, delta, r)
    if form == "blocki":
        root = math.sqrt(r * math.log(2.0 / delta))
    elif form == "literal":
        root = math.sqrt(r) * math.log(2.0 / delta)
    else:
        raise ValueError(f"form must be 'blocki' or 'literal', got {form!r}")
    return 16.0 * root / epsilon * math.log(16.0 * r / delta)


@dataclass(frozen=True)
class CentredGram:
    """Column means and the eigendecomposition of the centred Gram matrix (X − x̄)ᵀ(X − x̄).

    ``eigenvalues`` are σᵢ² in descending order (clipped at 0), ``eigenvectors`` the matching columns of V,
    ``rank`` the number of eigenvalues above the Gram route's resolution.
    """

    n: int
    mean: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    rank: int

    @property
    def singular_values(self) -> np.ndarray:
        """The min(n, d) singular values of the centred data, descending; unresolved ones are exactly 0."""
        k = min(self.n, self.mean.size)
        sigma = np.sqrt(self.eigenvalues[:k])
        sigma[self.rank :] = 0.0
        return sigma

    @property
    def sigma_min(self) -> float:
        return float(self.singular_values[-1])


def _as_data(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of rows, got shape {X.shape}")
    if X.shape[0] < 2:
        raise ValueError(f"X needs at least 2 rows, got {X.shape[0]}")
    if X.shape[1] < 1:
        raise ValueError("X needs at least 1 column")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return X


def _row_chunks(n: int, chunk_rows: int) -> Iterator[tuple[int, int]]:
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be positive, got {chunk_rows}")
    for start in range(0, n, chunk_rows):
        yield start, min(start + chunk_rows, n)


def centred_gram(X: np.ndarray, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> CentredGram:
    """One streaming pass: means and centred Gram matrix, merged chunk by chunk (Chan, Golub & LeVeque)."""
    X = _as_data(X)
    n, d = X.shape
    count = 0
    mean = np.zeros(d)
    scatter = np.zeros((d, d))
    largest_entry = 0.0
    for start, stop in _row_chunks(n, chunk_rows):
        chunk = X[start:stop]
        largest_entry = max(largest_entry, float(np.abs(chunk).max()))
        m = stop - start
        chunk_mean = chunk.mean(axis=0)
        centred = chunk - chunk_mean
        shift = chunk_mean - mean
        total = count + m
        scatter += centred.T @ centred + np.outer(shift, shift) * (count * m / total)
        mean += shift * (m / total)
        count = total
    eigenvalues, eigenvectors = np.linalg.eigh((scatter + scatter.T) / 2)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues = np.clip(eigenvalues[order], 0.0, None)
    eigenvectors = eigenvectors[:, order]
    # Eigenvalues of a Gram matrix are accurate to about size·ε·λ_max, and centring leaves rounding of
    # about ε·max|x| in every entry, i.e. n (size·ε·max|x|)² in the scatter: nothing below that is resolved.
    eps_size = max(n, d) * np.finfo(float).eps
    resolution = eps_size * eigenvalues[0] + n * (eps_size * largest_entry) ** 2
    rank = int(np.count_nonzero(eigenvalues > resolution))
    return CentredGram(n=n, mean=mean, eigenvalues=eigenvalues, eigenvectors=eigenvectors, rank=rank)


@dataclass(frozen=True)
class PoGpUcbRelease:
    """What Algorithm 1 releases (``Z``) and the public facts about how it was made.

    Not differentially private (see the module docstring); ``Z`` never comes with M or X̃.
    """

    Z: np.ndarray
    omega: float
    sigma_min: float
    lifted: bool
    r: int
    epsilon: float
    delta: float


def _gaussian_block_rows(seed: int, start: int, stop: int, p: int) -> np.ndarray:
    """Rows start..stop of the n × p Gaussian matrix behind U₀, generated in fixed blocks."""
    first, last = start // _NULL_BASIS_BLOCK_ROWS, (stop - 1) // _NULL_BASIS_BLOCK_ROWS
    blocks = [
        np.random.default_rng((seed, b)).standard_normal((_NULL_BASIS_BLOCK_ROWS, p)) for b in range(first, last + 1)
    ]
    offset = first * _NULL_BASIS_BLOCK_ROWS
    return np.concatenate(blocks)[start - offset : stop - offset]


def _inverse_sqrt(S: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((S + S.T) / 2)
    return (vectors / np.sqrt(values)) @ vectors.T


def po_gp_ucb_release(
    X: np.ndarray,
    epsilon: float,
    delta: float,
    r: int,
    rng: np.random.Generator | int | None = None,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> PoGpUcbRelease:
    """Algorithm 1 exactly, by the Gram-matrix route (module docstring). NOT differentially private.

    Z = r^(-1/2) (X − x̄) M if σ_min ≥ ω, else Z = r^(-1/2) X̃ M with X̃ = U √(Σ² + ω² I) Vᵀ.
    """
    X = _as_data(X)
    _check_privacy_parameters(epsilon, delta, r)
    r = int(r)
    rng = np.random.default_rng(rng)
    n, d = X.shape
    gram = centred_gram(X, chunk_rows)
    M = rng.standard_normal((d, r))
    w = omega(epsilon, delta, r)
    sigma_min = gram.sigma_min
    lifted = not sigma_min >= w

    scale = 1.0 / math.sqrt(r)
    null_term = None
    if not lifted:
        B = M * scale
    else:
        k = gram.rank
        V_k = gram.eigenvectors[:, :k]
        sigma_sq = gram.eigenvalues[:k]
        B = (V_k * np.sqrt((sigma_sq + w**2) / sigma_sq)) @ (V_k.T @ M) * scale
        null_term = _null_lift(X, gram, M, w, scale, rng, chunk_rows)
        if null_term is not None:
            correction, seed, C = null_term
            B = B - correction

    Z = np.empty((n, r))
    for start, stop in _row_chunks(n, chunk_rows):
        Z[start:stop] = (X[start:stop] - gram.mean) @ B
        if null_term is not None:
            Z[start:stop] += _gaussian_block_rows(seed, start, stop, C.shape[0]) @ C
    return PoGpUcbRelease(Z=Z, omega=w, sigma_min=sigma_min, lifted=lifted, r=r, epsilon=epsilon, delta=delta)


def _null_lift(
    X: np.ndarray,
    gram: CentredGram,
    M: np.ndarray,
    w: float,
    scale: float,
    rng: np.random.Generator,
    chunk_rows: int,
) -> tuple[np.ndarray, int, np.ndarray] | None:
    """The term r^(-1/2) ω U₀ V₀ᵀ M for the p = min(n, d) − rank zero singular values, or None if p = 0.

    U₀ = H⊥ (H⊥ᵀH⊥)^(-1/2) with H⊥ = H − X G⁺ Xᵀ H the projection of a Gaussian n × p matrix H onto the
    complement of the column space of the centred X (G⁺ the pseudo-inverse of its Gram matrix): Haar-distributed
    there. Returned as (P C, seed, C) with P = G⁺ XᵀH and C = r^(-1/2) ω (H⊥ᵀH⊥)^(-1/2) V₀ᵀ M, so that the term
    equals H C − X (P C), computable chunk by chunk from the regenerated rows of H.
    """
    n, d = X.shape
    k = gram.rank
    p = min(n, d) - k
    if p == 0:
        return None
    seed = int(rng.integers(0, 2**63))
    cross = np.zeros((d, p))  # Xᵀ H (centred X)
    h_gram = np.zeros((p, p))  # Hᵀ H
    for start, stop in _row_chunks(n, chunk_rows):
        H = _gaussian_block_rows(seed, start, stop, p)
        cross += (X[start:stop] - gram.mean).T @ H
        h_gram += H.T @ H
    V_k = gram.eigenvectors[:, :k]
    P = (V_k / gram.eigenvalues[:k]) @ (V_k.T @ cross)
    projected_gram = h_gram - cross.T @ P  # H⊥ᵀ H⊥
    # Any orthonormal p-frame of the null space gives the same distribution of V₀ᵀM; the polar factor of a
    # projected Gaussian makes the choice independent of the basis eigh happens to return (and of chunk_rows).
    null_draw = rng.standard_normal((d, p))
    null_draw -= V_k @ (V_k.T @ null_draw)
    V_0 = null_draw @ _inverse_sqrt(null_draw.T @ null_draw)
    C = _inverse_sqrt(projected_gram) @ (V_0.T @ M) * (w * scale)
    return P @ C, seed, C


def largest_r(X: np.ndarray, epsilon: float, delta: float, r_max: int) -> int:
    """The paper's guideline (§3.4): the largest r ≤ r_max with σ_min ≥ ω(ε, δ, r); 0 when there is none.

    ω grows with r (√r log(16 r/δ) is increasing), so the admissible r form a prefix 1..r* found by bisection.
    """
    _check_privacy_parameters(epsilon, delta, r_max)
    sigma_min = centred_gram(X).sigma_min
    low, high = 0, int(r_max)  # invariant: ω(low) ≤ σ_min (vacuous at 0), ω(r) > σ_min for r > high
    while low < high:
        mid = (low + high + 1) // 2
        if sigma_min >= omega(epsilon, delta, mid):
            low = mid
        else:
            high = mid - 1
    return low
