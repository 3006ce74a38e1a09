"""How a measurement y is made for one row: ``column``, ``python`` or ``manual`` (DESIGN §3, §5).

``column``: y is a column of the table plus optional Gaussian *measurement* noise of the given standard
deviation (this simulates a noisy test; it is not a privacy mechanism, so plain NumPy noise is right).
``python``: y = ``module:function(row)`` with the raw row as ``{column: value}``. ``manual``: no value
now; the query stays pending until the curator posts one.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from curator_service.errors import ApiError
from curator_service.storage import RawTable


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


def measure(evaluator: dict[str, Any], table: RawTable, index: int, rng: np.random.Generator) -> float | None:
    """The measurement for row ``index``, or None when it must be posted by hand (``manual``)."""
    kind = evaluator["kind"]
    if kind == "manual":
        return None
    if kind == "column":
        value = float(table.columns[evaluator["column"]][index])
        noise_std = float(evaluator.get("noise_std") or 0.0)
        return value + noise_std * float(rng.standard_normal()) if noise_std > 0 else value
    target = evaluator["target"]
    try:
        function = load_target(target)
    except ValueError as exc:
        raise EvaluatorError(str(exc)) from None
    try:
        value = float(function(table.row(index)))
    except Exception as exc:  # noqa: BLE001 - report the failure without its message (it may quote the row)
        raise EvaluatorError(
            f"the curator's python evaluator {target!r} raised {type(exc).__name__} on the requested row; "
            "nothing was stored or charged; the curator must fix the evaluator"
        ) from None
    if not math.isfinite(value):
        raise EvaluatorError(
            f"the curator's python evaluator {target!r} did not return a finite number for the requested row; "
            "nothing was stored or charged; the curator must fix the evaluator"
        )
    return value
