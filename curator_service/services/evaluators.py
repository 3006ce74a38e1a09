"""How a measurement y is made for one row: ``column``, ``python`` or ``manual`` (docs/design.md §3, §5).

``column``: y is a column of the table plus optional Gaussian *measurement* noise of the given standard
deviation. That noise simulates a noisy test; it is not a privacy mechanism, so plain NumPy noise is right.
It is memoised per (dataset, row): row i's noise is the normal drawn from (the dataset's secret
``simulation_key``, i), the same on every query, so repeating a query cannot average it away (a real
test's result would not change either). ``python``: y = ``module:function(row)`` with the raw row as
``{column: value}`` (a query whose row it fails on is ``unmeasurable``, stored and charged like any answer).
``manual``: no value now; the query stays pending until the curator posts one.

:func:`measure_all` measures every row at once, for private measurements made at release time.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from curator_service.persistence.blobs import RawTable
from shared.api.errors import ApiError
from shared.learners.stopping import check_stop

logger = logging.getLogger(__name__)


class EvaluatorError(ApiError):
    """The curator's evaluator failed; the sentence names the evaluator, never the row's values."""

    def __init__(self, detail: str) -> None:
        super().__init__(500, "internal_error", detail)


@lru_cache(maxsize=64)
def load_target(target: str) -> Callable[[dict[str, Any]], Any]:
    """Imports ``module:function``; raises ``ValueError`` with a sentence when that is impossible or when the target
    is not a plain function (``def``) defined in that module of the curator's own code.

    Python's standard library is refused whole (``builtins:print`` would write every row to the log, ``os:system``
    would run it), and so is a name a module merely re-exports or a class: an evaluator is the curator's code."""
    module_name, _, attribute = target.partition(":")
    if module_name.partition(".")[0] in sys.stdlib_module_names:
        raise ValueError(f"python evaluator {target!r}: {module_name!r} is part of Python's standard library; name a "
                         "function of the curator's own module")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration mistake to report
        raise ValueError(
            f"python evaluator {target!r}: module {module_name!r} cannot be imported ({type(exc).__name__}); "
            "install it on the curator's server or fix the name"
        ) from None
    function = getattr(module, attribute, None)
    if function is None:
        raise ValueError(f"python evaluator {target!r}: {module_name!r} has no function {attribute!r}; fix the name")
    if not inspect.isfunction(function) or function.__module__ != module.__name__:
        raise ValueError(f"python evaluator {target!r}: {attribute!r} is not a plain function defined in "
                         f"{module_name!r} (a def of that module, not a class, a builtin or an imported name); "
                         "name the curator's own function")
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


STOP_CHECK_ROWS = 256


def measure_all(evaluator: dict[str, Any], table: RawTable, simulation_key: str) -> np.ndarray:
    """Every row's measurement, in stored row order (deterministic evaluators only: ``column`` or ``python``,
    whose cost is then n calls of the function). A python evaluator's loop checks for a stop
    (:mod:`shared.learners.stopping`) every :data:`STOP_CHECK_ROWS` rows, so a cancelled release stops within that
    many calls of the curator's function, not after all n."""
    rows = range(table.n)
    if evaluator["kind"] == "column":
        return _column_values(evaluator, table, rows, simulation_key)
    values = np.empty(table.n)
    for i in rows:
        if i % STOP_CHECK_ROWS == 0:
            check_stop()
        values[i] = _python_value(evaluator["target"], table, i, "a row")
    return values


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
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: report it by type only (its message may quote the row)
        logger.error("python evaluator %r raised %s (message withheld: it may quote the row)", target,
                     type(exc).__name__)
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
