"""The client tests' table with a known peak, on the suite's curator (``curator``, tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def bowl(curator):
    """A 2-feature table whose measured column is a bowl with a known peak, and an (uncertified,
    distance-preserving) po-gp-ucb release of it."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(150, 2))
    y = 5.0 - np.sum((X - 1.0) ** 2, axis=1)
    dataset = curator.register_table("bowl", X, ["a", "b"], evaluator={"kind": "column", "column": "y"},
                                     budget=(20.0, 1e-3), extra_columns={"y": y},
                                     scaling={"kind": "bounds", "lower": [-3, -3], "upper": [3, 3], "diameter": 1})
    release = curator.create_release(dataset.id, "po-gp-ucb", 1.0, 1e-5, dim=2, seed=1)
    key = curator.issue_key([release.id], max_queries=500)
    return {"X": X, "y": y, "dataset": dataset, "release": release, "token": key.token}
