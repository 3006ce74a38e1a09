"""The certified gaussian release: projections and their exact sensitivities, the one-charge budget split,
DP-PCA's Gram sensitivity, the spread of released rows, and projection-matrix hygiene."""

import dataclasses
import math

import numpy as np
import pytest

from shared.dp.mechanisms import analytic_gaussian_sigma, gaussian_delta
from shared.dp.noise import GRID_BITS, noise_source
from shared.releases import PcaOption, gaussian_release, gdp_mu
from shared.releases.measurements import MeasurementOption


def _jl_matrix(seed, d, r):
    # the jl projection is M/√r with M the first d·r standard normals of default_rng(rng)
    return np.random.default_rng(seed).standard_normal((d, r)) / math.sqrt(r)


def _composed_mu(release):
    """√(Σ (Δ_i/σ_i)²) over every Gaussian part of the release."""
    parts = [(release.sensitivity, release.noise_std)]
    if release.pca is not None:
        parts.append((release.pca.sensitivity, release.pca.noise_std))
    if release.measurements is not None:
        parts.append((release.measurements.sensitivity, release.measurements.noise_std))
    return math.hypot(*(s / std for s, std in parts))


@pytest.mark.parametrize("d", [2, 10])
def test_default_at_r_equal_d_is_the_identity_with_sensitivity_one(d):
    """Old code: a square Gaussian M, sensitivity σ_max(M)/√d of 1.2–1.8 and distorted rows."""
    X = np.random.default_rng(0).uniform(size=(4000, d))
    release = gaussian_release(X, 2.0, 1e-5, d, 3, noise=noise_source(1))
    assert release.projection == "identity" and release.dim == d
    assert release.projection_sensitivity == 1.0 and release.sensitivity == 1.0  # seeded: no grid
    assert release.noise_std == analytic_gaussian_sigma(2.0, 1e-5, 1.0)
    residual = release.Z - X  # pure noise: no projection at all
    assert np.mean(residual) == pytest.approx(0.0, abs=4 * release.noise_std / math.sqrt(residual.size))
    assert np.std(residual) == pytest.approx(release.noise_std, rel=0.03)


def test_the_safe_sampler_adds_its_grid_slack():
    release = gaussian_release(np.zeros((3, 4)), 0.5, 1e-6, 4, 0)
    assert release.floating_point_safe
    assert release.sensitivity - 1.0 == pytest.approx(math.sqrt(4) * 2.0**-GRID_BITS, rel=1e-12)
    assert release.noise_std == analytic_gaussian_sigma(0.5, 1e-6, release.sensitivity)


@pytest.mark.parametrize("epsilon,delta,d,r", [(0.5, 1e-5, 4, 3), (4.0, 1e-6, 12, 5)])
def test_jl_below_d_is_calibrated_to_its_operator_norm(epsilon, delta, d, r):
    X = np.random.default_rng(0).uniform(size=(50, d))
    release = gaussian_release(X, epsilon, delta, r, 11, noise=noise_source(0))
    assert release.projection == "jl"
    exact = np.linalg.norm(_jl_matrix(11, d, r), ord=2)
    # conservative by the float bound only: relative 2^-40 plus 2 γ_d 2^20 ‖P‖_F ≲ 1e-8
    assert exact <= release.projection_sensitivity <= exact * (1 + 1e-8)
    assert release.noise_std == analytic_gaussian_sigma(epsilon, delta, release.sensitivity)
    noiseless = X @ _jl_matrix(11, d, r)
    assert np.std(release.Z - noiseless) == pytest.approx(release.noise_std, rel=0.15)


