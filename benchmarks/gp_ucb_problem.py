"""The GP-UCB speed problem that speed_gp_ucb.py and gpu_step.py both run: the paper's synthetic GP's fixed
hyperparameters, candidates shaped like Algorithm 1's output, and what a step must move besides V and the candidates.

Data: X with d = 10 standard-normal rows rescaled to a maximal norm of 25 (as in the paper), projected like
Algorithm 1 (Z = X M / √r, M Gaussian); f is a smooth random function of X.
"""

from __future__ import annotations

import numpy as np

LENGTHSCALE, SIGNAL_VARIANCE, NOISE_VARIANCE, DELTA = 1.25, 1.0, 1e-5, 0.05  # the paper's synthetic GP
COMPULSORY_VECTORS = 5  # length-n vectors a step moves besides V and the candidates: μ, σ² read; μ, σ², V's row written


def projected_problem(n: int, r: int, seed: int, d: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Candidates Z (n × r) like Algorithm 1's output and noise-free values f (n)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= 25.0 / np.sqrt(np.einsum("ij,ij->i", X, X).max())
    Z = X @ rng.standard_normal((d, r)) / np.sqrt(r)
    w, b = rng.standard_normal((d, 4)) / 4.0, rng.uniform(0, 2 * np.pi, 4)
    f = np.sin(X @ w + b).sum(axis=1)
    return Z, f
