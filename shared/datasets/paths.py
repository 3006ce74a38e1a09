"""Where the real datasets live: the data-directory setting.

The datasets are never part of the repository. They are read from ``POBO_SHARED_DATA``
(default: ``../shared/data`` beside the checkout, then relative to the working directory).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "POBO_SHARED_DATA"


class DatasetUnavailable(FileNotFoundError):
    """A real dataset the caller needs is not in the data directory."""


def shared_data_dir() -> Path:
    """The configured data directory (it may not exist)."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    beside_checkout = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    if beside_checkout.is_dir():
        return beside_checkout
    return Path("../shared/data").resolve()


def data_file(name: str) -> Path:
    """Path of one dataset file; raises :class:`DatasetUnavailable` with a sentence saying how to fix it."""
    path = shared_data_dir() / name
    if not path.is_file():
        raise DatasetUnavailable(
            f"dataset file {name!r} not found in {shared_data_dir()}; "
            f"set {ENV_VAR} to the folder holding the shared datasets"
        )
    return path
