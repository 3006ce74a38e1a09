"""Standard synthetic test functions of the Bayesian-optimisation literature (definitions and domains as in
Surjanovic & Bingham's Virtual Library of Simulation Experiments and ``botorch.test_functions``), each evaluated on a
fixed, seeded, uniformly random candidate set of its domain: a discrete problem like a table's rows. All are
minimised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from shared.datasets.tables import RealTable

_HARTMANN3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_HARTMANN3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def branin(X: NDArray) -> NDArray:
    """f(x) = (x₂ − 5.1 x₁²/(4π²) + 5 x₁/π − 6)² + 10 (1 − 1/(8π)) cos x₁ + 10 on [−5, 10] × [0, 15]."""
    x1, x2 = X[:, 0], X[:, 1]
    return (x2 - 5.1 * x1**2 / (4 * np.pi**2) + 5 * x1 / np.pi - 6) ** 2 + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10


def hartmann3(X: NDArray) -> NDArray:
    """f(x) = −Σᵢ αᵢ exp(−Σⱼ Aᵢⱼ (xⱼ − Pᵢⱼ)²) on [0, 1]³."""
    inner = np.einsum("ij,nij->ni", _HARTMANN3_A, (X[:, None, :] - _HARTMANN3_P[None]) ** 2)
    return -np.exp(-inner) @ _HARTMANN_ALPHA


def rosenbrock(X: NDArray) -> NDArray:
    """f(x) = Σᵢ 100 (xᵢ₊₁ − xᵢ²)² + (xᵢ − 1)²."""
    return np.sum(100 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (X[:, :-1] - 1) ** 2, axis=1)


def ackley(X: NDArray) -> NDArray:
    """f(x) = −20 exp(−0.2 √(Σ xᵢ²/d)) − exp(Σ cos(2π xᵢ)/d) + 20 + e."""
    d = X.shape[1]
    return (-20 * np.exp(-0.2 * np.sqrt(np.sum(X**2, axis=1) / d)) - np.exp(np.sum(np.cos(2 * np.pi * X), axis=1) / d)
            + 20 + np.e)


def levy(X: NDArray) -> NDArray:
    """f(x) = sin²(π w₁) + Σᵢ (wᵢ − 1)² (1 + 10 sin²(π wᵢ + 1)) + (w_d − 1)² (1 + sin²(2π w_d)), w = 1 + (x − 1)/4."""
    w = 1 + (X - 1) / 4
    middle = np.sum((w[:, :-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:, :-1] + 1) ** 2), axis=1)
    return np.sin(np.pi * w[:, 0]) ** 2 + middle + (w[:, -1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[:, -1]) ** 2)


def styblinski_tang(X: NDArray) -> NDArray:
    """f(x) = ½ Σ (xᵢ⁴ − 16 xᵢ² + 5 xᵢ)."""
    return 0.5 * np.sum(X**4 - 16 * X**2 + 5 * X, axis=1)


@dataclass(frozen=True)
class StandardFunction:
    function: Callable[[NDArray], NDArray]
    lower: float | tuple[float, ...]
    upper: float | tuple[float, ...]
    dims: tuple[int, ...] | None = None  # the dimensions it is defined for (None: any)


FUNCTIONS = {
    "branin": StandardFunction(branin, (-5.0, 0.0), (10.0, 15.0), dims=(2,)),
    "hartmann3": StandardFunction(hartmann3, 0.0, 1.0, dims=(3,)),
    "rosenbrock": StandardFunction(rosenbrock, -5.0, 10.0),
    "ackley": StandardFunction(ackley, -32.768, 32.768),
    "levy": StandardFunction(levy, -10.0, 10.0),
    "styblinski-tang": StandardFunction(styblinski_tang, -5.0, 5.0),
}


def candidate_table(name: str, dim: int, n: int, seed: int = 0) -> RealTable:
    """``n`` candidates drawn uniformly (seeded) from the domain of function ``name`` in ``dim`` dimensions, with the
    function's values to minimise; the domain is the table's public bounds."""
    spec = FUNCTIONS[name]
    if spec.dims is not None and dim not in spec.dims:
        raise ValueError(f"{name} is defined in {spec.dims} dimensions, not {dim}")
    lower = np.broadcast_to(np.asarray(spec.lower, dtype=float), (dim,))
    upper = np.broadcast_to(np.asarray(spec.upper, dtype=float), (dim,))
    X = np.random.default_rng([seed, dim, n]).uniform(lower, upper, size=(n, dim))
    return RealTable(
        name=f"{name}-{dim}d", features=X, feature_names=tuple(f"x{i + 1}" for i in range(dim)),
        objective=spec.function(X), objective_name="f", goal="minimize",
        public_lower=tuple(map(float, lower)), public_upper=tuple(map(float, upper)),
        description=f"{name} in {dim} dimensions on {n} uniformly random points of its domain",
    )
