"""Grid-residue checks: every OpenDP-backed output, after its post-processing, lies on the sampler's grid.

The floating-point-safe sampler rounds the true value to a grid of spacing g = 2^k and adds an exact
multiple of g, so what it returns is a multiple of g and carries nothing of the value below g. The
pattern it exists to prevent, ``value + noise_drawn_around_zero``, returns a float whose residue modulo g
is the value's own: the *residue attack* (is output − v a multiple of g, for each candidate v?) then
tells neighbouring inputs apart in almost every trial, however large the noise.
Each path below is run with the real OpenDP sampler; ``Recording`` only remembers the grid of every draw
and what came out, so the test can check the values it never sees directly (DP-SGD's sums).
"""

import math

import numpy as np
import pytest
from test_dp_mechanisms import Recording

from curator_service.jobs import JobContext
from curator_service.persistence.blobs import RawTable
from curator_service.services.job_kinds import dp_mean
from shared.algorithms.ding.dptune import calibrate_noise_multiplier, iteration_outputs
from shared.dp.mechanisms import gaussian_mechanism, laplace_mechanism
from shared.dp.noise import OpenDPNoise
from shared.dp.sparse_vector import sparse_vector_technique
from shared.learners import DPLogisticRegression
from shared.learners.output_perturbation import OutputPerturbationLogisticRegression
from shared.releases import gaussian_release


def on_grid(values, grid: float) -> bool:
    """Every value is an exact multiple of ``grid`` (a power of two, so fmod is exact)."""
    return bool(np.all(np.fmod(np.asarray(values, dtype=float), grid) == 0.0))


def residue_distance(output: float, value: float, grid: float) -> float:
    """How far (output − value)/grid is from an integer: ~0 when output = value + (multiple of grid)."""
    ratio = (output - value) / grid
    return abs(ratio - round(ratio))


def residue_attack_accuracy(outputs, secrets, candidates, grids) -> float:
    """Guess, for each output, the candidate value whose residue matches best on any of the ``grids``."""
    guesses = [
        int(np.argmin([min(residue_distance(o, v, g) for g in grids) for v in candidates])) for o in outputs
    ]
    return float(np.mean(np.asarray(guesses) == np.asarray(secrets)))


def chance_bound(trials: int) -> float:
    """Above this a guess beats a coin flip: 1/2 + 5 standard errors (a fair coin exceeds it w.p. < 3e-7)."""
    return 0.5 + 5 * 0.5 / math.sqrt(trials)


TRIALS = 2000
NEIGHBOURS = (0.1234567891, 0.9876543219)  # within one sensitivity, their difference on no grid


def _old_pattern(value: float, std: float, source) -> float:
    """What dpsgd.py did: exact noise drawn around zero, then added to the float value."""
    return value + float(source.add_gaussian(np.zeros(1), std, source.grid(std))[0])


# --- the negative control and the mechanisms ----------------------------------------------------------


def test_residue_attack_breaks_value_plus_noise_around_zero_and_not_the_mechanisms():
    rng = np.random.default_rng(0)
    secrets = rng.integers(0, 2, TRIALS)
    source = Recording(OpenDPNoise())
    std = 5.0  # far more noise than the sensitivity 1 needs for ε = 1
    grids = (source.grid(std), source.grid(1.0))
    old = [_old_pattern(NEIGHBOURS[b], std, source) for b in secrets]
    assert residue_attack_accuracy(old, secrets, NEIGHBOURS, grids) > 0.98

    laplace = [laplace_mechanism(NEIGHBOURS[b], 1.0, 1.0, source) for b in secrets]
    gaussian = [gaussian_mechanism(NEIGHBOURS[b], 1.0, 1.0, 1e-5, source) for b in secrets]
    for released in (laplace, gaussian):
        assert on_grid(released, source.grid(1.0))
        assert residue_attack_accuracy(released, secrets, NEIGHBOURS, grids) < chance_bound(TRIALS)


def test_vector_mechanisms_land_on_the_grid_of_their_sensitivity():
    source = OpenDPNoise()
    values = np.random.default_rng(1).normal(size=(50, 3)) * 1e3
    assert on_grid(laplace_mechanism(values, 0.37, 0.5, source), source.grid(0.37))
    assert on_grid(gaussian_mechanism(values, 0.37, 0.5, 1e-6, source), source.grid(0.37))


# --- release and job paths ----------------------------------------------------------------------------


def test_gaussian_release_rows_are_the_samplers_output_on_its_grid():
    source = Recording(OpenDPNoise())
    X = np.random.default_rng(2).uniform(size=(40, 3))
    release = gaussian_release(X, 1.0, 1e-5, 2, 7, noise=source)
    (_, _, grid, out), = source.draws
    np.testing.assert_array_equal(release.Z, out)  # nothing is done to Z after the sampler
    assert grid == source.grid(release.projection_sensitivity)
    assert on_grid(release.Z, grid)


