"""A seeded job's held-out split is a function of the file and the seed, not of the secret order a registration
stored the rows in; unseeded, it is still a split of every row."""

from __future__ import annotations

import numpy as np

from curator_service.persistence.blobs import RawTable
from curator_service.services.job_kinds.inputs import held_out_rows

N = 57


def stored(order: np.ndarray) -> RawTable:
    """The file's rows 0..N-1 (column ``x`` holds the file position) in the stored order ``order``."""
    return RawTable({"x": np.arange(N, dtype=float)[order]}, ("x",), source_rows=order)


def file_rows(table: RawTable, rows: np.ndarray) -> list[int]:
    return sorted(int(v) for v in table.columns["x"][rows])


def test_the_same_seed_holds_out_the_same_file_rows_from_any_stored_order():
    first, second = (stored(np.random.default_rng(s).permutation(N)) for s in (1, 2))
    splits = [held_out_rows(t, 0.3, np.random.default_rng(7)) for t in (first, second)]
    for part in (0, 1):  # test rows, then training rows
        assert file_rows(first, splits[0][part]) == file_rows(second, splits[1][part])
    assert list(first.columns["x"][splits[0][1]]) == list(second.columns["x"][splits[1][1]])  # in the same order
    assert len(splits[0][0]) == round(0.3 * N)
    other = held_out_rows(first, 0.3, np.random.default_rng(8))
    assert file_rows(first, other[0]) != file_rows(first, splits[0][0])
    assert sorted([*other[0], *other[1]]) == list(range(N))


def test_a_table_stored_in_file_order_splits_as_its_file():
    table = RawTable({"x": np.arange(N, dtype=float)}, ("x",))
    test, train = held_out_rows(table, 0.3, np.random.default_rng(7))
    assert sorted([*test, *train]) == list(range(N))
