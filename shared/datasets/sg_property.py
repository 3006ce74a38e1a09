"""Singapore private condominium projects: the PO-GP-UCB paper's property-price experiment (Fig. 2c).

The paper used 2,004 individual properties; this file aggregates URA transactions to 1,490
condominium projects (one row per project, its average price per m²), so n = 1,490 here.

Inputs: latitude and longitude. Objective: price per m² (SGD), minimised, log-transformed as in the
paper (y = log price).
"""

from __future__ import annotations

import csv

import numpy as np

from shared.datasets.paths import data_file
from shared.datasets.tables import RealTable

FILE = "sg_ura_condo_projects.csv"
FEATURES = ("lat", "long")

# Singapore's public bounding box (main island and the southern islands), fixed without the data.
PUBLIC_LOWER = [1.15, 103.60]
PUBLIC_UPPER = [1.48, 104.10]


def load_sg_property() -> RealTable:
    """All 1,490 projects with their coordinates and log price per m²."""
    features, objective = [], []
    with data_file(FILE).open(newline="") as handle:
        for row in csv.DictReader(handle):
            features.append([float(row["lat"]), float(row["long"])])
            objective.append(np.log(float(row["avg_price_per_sqm"])))
    return RealTable(
        name="sg-property-price",
        features=np.asarray(features),
        feature_names=FEATURES,
        objective=np.asarray(objective),
        objective_name="log_price_per_sqm",
        goal="minimize",
        public_lower=tuple(PUBLIC_LOWER),
        public_upper=tuple(PUBLIC_UPPER),
        description="Singapore condominium projects: find the cheapest price per m² (log)",
    )