def test_dp_mean_job_releases_a_value_on_the_grid():
    source = Recording(OpenDPNoise())
    table = RawTable(columns={"age": np.random.default_rng(3).uniform(20, 80, 500)}, feature_columns=("age",))
    ctx = JobContext(job_id=1, params=dp_mean.DpMeanParams(column="age", lower=18.0, upper=90.0, epsilon=0.5),
                     dataset=None, table=table, epsilon=0.5, delta=0.0, noise=source,
                     rng=np.random.default_rng(0), progress=lambda *_: None, cancelled=lambda: False)
    result = dp_mean.run(ctx)
    (_, _, grid, out), = source.draws
    assert result["mean"] == out[()] and grid == source.grid(result["sensitivity"])
    assert on_grid(result["mean"], grid)


def test_output_perturbation_coefficients_are_on_the_grid():
    source = Recording(OpenDPNoise())
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    model = OutputPerturbationLogisticRegression(0.1, 0.5).fit(X, (X[:, 0] > 0).astype(int), source)
    (_, _, grid, out), = source.draws
    np.testing.assert_array_equal(model.coef_, out)
    assert on_grid(model.coef_, grid)


def test_ding_sparse_vector_and_dpareto_svt_noisy_values_are_on_the_grid():
    source = Recording(OpenDPNoise())
    scores = np.array([0.45, 0.55, 0.5])
    iteration_outputs(scores, level=0.4, step=2, g=0.05, k=10, epsilon=1.0, noise=source, trials=200)
    answers = np.array([1, 0, 1, 1, 0.0])
    sparse_vector_technique(answers, 3.0, 2.0, source)
    assert len(source.draws) == 4
    for _, _, grid, out in source.draws:
        assert on_grid(out, grid)
    # the sampler noised the thresholds and the answers themselves (the old SVT added noise drawn around zero)
    inputs = [values for values, _, _, _ in source.draws]
    np.testing.assert_array_equal(inputs[0], np.full(200, 0.5))
    np.testing.assert_array_equal(inputs[1], np.tile(scores, (200, 1)))
    np.testing.assert_array_equal(inputs[2], [0.5])
    np.testing.assert_array_equal(inputs[3], answers)


# --- DP-SGD: the reproducer --------------------------------------------------------------------

# Two rows, the first replaced between the neighbours (its label flips, so its clipped gradient flips
# sign); the second row is zero, so its gradient adds exact zeros whatever order the lot comes in.
# One full-batch SGD step with η = 1 and m = 2 gives w = −(noisy sum)/2 exactly: the attacker reads the
# noisy sum back from the released model.
ROWS = np.array([[3.1, -1.7, 0.4], [0.0, 0.0, 0.0]])
LABELS = (np.array([1, 0]), np.array([0, 0]))


def _one_step(labels, noise_multiplier, noise):
    model = DPLogisticRegression(learning_rate=1.0, batch_size=2, epochs=1, noise_multiplier=noise_multiplier,
                                 clip_norm=1.0)
    model.fit(ROWS, labels, noise, rng=np.random.default_rng())
    return -2.0 * np.append(model.coef_, model.intercept_), model


def test_one_step_dpsgd_at_epsilon_one_does_not_reveal_the_neighbour_by_its_residue():
    """The old code identified the neighbour in 2,000 of 2,000 trials."""
    sigma = calibrate_noise_multiplier(2, 2, 1, 1.0, 1e-5)  # one step at ε = 1, δ = 1e-5
    true_sums = [_one_step(labels, 0.0, OpenDPNoise())[0] for labels in LABELS]  # noiseless: the exact sums
    secrets = np.random.default_rng(5).integers(0, 2, TRIALS)
    source = Recording(OpenDPNoise())
    released = [_one_step(LABELS[b], sigma, source)[0] for b in secrets]
    # The attacker knows the code: the old one drew on the grid of the noise std σ·2L, the new one rounds
    # to the grid of the sensitivity 2L (public parameters both).
    grids = (source.grid(sigma * 2.0), source.grid(2.0))
    coordinate = 0  # one coordinate already tells them apart; the attack needs no more
    accuracy = residue_attack_accuracy([r[coordinate] for r in released], secrets,
                                       [s[coordinate] for s in true_sums], grids)
    assert accuracy < chance_bound(TRIALS)
    for noisy in released:  # the released model, post-processed back to the sum, is on the grid
        assert on_grid(noisy, grids[1])


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_every_noisy_gradient_sum_of_a_long_run_is_on_the_grid(optimizer):
    source = Recording(OpenDPNoise())
    rng = np.random.default_rng(6)
    X = rng.normal(size=(64, 5))
    model = DPLogisticRegression(learning_rate=0.1, batch_size=16, epochs=3, noise_multiplier=1.1, clip_norm=0.5,
                                 optimizer=optimizer)
    model.fit(X, (X[:, 0] > 0).astype(int), source, rng=rng)
    assert len(source.draws) == 3 * 4
    for _, _, grid, out in source.draws:
        assert grid == source.grid(model.sum_sensitivity(5)) and on_grid(out, grid)
