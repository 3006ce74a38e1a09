"""Compiles the GP's Numba code into its on-disk cache (``make install`` runs this), so that no later process
(a test, a Dask worker, ``pobo-modeler run``) pays the compile. This script on the idle 2-core VM (2026-11-28, an
empty ``NUMBA_CACHE_DIR``, then again): 9.6 s wall cold, 1.4 s from the cache.

Numba caches one machine-code entry per argument-type signature, beside the source
(``shared/gp/__pycache__``, or ``NUMBA_CACHE_DIR``), so this drives the public :class:`CandidatePosterior`
through every path that picks a signature: each kernel profile (SE, Matérn-5/2, a kernel whose column is given),
observations with and without the next UCB argmax, a direct argmax, a batch's hallucinations and more rows
than one block of V; and the SE objective of a hyperparameter fit, isotropic and ARD, with and without a prior.
Prints the compiled signatures; ``--check`` exits 1 if any function was compiled rather
than loaded from the cache (run it a second time to see that the cache serves everything).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from numba.core.registry import CPUDispatcher

from shared.gp import fused_step, se_objective
from shared.gp.kernels import Matern52, SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential
from shared.gp.regression import CandidatePosterior, HyperparameterPrior, fit_hyperparameters


class GivenColumn(SquaredExponential):
    """An SE kernel of another type: :func:`~shared.gp.regression._compiled_profile` then gives its column."""


def drive() -> None:
    candidates = np.random.default_rng(0).uniform(size=(40, 2))
    kernels = (SquaredExponential(0.3), Matern52(0.3), GivenColumn(0.3),
               ExpectedSquaredExponential(0.3, input_noise_std=0.1, dim=2))
    for kernel in kernels:
        for workers in (1, 2):
            posterior = CandidatePosterior(candidates, kernel, 0.01, block_rows=2, chunk=16, workers=workers)
            posterior.observe(0, 0.5)
            posterior.observe(3, -0.2, next_beta=2.0, excluded=np.array([0, 3]))
            posterior.best_upper_confidence_bound(2.0, np.array([0, 3]))
            with posterior.hallucinating():
                posterior.observe(7, 0.1, next_beta=2.0)
            posterior.observe(9, 0.3)  # a third row: V's second block
    y = np.sin(3.0 * candidates[:12, 0]) + candidates[:12, 1]
    for ard in (False, True):
        fit_hyperparameters(candidates[:12], y, ard=ard, n_restarts=1, rng=0)
        fit_hyperparameters(candidates[:12], y, ard=ard, n_restarts=1, rng=0, prior=HyperparameterPrior.dim_scaled(2))


def dispatchers() -> dict[str, CPUDispatcher]:
    return {name: value for module in (fused_step, se_objective) for name, value in vars(module).items()
            if isinstance(value, CPUDispatcher)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if anything had to be compiled")
    args = parser.parse_args()
    drive()
    compiled = 0
    for name, dispatcher in sorted(dispatchers().items()):
        misses = sum(dispatcher.stats.cache_misses.values())
        hits = sum(dispatcher.stats.cache_hits.values())
        compiled += misses
        if misses or hits:
            print(f"{name}: {len(dispatcher.signatures)} signature(s), {hits} from the cache, {misses} compiled")
    if args.check and compiled:
        print(f"{compiled} compiled: the cache did not serve every signature", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
