"""DP-SGD and DP-Adam for linear classifiers: DPareto's Algorithms 3 and 4 (Avent et al. 2020).

Each step samples a lot S of exactly m rows uniformly without replacement, clips every per-example
gradient to ℓ2 norm L, and perturbs the mean:

    g = (1/m) Σ_{j∈S} clip_L(∇ℓ(z_j, w)) + (2L/m) · N(0, σ² I)

so the Gaussian noise on the *sum* of clipped gradients has standard deviation σ · 2L — the sum's
replace-one sensitivity (one row replaced moves the sum by at most 2L). σ is therefore the noise
multiplier :func:`shared.accounting.dpsgd_epsilon` expects. An epoch is round(n/m) steps (the
accountant's step count). SGD updates w ← w − η g; Adam (Algorithm 4) uses κ = 1e-8, β₁ = 0.9,
β₂ = 0.999 with de-biased moments.

Losses for labels y ∈ {0, 1} (internally s = 2y − 1 ∈ {−1, +1}) and margin t = s (w·x + b):
logistic ℓ = log(1 + e^(−t)); hinge (linear SVM) ℓ = max(0, 1 − t). The intercept b, when fitted,
is one more parameter whose gradient is clipped together with w's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

ADAM_KAPPA, ADAM_BETA1, ADAM_BETA2 = 1e-8, 0.9, 0.999


class GaussianNoise(Protocol):
    """What the learners need from a ``shared.noise.NoiseSource``."""

    def gaussian(self, std: float, size: int | tuple[int, ...]) -> NDArray: ...


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


@dataclass
class DPSGDClassifier:
    """A linear classifier trained by DP-SGD or DP-Adam (Avent et al., Algorithms 3 and 4).

    Hyperparameters are the paper's: ``learning_rate`` η, ``batch_size`` m (the lot), ``epochs`` T,
    ``noise_multiplier`` σ (noise std on the clipped-gradient sum is σ·2L), ``clip_norm`` L.
    ``loss`` is ``"logistic"`` (logistic regression) or ``"hinge"`` (linear SVM); ``optimizer`` is
    ``"sgd"`` or ``"adam"``. After :meth:`fit`, ``coef_`` (d,) and ``intercept_`` hold the model.
    """

    learning_rate: float
    batch_size: int
    epochs: int
    noise_multiplier: float
    clip_norm: float
    loss: Literal["logistic", "hinge"] = "logistic"
    optimizer: Literal["sgd", "adam"] = "sgd"
    fit_intercept: bool = True

    def steps_per_epoch(self, n: int) -> int:
        """round(n / m), at least 1 — the same count the privacy accountant composes."""
        return max(1, round(n / self.batch_size))

    def epsilon(self, n: int, delta: float) -> float:
        """The (ε, δ) guarantee of :meth:`fit` on n rows (replace-one neighbours)."""
        from shared.accounting import dpsgd_epsilon

        return dpsgd_epsilon(n, self.batch_size, self.epochs, self.noise_multiplier, delta)

    def _validate(self, n: int) -> None:
        if not 1 <= self.batch_size <= n:
            raise ValueError(f"batch_size must be between 1 and the number of rows ({n})")
        if self.epochs < 1 or self.learning_rate <= 0 or self.clip_norm <= 0 or self.noise_multiplier < 0:
            raise ValueError("epochs ≥ 1, learning_rate > 0, clip_norm > 0 and noise_multiplier ≥ 0 are required")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; use 'sgd' or 'adam'")
        loss_derivative(self.loss, np.zeros(1))

    def fit(
        self, X: NDArray, y: NDArray, noise: GaussianNoise, *, rng: np.random.Generator | None = None
    ) -> DPSGDClassifier:
        """Train on (X, y), y ∈ {0, 1}. ``noise`` draws the Gaussian noise (a ``shared.noise`` source);
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
        noise_std = self.noise_multiplier * 2.0 * L  # on the sum of clipped gradients
        t = 0
        for _ in range(self.epochs):
            epoch_noise = noise.gaussian(noise_std, (steps, d + 1)) if noise_std > 0 else np.zeros((steps, d + 1))
            if not self.fit_intercept:
                epoch_noise[:, d] = 0.0
            for k in range(steps):
                lot = rng.choice(n, size=m, replace=False)
                xs, ss = X[lot], signs[lot]
                margins = ss * (xs @ params[:d] + params[d])
                coefs = loss_derivative(self.loss, margins) * ss
                norms = np.abs(coefs) * row_norms[lot]
                coefs *= np.minimum(1.0, L / np.maximum(norms, 1e-300))  # clip_L per example
                grad = np.empty(d + 1)
                grad[:d] = coefs @ xs
                grad[d] = coefs.sum() if self.fit_intercept else 0.0
                grad = (grad + epoch_noise[k]) / m
                if self.optimizer == "sgd":
                    params -= eta * grad
                else:
                    t += 1
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


def DPLogisticRegression(**hyperparameters) -> DPSGDClassifier:
    """Logistic regression trained by DP-SGD (``optimizer="sgd"``) or DP-Adam (``optimizer="adam"``)."""
    return DPSGDClassifier(loss="logistic", **hyperparameters)


def DPLinearSVM(**hyperparameters) -> DPSGDClassifier:
    """Linear SVM (hinge loss) trained by DP-SGD or DP-Adam."""
    return DPSGDClassifier(loss="hinge", **hyperparameters)
