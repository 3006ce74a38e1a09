"""Blob codecs: raw tables and released matrices as the database stores them, NumPy ``.npz`` / ``.npy`` bytes.

Loading never unpickles (``allow_pickle=False``): numeric columns are float64, text columns unicode.
"""

from __future__ import annotations

import io
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:
    from curator_service.persistence.models import Dataset


def encode_matrix(matrix: np.ndarray, dtype: type = np.float64) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(matrix, dtype=dtype), allow_pickle=False)
    return buffer.getvalue()


def decode_matrix(blob: bytes) -> np.ndarray:
    return np.load(io.BytesIO(blob), allow_pickle=False)


def secret_permutation(n: int) -> np.ndarray:
    """A uniformly random order of ``n`` rows from the operating system's CSPRNG (never a seed).

    Sorting 64-bit random keys: a tie (probability < n²/2⁶⁵) only keeps two rows in file order."""
    keys = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    return np.argsort(keys, kind="stable")


@dataclass(frozen=True)
class RawTable:
    """A dataset's raw table as the service stores it: every column of the registered file.

    ``features`` is the n × d float matrix of the feature columns (the data the releases see). Rows are
    stored in a secret random order (row i of every release is stored row i), so that an index reveals
    nothing of the file's order; ``source_rows[i]`` is stored row i's 0-based position in the file (None:
    registered before rows were permuted, so stored in file order).
    """

    columns: dict[str, np.ndarray]
    feature_columns: tuple[str, ...]
    source_rows: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def features(self) -> np.ndarray:
        return np.column_stack([self.columns[name] for name in self.feature_columns]).astype(np.float64)

    def permuted(self, order: np.ndarray) -> RawTable:
        """The table with stored row i = this table's row ``order[i]``."""
        base = np.arange(self.n) if self.source_rows is None else self.source_rows
        return RawTable({name: values[order] for name, values in self.columns.items()}, self.feature_columns,
                        base[order])

    def file_row(self, index: int) -> int:
        """The curator's number for stored row ``index``: its data row in the registered file (1 = first)."""
        return int(index if self.source_rows is None else self.source_rows[index]) + 1

    def row(self, index: int) -> dict[str, Any]:
        """Row ``index`` as ``{column: float or str}`` (what a python evaluator receives)."""
        return {name: values[index].item() for name, values in self.columns.items()}

    def encode(self) -> bytes:
        buffer = io.BytesIO()
        # Positional arrays keep the column order and allow any column name.
        np.savez(buffer, *self.columns.values(), allow_pickle=False)
        return buffer.getvalue()

    @classmethod
    def decode(cls, blob: bytes, column_names: list[str], feature_columns: list[str],
               source_rows: bytes | None = None) -> RawTable:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
            arrays = [archive[f"arr_{i}"] for i in range(len(column_names))]
        order = None if source_rows is None else decode_matrix(source_rows)
        return cls(dict(zip(column_names, arrays, strict=True)), tuple(feature_columns), order)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A small thread-safe LRU of decoded values that never change once stored, keyed by what identifies them."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[], V]) -> V:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = load()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.capacity:
                self._values.popitem(last=False)
        return value


class TableCache(LruCache[int, RawTable]):
    """Decoded tables keyed by dataset id (tables are immutable once stored)."""


def cached_table(tables: TableCache, dataset: Dataset) -> RawTable:
    """The dataset's decoded raw table (rows in stored order, with their file rows); tables never change, so
    decoded ones are kept in a small cache.

    Call it inside a session: on a cache miss the deferred ``table`` column is loaded."""
    return tables.get(
        dataset.id,
        lambda: RawTable.decode(dataset.table, dataset.columns, dataset.feature_columns, dataset.source_rows),
    )
