"""The modeler's GP-UCB surrogate over released inputs: hyperparameters (fixed or fitted on a
schedule) and, for a certified ``gaussian`` release, the kernel averaged over its public input noise.

A ``gaussian`` release's rows carry N(0, s² I_r) noise with s = ``noise_std`` public. The surrogate then uses
:class:`shared.gp.noisy_inputs.ExpectedSquaredExponential` (the SE kernel averaged over that noise: a wider
lengthscale √(l² + 2s²), an attenuated correlation between rows and a per-row nugget), with fixed
hyperparameters or fitted by marginal likelihood with s held at its public value. With ``public_box_width`` W
(an identity release of data publicly scaled to [0, W]^d) each row's input is instead its posterior under
the box prior (:func:`shared.gp.noisy_inputs.box_posterior`, kernel :class:`shared.gp.noisy_inputs.PosteriorInputsSE`):
rows released far outside the box are known to sit near its edge. ``requery=False`` keeps
GP-UCB off rows it has already measured (their answer will not change); ``measurement_noise_std`` (private
measurements' public σ_y) is a floor on the observation noise. :func:`release_options` reads both from the
release's public metadata unless the modeler sets them.

Fitted hyperparameters are GPUCB's maximum-a-posteriori fit (:func:`shared.gp.regression.fit_hyperparameters`
with BoTorch's dimension-scaled priors): outcomes standardised, lengthscales in units of the released rows' extent
capped by the release's public box (:func:`input_widths`), one lengthscale per dimension while
r ≤ :data:`shared.gp.ucb.ARD_MAX_DIM` unless the run's ``ard`` says otherwise, refitted after every answer while
t ≤ 100 (:func:`refit_due`), from the last fit alone except at the multi-start fits of :func:`full_fit_due`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from modeler_client.runfile import RunSettings
from shared.api.schemas import ReleaseOut
from shared.gp.kernels import KERNELS, FittableKernel, Kernel, squared_distances
from shared.gp.noisy_inputs import ExpectedSquaredExponential, PosteriorInputsSE, box_posterior
from shared.gp.ucb import GPUCB

KernelHook = Callable[[Kernel, ReleaseOut], Kernel]
MIN_OBSERVATIONS_TO_FIT = 2


def median_distance(Z: NDArray, *, max_rows: int = 500, seed: int = 0) -> float:
    """Median pairwise distance of (a seeded subsample of) the released inputs: a scale-aware start."""
    rows = Z if len(Z) <= max_rows else Z[np.random.default_rng(seed).choice(len(Z), max_rows, replace=False)]
    sq = squared_distances(rows, rows)[np.triu_indices(len(rows), k=1)]
    positive = sq[sq > 0]
    return float(np.sqrt(np.median(positive))) if positive.size else 1.0


def public_box_widths(release: ReleaseOut) -> float | None:
    """The width of every coordinate's public range when the release states one: an identity projection of data
    scaled to a public box of diameter D in d dimensions, each feature in [0, D/√d] (the rows of a ``gaussian``
    release add noise around it). None otherwise (then the candidates' own extent is used)."""
    step = release.neighbouring_step
    if step is None or step.box_diameter is None or release.projection != "identity":
        return None
    return step.box_diameter / float(np.sqrt(release.dim))


def input_widths(Z: NDArray, release: ReleaseOut) -> NDArray:
    """The widths lengthscales are measured in: the released rows' extent per coordinate (what BoTorch's
    ``Normalize`` uses), capped by the public box's width where the release states one (its noise-free rows lie
    inside, so input noise does not widen them)."""
    extent = np.ptp(Z, axis=0)
    public = public_box_widths(release)
    return extent if public is None else np.minimum(extent, public)


def refit_due(t: int, fitted_at: int, refit_every: int) -> bool:
    """A refit after ``refit_every`` answers since the last (none yet: at once), and at most about every t/100
    answers beyond t = 100, where a refit's O(t³) steps outgrow a step's pass over the candidates."""
    return fitted_at < 0 or t - fitted_at >= max(refit_every, t // 100)


def full_fit_due(t: int) -> bool:
    """Whether the refit at t answers starts from every start (the last fit, the priors' medians, draws from the
    priors) rather than from the last fit alone: while t ≤ 10, where the posterior moves most, then every 5th (and
    after any fit that ended at a bound: L-BFGS-B started there tends to stay)."""
    return t <= 10 or t % 5 == 0


@dataclass
class Hyperparameters:
    lengthscale: float | list[float]
    signal_variance: float
    noise_variance: float
    prior_mean: float

    def as_dict(self) -> dict[str, float]:
        return dict(vars(self))


def uses_expected_kernel(settings: RunSettings, release: ReleaseOut) -> bool:
    """Whether the kernel is averaged over the input noise: a noisy release and the SE kernel (``auto``),
    or asked for explicitly (``expected-kernel``); ``ignore`` treats Z as noise-free."""
    if not release.noise_std:
        return False
    if settings.input_noise == "auto":
        return settings.kernel == "se"
    return settings.input_noise == "expected-kernel"


FIT_RESTARTS = 0
"""Random restarts of a full refit besides the last fit and the priors' modes: none, as BoTorch's single start at
the modes; on 5–8-d functions random restarts found fits of higher posterior density that predicted worse
(benchmarks/gp_fit_accuracy.py)."""


def release_options(
    release: ReleaseOut,
    settings: RunSettings,
    *,
    requery: bool | None = None,
    measurement_noise_std: float | None = None,
) -> dict:
    """The surrogate options the release's public metadata decides unless given (None):

    * ``measurement_noise_std``: private measurements' σ_y (None when measurements are returned as computed);
    * ``requery``: False when a repeat can teach nothing, i.e. every query of a row returns the same answer
      (``answers_repeat``: private measurements or a column evaluator, both memoised per row) or the kernel is
      averaged over the input noise (its nugget is the row's, repeats do not average it away), and the run has
      at most n iterations (so a new row is always left); True otherwise (Algorithm 2).
    """
    private_y = release.measurement_noise_std
    if requery is None:
        repeats_teach_nothing = (private_y is not None or bool(release.answers_repeat)
                                 or uses_expected_kernel(settings, release))
        requery = not (repeats_teach_nothing and settings.iterations <= release.n)
    sigma_y = private_y if measurement_noise_std is None else measurement_noise_std
    return dict(requery=requery, measurement_noise_std=sigma_y)


class Surrogate:
    """The GP-UCB engine (:class:`shared.gp.ucb.GPUCB`) kept up to date as answers arrive (values already
    oriented so that larger is better).

    ``fixed``: the given hyperparameters throughout. ``fit``: before two answers exist, the prior mean
    sits at the one value seen (so UCB explores away from it instead of being pulled towards it) on
    that value's scale; from two answers on, GPUCB's marginal-likelihood refit runs at the first chance
    and then every ``refit_every`` answers, seeded by (seed, t) so a resumed run refits exactly as an
    uninterrupted one would. The observation noise variance is never below ``measurement_noise_std``².

    ``last_fit``: the newest refit a run file recorded (``{"observations": t, **hyperparameters}``). A resumed
    run starts from it, so its next refit warm-starts from the same point and falls due at the same answer
    as in the uninterrupted run; starting afresh would refit at the first chance from the start values and
    can land in another optimum of a flat likelihood.

    ``device``: where GP-UCB's candidate posterior lives (:class:`shared.gp.ucb.GPUCB`'s ``device``; None: the
    Numba engine); in float64 the picks do not depend on it.
    """

    def __init__(
        self,
        Z: NDArray,
        release: ReleaseOut,
        settings: RunSettings,
        *,
        kernel_hook: KernelHook | None = None,
        requery: bool = True,
        measurement_noise_std: float | None = None,
        public_box_width: float | None = None,
        last_fit: Mapping[str, float | int] | None = None,
        device: str | None = None,
    ) -> None:
        if uses_expected_kernel(settings, release) and settings.kernel != "se":
            raise ValueError("the expected-kernel input-noise correction is defined for the 'se' kernel only")
        self.Z = Z
        self.box_posterior = bool(public_box_width) and uses_expected_kernel(settings, release)
        # the box posterior's inputs are (mean, variance) pairs under one isotropic lengthscale in the box's units
        self.input_scale = public_box_width if self.box_posterior else input_widths(Z, release)
        self.candidates = (np.hstack(box_posterior(Z, release.noise_std, public_box_width))
                           if self.box_posterior and release.noise_std and public_box_width else Z)
        self.release = release
        self.settings = settings
        self.kernel_hook = kernel_hook
        self.requery = requery
        self.excluded: set[int] = set()
        self.noise_floor = (measurement_noise_std or 0.0) ** 2
        self.start_lengthscale = settings.lengthscale or median_distance(Z, seed=settings.seed)
        self.hyperparameters: Hyperparameters | None = None
        self.ucb: GPUCB | None = None
        self._fitted_at = -1
        self._observed = 0
        self._last_fit = last_fit
        self.device = device

    def base_kernel(self, h: Hyperparameters) -> FittableKernel:
        """The kernel before the hook: its kind is also what refits keep."""
        if self.box_posterior:
            return PosteriorInputsSE(h.lengthscale, h.signal_variance)
        if self.release.noise_std and uses_expected_kernel(self.settings, self.release):
            return ExpectedSquaredExponential(
                h.lengthscale, h.signal_variance, input_noise_std=self.release.noise_std, dim=self.release.dim
            )
        return KERNELS[self.settings.kernel](h.lengthscale, h.signal_variance)

    def kernel(self, h: Hyperparameters) -> Kernel:
        kernel = self.base_kernel(h)
        return self.kernel_hook(kernel, self.release) if self.kernel_hook else kernel

    def _rebuild(self, h: Hyperparameters, kernel: Kernel, indices: Sequence[int], y: NDArray) -> None:
        self.hyperparameters = h
        self.ucb = GPUCB(
            self.candidates,
            kernel=kernel,
            noise_variance=h.noise_variance,
            prior_mean=h.prior_mean,
            delta=self.settings.ucb_delta,
            refit_kernel=self.base_kernel(h),
            n_restarts=FIT_RESTARTS,
            ard=False if self.box_posterior else self.settings.ard,
            input_scale=self.input_scale,
            requery=self.requery,
            noise_variance_floor=self.noise_floor,
            device=self.device,
            acquisition=self.settings.acquisition,
        )
        self.ucb.exclude(self.excluded)
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
        if self._fitted_at < 0 and self._last_fit is not None and self._last_fit["observations"] <= t:
            fit = dict(self._last_fit)
            self._fitted_at = int(fit.pop("observations"))
            self._last_fit = None
            h = Hyperparameters(**fit)
            self._rebuild(h, self.kernel(h), indices[: self._observed], y[: self._observed])  # restored, not changed
        if self._fitted_at < 0:  # fixed, or fit before its first refit
            start = self._start_values(y)
            if start != self.hyperparameters:
                self._rebuild(start, self.kernel(start), indices[: self._observed], y[: self._observed])
                changed = True
        assert self.ucb is not None  # built above, or by an earlier update
        for index, value in zip(indices[self._observed :], y[self._observed :]):
            self.ucb.observe(int(index), float(value))
        self._observed = t
        if s.hyperparameters == "fit" and t >= MIN_OBSERVATIONS_TO_FIT and refit_due(t, self._fitted_at, s.refit_every):
            self.ucb.rng = np.random.default_rng([s.seed, t])
            last = self.ucb.last_fit
            self.ucb.refit(warm_start_only=not (full_fit_due(t) or last is None or last.at_bound))
            self._fitted_at = t
            fitted = self.ucb
            kernel = cast(FittableKernel, fitted.kernel)  # the refit made it from the engine's refit_kernel
            lengthscale = kernel.lengthscale
            h = Hyperparameters(
                lengthscale.tolist() if isinstance(lengthscale, np.ndarray) else float(lengthscale), kernel.variance,
                fitted.noise_variance, fitted.prior_mean,
            )
            if self.kernel_hook is not None:
                self._rebuild(h, self.kernel_hook(kernel, self.release), indices, y)
            self.hyperparameters = h
            changed = True
        return changed

    def suggest(self) -> int:
        assert self.ucb is not None, "update() builds the engine before the first suggestion"
        return int(self.ucb.suggest())

    def exclude(self, indices: Iterable[int]) -> None:
        """Never suggest these rows (the curator could not measure them; asking again would be charged again)."""
        self.excluded.update(int(i) for i in indices)
        if self.ucb is not None:
            self.ucb.exclude(self.excluded)
