"""GP-UCB engine: the docs/design.md §7 contract, picks against a brute-force refit, batches, refits."""

import math

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from shared.gp.kernels import Matern52, SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential
from shared.gp.regression import CandidatePosterior
from shared.gp.ucb import GPUCB, gp_ucb_beta, run_gp_ucb


def brute_force_posterior(C, kernel, noise, prior_mean, indices, y):
    """Eq. 1 refitted from scratch by a dense solve."""
    if not len(indices):
        return np.full(len(C), prior_mean), kernel.diag(C)
    X = C[indices]
    K = kernel(X, X) + noise * np.eye(len(indices))
    Ks = kernel(C, X)
    mean = prior_mean + Ks @ np.linalg.solve(K, np.asarray(y) - prior_mean)
    return mean, kernel.diag(C) - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))


def problem(n=300, r=3, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.uniform(-2, 2, size=(n, r))
    return C, np.sin(2 * C).sum(1) + 0.5 * np.cos(C[:, 0] * C[:, 1])


def test_beta_formula():
    # Algorithm 2, line 3, natural log.
    assert gp_ucb_beta(1, 10_000, 0.05) == pytest.approx(2 * math.log(10_000 * math.pi**2 / (6 * 0.05)), rel=1e-14)
    assert gp_ucb_beta(7, 250, 0.1) == pytest.approx(2 * math.log(250 * 49 * math.pi**2 / 0.6), rel=1e-14)
    engine = GPUCB(np.zeros((250, 1)), lengthscale=1.0, signal_variance=1.0, noise_variance=0.1, delta=0.1)
    assert engine.beta(7) == gp_ucb_beta(7, 250, 0.1)
    for bad in [(0, 10, 0.1), (1, 10, 0.0), (1, 10, 1.0)]:
        with pytest.raises(ValueError):
            gp_ucb_beta(*bad)


def test_first_suggestion_is_zero():
    C, _ = problem()
    assert GPUCB(C, lengthscale=0.5, signal_variance=2.0, noise_variance=1e-3, delta=0.1).suggest() == 0
    assert GPUCB(C, kernel=Matern52([1, 2, 3]), noise_variance=1e-3, delta=0.1, prior_mean=4.0).suggest() == 0


def test_ties_go_to_the_lowest_index():
    # Candidates symmetric about the observed centre: indices 0 and 2 (and 3, 4 duplicates) tie exactly.
    C = np.array([[-5.0], [0.0], [5.0], [-5.0], [5.0]])
    engine = GPUCB(C, lengthscale=2.0, signal_variance=1.0, noise_variance=0.1, delta=0.1)
    engine.observe(1, 0.0)
    ucb = engine.acquisition()
    assert ucb[0] == ucb[2] == ucb[3] == ucb[4] > ucb[1]
    assert engine.suggest() == 0


@pytest.mark.parametrize(
    "kernel, prior_mean, noise_std",
    [(SquaredExponential(0.7, 1.0), 0.0, 0.0), (Matern52([0.5, 1.0, 1.5], 2.0), 0.8, 0.1)],
    ids=["se", "matern52-ard-prior-mean-noisy"],
)
def test_picks_equal_a_brute_force_refit(kernel, prior_mean, noise_std):
    C, f = problem()
    rng = np.random.default_rng(1)
    noise = noise_std * rng.standard_normal(40)
    engine = GPUCB(C, kernel=kernel, noise_variance=0.01, delta=0.05, prior_mean=prior_mean)
    indices, ys = [], []
    for t in range(1, 41):
        mean, var = brute_force_posterior(C, kernel, 0.01, prior_mean, indices, ys)
        expected = int(np.argmax(mean + np.sqrt(gp_ucb_beta(t, len(C), 0.05)) * np.sqrt(np.maximum(var, 0))))
        assert engine.suggest() == expected, f"iteration {t}"
        y = f[expected] + noise[t - 1]
        engine.observe(expected, y)
        indices.append(expected)
        ys.append(y)
    assert engine.best_value == max(ys) and engine.best_index == indices[int(np.argmax(ys))]


def test_picks_equal_scikit_learn():
    C, f = problem(n=400, seed=2)
    run = run_gp_ucb(C, f, 25, lengthscale=0.6, signal_variance=1.5, noise_variance=1e-4, delta=0.05)
    gp = GaussianProcessRegressor(ConstantKernel(1.5, "fixed") * RBF(0.6, "fixed"), alpha=1e-4, optimizer=None)
    picks = []
    for t in range(1, 26):
        if picks:
            gp.fit(C[picks], f[picks])
        mean, std = gp.predict(C, return_std=True)
        picks.append(int(np.argmax(mean + np.sqrt(gp_ucb_beta(t, len(C), 0.05)) * std)))
    assert run.indices.tolist() == picks
    np.testing.assert_array_equal(run.values, f[picks])
    np.testing.assert_array_equal(run.observations, f[picks])  # noise_std = 0


def test_random_initial_points():
    C, f = problem()
    engine = GPUCB(C, lengthscale=0.7, signal_variance=1.0, noise_variance=0.01, delta=0.1, n_init=5, rng=3)
    first = []
    for _ in range(5):
        first.append(engine.suggest())
        engine.observe(first[-1], f[first[-1]])
    assert first == engine.initial_indices.tolist() and len(set(first)) == 5
    assert first == np.random.default_rng(3).choice(len(C), 5, replace=False).tolist()
    # After the initial points, GP-UCB proper with β_6.
    mean, var = brute_force_posterior(C, engine.kernel, 0.01, 0.0, first, f[first])
    assert engine.suggest() == int(np.argmax(mean + np.sqrt(engine.beta(6) * np.maximum(var, 0))))


def test_batch_is_gp_bucb_and_leaves_the_posterior_alone():
    C, f = problem()
    kernel = SquaredExponential(0.7, 1.0)
    engine = GPUCB(C, kernel=kernel, noise_variance=0.01, delta=0.1)
    for i in (0, 50, 100):
        engine.observe(i, f[i])
    mean_before = engine.posterior.mean.copy()
    batch = engine.suggest_batch(4, pending=[7])
    # Brute force: hallucinated observations at the current mean leave μ unchanged and shrink σ.
    indices, ys = [0, 50, 100, 7], list(f[[0, 50, 100]]) + [mean_before[7]]
    for j, pick in enumerate(batch):
        mean, var = brute_force_posterior(C, kernel, 0.01, 0.0, indices, ys)
        np.testing.assert_allclose(mean, mean_before, atol=1e-8)
        t = 3 + 1 + j + 1
        assert pick == int(np.argmax(mean + np.sqrt(gp_ucb_beta(t, len(C), 0.1) * np.maximum(var, 0))))
        indices.append(pick)
        ys.append(mean_before[pick])
    assert engine.n_observations == 3
    np.testing.assert_array_equal(engine.posterior.mean, mean_before)
    assert engine.suggest_batch(1) == [engine.suggest()]


def test_refit_schedule_rebuilds_the_posterior_with_fitted_hyperparameters():
    C, f = problem(seed=4)
    engine = GPUCB(
        C, lengthscale=5.0, signal_variance=0.1, noise_variance=0.5, delta=0.1, refit_every=8, n_init=4, rng=0
    )
    for t in range(16):
        i = engine.suggest()
        engine.observe(i, f[i])
        if t == 6:
            assert engine.kernel.lengthscale == 5.0  # not yet refitted
    kernel = engine.kernel
    assert np.all(kernel.lengthscale != 5.0) and engine.noise_variance != 0.5  # one fitted lengthscale per dimension
    post = engine.posterior
    assert post.n_observations == 16
    X, y = C[post.observed_indices], post.observed_values  # the prior mean: the likeliest constant under the fit
    K, ones = kernel(X, X) + engine.noise_variance * np.eye(len(y)), np.ones(len(y))
    assert engine.prior_mean == pytest.approx(ones @ np.linalg.solve(K, y) / (ones @ np.linalg.solve(K, ones)))
    assert engine.prior_mean != pytest.approx(np.mean(y))
    mean, var = brute_force_posterior(
        C, kernel, engine.noise_variance, engine.prior_mean, post.observed_indices, post.observed_values
    )
    np.testing.assert_allclose(post.mean, mean, atol=1e-8)
    fresh = CandidatePosterior(C, kernel, engine.noise_variance, engine.prior_mean)
    for i, y in zip(post.observed_indices, post.observed_values):
        fresh.observe(i, y)
    assert fresh.log_marginal_likelihood() == pytest.approx(post.log_marginal_likelihood(), abs=1e-8)


def test_run_gp_ucb_with_noise_is_seeded():
    C, f = problem()
    kw = dict(lengthscale=0.7, signal_variance=1.0, noise_variance=0.01, delta=0.1, n_init=2)
    a = run_gp_ucb(C, f, 15, noise_std=0.1, rng=5, **kw)
    b = run_gp_ucb(C, f, 15, noise_std=0.1, rng=5, **kw)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.values, f[a.indices])
    assert np.all(a.observations != a.values)
    with pytest.raises(ValueError):
        run_gp_ucb(C, f[:-1], 3, **kw)


