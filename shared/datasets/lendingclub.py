"""LendingClub loans 2007-12 to 2011-12: the PO-GP-UCB paper's loan-ROI experiment (their §4, Fig. 2b).

Which loans are kept: finished loans that met the credit policy (``loan_status`` exactly
"Fully Paid" or "Charged Off"), with a recorded annual income and a positive amount committed by
investors — 39,657 of the file's 42,535. The paper used 36,000 applicants without saying which;
``load_lendingclub(n=36000, seed=…)`` draws a uniform subsample of that size.

Inputs (the paper's three): amount committed by investors (``funded_amnt_inv``), interest rate
(``int_rate``), annual income (``annual_inc``).

Incomes are as reported, up to $6,000,000 (301 kept loans report more than the public bound of $250,000).
The paper says nothing about outliers; ``income_outliers`` gives the two obvious alternatives, "clip" (at
the public bound) and "drop" (loans above it), for measuring what the choice does
(``benchmarks/real_data.py --sensitivity``).

Objective: return on investment ROI = total_pymnt_inv / funded_amnt_inv − 1, log-transformed as in
the paper to tame its skew: y = log(1 + max(ROI, −0.99)). The floor keeps the 35 loans that repaid
nothing finite (their y is log 0.01 ≈ −4.6, still the worst values).
"""

from __future__ import annotations

import csv
from typing import Literal

import numpy as np

from shared.datasets.paths import data_file
from shared.datasets.tables import RealTable

FILE = "lendingclub_2007_2011.csv"
FEATURES = ("funded_amnt_inv", "int_rate", "annual_inc")
KEPT_STATUSES = frozenset({"Fully Paid", "Charged Off"})
ROI_FLOOR = -0.99

# Public bounds fixed from LendingClub's published product terms of the period, not from the data:
# loans up to $35,000, rates 5.42%–24.59% (rounded out to 5%–25%), incomes clipped at $250,000.
PUBLIC_LOWER = [0.0, 0.05, 0.0]
PUBLIC_UPPER = [35_000.0, 0.25, 250_000.0]


IncomeOutliers = Literal["keep", "clip", "drop"]


def load_lendingclub(n: int | None = None, seed: int = 0, *, income_outliers: IncomeOutliers = "keep") -> RealTable:
    """The kept loans (optionally a seeded uniform subsample of size ``n``), incomes above the public bound
    kept, clipped to it or dropped (before subsampling)."""
    features, objective = [], []
    with data_file(FILE).open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["loan_status"] not in KEPT_STATUSES or not row["annual_inc"]:
                continue
            invested = float(row["funded_amnt_inv"])
            if invested <= 0:
                continue
            roi = float(row["total_pymnt_inv"]) / invested - 1.0
            features.append([invested, float(row["int_rate"]), float(row["annual_inc"])])
            objective.append(np.log1p(max(roi, ROI_FLOOR)))
    X, y = np.asarray(features), np.asarray(objective)
    income_bound = PUBLIC_UPPER[FEATURES.index("annual_inc")]
    if income_outliers == "clip":
        X[:, 2] = np.minimum(X[:, 2], income_bound)
    elif income_outliers == "drop":
        X, y = X[X[:, 2] <= income_bound], y[X[:, 2] <= income_bound]
    elif income_outliers != "keep":
        raise ValueError(f"income_outliers must be 'keep', 'clip' or 'drop', got {income_outliers!r}")
    if n is not None:
        if n > len(y):
            raise ValueError(f"asked for {n} loans but only {len(y)} are kept")
        keep = np.sort(np.random.default_rng(seed).choice(len(y), size=n, replace=False))
        X, y = X[keep], y[keep]
    return RealTable(
        name="lendingclub-roi",
        features=X,
        feature_names=FEATURES,
        objective=y,
        objective_name="log_roi",
        goal="maximize",
        public_lower=tuple(PUBLIC_LOWER),
        public_upper=tuple(PUBLIC_UPPER),
        description="LendingClub loans 2007-2011: find the loan with the highest log(1 + ROI)",
    )
