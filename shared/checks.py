"""The argument checks every layer of ``shared`` shares: one wording for one mistake.

Each returns the checked value (converted) or raises ``ValueError`` with a sentence saying what to fix;
the services turn that into a 4xx. Privacy post-conditions use these too: they must ``raise``, never
``assert`` (``python -O`` strips asserts).
"""

from __future__ import annotations

import math
import re

import numpy as np

DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number written as text (a CSV cell, a form field): ASCII digits, an optional point and exponent. Python's
``float`` also reads ``1_000``, Arabic-Indic, superscript and full-width digits, ``nan`` and ``inf``; data and forms
are not code, so none of those."""


MAX_NUMBER_CHARS = 64
"""The longest number a form field or a request body may write (Python refuses to read an integer of more than 4,300
digits, and reading a long one costs time): no field needs a tenth of it."""


def too_long_number(text: str) -> str | None:
    """A sentence for a number written with more than :data:`MAX_NUMBER_CHARS` characters, else None: checked before
    the text is read as a number."""
    if len(text) <= MAX_NUMBER_CHARS:
        return None
    return (f"is a number of {len(text)} characters; no field takes more than {MAX_NUMBER_CHARS} (write a large or "
            "small one with an exponent, e.g. 1e-9)")


def ascii_decimal(text: str) -> float | None:
    """``text`` (already stripped) as a finite float when it is a :data:`DECIMAL`; None otherwise (``1e999``, which
    overflows to infinity, included)."""
    if DECIMAL.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def positive(value: float, name: str) -> float:
    """``value`` as a float, required > 0 and finite (ε, a scale, a sensitivity, a norm bound)."""
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def open_unit(value: float, name: str) -> float:
    """``value`` as a float, required in the open interval (0, 1) (δ, a share of the budget)."""
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return value


def positive_int(value: int, name: str) -> int:
    """``value`` required to be an integer ≥ 1 (a dimension, a count of iterations)."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be an integer ≥ 1, got {value!r}")
    return int(value)


def ordered_interval(pair: tuple[float, float], name: str) -> tuple[float, float]:
    """``pair`` as two finite floats a < b (a clipping interval)."""
    low, high = (float(v) for v in pair)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"{name} must be two finite numbers a < b, got {tuple(pair)!r}")
    return low, high


def finite_vector(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` flattened to a non-empty float vector of finite numbers."""
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be a non-empty vector of finite numbers")
    return values
