"""Algorithm 1 of PO-GP-UCB (the uncertified curator transform) against direct SVD computations."""

import math

import numpy as np
import pytest

from shared.releases import largest_r, omega, po_gp_ucb_release
from shared.releases.po_gp_ucb import centred_gram

SEED = 12345


def rebuild_M(seed: int, d: int, r: int) -> np.ndarray:
    """M is the first d·r standard normals drawn from the release's rng (the module's randomness contract)."""
    return np.random.default_rng(seed).standard_normal((d, r))


def direct_release(X, epsilon, delta, r, seed):
    """Algorithm 1 line by line with a full SVD (only for full-rank data, where U is determined)."""
    Xc = X - np.ones((len(X), 1)) @ np.ones((1, len(X))) @ X / len(X)
    M = rebuild_M(seed, X.shape[1], r)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=True)
    w = 16 * math.sqrt(r * math.log(2 / delta)) / epsilon * math.log(16 * r / delta)  # Blocki et al.'s form
    if s.min() >= w:
        return Xc @ M / math.sqrt(r), Xc
    lifted_sigma = np.zeros(Xc.shape)
    k = min(Xc.shape)
    lifted_sigma[np.arange(k), np.arange(k)] = np.sqrt(s**2 + w**2)
    X_tilde = U @ lifted_sigma @ Vt
    return X_tilde @ M / math.sqrt(r), X_tilde


def implied_X_tilde(Z, seed, d, r):
    """X̃ = √r Z M⁺ (exact when r ≥ d, since M then has full row rank)."""
    return math.sqrt(r) * Z @ np.linalg.pinv(rebuild_M(seed, d, r))


def test_omega_is_blockis_threshold_by_default():
    # ε = e^1.1, δ = 1e-5, r = 10: 16·√(10·ln(2e5))·ln(1.6e7)/e^1.1
    # = 16 × √(10 × 12.20607) × 16.58810 / 3.00417 = 16 × 11.04811 × 16.58810 / 3.00417 = 976.069
    assert omega(math.exp(1.1), 1e-5, 10) == pytest.approx(976.0693, rel=1e-7)
    assert omega(math.exp(1.1), 1e-5, 10) == omega(math.exp(1.1), 1e-5, 10, form="blocki")
    assert omega(2.0, 0.5, 1) == pytest.approx(16 * math.sqrt(math.log(4)) / 2 * math.log(32), rel=1e-12)


def test_omega_literal_extraction_is_an_option():
    # the printed "16 √r log(2/δ) ε⁻¹ log(16r/δ)": 16 × 3.16228 × 12.20607 × 16.58810 / 3.00417 = 3410.11
    assert omega(math.exp(1.1), 1e-5, 10, form="literal") == pytest.approx(3410.1119, rel=1e-7)
    ratio = omega(1.0, 1e-5, 7, form="literal") / omega(1.0, 1e-5, 7)
    assert ratio == pytest.approx(math.sqrt(math.log(2e5)), rel=1e-12)
    with pytest.raises(ValueError, match="form"):
        omega(1.0, 1e-5, 7, form="sqrt")


def test_paper_crossing_statements_hold_on_its_stated_normalisation():
    """The paper's seven crossing statements (§4, synthetic GP, δ = 1e-5) on a centred 100 × 100 grid of
    maximal norm 25 (σ_min ≈ 1,031): Fig. 2a at r = 10, only its largest ε = e^1.1 has σ_min ≥ ω; Tables 1–3,
    of the r each table tries, the largest with σ_min ≥ ω is 10, 15, 20 at ε = e^1.1, e^1.3, e^1.5 (each
    table's stated r admissible, the next r it tries lifted). The literal extraction gives none of them."""
    axis = np.linspace(-1.0, 1.0, 100)
    X = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    X *= 25.0 / np.linalg.norm(X, axis=1).max()
    sigma_min = centred_gram(X).sigma_min
    assert sigma_min == pytest.approx(1030.88, abs=0.01)

    def admissible(log_epsilon, r, form="blocki"):
        return sigma_min >= omega(math.exp(log_epsilon), 1e-5, r, form=form)

    figure_log_epsilons = (0.0, 0.3, 0.6, 0.9, 1.1)  # the figure's; the text names e^0.0, e^0.9, e^1.1
    assert [admissible(a, 10) for a in figure_log_epsilons] == [False, False, False, False, True]
    tables = {1.1: (3, 6, 8, 10, 15, 20), 1.3: (3, 9, 12, 15, 20, 30), 1.5: (5, 10, 15, 20, 30, 50)}
    stated = {1.1: 10, 1.3: 15, 1.5: 20}
    for a, rs in tables.items():
        assert max(r for r in rs if admissible(a, r)) == stated[a]
        assert [admissible(a, r) for r in rs] == [r <= stated[a] for r in rs]
    # Over every integer r the largest admissible is 11, 15 and 22: r = 11 at e^1.1 misses by 0.1 % (ω = 1029.6).
    assert [largest_r(X, math.exp(a), 1e-5, 100) for a in tables] == [11, 15, 22]
    assert not any(admissible(a, r, "literal") for a, rs in tables.items() for r in rs if r >= 3)


