"""DP-SGD and DP-Adam for linear classifiers: DPareto's Algorithms 3 and 4 (Avent et al. 2020).

Each step samples a lot S of exactly m rows uniformly without replacement, clips every per-example
gradient to ℓ2 norm L, and perturbs the mean:

    g = (1/m) · GaussianMechanism(Σ_{j∈S} clip_L(∇ℓ(z_j, w)), std = σ · Δ)

Replacing one row moves the sum of clipped gradients by at most 2L in exact arithmetic. The sum that
is noised is a floating-point sum, rounded by the safe sampler to its grid before the noise is added,
so the noise is calibrated to the sensitivity of *that* value over p = d (+1 with an intercept)
coordinates:

    Δ = 2L'(1 + m·γ_m) + √p · grid,    L' = L(1 + γ_{2p+8})

L' bounds the norm of a clipped gradient computed in floating point (the row norm and the clipping
factor are rounded), m·γ_m·L' bounds the rounding error of the sum of m of them (Higham's γ_n, see
:func:`shared.dp.mechanisms.summation_error`), and √p·grid the sampler's rounding of each coordinate.
Together they add ~1e-10 of 2L or less. With std = σ·Δ the noise multiplier relative to the true
sensitivity of the released sum is at least σ, so :func:`shared.dp.accounting.dpsgd_epsilon` at σ stays
a true bound. The noise is the sampler's own ``add_gaussian`` on the sum (never noise drawn around
zero and added to it, which would keep the sum's residue modulo the grid).

An epoch is round(n/m) steps (the accountant's step count). SGD updates w ← w − η g; Adam
(Algorithm 4) uses κ = 1e-8, β₁ = 0.9, β₂ = 0.999 with de-biased moments (post-processing).
Every :data:`STOP_CHECK_ROWS` rows of lots the training calls :func:`shared.learners.stopping.check_stop`,
so a cancelled job stops it within seconds, not after its last epoch.

Losses for labels y ∈ {0, 1} (internally s = 2y − 1 ∈ {−1, +1}) and margin t = s (w·x + b):
logistic ℓ = log(1 + e^(−t)); hinge (linear SVM) ℓ = max(0, 1 − t). The intercept b, when fitted,
is one more parameter whose gradient is clipped together with w's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from shared.dp.mechanisms import l2_sensitivity_with_grid, summation_error
from shared.dp.noise import NoiseSource
from shared.learners.stopping import check_stop

ADAM_KAPPA, ADAM_BETA1, ADAM_BETA2 = 1e-8, 0.9, 0.999
# Rows of lots between two stop checks: every 256 steps at batch 1, every step from batch 256, whose step (256 rows'
# gradients and their noise) dwarfs a check.
STOP_CHECK_ROWS = 256


def _labels_pm(y: NDArray) -> NDArray:
    y = np.asarray(y)
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0 or 1")
    return 2.0 * y - 1.0


def loss_derivative(loss: str, margins: NDArray) -> NDArray:
    """dℓ/dt at the margins t: −1/(1 + e^t) for logistic, −1[t < 1] for hinge."""
    if loss == "logistic":
        return -0.5 * (1.0 - np.tanh(0.5 * margins))  # = −σ(−t), without overflow
    if loss == "hinge":
        return -(margins < 1.0).astype(float)
    raise ValueError(f"unknown loss {loss!r}; use 'logistic' or 'hinge'")


Loss = Literal["logistic", "hinge"]
Optimizer = Literal["sgd", "adam"]


@dataclass
class DPSGDClassifier:
    """A linear classifier trained by DP-SGD or DP-Adam (Avent et al., Algorithms 3 and 4).

    Hyperparameters are the paper's: ``learning_rate`` η, ``batch_size`` m (the lot), ``epochs`` T,
    ``noise_multiplier`` σ (noise std on the clipped-gradient sum is σ·Δ, Δ ≈ 2L: module docstring),
    ``clip_norm`` L.
    ``loss`` is ``"logistic"`` (logistic regression) or ``"hinge"`` (linear SVM); ``optimizer`` is
    ``"sgd"`` or ``"adam"``. After :meth:`fit`, ``coef_`` (d,) and ``intercept_`` hold the model.
    """

    learning_rate: float
    batch_size: int
    epochs: int
    noise_multiplier: float
    clip_norm: float
    loss: Loss = "logistic"
    optimizer: Optimizer = "sgd"
    fit_intercept: bool = True

    def steps_per_epoch(self, n: int) -> int:
        """round(n / m), at least 1 — the same count the privacy accountant composes."""
        return max(1, round(n / self.batch_size))

    def epsilon(self, n: int, delta: float) -> float:
        """The (ε, δ) guarantee of :meth:`fit` on n rows (replace-one neighbours)."""
        from shared.dp.accounting import dpsgd_epsilon

        return dpsgd_epsilon(n, self.batch_size, self.epochs, self.noise_multiplier, delta)

    def coordinates(self, features: int) -> int:
        """p: the coordinates of the clipped-gradient sum (one per feature, plus the intercept's)."""
        return features + (1 if self.fit_intercept else 0)

    def sum_sensitivity(self, features: int) -> float:
        """2L'(1 + m·γ_m): the replace-one ℓ2 sensitivity of the floating-point sum of m clipped gradients."""
        clipped_norm = self.clip_norm * (1.0 + summation_error(2 * self.coordinates(features) + 8))
        m = self.batch_size
        return 2.0 * clipped_norm * (1.0 + m * summation_error(m))

    def noise_std(self, features: int, noise: NoiseSource) -> float:
        """σ·Δ: the noise std on the sum, Δ = :meth:`sum_sensitivity` plus ``noise``'s rounding slack."""
        sensitivity = self.sum_sensitivity(features)
        return self.noise_multiplier * l2_sensitivity_with_grid(sensitivity, self.coordinates(features), noise)

    def _validate(self, n: int) -> None:
        if not 1 <= self.batch_size <= n:
            raise ValueError(f"batch_size must be between 1 and the number of rows ({n})")
        if self.epochs < 1 or self.learning_rate <= 0 or self.clip_norm <= 0 or self.noise_multiplier < 0:
            raise ValueError("epochs ≥ 1, learning_rate > 0, clip_norm > 0 and noise_multiplier ≥ 0 are required")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; use 'sgd' or 'adam'")
        loss_derivative(self.loss, np.zeros(1))

    def fit(
        self, X: NDArray, y: NDArray, noise: NoiseSource, *, rng: np.random.Generator | None = None
    ) -> DPSGDClassifier:
        """Train on (X, y), y ∈ {0, 1}. ``noise`` adds the Gaussian noise to each clipped-gradient sum;
        ``rng`` draws the lots (fresh OS entropy when None)."""
        X = np.ascontiguousarray(X, dtype=float)
        signs = _labels_pm(y)
        n, d = X.shape
        self._validate(n)
        rng = rng if rng is not None else np.random.default_rng()
        m, L, eta = self.batch_size, self.clip_norm, self.learning_rate
        # Per-example gradient = ℓ'(t) s · [x, 1], so its norm is |ℓ'(t)| · ‖[x, 1]‖: precompute ‖[x, 1]‖.
        row_norms = np.sqrt(np.einsum("ij,ij->i", X, X) + (1.0 if self.fit_intercept else 0.0))
        params = np.zeros(d + 1)  # w, then b (kept at 0 without an intercept)
        first = np.zeros(d + 1)
        second = np.zeros(d + 1)
        steps = self.steps_per_epoch(n)
        noised = self.coordinates(d)
        noise_std = self.noise_std(d, noise) if self.noise_multiplier > 0 else 0.0
        grid = noise.grid(self.sum_sensitivity(d))
        check_every = max(1, STOP_CHECK_ROWS // m)
        t = 0
        for _ in range(self.epochs):
            for _ in range(steps):
                if t % check_every == 0:
                    check_stop()  # the step count at which it stops depends on the cancel alone
                t += 1
                lot = rng.choice(n, size=m, replace=False)
                xs, ss = X[lot], signs[lot]
                margins = ss * (xs @ params[:d] + params[d])
                coefs = loss_derivative(self.loss, margins) * ss
                norms = np.abs(coefs) * row_norms[lot]
                coefs *= np.minimum(1.0, L / np.maximum(norms, 1e-300))  # clip_L per example
                grad = np.empty(d + 1)
                grad[:d] = coefs @ xs
                grad[d] = coefs.sum() if self.fit_intercept else 0.0
                if noise_std > 0:
                    grad[:noised] = noise.add_gaussian(grad[:noised], noise_std, grid)
                grad /= m
                if self.optimizer == "sgd":
                    params -= eta * grad
                else:
                    first = ADAM_BETA1 * first + (1.0 - ADAM_BETA1) * grad
                    second = ADAM_BETA2 * second + (1.0 - ADAM_BETA2) * grad**2
                    first_hat = first / (1.0 - ADAM_BETA1**t)
                    second_hat = second / (1.0 - ADAM_BETA2**t)
                    params -= eta * first_hat / (np.sqrt(second_hat) + ADAM_KAPPA)
        self.coef_ = params[:d].copy()
        self.intercept_ = float(params[d])
        return self

    def decision_function(self, X: NDArray) -> NDArray:
        return np.asarray(X, dtype=float) @ self.coef_ + self.intercept_

    def predict(self, X: NDArray) -> NDArray:
        """Labels in {0, 1}."""
        return (self.decision_function(X) > 0).astype(np.int64)

    def score(self, X: NDArray, y: NDArray) -> float:
        """Accuracy."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


def DPLogisticRegression(**hyperparameters: Any) -> DPSGDClassifier:
    """Logistic regression trained by DP-SGD (``optimizer="sgd"``) or DP-Adam (``optimizer="adam"``)."""
    return DPSGDClassifier(loss="logistic", **hyperparameters)


def DPLinearSVM(**hyperparameters: Any) -> DPSGDClassifier:
    """Linear SVM (hinge loss) trained by DP-SGD or DP-Adam."""
    return DPSGDClassifier(loss="hinge", **hyperparameters)
