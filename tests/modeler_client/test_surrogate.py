"""The modeler's surrogate: the input-noise-averaged kernel and the hyperparameter schedule."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from modeler_client.runfile import RunSettings
from modeler_client.surrogate import Surrogate, median_distance, refit_due, release_options, uses_expected_kernel
from shared.api.schemas import MeasurementParameters, ReleaseOut, ReleaseParameters
from shared.gp.noisy_inputs import ExpectedSquaredExponential, PosteriorInputsSE


def release(noise_std: float | None, dim: int = 3, n: int = 40) -> ReleaseOut:
    mechanism = "gaussian" if noise_std else "po-gp-ucb"
    return ReleaseOut(id=1, dataset_id=1, mechanism=mechanism, certified=bool(noise_std), epsilon=1.0, delta=1e-5,
                      n=n, dim=dim, noise_std=noise_std, created_at=datetime.now(UTC))


def private_y_release(sigma_y: float = 2.5, n: int = 40) -> ReleaseOut:
    """An identity release of 2 features with private measurements of public noise σ_y."""
    measurements = MeasurementParameters(clip=(0.0, 1.0), share=0.5, noise_std=sigma_y, sensitivity=1.0)
    parameters = ReleaseParameters(projection="identity", dim=2, epsilon=1.0, delta=1e-5, mu=0.27,
                                   unit="bounded-change", input_share=0.5, noise_std=0.4, sensitivity=1.0,
                                   projection_sensitivity=1.0, floating_point_safe=True, measurements=measurements)
    return release(0.4, dim=2, n=n).model_copy(update={"parameters": parameters})


def test_expected_kernel_applies_by_default_to_noisy_releases_with_the_se_kernel():
    assert uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed"), release(0.3))
    assert uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fit"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, kernel="matern52"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed"), release(None))
    assert uses_expected_kernel(RunSettings(iterations=1, input_noise="expected-kernel"), release(0.3))
    assert not uses_expected_kernel(RunSettings(iterations=1, hyperparameters="fixed", input_noise="ignore"),
                                    release(0.3))


def test_fits_keep_the_public_input_noise_and_the_measurement_noise_floor():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(80, 3))
    values = np.sin(Z[:, 0])  # smooth: an unconstrained fit would choose a tiny noise variance
    surrogate = Surrogate(Z, release(0.3, n=80), RunSettings(iterations=20, refit_every=2), measurement_noise_std=0.2)
    indices: list[int] = []
    for _ in range(12):
        surrogate.update(indices, values[indices])
        indices.append(surrogate.suggest())
    kernel = surrogate.ucb.kernel
    assert isinstance(kernel, ExpectedSquaredExponential) and kernel.input_noise_std == 0.3 and kernel.dim == 3
    assert surrogate.ucb.noise_variance >= 0.2**2
    np.testing.assert_array_equal(surrogate.hyperparameters.lengthscale, kernel.lengthscale)  # one per dimension


def test_without_requery_no_row_is_measured_twice():
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(25, 2))
    values = -np.sum(Z**2, axis=1)  # one clear optimum that noisy GP-UCB keeps coming back to
    settings = RunSettings(iterations=25, hyperparameters="fixed", lengthscale=1.0, noise_variance=1.0)
    indices = {True: [], False: []}
    for requery in (True, False):
        surrogate = Surrogate(Z, release(None, dim=2, n=25), settings, requery=requery)
        for _ in range(20):
            surrogate.update(indices[requery], values[indices[requery]])
            indices[requery].append(surrogate.suggest())
    assert len(set(indices[True])) < 20 and len(set(indices[False])) == 20


def test_first_suggestion_is_row_zero_and_fits_follow_the_schedule():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(40, 3))
    values = np.sin(Z[:, 0]) + Z[:, 1]
    surrogate = Surrogate(Z, release(None), RunSettings(iterations=20, refit_every=3))
    indices: list[int] = []
    changed_at = []
    for t in range(10):
        if surrogate.update(indices, values[indices]):
            changed_at.append(t)
        indices.append(surrogate.suggest())
    assert indices[0] == 0  # Algorithm 2: every candidate ties before any observation
    assert changed_at == [0, 1, 2, 5, 8]  # start, the first value, then refits at 2 and every 3
    # by default after every answer; beyond 100 answers about every t/100 (a refit's O(t³) outgrows a step)
    assert [t for t in range(95, 106) if refit_due(t, t - 1, 1)] == list(range(95, 106))
    assert [t for t in range(200, 212) if refit_due(t, t - 1, 1)] == []
    assert refit_due(210, 208, 1) and refit_due(7, -1, 5)
    assert len(set(indices)) > 5  # it explores rather than re-querying one row


def test_the_kernel_hook_sees_every_kernel_the_surrogate_builds():
    Z = np.random.default_rng(3).normal(size=(30, 2))
    seen = []

    def hook(kernel, rel):
        seen.append((type(kernel).__name__, rel.id))
        return kernel

    surrogate = Surrogate(Z, release(None, dim=2, n=30), RunSettings(iterations=5, refit_every=1), kernel_hook=hook)
    indices = []
    for _ in range(4):
        surrogate.update(indices, Z[indices, 0])
        indices.append(surrogate.suggest())
    assert len(seen) >= 3 and all(name == "SquaredExponential" for name, _ in seen)


def test_median_distance_is_scale_aware():
    Z = np.random.default_rng(4).normal(size=(100, 3))
    assert median_distance(10 * Z) == pytest.approx(10 * median_distance(Z))


def test_a_public_box_gives_every_row_its_box_posterior_through_refits():
    rng = np.random.default_rng(7)
    Z = rng.uniform(-2, 5, size=(60, 2))
    values = np.cos(Z[:, 0])
    surrogate = Surrogate(Z, release(0.8, dim=2, n=60), RunSettings(iterations=12, refit_every=3), public_box_width=3.0)
    indices: list[int] = []
    for _ in range(10):
        surrogate.update(indices, values[indices])
        indices.append(surrogate.suggest())
    assert isinstance(surrogate.ucb.kernel, PosteriorInputsSE)
    assert surrogate.ucb.kernel.lengthscale != surrogate.start_lengthscale
    means = surrogate.ucb.posterior.candidates[:, :2]
    assert means.min() > 0 and means.max() < 3.0  # every row's input sits inside the public box


def test_the_release_metadata_sets_the_measurement_noise_and_no_repeats_unless_the_modeler_says_otherwise():
    run = RunSettings(iterations=20)
    # private measurements: σ_y is the observation noise floor, and a memoised ỹ cannot change, whatever the kernel
    assert release_options(private_y_release(), run) == {"requery": False, "measurement_noise_std": 2.5}
    assert release_options(private_y_release(), RunSettings(iterations=20, input_noise="ignore"))["requery"] is False
    # noisy inputs under the expected kernel: the nugget belongs to the row, a repeat cannot average it away
    assert release_options(release(0.3), run) == {"requery": False, "measurement_noise_std": None}
    assert release_options(release(0.3), RunSettings(iterations=20, input_noise="ignore"))["requery"] is True
    assert release_options(release(None), run)["requery"] is True  # Algorithm 2 as published
    # a release whose answers repeat (a column evaluator): a second query of a row teaches nothing
    repeating = release(None).model_copy(update={"answers_repeat": True})
    assert release_options(repeating, run) == {"requery": False, "measurement_noise_std": None}
    assert release_options(repeating.model_copy(update={"n": 10}), run)["requery"] is True
    assert release_options(private_y_release(n=10), run)["requery"] is True  # more iterations than rows
    assert release_options(private_y_release(), run, requery=True, measurement_noise_std=0.1) == {
        "requery": True, "measurement_noise_std": 0.1}


@pytest.mark.parametrize(("dim", "ard", "lengthscales"), [(20, None, 1), (20, True, 20), (5, None, 5), (5, False, 1)])
def test_ard_chooses_one_lengthscale_per_coordinate_or_one_shared(dim, ard, lengthscales):
    """By default a fit has one lengthscale per coordinate up to 16 dimensions and one shared beyond; ``ard`` fixes
    the choice at every r (so an r table compares one kernel family)."""
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(30, dim))
    values = Z[:, 0] - Z[:, 1] ** 2
    surrogate = Surrogate(Z, release(None, dim=dim, n=30), RunSettings(iterations=10, ard=ard))
    indices = [0, 1, 2, 3]
    surrogate.update(indices, values[indices])
    assert np.size(surrogate.hyperparameters.lengthscale) == lengthscales
