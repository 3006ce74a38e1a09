"""Every Gaussian path, checked against its claim: mean/variance of the noise and the privacy-loss test.

Paths: the Gaussian mechanism, the certified input release (rows with a fixed projection P that the test
learns exactly: :class:`Recording` sees the values the release noises), DP-SGD's noisy clipped-gradient
sum and output perturbation. For each:

* **mean/variance**: the output minus the exact value it noises (recorded) is N(0, s²) with s the
  reported std (mean within 5.3 s/√N, Σr²/s² inside the χ²_N interval at ALPHA), and s is at least the
  std the claimed (ε, δ) needs for the path's *true* sensitivity: the variance's upper confidence bound
  must reach it. A control calibrated to 1.1ε has ~8% less noise and must fail that bound. 10⁵ draws
  from the seeded source and 2·10⁴ from OpenDP (one exact sample at a time) in the default suite.
* **privacy loss** (``test_dp_mechanisms.proven_violation``): outputs of a neighbouring pair at
  distance exactly Δ, projected on the direction that separates them (a sufficient statistic: the
  other directions are identically distributed), sets at the claimed mechanism's worst thresholds,
  Clopper–Pearson bounds; the 1.1ε control must be proven to violate. Gaussian noise for 1.1ε
  exceeds δ by ~10⁻² at δ ≥ 0.01 but only by ~3·10⁻⁵ at δ = 10⁻⁵, which no feasible sample resolves
  (~10¹⁰ draws), so the threshold tests use δ ∈ [0.01, 0.1]: the calibration code is the same for every
  δ, and it is checked against dp-accounting at small δ in ``tests/shared/test_mechanisms.py``.
  10⁶ draws in the default suite where the path is vectorised, 10⁷ in the slow suite.

Output perturbation's neighbours cannot be built to move w* by exactly its Δ (2/(nγ) is an upper bound),
so its privacy-loss statement rests on the mean/variance check plus the exact ε of the Gaussian
mechanism at its reported std and Δ.
"""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats
from test_dp_mechanisms import ALPHA, Recording, proven_violation

from shared.dp.accounting import gaussian_mechanism_epsilon
from shared.dp.mechanisms import analytic_gaussian_sigma, gaussian_mechanism
from shared.dp.noise import NoiseSource, OpenDPNoise, SeededNoise
from shared.learners import DPLogisticRegression
from shared.learners.output_perturbation import OutputPerturbationLogisticRegression
from shared.releases import gaussian_release

Z_ALPHA = stats.norm.isf(ALPHA)  # ≈ 5.2


@dataclass
class Residuals:
    """Count, sum and sum of squares of the noise (output − the exact value noised): all the checks need."""

    count: int
    total: float
    squares: float

    @classmethod
    def of(cls, draws: list) -> "Residuals":
        """From a :class:`Recording`'s draws."""
        noise = np.concatenate([(out - values).ravel() for values, _, _, out in draws])
        return cls(noise.size, float(noise.sum()), float(np.sum(noise**2)))

    def __add__(self, other: "Residuals") -> "Residuals":
        return Residuals(self.count + other.count, self.total + other.total, self.squares + other.squares)


@dataclass
class Draws:
    """A path's noise residuals and reported std, and a neighbouring pair's 1-D outputs."""

    residuals: Residuals
    reported_std: float
    sensitivity: float  # the true distance between the pair's exact values (the path's Δ)
    mean_a: float  # the exact value under D, along the separating direction
    a: np.ndarray  # outputs under D, along the separating direction
    b: np.ndarray  # outputs under D′ (exact value mean_a + sensitivity)


def noise_matches(residuals: Residuals, std: float) -> bool:
    """Mean 0 and variance std² are both inside their ALPHA-level intervals."""
    n = residuals.count
    ratio = residuals.squares / std**2
    return (abs(residuals.total / n) <= Z_ALPHA * std / math.sqrt(n)
            and stats.chi2.ppf(ALPHA, n) <= ratio <= stats.chi2.isf(ALPHA, n))


def noise_reaches(residuals: Residuals, required_std: float) -> bool:
    """The variance's upper confidence bound Σr²/χ²_{ALPHA}(N) reaches required_std²."""
    return residuals.squares / stats.chi2.ppf(ALPHA, residuals.count) >= required_std**2


UNDER_NOISING = (1.0, 0.9, 0.75, 0.5, 0.25)


def worst_thresholds(draws: Draws, epsilon: float, delta: float) -> list[float]:
    """Where the privacy loss of noise f·s crosses ±ε, for the claimed s = σ(ε, δ, Δ) and a few f ≤ 1:
    D's value + Δ/2 ∓ ε(fs)²/Δ. The sets beyond them are the worst for a mechanism with noise fs, so
    a slightly (f = 1) and a grossly (small f) under-noised path are both caught."""
    std = analytic_gaussian_sigma(epsilon, delta, draws.sensitivity)
    middle = draws.mean_a + draws.sensitivity / 2
    offsets = [epsilon * (f * std) ** 2 / draws.sensitivity for f in UNDER_NOISING]
    return [middle + sign * offset for offset in offsets for sign in (-1, 1)]