@pytest.mark.parametrize("bad", [dict(epsilon=0.0), dict(delta=0.0), dict(delta=1.0), dict(r=0), dict(r=2.5)])
def test_omega_rejects_bad_parameters(bad):
    args = dict(epsilon=1.0, delta=1e-5, r=10) | bad
    with pytest.raises(ValueError):
        omega(**args)


@pytest.fixture
def full_rank_data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5]) * 100 + 7.0


def test_unlifted_branch_is_the_plain_projection(full_rank_data):
    X = full_rank_data
    release = po_gp_ucb_release(X, 1e6, 1e-3, 6, rng=SEED)
    assert not release.lifted
    assert release.sigma_min >= release.omega
    Z_direct, _ = direct_release(X, 1e6, 1e-3, 6, SEED)
    np.testing.assert_allclose(release.Z, Z_direct, rtol=1e-10, atol=1e-10 * np.abs(Z_direct).max())


def test_lifted_branch_equals_direct_svd(full_rank_data):
    X = full_rank_data
    release = po_gp_ucb_release(X, 0.5, 1e-3, 6, rng=SEED)
    assert release.lifted and release.sigma_min < release.omega
    assert release.sigma_min == pytest.approx(np.linalg.svd(X - X.mean(0), compute_uv=False).min(), rel=1e-9)
    Z_direct, _ = direct_release(X, 0.5, 1e-3, 6, SEED)
    np.testing.assert_allclose(release.Z, Z_direct, rtol=0, atol=1e-10 * np.abs(Z_direct).max())


def test_branch_is_decided_by_sigma_min_against_omega(full_rank_data):
    X = full_rank_data
    sigma_min = centred_gram(X).sigma_min
    r, delta = 3, 1e-3
    epsilon_at_crossing = omega(1.0, delta, r) / sigma_min  # ω(ε) = ω(1)/ε equals σ_min here
    assert not po_gp_ucb_release(X, epsilon_at_crossing * 1.001, delta, r, rng=1).lifted
    assert po_gp_ucb_release(X, epsilon_at_crossing * 0.999, delta, r, rng=1).lifted


def test_lifted_singular_values_are_sqrt_sigma_squared_plus_omega_squared(full_rank_data):
    X = full_rank_data
    d, r = X.shape[1], 8
    release = po_gp_ucb_release(X, 0.5, 1e-3, r, rng=SEED)
    X_tilde = implied_X_tilde(release.Z, SEED, d, r)
    sigma = np.linalg.svd(X - X.mean(0), compute_uv=False)
    np.testing.assert_allclose(
        np.linalg.svd(X_tilde, compute_uv=False), np.sqrt(sigma**2 + release.omega**2), rtol=1e-10
    )
    _, X_tilde_direct = direct_release(X, 0.5, 1e-3, r, SEED)
    np.testing.assert_allclose(X_tilde, X_tilde_direct, atol=1e-9 * release.omega)


@pytest.mark.parametrize("shape, rank", [((40, 5), 2), ((30, 3), 0), ((5, 9), 4), ((4, 9), 2)])
def test_rank_deficient_data_is_lifted_as_line_9_says(shape, rank):
    """X̃ = U √(Σ² + ω² I) Vᵀ for some full SVD of the centred data: the σᵢ > 0 directions map to
    √(σᵢ² + ω²) uᵢ, and the zero singular values become ω with left vectors orthogonal to X's columns."""
    n, d = shape
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, d)) * 10 + rng.normal(size=d)
    r = d + 2
    release = po_gp_ucb_release(X, 1.0, 0.1, r, rng=SEED, chunk_rows=7)
    assert release.lifted and release.sigma_min == 0.0
    w = release.omega
    X_tilde = implied_X_tilde(release.Z, SEED, d, r)
    Xc = X - X.mean(0)
    U, s, Vt = np.linalg.svd(Xc)
    k = int(np.sum(s > 1e-9 * max(s.max(), 1)))
    assert k == min(rank, n - 1)
    p = min(n, d) - k
    # Singular values: √(σ² + ω²) for the k nonzero ones, ω for the p zero ones, and nothing else.
    expected = np.concatenate([np.sqrt(s[:k] ** 2 + w**2), np.full(p, w)])
    np.testing.assert_allclose(np.linalg.svd(X_tilde, compute_uv=False), expected, atol=1e-9 * w)
    # Nonzero directions: X̃ vᵢ = √(σᵢ² + ω²) uᵢ with uᵢ = X vᵢ / σᵢ.
    np.testing.assert_allclose(X_tilde @ Vt[:k].T, U[:, :k] * np.sqrt(s[:k] ** 2 + w**2), atol=1e-9 * w)
    # The rest of X̃ lives in the null space of X on the right and is orthogonal to X's columns on the left.
    rest = X_tilde - U[:, :k] * np.sqrt(s[:k] ** 2 + w**2) @ Vt[:k]
    np.testing.assert_allclose(Xc.T @ rest, 0.0, atol=1e-8 * w * max(s.max(), 1))
    np.testing.assert_allclose(rest @ Vt[:k].T, 0.0, atol=1e-9 * w)


