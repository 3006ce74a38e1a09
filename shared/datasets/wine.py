"""scikit-learn's bundled wine data (UCI, Forina et al.): 178 Italian wines × 13 chemical measurements. As an
optimisation problem: find the wine of highest alcohol content from the other twelve measurements (the cultivar
label is left out). Needs scikit-learn (a dev dependency)."""

from __future__ import annotations

import numpy as np

from shared.datasets.tables import RealTable

# Public bounds of the twelve inputs (malic acid … proline), wide ranges for red and white wines from oenology
# references, fixed without looking at this table.
PUBLIC_LOWER = (0.0, 1.0, 5.0, 50.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 200.0)
PUBLIC_UPPER = (7.0, 4.0, 35.0, 200.0, 5.0, 6.0, 1.0, 4.0, 15.0, 2.0, 4.5, 2000.0)


def load_wine() -> RealTable:
    """The raw (unscaled) table with its public bounds."""
    from sklearn.datasets import load_wine as bundled

    data = bundled()
    names = list(data.feature_names)
    alcohol = names.index("alcohol")
    inputs = [i for i in range(len(names)) if i != alcohol]
    return RealTable(
        name="wine",
        features=np.asarray(data.data[:, inputs], dtype=float),
        feature_names=tuple(names[i].replace("/", "_") for i in inputs),
        objective=np.asarray(data.data[:, alcohol], dtype=float),
        objective_name="alcohol",
        goal="maximize",
        public_lower=PUBLIC_LOWER,
        public_upper=PUBLIC_UPPER,
        description="scikit-learn's wine data: alcohol content of 178 wines from twelve other measurements",
    )
