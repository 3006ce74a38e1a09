"""Private measurements: the joint release of inputs and measurements is ONE (ε, δ)-DP Gaussian mechanism,
and every query of a row returns the value drawn once at release time.

The worst neighbouring pair moves a row's input by the full unit (x: 0 → e₁) AND its clipped measurement
across the whole public interval (y: a → b) at the same time. The released row (z, ỹ) is Gaussian with
independent coordinates, so the log-likelihood ratio L = Δx·z/σ_x² + Δy·ỹ/σ_y² is a sufficient statistic:
under the two datasets it is N(m, μ²) and N(m + μ², μ²) with μ² = (Δx/σ_x)² + (Δy/σ_y)². The privacy-loss
test (``test_dp_mechanisms.proven_violation``: half-lines {L > c}, {L ≤ c} at the claimed mechanism's worst
thresholds, Clopper–Pearson bounds) runs on L for 10⁶ rows. As in ``test_gaussian_paths.py`` it uses δ = 0.05,
where an under-noised mechanism exceeds δ by far more than the sampling error (at δ = 1e-5 no feasible
sample resolves it); the calibration code does not depend on δ.

Negative controls: the same pair released as if the two parts were charged separately, each at the full ε
(noise for μ√2 instead of μ), and the joint release calibrated for 1.5 ε. Both must be proven to violate.
"""

import math

import numpy as np
import pytest
from test_dp_mechanisms import Recording, proven_violation

from shared.dp.mechanisms import analytic_gaussian_sigma
from shared.dp.noise import OpenDPNoise, SeededNoise
from shared.releases import gaussian_release
from shared.releases.measurements import MeasurementOption, release_measurements

EPSILON, DELTA = 1.0, 0.05
CLIP = (-1.0, 2.0)


def _llr_samples(release_pair, samples):
    """L (centred on D's mean) for every released row of D (x = 0, y = a) and D′ (x = e₁, y = b), and μ."""
    out = []
    for x, y, seed in ((np.zeros(2), CLIP[0], 1), (np.array([1.0, 0.0]), CLIP[1], 2)):
        z, y_released, sigma_x, sigma_y = release_pair(np.tile(x, (samples, 1)), np.full(samples, y), seed)
        out.append(z[:, 0] / sigma_x**2 + (CLIP[1] - CLIP[0]) * (y_released - CLIP[0]) / sigma_y**2)
    return out, math.hypot(1.0 / sigma_x, (CLIP[1] - CLIP[0]) / sigma_y)


def _joint(epsilon_used, share, source=SeededNoise):
    def release(X, y, seed):
        noise = source(seed) if source is SeededNoise else source()
        r = gaussian_release(X, epsilon_used, DELTA, 2, 0, noise=noise, y=y,
                             measurements=MeasurementOption(CLIP, share))
        return r.Z, r.measurements.values, r.noise_std, r.measurements.noise_std

    return release


def _separately_charged(X, y, seed):
    """The bug the joint calibration prevents: inputs and measurements each noised for the full (ε, δ)."""
    noise = SeededNoise(seed)
    inputs = gaussian_release(X, EPSILON, DELTA, 2, 0, noise=noise)
    sigma_y = analytic_gaussian_sigma(EPSILON, DELTA, CLIP[1] - CLIP[0])
    measured = release_measurements(y, MeasurementOption(CLIP, 0.5), sigma_y, noise)
    return inputs.Z, measured.values, inputs.noise_std, sigma_y


def _violation(release_pair, samples=1_000_000):
    """proven_violation on L, at the half-lines where the released mechanism's privacy loss L − μ²/2 is ±ε."""
    (a, b), mu = _llr_samples(release_pair, samples)
    thresholds = [mu**2 / 2 + sign * EPSILON + k * mu for sign in (1, -1) for k in (-0.25, 0.0, 0.25)]
    return proven_violation(a, b, EPSILON, DELTA, thresholds)


@pytest.mark.parametrize("share", [0.5, 0.8])
def test_joint_release_of_inputs_and_measurements_is_dp(share):
    assert _violation(_joint(EPSILON, share)) <= 0


def test_separately_charged_parts_are_proven_to_violate():
    assert _violation(_separately_charged) > 0.01


def test_joint_release_noised_for_a_larger_epsilon_is_proven_to_violate():
    assert _violation(_joint(1.5 * EPSILON, 0.5)) > 0.01


def test_joint_release_with_the_safe_sampler_is_dp():
    """The production path (OpenDP noise for both parts), at a size the default suite affords."""
    assert _violation(_joint(EPSILON, 0.5, source=OpenDPNoise), samples=10_000) <= 0


def test_measurement_noise_is_drawn_once_on_the_clipped_value_and_repeats_return_it():
    spy = Recording(SeededNoise(3))
    y = np.array([-5.0, 0.5, 9.0, 1.0])
    release = gaussian_release(np.zeros((4, 2)), 1.0, 1e-5, 2, 0, noise=spy, y=y,
                               measurements=MeasurementOption(CLIP, 0.5))
    measured = release.measurements
    noised_values = [values for values, std, _, _ in spy.draws if std == measured.noise_std]
    assert len(noised_values) == 1 and np.array_equal(noised_values[0], np.clip(y, *CLIP))
    draws = len(spy.draws)
    answers = [[measured.answer(i) for _ in range(50)] for i in range(4)]
    assert len(spy.draws) == draws  # answering draws nothing: no fresh noise to average away
    assert all(len(set(row)) == 1 for row in answers)
    assert [row[0] for row in answers] == list(measured.values)
    with pytest.raises(ValueError):
        measured.values[0] = 0.0  # read-only: the memoised values cannot be redrawn in place
    with pytest.raises(IndexError):
        measured.answer(4)


def test_measurement_noise_has_the_calibrated_spread():
    y = np.linspace(-3, 4, 200_000)
    release = gaussian_release(np.zeros((y.size, 1)), 2.0, 1e-5, 1, 0, noise=SeededNoise(4), y=y,
                               measurements=MeasurementOption(CLIP, 0.8))
    residual = release.measurements.values - np.clip(y, *CLIP)
    sigma = release.measurements.noise_std
    assert abs(residual.mean()) < 5 * sigma / math.sqrt(y.size)
    assert residual.std() == pytest.approx(sigma, rel=0.01)
