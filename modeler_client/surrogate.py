"""The modeler's GP-UCB surrogate over released inputs: hyperparameters (fixed or fitted on a
schedule) and, for a certified ``gaussian`` release, the kernel corrected for its public input noise.

Input noise of a ``gaussian`` release (DESIGN §4): row i is z_i = x_i M/√r + g_i with g_i ~ N(0, σ² I_r)
and σ = ``noise_std`` public. Given the released z_i, z_j, the noise-free difference is
N(z_i − z_j, 2σ² I_r), and the squared-exponential kernel averaged over it is

    E k(a, b) = s² (l² / (l² + 2σ²))^(r/2) · exp(−‖z_i − z_j‖² / (2 (l² + 2σ²)))     (i ≠ j),
    E k(a, a) = s²,

a Gaussian convolution: a longer lengthscale √(l² + 2σ²), an attenuated covariance between rows, and
the remainder s² (1 − a) of the prior variance as a per-row nugget. It is positive semi-definite (a
scaled SE kernel plus a multiple of the identity). This is one way to use the public σ; the privacy
engineer's regret-vs-ε benchmark compares it with fitting (the ``kernel_hook`` of the loop lets other
corrections be tried without touching this module).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shared.kernels import KERNELS, Kernel, SquaredExponential, squared_distances
from shared.schemas import ReleaseOut
from shared.ucb import GPUCB

from modeler_client.runfile import RunSettings

KernelHook = Callable[[Kernel, ReleaseOut], Kernel]
MIN_OBSERVATIONS_TO_FIT = 2
# Rows closer than this (squared, in lengthscale units) count as the same row for the nugget; distinct
# rows of a noisy release are ~2rσ²/l'² apart, many orders of magnitude more.
_SAME_ROW = 1e-9


class NoisyInputsSE:
    """The squared-exponential kernel averaged over the public Gaussian input noise (formula above)."""

    def __init__(self, lengthscale: float, variance: float, noise_std: float, dim: int) -> None:
        widened = lengthscale**2 + 2.0 * noise_std**2
        self.attenuation = (lengthscale**2 / widened) ** (dim / 2.0)
        self.variance = float(variance)
        self.lengthscale = float(lengthscale)
        self.noise_std = float(noise_std)
        self._widened = SquaredExponential(np.sqrt(widened), variance * self.attenuation)

    def __call__(self, A: ArrayLike, B: ArrayLike) -> NDArray:
        sq = squared_distances(self._widened.scale(A), self._widened.scale(B))
        K = self.variance * self.attenuation * np.exp(-0.5 * sq)
        K[sq <= _SAME_ROW] = self.variance
        return K

    def diag(self, A: ArrayLike) -> NDArray:
        return np.full(np.shape(A)[0], self.variance)

    def __repr__(self) -> str:
        return (
            f"NoisyInputsSE(lengthscale={self.lengthscale:.4g}, variance={self.variance:.4g}, "
            f"noise_std={self.noise_std:.4g}, attenuation={self.attenuation:.3g})"
        )


def median_distance(Z: NDArray, *, max_rows: int = 500, seed: int = 0) -> float:
    """Median pairwise distance of (a seeded subsample of) the released inputs: a scale-aware start."""
    rows = Z if len(Z) <= max_rows else Z[np.random.default_rng(seed).choice(len(Z), max_rows, replace=False)]
    sq = squared_distances(rows, rows)[np.triu_indices(len(rows), k=1)]
    positive = sq[sq > 0]
    return float(np.sqrt(np.median(positive))) if positive.size else 1.0


@dataclass
class Hyperparameters:
    lengthscale: float
    signal_variance: float
    noise_variance: float
    prior_mean: float

    def as_dict(self) -> dict[str, float]:
        return dict(vars(self))


def uses_expected_kernel(settings: RunSettings, release: ReleaseOut) -> bool:
    """Whether the input-noise correction applies: a noisy release, the SE kernel, and fixed
    hyperparameters unless asked explicitly (fitted ones already absorb the noise into l and σ_n²)."""
    if not release.noise_std:
        return False
    if settings.input_noise == "auto":
        return settings.hyperparameters == "fixed" and settings.kernel == "se"
    return settings.input_noise == "expected-kernel"


class Surrogate:
    """The GP-UCB engine (:class:`shared.ucb.GPUCB`) kept up to date as answers arrive (values already
    oriented so that larger is better).

    ``fixed``: the given hyperparameters throughout. ``fit``: before two answers exist, the prior mean
    sits at the one value seen (so UCB explores away from it instead of being pulled towards it) on
    that value's scale; from two answers on, GPUCB's marginal-likelihood refit runs at the first chance
    and then every ``refit_every`` answers, seeded by (seed, t) so a resumed run refits exactly as an
    uninterrupted one would.
    """

    def __init__(
        self,
        Z: NDArray,
        release: ReleaseOut,
        settings: RunSettings,
        *,
        kernel_hook: KernelHook | None = None,
    ) -> None:
        if uses_expected_kernel(settings, release) and settings.kernel != "se":
            raise ValueError("the expected-kernel input-noise correction is defined for the 'se' kernel only")
        self.Z = Z
        self.release = release
        self.settings = settings
        self.kernel_hook = kernel_hook
        self.start_lengthscale = settings.lengthscale or median_distance(Z, seed=settings.seed)
        self.hyperparameters: Hyperparameters | None = None
        self.ucb: GPUCB | None = None
        self._fitted_at = -1
        self._observed = 0

    def kernel(self, h: Hyperparameters) -> Kernel:
        if uses_expected_kernel(self.settings, self.release):
            kernel: Kernel = NoisyInputsSE(h.lengthscale, h.signal_variance, self.release.noise_std, self.release.dim)
        else:
            kernel = KERNELS[self.settings.kernel](h.lengthscale, h.signal_variance)
        return self.kernel_hook(kernel, self.release) if self.kernel_hook else kernel

    def _rebuild(self, h: Hyperparameters, kernel: Kernel, indices: Sequence[int], y: NDArray) -> None:
        self.hyperparameters = h
        self.ucb = GPUCB(
            self.Z,
            kernel=kernel,
            noise_variance=h.noise_variance,
            prior_mean=h.prior_mean,
            delta=self.settings.ucb_delta,
            refit_kernel=self.settings.kernel,
            n_restarts=3,
        )
        for index, value in zip(indices, y):
            self.ucb.observe(int(index), float(value))
        self._observed = len(y)

    def _start_values(self, y: NDArray) -> Hyperparameters:
        s = self.settings
        if s.hyperparameters == "fixed":
            signal = s.signal_variance or 1.0
            return Hyperparameters(self.start_lengthscale, signal, s.noise_variance or 1e-6 * signal, 0.0)
        first = float(y[0]) if len(y) else 0.0
        signal = s.signal_variance or (first**2 or 1.0)
        return Hyperparameters(self.start_lengthscale, signal, s.noise_variance or 1e-6 * signal, first)

    def update(self, indices: Sequence[int], y: NDArray) -> bool:
        """Bring the engine up to date with all answers so far (in order); new ones are rank-one steps.
        Returns True when the hyperparameters changed (the engine was then rebuilt or refitted)."""
        s = self.settings
        t = len(y)
        changed = False
        if self._fitted_at < 0:  # fixed, or fit before its first refit
            start = self._start_values(y)
            if start != self.hyperparameters:
                self._rebuild(start, self.kernel(start), indices[: self._observed], y[: self._observed])
                changed = True
        for index, value in zip(indices[self._observed :], y[self._observed :]):
            self.ucb.observe(int(index), float(value))
        self._observed = t
        refit_due = self._fitted_at < 0 or t - self._fitted_at >= s.refit_every
        if s.hyperparameters == "fit" and t >= MIN_OBSERVATIONS_TO_FIT and refit_due:
            self.ucb.rng = np.random.default_rng([s.seed, t])
            self.ucb.refit()
            self._fitted_at = t
            fitted = self.ucb
            h = Hyperparameters(
                float(fitted.kernel.lengthscale), fitted.kernel.variance, fitted.noise_variance, fitted.prior_mean
            )
            if self.kernel_hook is not None:
                self._rebuild(h, self.kernel_hook(fitted.kernel, self.release), indices, y)
            self.hyperparameters = h
            changed = True
        return changed

    def suggest(self) -> int:
        return int(self.ucb.suggest())