def test_needs_a_kernel_or_its_hyperparameters():
    with pytest.raises(ValueError, match="lengthscale"):
        GPUCB(np.zeros((3, 1)), noise_variance=0.1, delta=0.1)


def test_long_run_on_the_papers_grid_stays_exact():
    # The paper's setting (SE, l = 1.25, σ_y² = 1, σ_n² = 1e-5, inputs of norm ≤ 25) on a coarser grid:
    # GP-UCB revisits points, K(X_t, X_t) + σ_n² I becomes ill-conditioned (cond ≈ 2e6 here), and the rank-one
    # posterior must still equal a direct solve.
    g = np.linspace(0, 25 / np.sqrt(2), 40)
    C = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    rng = np.random.default_rng(9)
    f = np.sin(C[:, 0] / 3) + np.cos(C[:, 1] / 4) + 0.3 * np.sin(C[:, 0] * C[:, 1] / 20)
    engine = GPUCB(C, lengthscale=1.25, signal_variance=1.0, noise_variance=1e-5, delta=0.05)
    for _ in range(200):
        i = engine.suggest()
        engine.observe(i, f[i] + 1e-3 * rng.standard_normal())
    post = engine.posterior
    assert len(set(post.observed_indices.tolist())) < 200  # repeats happened
    mean, var = brute_force_posterior(C, engine.kernel, 1e-5, 0.0, post.observed_indices, post.observed_values)
    np.testing.assert_allclose(post.mean, mean, atol=1e-8)
    np.testing.assert_allclose(post.variance, np.maximum(var, 0), atol=1e-8)