# --- the paths ------------------------------------------------------------------------------------


def mechanism_draws(epsilon, delta, samples, source: NoiseSource) -> Draws:
    """The mechanism on a vector of N zeros (D) and of N ones (D′): N independent scalar releases, Δ = 1."""
    spy = Recording(source)
    a = gaussian_mechanism(np.zeros(samples), 1.0, epsilon, delta, spy)
    b = gaussian_mechanism(np.ones(samples), 1.0, epsilon, delta, spy)
    return Draws(Residuals.of(spy.draws), spy.draws[0][1], 1.0, 0.0, a, b)


def release_projection(d: int, r: int, seed: int) -> np.ndarray:
    """The release's fixed projection P for ``rng=seed``: the values it noises for X = I_d (row i = e_i P)."""
    spy = Recording(SeededNoise(0))
    gaussian_release(np.eye(d), 1.0, 0.5, r, seed, noise=spy)
    return spy.draws[0][0]


def release_draws(epsilon, delta, samples, source: NoiseSource, d=3, r=2, seed=5) -> Draws:
    """Rows of D (all x = 0) and D′ (all x = v, v the top left-singular vector of P, moving a row by the
    most: ‖vP‖), projected on w = vP/‖vP‖. Each row is its own release with independent noise."""
    P = release_projection(d, r, seed)
    v = np.linalg.svd(P)[0][:, 0]
    w = v @ P / np.linalg.norm(v @ P)
    spy = Recording(source)
    zeros = gaussian_release(np.zeros((samples, d)), epsilon, delta, r, seed, noise=spy)
    moved = gaussian_release(np.tile(v, (samples, 1)), epsilon, delta, r, seed, noise=spy)
    shift = float(np.linalg.norm(v @ P))
    assert zeros.noise_std == moved.noise_std and spy.draws[1][0][0] @ w == pytest.approx(shift)
    return Draws(Residuals.of(spy.draws), zeros.noise_std, shift, 0.0, zeros.Z @ w, moved.Z @ w)


# DP-SGD: rows 3·e_j (j < K) with alternating labels, clip norm L = 1, no intercept, one full-batch step.
# At w = 0 row j's clipped gradient is −s_j L e_j, so coordinate j of the clipped-gradient sum is −s_j L
# exactly. Replacing row j (flipping its label) moves coordinate j by 2L = Δ and nothing else; the
# coordinates' noise is i.i.d., so each coordinate with s_j = +1 is one draw of the released statistic
# under D and each with s_j = −1 one under D′: K/2 draws of each per training run.
K, CLIP = 512, 1.0
SGD_ROWS = 3.0 * np.eye(K)
SGD_LABELS = np.arange(K) % 2


