import csv

import numpy as np
import pytest

from shared.api.scaling import apply_scaling, unit_diameter_bounds
from shared.datasets.lendingclub import ROI_FLOOR, load_lendingclub
from shared.datasets.sg_property import load_sg_property


def test_lendingclub_keeps_finished_policy_loans(shared_data_file):
    path = shared_data_file("lendingclub_2007_2011.csv")
    rows = list(csv.DictReader(path.open()))
    expected = [
        r for r in rows
        if r["loan_status"] in {"Fully Paid", "Charged Off"} and r["annual_inc"] and float(r["funded_amnt_inv"]) > 0
    ]
    table = load_lendingclub()
    assert table.n == len(expected) == 39_657
    first = expected[0]
    roi = float(first["total_pymnt_inv"]) / float(first["funded_amnt_inv"]) - 1
    assert table.objective[0] == np.log1p(roi)
    assert table.objective.min() == np.log1p(ROI_FLOOR)
    assert np.isfinite(table.objective).all()


def test_lendingclub_subsample_is_seeded(shared_data_file):
    shared_data_file("lendingclub_2007_2011.csv")
    a, b = load_lendingclub(n=36_000, seed=3), load_lendingclub(n=36_000, seed=3)
    assert a.n == 36_000
    np.testing.assert_array_equal(a.features, b.features)


def test_lendingclub_income_outliers(shared_data_file):
    shared_data_file("lendingclub_2007_2011.csv")
    kept = load_lendingclub()
    above = kept.features[:, 2] > 250_000
    assert above.sum() == 301 and kept.features[:, 2].max() == 6_000_000
    clipped = load_lendingclub(income_outliers="clip")
    assert clipped.features[:, 2].max() == 250_000
    np.testing.assert_array_equal(clipped.features[~above], kept.features[~above])
    dropped = load_lendingclub(n=36_000, income_outliers="drop")
    assert dropped.n == 36_000 and dropped.features[:, 2].max() <= 250_000
    with pytest.raises(ValueError, match="income_outliers"):
        load_lendingclub(income_outliers="winsorise")


def test_property_table_and_public_scaling_diameter(shared_data_file):
    shared_data_file("sg_ura_condo_projects.csv")
    table = load_sg_property()
    assert table.n == 1_490 and table.goal == "minimize"
    scaling = unit_diameter_bounds(table.public_lower, table.public_upper)
    scaled = apply_scaling(table.features, scaling)
    # Every scaled record lies in a box of diameter 1: replacing a whole record is a neighbouring change.
    span = np.asarray(scaling.upper) - np.asarray(scaling.lower)
    assert np.allclose(np.linalg.norm(span / span * scaling.width), 1.0)
    assert scaled.min() >= 0 and scaled.max() <= scaling.width + 1e-12


def test_write_csv_round_trips(tmp_path, shared_data_file):
    shared_data_file("sg_ura_condo_projects.csv")
    table = load_sg_property()
    rows = list(csv.reader(table.write_csv(tmp_path / "p.csv").open()))
    assert rows[0] == ["lat", "long", "log_price_per_sqm"]
    assert len(rows) == table.n + 1
    assert float(rows[1][2]) == table.objective[0]
