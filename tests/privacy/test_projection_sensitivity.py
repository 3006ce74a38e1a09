"""Property test: no pair of neighbouring rows moves a projected row by more than the reported sensitivity.

For projections P of several shapes (r < d: JL, r = d: identity, r > d: an isometry) and seeds, rows x and
x′ with ‖x − x′‖ ≤ 1 must satisfy ‖x′P − xP‖ ≤ ``projection_sensitivity``, both in exact arithmetic on
the P the release used and for the projections the release itself computes in floating point, at row
norms up to 10⁶ (where the rounding of xP is ~10⁻⁹ of Δ). The differences Δx are random unit and sub-unit
vectors, the adversarial top left-singular direction u₁ of P (which attains σ_max(P)) and mixtures of u₁
with random directions near it. The negative control is tightness: u₁ moves the row by all but ≤ 10⁻⁷ of
the reported Δ (its float-error allowance), so a sensitivity reported 10⁻⁶ too small would fail. The test sees P through
:class:`Recording` (the values the release noises for X = I are the rows of P); a seeded numpy loop
stands in for hypothesis, which is not a dependency.
"""

import numpy as np
import pytest
from test_dp_mechanisms import Recording

from shared.dp.noise import SeededNoise
from shared.releases import gaussian_release

SHAPES = [(1, 1), (1, 4), (2, 5), (3, 2), (5, 5), (10, 3), (8, 16), (50, 10), (20, 40)]
SEEDS = range(4)
TRIALS = 500


def released_projection(X: np.ndarray, r: int, seed: int, **options) -> tuple[np.ndarray, float]:
    """The values the release noises for X (its floating-point X P) and its reported projection sensitivity."""
    spy = Recording(SeededNoise(0))
    release = gaussian_release(X, 1.0, 1e-5, r, seed, noise=spy, **options)
    return spy.draws[0][0], release.projection_sensitivity


def row_changes(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Δx with ‖Δx‖ ≤ 1: u₁ (both signs), random unit and sub-unit vectors, and unit mixtures of u₁."""
    d = P.shape[0]
    top = np.linalg.svd(P)[0][:, 0]
    unit = rng.normal(size=(TRIALS, d))
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    inside = unit * rng.uniform(0, 1, size=(TRIALS, 1))
    angles = rng.uniform(0, 0.05, size=(TRIALS, 1))
    mixtures = np.cos(angles) * top + np.sin(angles) * unit
    mixtures /= np.maximum(1.0, np.linalg.norm(mixtures, axis=1))[:, None]
    # 10⁻⁸ inside the unit ball, so neither our normalisation nor x + Δx at ‖x‖ = 10⁶ rounds a pair apart by > 1
    return np.vstack([top, -top, unit, inside, mixtures]) * (1 - 1e-8)


@pytest.mark.parametrize("d, r", SHAPES)
def test_no_row_change_of_norm_one_moves_a_projected_row_beyond_the_sensitivity(d, r):
    for seed in SEEDS:
        rng = np.random.default_rng(1000 * d + r + seed)
        P, sensitivity = released_projection(np.eye(d), r, seed)
        changes = row_changes(P, rng)
        moved = np.linalg.norm(changes @ P, axis=1)
        assert moved.max() <= sensitivity
        assert moved[0] >= sensitivity * (1 - 1e-6)  # u₁ attains it: the check is tight
        for norm in (0.0, 1.0, 1e3, 1e6):  # the release's own floating-point projections of row pairs
            rows = rng.normal(size=(changes.shape[0], d))
            rows *= norm / np.maximum(np.linalg.norm(rows, axis=1), 1e-300)[:, None]
            projected, _ = released_projection(np.vstack([rows, rows + changes]), r, seed)
            half = rows.shape[0]
            assert np.linalg.norm(projected[half:] - projected[:half], axis=1).max() <= sensitivity


@pytest.mark.parametrize("d, r", [(3, 2), (5, 5), (4, 9)])
def test_replace_one_rows_of_any_norm_move_a_projected_row_by_at_most_the_sensitivity(d, r):
    """Rows are clipped to the public norm C first, so any two rows are neighbours at distance ≤ 2C."""
    rng = np.random.default_rng(d * r)
    rows = rng.normal(size=(2 * TRIALS, d)) * rng.lognormal(0, 4, size=(2 * TRIALS, 1))
    top = np.linalg.svd(released_projection(np.eye(d), r, 3)[0])[0][:, 0]
    rows[:2] = [5 * top, -7 * top]  # the worst pair: both clipped to C along ±u₁
    projected, sensitivity = released_projection(rows, r, 3, unit="replace-one", clip_norm=0.5)
    moved = np.linalg.norm(projected[::2] - projected[1::2], axis=1)
    assert moved.max() <= sensitivity
    assert moved[0] >= sensitivity * (1 - 1e-6)
