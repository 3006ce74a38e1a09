"""The reconstruction audit: exact recovery on po-gp-ucb releases, noise-level error on gaussian ones."""

import numpy as np
import pytest

from shared.dp.noise import noise_source
from shared.dp.reconstruction_attack import reconstruction_audit
from shared.releases import gaussian_release, po_gp_ucb_release


def _data(n=300, d=4, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, d))


@pytest.mark.parametrize("epsilon,expect_lifted", [(1e6, False), (1.0, True)])
def test_d_plus_one_known_rows_recover_every_row_of_a_po_gp_ucb_release(epsilon, expect_lifted):
    X = _data()
    release = po_gp_ucb_release(X, epsilon, 1e-5, 6, np.random.default_rng(1))
    assert release.lifted is expect_lifted
    report = reconstruction_audit(X, release.Z, known_indices=[10, 20, 30, 40, 50])
    assert report.known == 5 and report.reconstructed == 295 and report.identifiable
    assert report.max_relative_error < 1e-6
    assert report.rms_error < 1e-8 < 0.1 < report.baseline_rms_error


def test_gaussian_release_error_is_at_the_noise_level():
    X = _data(n=2000)
    release = gaussian_release(X, 1.0, 1e-5, 6, 1, noise=noise_source(2))
    few = reconstruction_audit(X, release.Z, range(5), noise_std=release.noise_std)
    many = reconstruction_audit(X, release.Z, range(1000), noise_std=release.noise_std)
    # d + 1 rows: the fitted map absorbs the noise and the attack does no better than guessing the mean
    assert few.rms_error > few.baseline_rms_error
    assert few.median_relative_error > 0.5
    # many rows: the map is well estimated and the error is the noise floor, of the order of the noise std
    assert many.rms_error == pytest.approx(many.noise_floor_rms, rel=0.1)
    assert 0.3 * release.noise_std < many.noise_floor_rms < 3 * release.noise_std
    assert many.rms_error > many.baseline_rms_error


def test_report_is_aggregate_only():
    X = _data(n=50)
    report = reconstruction_audit(X, X @ np.ones((4, 5)), range(5)).to_dict()
    assert set(report) == {
        "known", "reconstructed", "identifiable", "max_relative_error", "median_relative_error", "rms_error",
        "baseline_rms_error", "noise_std", "noise_floor_rms",
    }
    assert all(isinstance(v, (int, float, bool, type(None))) for v in report.values())


def test_fewer_than_d_plus_one_rows_or_short_projection():
    X = _data(n=50)
    with pytest.raises(ValueError, match="d \\+ 1"):
        reconstruction_audit(X, X @ np.ones((4, 5)), range(4))
    report = reconstruction_audit(X, X @ np.random.default_rng(0).standard_normal((4, 2)), range(5))
    assert not report.identifiable and report.median_relative_error > 1e-3
