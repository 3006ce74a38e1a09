"""How a measurement y is made for one row: ``column``, ``python`` or ``manual`` (DESIGN §3, §5).

``column``: y is a column of the table plus optional Gaussian *measurement* noise of the given standard
deviation. That noise simulates a noisy test; it is not a privacy mechanism, so plain NumPy noise is right.
It is memoised per (dataset, row): row i's noise is the normal drawn from (the dataset's secret
``simulation_key``, i), the same on every query, so repeating a query cannot average it away (a real
test's result would not change either). ``python``: y = ``module:function(row)`` with the raw row as
``{column: value}``. ``manual``: no value now; the query stays pending until the curator posts one.

:func:`measure_all` measures every row at once, for private measurements made at release time.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from curator_service.persistence.blobs import RawTable
from shared.api.errors import ApiError


class EvaluatorError(ApiError):
    """The curator's evaluator failed; the sentence names the evaluator, never the row's values."""

    def __init__(self, detail: str) -> None:
        super().__init__(500, "internal_error", detail)


@lru_cache(maxsize=64)
def load_target(target: str) -> Callable[[dict[str, Any]], Any]:
    """Imports ``module:function``; raises ``ValueError`` with a sentence when that is impossible."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration mistake to report
        raise ValueError(
            f"python evaluator {target!r}: module {module_name!r} cannot be imported ({type(exc).__name__}); "
            "install it on the curator's server or fix the name"
        ) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ValueError(f"python evaluator {target!r}: {module_name!r} has no function {attribute!r}; fix the name")
    return function


def simulated_noise(simulation_key: str, indices: Iterable[int]) -> np.ndarray:
    """Standard normals for rows ``indices``, each a function of (key, row) only: the same on every call."""
    key = int(simulation_key, 16)
    return np.array([np.random.default_rng([key, int(i)]).standard_normal() for i in indices])


def measure(evaluator: dict[str, Any], table: RawTable, index: int, simulation_key: str) -> float | None:
    """The measurement for row ``index``, or None when it must be posted by hand (``manual``)."""
    kind = evaluator["kind"]
    if kind == "manual":
        return None
    if kind == "column":
        return float(_column_values(evaluator, table, [index], simulation_key)[0])
    return _python_value(evaluator["target"], table, index, "the requested row")


def measure_all(evaluator: dict[str, Any], table: RawTable, simulation_key: str) -> np.ndarray:
    """Every row's measurement, in stored row order (deterministic evaluators only: ``column`` or ``python``,
    whose cost is then n calls of the function)."""
    rows = range(table.n)
    if evaluator["kind"] == "column":
        return _column_values(evaluator, table, rows, simulation_key)
    return np.array([_python_value(evaluator["target"], table, i, "a row") for i in rows])


def _column_values(evaluator: dict[str, Any], table: RawTable, indices: Iterable[int],
                   simulation_key: str) -> np.ndarray:
    indices = list(indices)
    values = np.asarray(table.columns[evaluator["column"]][indices], dtype=float)
    noise_std = float(evaluator.get("noise_std") or 0.0)
    return values + noise_std * simulated_noise(simulation_key, indices) if noise_std > 0 else values


def _python_value(target: str, table: RawTable, index: int, which: str) -> float:
    try:
        function = load_target(target)
    except ValueError as exc:
        raise EvaluatorError(str(exc)) from None
    try:
        value = float(function(table.row(index)))
    except Exception as exc:  # noqa: BLE001 - report the failure without its message (it may quote the row)
        raise EvaluatorError(
            f"the curator's python evaluator {target!r} raised {type(exc).__name__} on {which}; "
            "nothing was stored or charged; the curator must fix the evaluator"
        ) from None
    if not math.isfinite(value):
        raise EvaluatorError(
            f"the curator's python evaluator {target!r} did not return a finite number for {which}; "
            "nothing was stored or charged; the curator must fix the evaluator"
        )
    return value