def test_without_requery_picks_are_the_best_unobserved_candidate():
    rng = np.random.default_rng(8)
    C = rng.normal(size=(12, 2))
    values = -np.sum(C**2, axis=1)
    engines = [GPUCB(C, lengthscale=1.0, signal_variance=1.0, noise_variance=1.0, delta=0.1, requery=r)
               for r in (True, False)]
    for engine in engines:
        for _ in range(12):
            i = engine.suggest()
            engine.observe(i, values[i])
    assert len(set(engines[0].posterior.observed_indices)) < 12  # the noisy model re-queries
    assert sorted(engines[1].posterior.observed_indices) == list(range(12))
    with pytest.raises(ValueError, match="every candidate"):
        engines[1].suggest()
    fresh = GPUCB(C, lengthscale=1.0, signal_variance=1.0, noise_variance=1.0, delta=0.1, requery=False)
    fresh.observe(0, 0.0)
    assert 0 not in fresh.suggest_batch(11)  # nor within a batch
    assert len(set(fresh.suggest_batch(11))) == 11


def test_refits_keep_a_kernel_instance_kind_and_its_fixed_settings():
    rng = np.random.default_rng(9)
    C = rng.normal(size=(60, 2))
    prototype = ExpectedSquaredExponential(1.0, 1.0, input_noise_std=0.25, dim=2)
    engine = GPUCB(C, kernel=prototype, noise_variance=1e-4, delta=0.1, refit_every=4, refit_kernel=prototype)
    for _ in range(8):
        i = engine.suggest()
        engine.observe(i, float(np.sin(C[i, 0])))
    assert isinstance(engine.kernel, ExpectedSquaredExponential) and engine.kernel.input_noise_std == 0.25
    assert np.all(engine.kernel.lengthscale != 1.0)  # it was fitted


