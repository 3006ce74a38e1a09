"""The RAND Health Insurance Experiment subset shipped with statsmodels (``../shared/data/randhie.csv``, public
domain): 20,190 person-years, the outpatient visits ``mdvis`` and nine plan and health covariates (log coinsurance,
individual deductible, log participation incentive, log maximum expenditure, physical limitation, chronic disease
count, self-rated health good / fair / poor).

As an optimisation problem: each row is one insurance-and-health profile (the nine covariates) held by at least
:data:`MIN_PEOPLE` people; the objective is their mean log(1 + visits), maximised (the profile whose members use
outpatient care most). Averaging over people makes the value a property of the profile rather than one person's
year."""

from __future__ import annotations

import numpy as np

from shared.datasets.paths import data_file
from shared.datasets.tables import RealTable

FEATURES = ("lncoins", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp")
MIN_PEOPLE = 3
# Public bounds from the experiment's design (coinsurance 0–100 %, incentive up to $1,000, maximum expenditure up to
# $1,000 on a log scale, disease counts up to 60, indicators 0/1), not from this table.
PUBLIC_LOWER = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
PUBLIC_UPPER = (float(np.log(101.0)), 1.0, 7.5, 9.0, 1.0, 60.0, 1.0, 1.0, 1.0)


def load_randhie() -> RealTable:
    """One row per covariate profile held by ≥ :data:`MIN_PEOPLE` people; raises
    :class:`shared.datasets.paths.DatasetUnavailable` when the file is absent."""
    raw = np.genfromtxt(data_file("randhie.csv"), delimiter=",", names=True)
    X = np.column_stack([raw[name] for name in FEATURES])
    outcome = np.log1p(raw["mdvis"])
    profiles, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    means = np.bincount(inverse.ravel(), weights=outcome) / counts
    keep = counts >= MIN_PEOPLE
    return RealTable(
        name="randhie",
        features=profiles[keep],
        feature_names=FEATURES,
        objective=means[keep],
        objective_name="mean_log_visits",
        goal="maximize",
        public_lower=PUBLIC_LOWER,
        public_upper=PUBLIC_UPPER,
        description=f"RAND HIE: mean log(1 + outpatient visits) of each covariate profile held by ≥ {MIN_PEOPLE} "
                    "people",
    )
