"""Python evaluators for the hardening tests: each misbehaves with the raw row, as a buggy curator's code might."""

from __future__ import annotations

from typing import Any

leak = print  # a builtin re-exported under a module's name: not a function of this module


def exit_with_row(row: dict[str, Any]) -> float:
    """Raises SystemExit (a BaseException) whose message is the raw row."""
    raise SystemExit(f"bad row {row}")


def fail_with_row(row: dict[str, Any]) -> float:
    """Raises an ordinary exception whose message is the raw row."""
    raise RuntimeError(f"bad row {row}")


class RowHolder:
    """A class is callable, but it is not a plain function of this module."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row


def fail_on_large_a(row: dict[str, Any]) -> float:
    """Measures rows whose feature ``a`` is at most 0.5 and fails on the others: whether it fails depends on the row."""
    if row["a"] > 0.5:
        raise ValueError("cannot measure this row")
    return row["a"] + row["b"]