def test_log_h_equals_the_direct_formula_where_that_is_accurate():
    """log h(z) = log(φ(z) + z Φ(z)) on both sides of the branch point z = −1, against scipy's normal directly."""
    from scipy.stats import norm

    from shared.gp.ucb import log_h

    z = np.array([-8.0, -5.0, -2.5, -1.0 - 1e-9, -1.0, -0.5, 0.0, 0.7, 3.0])
    direct = np.log(norm.pdf(z) + z * norm.cdf(z))
    np.testing.assert_allclose(log_h(z), direct, rtol=1e-9)


def test_log_h_stays_finite_and_follows_its_asymptote_far_below_zero():
    """Where φ(z) + z Φ(z) underflows to 0 (z ≲ −40) log h(z) still tracks log φ(z) − 2 log|z|, its Mills-ratio
    asymptote: to the next term (log(1 − 3/z²) ≈ −3/z²) while float64 resolves it, and beyond within that term plus
    the rounding of the bracket (ε z²) and of the value itself; finite and increasing in z throughout."""
    from scipy.stats import norm

    from shared.gp.ucb import log_h

    z = -np.logspace(1.5, 12, 40)  # decreasing
    values = log_h(z)
    assert np.all(np.isfinite(values)) and np.all(np.diff(values) < 0)
    gap = values - (norm.logpdf(z) - 2.0 * np.log(-z))
    resolved = -z <= 1e3
    np.testing.assert_allclose(gap[resolved], -3.0 / z[resolved] ** 2, rtol=0.05)
    eps = np.finfo(float).eps
    assert np.all(np.abs(gap) <= 4.0 / z**2 + eps * z**2 + 8 * eps * np.abs(values))
    assert np.all(norm.pdf(z[1:5]) + z[1:5] * norm.cdf(z[1:5]) <= 0.0)  # where the direct formula has given up


def test_logei_picks_the_largest_expected_improvement_and_never_a_queried_row():
    """GPUCB(acquisition="logei") picks argmax E[max(f − best, 0)] (computed here from scipy's normal) among the rows
    not yet queried; UCB with the same posterior picks by its own score."""
    from scipy.stats import norm

    rng = np.random.default_rng(5)
    C = rng.uniform(0, 1, size=(300, 2))
    y = np.sin(6 * C[:, 0]) * np.cos(4 * C[:, 1])
    engine = GPUCB(C, lengthscale=0.3, signal_variance=1.0, noise_variance=1e-6, delta=0.1, acquisition="logei",
                   requery=False)
    for i in range(6):
        engine.observe(i, y[i])
    for _ in range(8):
        mean, std = engine.posterior.mean, engine.posterior.std
        best = engine.posterior.observed_values.max()
        z = (mean - best) / std
        ei = np.where(std > 0, (mean - best) * norm.cdf(z) + std * norm.pdf(z), 0.0)
        ei[engine.posterior.observed_indices] = -np.inf
        pick = engine.suggest()
        assert pick == int(np.argmax(ei)) and pick not in engine.posterior.observed_indices
        engine.observe(pick, y[pick])
    with pytest.raises(ValueError, match="acquisition"):
        GPUCB(C, lengthscale=0.3, signal_variance=1.0, noise_variance=1e-6, delta=0.1, acquisition="ei")


@pytest.mark.parametrize("acquisition", ["paper-ucb", "logei"])
def test_either_acquisition_says_so_when_every_row_has_been_queried(acquisition):
    C = np.linspace(0, 1, 4)[:, None]
    engine = GPUCB(C, lengthscale=0.3, signal_variance=1.0, noise_variance=1e-6, delta=0.1, acquisition=acquisition,
                   requery=False)
    for _ in range(4):
        pick = engine.suggest()
        engine.observe(pick, float(C[pick, 0]))
    assert sorted(engine.posterior.observed_indices.tolist()) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="nothing is left to suggest"):
        engine.suggest()