def test_rank_deficient_release_does_not_depend_on_chunk_size():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(9000, 2)) @ rng.normal(size=(2, 4))
    big = po_gp_ucb_release(X, 1.0, 0.1, 5, rng=SEED, chunk_rows=100_000)
    small = po_gp_ucb_release(X, 1.0, 0.1, 5, rng=SEED, chunk_rows=333)
    np.testing.assert_allclose(small.Z, big.Z, atol=1e-9 * np.abs(big.Z).max())


@pytest.mark.parametrize("epsilon", [1e6, 0.05])
def test_chunked_equals_unchunked(full_rank_data, epsilon):
    X = np.tile(full_rank_data, (50, 1))
    whole = po_gp_ucb_release(X, epsilon, 1e-3, 4, rng=SEED, chunk_rows=len(X))
    chunked = po_gp_ucb_release(X, epsilon, 1e-3, 4, rng=SEED, chunk_rows=97)
    assert whole.lifted == chunked.lifted == (epsilon < 1)
    np.testing.assert_allclose(chunked.Z, whole.Z, atol=1e-10 * np.abs(whole.Z).max())


def test_gram_route_is_accurate_when_the_mean_dwarfs_the_spread():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(20_000, 3)) + 1e7
    sigma = np.linalg.svd(X - X.mean(0), compute_uv=False)
    np.testing.assert_allclose(centred_gram(X, chunk_rows=1000).singular_values, sigma, rtol=1e-7)


def test_lemma_1_distances_preserved_in_the_unlifted_branch():
    """(1 − ν)‖x − x'‖² ≤ ‖z − z'‖² ≤ (1 + ν)‖x − x'‖² for all pairs in at least a 1 − μ fraction of trials
    when r ≥ 8 log(n²/μ)/ν²; σ_min ≫ ω so Algorithm 1 takes line 7 and Z = r^(-1/2) X M."""
    n, d, nu, mu = 12, 6, 0.5, 0.1
    r = math.ceil(8 * math.log(n**2 / mu) / nu**2)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(n, d)) * 1e4
    iu = np.triu_indices(n, 1)
    dx = ((X[:, None] - X[None]) ** 2).sum(-1)[iu]
    trials, good = 200, 0
    for trial in range(trials):
        release = po_gp_ucb_release(X, 10.0, 0.5, r, rng=trial)
        assert not release.lifted
        dz = ((release.Z[:, None] - release.Z[None]) ** 2).sum(-1)[iu]
        good += bool(np.all((1 - nu) * dx <= dz) and np.all(dz <= (1 + nu) * dx))
    assert good / trials >= 1 - mu


def test_largest_r_is_the_last_r_with_sigma_min_at_least_omega(full_rank_data):
    X = full_rank_data
    sigma_min = centred_gram(X).sigma_min
    delta = 1e-3
    epsilon = omega(1.0, delta, 50) / sigma_min * 1.0001  # ω(ε, δ, 50) just below σ_min
    r_star = largest_r(X, epsilon, delta, 200)
    assert r_star == 50
    assert omega(epsilon, delta, r_star) <= sigma_min < omega(epsilon, delta, r_star + 1)
    assert largest_r(X, epsilon, delta, r_star - 1) == r_star - 1
    assert largest_r(X, 1e-6, delta, 200) == 0
    assert largest_r(X, 1e9, delta, 200) == 200


def test_rejects_bad_data():
    with pytest.raises(ValueError):
        po_gp_ucb_release(np.ones((1, 3)), 1.0, 0.1, 2, rng=0)
    with pytest.raises(ValueError):
        po_gp_ucb_release(np.array([[0.0, np.nan], [1.0, 2.0]]), 1.0, 0.1, 2, rng=0)
