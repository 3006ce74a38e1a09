"""scikit-learn's bundled diabetes data (Efron et al. 2004): 442 patients × 10 baseline measurements (age, sex,
BMI, blood pressure, six blood serum values). Objective: the disease-progression score one year after baseline,
maximised (find the patient to follow up first). Needs scikit-learn (a dev dependency)."""

from __future__ import annotations

import numpy as np

from shared.datasets.tables import RealTable

# Public clinical bounds (age, sex, BMI, blood pressure, s1..s6), chosen from what the measurements can be, not
# from this table.
PUBLIC_LOWER = (0, 1, 10, 40, 50, 20, 10, 1, 2, 40)
PUBLIC_UPPER = (100, 2, 60, 200, 400, 300, 120, 10, 8, 200)


def load_diabetes() -> RealTable:
    """The raw (unscaled) table with its public bounds."""
    from sklearn.datasets import load_diabetes as bundled

    data = bundled(scaled=False)
    return RealTable(
        name="diabetes",
        features=np.asarray(data.data, dtype=float),
        feature_names=tuple(data.feature_names),
        objective=np.asarray(data.target, dtype=float),
        objective_name="progression",
        goal="maximize",
        public_lower=PUBLIC_LOWER,
        public_upper=PUBLIC_UPPER,
        description="scikit-learn's diabetes data: one-year disease progression of 442 patients",
    )