def test_no_unit_move_beats_the_reported_sensitivity_and_the_top_direction_attains_it():
    d, r = 6, 3
    P = _jl_matrix(3, d, r)
    release = gaussian_release(np.zeros((2, d)), 1.0, 1e-5, r, 3, noise=noise_source(0))
    top = np.linalg.svd(P)[0][:, 0]
    assert np.linalg.norm(top @ P) == pytest.approx(release.projection_sensitivity, rel=1e-8)
    directions = np.random.default_rng(1).standard_normal((5000, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    assert np.max(np.linalg.norm(directions @ P, axis=1)) <= release.projection_sensitivity


@pytest.mark.parametrize("d,r", [(3, 7), (8, 3), (5, 5)])
def test_haar_projection_is_orthonormal_with_sensitivity_one(d, r):
    """Zero noise is impossible, so read P off a release of the unit vectors at a huge ε (noise ~1e-4)."""
    release = gaussian_release(np.eye(d), 1e6, 0.5, r, 4, noise=noise_source(0), projection="haar")
    P = release.Z  # row i = e_i P + noise
    gram = P @ P.T if r >= d else P.T @ P  # orthonormal rows (isometry) or columns (a subspace)
    np.testing.assert_allclose(gram, np.eye(min(d, r)), atol=50 * release.noise_std)
    assert release.projection_sensitivity == pytest.approx(1.0, abs=1e-7)
    assert release.projection_sensitivity >= 1.0


def test_auto_is_identity_at_d_haar_above_and_jl_below():
    X = np.ones((5, 4))
    assert [gaussian_release(X, 1.0, 1e-5, r, 0, noise=noise_source(0)).projection for r in (4, 6, 2)] == [
        "identity", "haar", "jl"]


def test_dp_pca_finds_the_dominant_direction_and_states_its_parameters():
    rng = np.random.default_rng(5)
    direction = np.array([3.0, 4.0, 0.0, 0.0, 0.0]) / 5.0
    X = 0.5 + np.outer(rng.uniform(-0.4, 0.4, size=20_000), direction) + 0.01 * rng.standard_normal((20_000, 5))
    option = PcaOption(share=0.2, clip_norm=2.0)
    release = gaussian_release(X, 8.0, 1e-5, 1, 0, noise=noise_source(1), projection="pca", pca=option)
    assert release.projection == "pca" and release.input_share == pytest.approx(0.8)
    assert release.pca.share == 0.2 and release.pca.clip_norm == 2.0
    # Z = X v + noise: its correlation with the data's coordinate along the direction reveals |v·direction|
    signal = X @ direction
    corr = abs(np.corrcoef(release.Z[:, 0], signal)[0, 1])
    assert corr > 0.9 * np.std(signal) / math.hypot(np.std(signal), release.noise_std)
    params = release.public_parameters()
    assert params["pca"] == {"share": 0.2, "clip_norm": 2.0, "noise_std": release.pca.noise_std,
                             "sensitivity": release.pca.sensitivity}
    assert params["projection"] == "pca" and params["dim"] == 1


@pytest.mark.parametrize("clip_norm", [0.3, 1.0, 4.0])
def test_gram_sensitivity_bounds_every_neighbouring_change(clip_norm):
    """‖(uuᵀ − wwᵀ)_upper ⊕ τ(u − w)‖ ≤ Δ_G for rows ‖u‖, ‖w‖ ≤ C with ‖u − w‖ ≤ 1, including the
    extremes (parallel at norms C and C − 1, perpendicular at norm C)."""
    d = 3
    release = gaussian_release(np.zeros((4, d)), 1.0, 1e-5, 2, 0, noise=noise_source(0), projection="pca",
                               pca=PcaOption(0.3, clip_norm))
    upper = np.triu_indices(d)

    def change(u, w):
        return np.linalg.norm(np.concatenate([(np.outer(u, u) - np.outer(w, w))[upper], clip_norm * (u - w)]))

    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20_000):
        u = rng.standard_normal(d)
        u *= clip_norm * rng.uniform() ** (1 / d) / np.linalg.norm(u)
        v = rng.standard_normal(d)
        w = u + v * min(1.0, rng.uniform() * 2 * clip_norm) / np.linalg.norm(v)
        w *= min(1.0, clip_norm / np.linalg.norm(w))
        if np.linalg.norm(u - w) <= 1.0:
            worst = max(worst, change(u, w))
    e1, e2 = np.eye(d)[0], np.eye(d)[1]
    s = min(1.0, 2 * clip_norm)
    worst = max(worst, change(clip_norm * e1, (clip_norm - s) * e1))
    angle = 2 * math.asin(min(1.0, s / (2 * clip_norm)))
    worst = max(worst, change(clip_norm * e1, clip_norm * (math.cos(angle) * e1 + math.sin(angle) * e2)))
    assert worst <= release.pca.sensitivity
    assert worst >= 0.6 * release.pca.sensitivity  # and the bound is not loose by much


@pytest.mark.parametrize("pca,measurement_share",
                         [(None, 0.5), (PcaOption(0.2, 1.0), None), (PcaOption(0.1, 1.0), 0.8)])
def test_all_parts_compose_into_exactly_the_charged_epsilon_delta(pca, measurement_share):
    """μ-GDP parts compose to √Σμ_i² (Dong, Roth & Su): the release's total equals the μ that (ε, δ) allows."""
    X = np.random.default_rng(0).uniform(size=(30, 4)) / 2
    options = {}
    if pca is not None:
        options |= dict(projection="pca", pca=pca)
    if measurement_share is not None:
        options |= dict(y=X.sum(axis=1), measurements=MeasurementOption((0.0, 2.0), measurement_share))
    release = gaussian_release(X, 1.5, 1e-5, 2 if pca else 4, 0, noise=noise_source(0), **options)
    mu = _composed_mu(release)
    assert gaussian_delta(1.0 / mu, 1.5) <= 1e-5
    assert mu == pytest.approx(gdp_mu(1.5, 1e-5), rel=1e-9)
    shares = [release.input_share] + ([pca.share] if pca else []) + ([measurement_share] if measurement_share else [])
    assert sum(shares) == pytest.approx(1.0)
    assert release.noise_std == pytest.approx(release.sensitivity / (math.sqrt(release.input_share) * mu), rel=1e-9)


def test_measurement_noise_follows_the_share():
    """σ_y = (b − a)/(√ρ μ): the issue's c = σ_y/σ_x in the joint mechanism on [X_s Q, y/c]."""
    X = np.zeros((10, 2))
    release = gaussian_release(X, 2.0, 1e-5, 2, 0, noise=noise_source(0), y=np.arange(10.0),
                               measurements=MeasurementOption((0.0, 4.0), 0.8))
    mu = gdp_mu(2.0, 1e-5)
    assert release.measurements.noise_std == pytest.approx(4.0 / (math.sqrt(0.8) * mu), rel=1e-9)
    assert release.noise_std == pytest.approx(1.0 / (math.sqrt(0.2) * mu), rel=1e-9)
    assert release.measurements.clip == (0.0, 4.0)


def test_projection_matrix_is_not_kept_on_the_result():
    for kwargs in (dict(r=2), dict(r=2, projection="haar"), dict(r=2, projection="pca", pca=PcaOption(0.2, 3.0))):
        release = gaussian_release(np.ones((4, 3)), 1.0, 1e-5, rng=0, **kwargs)
        for field in dataclasses.fields(release):
            value = getattr(release, field.name)
            assert not (isinstance(value, np.ndarray) and value.shape in ((3, 2), (2, 3))), field.name
        assert "P" not in str(release.public_parameters())


def test_replace_one_clips_rows_and_doubles_the_bound():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    bounded = gaussian_release(X, 1.0, 1e-5, 2, 1, noise=noise_source(0))
    replace = gaussian_release(X, 1.0, 1e-5, 2, 1, noise=noise_source(0), unit="replace-one", clip_norm=1.0)
    assert replace.projection_sensitivity == pytest.approx(2.0 * bounded.projection_sensitivity, rel=1e-12)
    # the same seeded standard normals, scaled by each σ: the first row (norm 5) was clipped to norm 1
    standard = (bounded.Z - X) / bounded.noise_std
    np.testing.assert_allclose(replace.Z, [[0.6, 0.8], [0.3, 0.4]] + replace.noise_std * standard, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [dict(r=0), dict(r=2.5), dict(epsilon=0.0), dict(delta=1.0), dict(unit="replace-one"), dict(unit="other"),
     dict(projection="identity", r=1), dict(projection="pca"), dict(projection="pca", r=3, pca=PcaOption(0.2, 1.0)),
     dict(projection="other"), dict(measurements=MeasurementOption((0.0, 1.0), 0.5)),
     dict(measurements=MeasurementOption((0.0, 1.0), 0.5), y=np.ones(2)),
     dict(projection="pca", pca=PcaOption(0.5, 1.0), measurements=MeasurementOption((0.0, 1.0), 0.5), y=np.ones(3))],
)
def test_bad_parameters_are_refused(kwargs):
    arguments = dict(X=np.ones((3, 2)), epsilon=1.0, delta=1e-5, r=2, rng=0) | kwargs
    with pytest.raises(ValueError):
        gaussian_release(**arguments)


@pytest.mark.parametrize("make", [lambda: PcaOption(0.0, 1.0), lambda: PcaOption(0.2, -1.0),
                                  lambda: MeasurementOption((1.0, 1.0), 0.5),
                                  lambda: MeasurementOption((0.0, 1.0), 1.0)])
def test_bad_options_are_refused(make):
    with pytest.raises(ValueError):
        make()