def dpsgd_draws(epsilon, delta, samples, source: NoiseSource) -> Draws:
    """One-step DP-SGD with the noise multiplier that makes one full-batch step (ε, δ)-DP."""
    multiplier = analytic_gaussian_sigma(epsilon, delta, 1.0)
    model = DPLogisticRegression(learning_rate=1.0, batch_size=K, epochs=1, noise_multiplier=multiplier,
                                 clip_norm=CLIP, fit_intercept=False)
    spy = Recording(source)
    rng = np.random.default_rng(0)
    a, b = [], []
    for _ in range(math.ceil(samples / (K // 2))):
        model.fit(SGD_ROWS, SGD_LABELS, spy, rng=rng)
        noisy = -model.coef_ * K  # w = −(noisy sum)/m exactly: m = K is a power of two, η = 1
        assert np.array_equal(noisy, spy.draws[-1][3])
        positive = SGD_LABELS == 1
        a.append(noisy[positive])
        b.append(noisy[~positive])
    np.testing.assert_allclose(spy.draws[0][0], -(2.0 * SGD_LABELS - 1) * CLIP, rtol=1e-15)
    return Draws(Residuals.of(spy.draws), model.noise_std(K, source), 2 * CLIP, -CLIP, np.concatenate(a),
                 np.concatenate(b))


def output_perturbation_draws(epsilon, delta, samples, source: NoiseSource) -> Draws:
    """The released coefficients minus the minimiser they noise, over repeated releases (d = 100)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 100))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = (X[:, 0] > 0).astype(int)
    sensitivity = OutputPerturbationLogisticRegression(0.5, 1.0).sensitivity(*X.shape, source)
    model = OutputPerturbationLogisticRegression(0.5, analytic_gaussian_sigma(epsilon, delta, sensitivity))
    spy = Recording(source)
    for _ in range(math.ceil(samples / X.shape[1])):
        model.fit(X, y, spy)
    assert model.epsilon(*X.shape, delta, source) == pytest.approx(epsilon, rel=1e-6)
    # the true sensitivity is 2/(nγ); the reported one adds τ and the grid
    return Draws(Residuals.of(spy.draws), model.noise_std, 2 / (60 * 0.5), 0.0, np.empty(0), np.empty(0))


PATHS = {"mechanism": mechanism_draws, "release": release_draws, "dpsgd": dpsgd_draws,
         "output_perturbation": output_perturbation_draws}


def _source(kind: str, seed: int) -> NoiseSource:
    return SeededNoise(seed) if kind == "seeded" else OpenDPNoise()


# --- mean/variance ----------------------------------------------------------------------------------


# Draws per neighbour: output perturbation re-fits its minimiser for every 100 draws.
SAMPLES = {"seeded": 100_000, "opendp": 10_000}
OUTPUT_PERTURBATION_SAMPLES = {"seeded": 20_000, "opendp": 10_000}


@pytest.mark.parametrize("kind", ["seeded", "opendp"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_noise_has_the_reported_std_which_the_claim_needs_and_1_1_epsilon_fails(path, kind):
    """At 10⁴ draws the variance's upper bound is ≤ 3% above the sample's, and 1.1ε has 8.3% less noise."""
    epsilon, delta = 1.0, 1e-5
    samples = (OUTPUT_PERTURBATION_SAMPLES if path == "output_perturbation" else SAMPLES)[kind]
    draws = PATHS[path](epsilon, delta, samples, _source(kind, 20))
    required = analytic_gaussian_sigma(epsilon, delta, draws.sensitivity)
    assert draws.reported_std >= required
    assert noise_matches(draws.residuals, draws.reported_std)
    assert noise_reaches(draws.residuals, required)
    under = PATHS[path](1.1 * epsilon, delta, samples, _source(kind, 21))
    assert not noise_reaches(under.residuals, required)


def test_output_perturbation_epsilon_is_the_gaussian_mechanisms_at_its_widened_sensitivity():
    model = OutputPerturbationLogisticRegression(0.5, 0.3)
    safe = OpenDPNoise()
    sensitivity = model.sensitivity(60, 100, safe)
    assert 2 / 30 < sensitivity <= 2 / 30 * (1 + 1e-5)
    assert model.epsilon(60, 100, 1e-5, safe) == gaussian_mechanism_epsilon(0.3, sensitivity, 1e-5)


# --- privacy loss ------------------------------------------------------------------------------------

THRESHOLD_SETTINGS = [(0.5, 0.1), (1.0, 0.05), (2.0, 0.05)]


@pytest.mark.parametrize("epsilon, delta", THRESHOLD_SETTINGS)
@pytest.mark.parametrize("path", ["mechanism", "release"])
def test_privacy_loss_holds_and_1_1_epsilon_is_proven_to_violate(path, epsilon, delta):
    samples = 1_000_000
    draws = PATHS[path](epsilon, delta, samples, SeededNoise(30))
    assert draws.b.mean() - draws.a.mean() == pytest.approx(draws.sensitivity, abs=0.05)
    thresholds = worst_thresholds(draws, epsilon, delta)
    assert proven_violation(draws.a, draws.b, epsilon, delta, thresholds) <= 0
    under = PATHS[path](1.1 * epsilon, delta, samples, SeededNoise(31))
    assert proven_violation(under.a, under.b, epsilon, delta, thresholds) > 0


def test_release_rows_with_the_safe_sampler_pass_the_privacy_loss_test():
    """The production path end to end at a size the default suite affords. OpenDP cannot be seeded, so
    its control must fail by a wide margin: noise for 2ε exceeds δ by ≥ 0.047 on the worst set, ≥ 10
    standard errors at 10⁴ draws."""
    epsilon, delta, samples = 1.0, 0.1, 10_000
    draws = release_draws(epsilon, delta, samples, OpenDPNoise())
    thresholds = worst_thresholds(draws, epsilon, delta)
    assert proven_violation(draws.a, draws.b, epsilon, delta, thresholds) <= 0
    under = release_draws(2 * epsilon, delta, samples, OpenDPNoise())
    assert proven_violation(under.a, under.b, epsilon, delta, thresholds) > 0


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, delta", [(1.0, 0.01), (2.0, 0.05)])
@pytest.mark.parametrize("path", ["mechanism", "release", "dpsgd"])
def test_privacy_loss_with_ten_million_draws(path, epsilon, delta):
    """10⁷ draws per neighbour (in chunks of 10⁶ for memory): a 1.1ε control exceeds the bound by ~25
    standard errors at δ = 0.01, and every path's mean/variance check tightens to ±0.1% of the std."""
    samples, chunks = 10_000_000, 10

    def draws(epsilon_used, seed):
        parts = [PATHS[path](epsilon_used, delta, samples // chunks, SeededNoise(seed + i)) for i in range(chunks)]
        return Draws(sum((p.residuals for p in parts[1:]), parts[0].residuals), parts[0].reported_std,
                     parts[0].sensitivity, parts[0].mean_a, np.concatenate([p.a for p in parts]),
                     np.concatenate([p.b for p in parts]))

    fair = draws(epsilon, 100)
    assert noise_matches(fair.residuals, fair.reported_std)
    thresholds = worst_thresholds(fair, epsilon, delta)
    assert proven_violation(fair.a, fair.b, epsilon, delta, thresholds) <= 0
    under = draws(1.1 * epsilon, 200)
    assert not noise_reaches(under.residuals, analytic_gaussian_sigma(epsilon, delta, fair.sensitivity))
    assert proven_violation(under.a, under.b, epsilon, delta, thresholds) > 0
