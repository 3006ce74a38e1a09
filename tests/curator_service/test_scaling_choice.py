"""The public scaling is the curator's explicit choice, and every release says what one neighbouring step hides."""

from __future__ import annotations

import json
import math

import pytest

from tests.curator_service.conftest import (
    assert_error,
    dataset_spec,
    flat,
    register,
    release,
    synthetic_table,
    table_csv,
)

LOWER, UPPER = [0.0, 10.0, -5.0], [1.0, 30.0, 5.0]


def _spec_without_scaling(**changes):
    spec = dataset_spec(**changes)
    del spec["scaling"]
    return spec


@pytest.mark.parametrize("scaling", [None, {}, {"lower": LOWER, "upper": UPPER}])
def test_registration_without_an_explicit_scaling_is_refused(client, scaling):
    spec = _spec_without_scaling()
    if scaling is not None:
        spec["scaling"] = scaling
    X, y = synthetic_table(10)
    response = client.post("/v1/datasets", files={"file": ("d.csv", table_csv(X, y), "text/csv")},
                           data={"spec": json.dumps(spec)})
    assert_error(response, 422, "validation_error", "'scaling' is required", '"diameter": 1', '"identity"')
    path_body = {**spec, "path": "/nonexistent.csv"}
    assert_error(client.post("/v1/datasets", json=path_body), 422, "validation_error", "'scaling' is required")
    assert client.get("/v1/datasets").json() == []


def test_a_diameter_sets_the_width_so_one_step_is_a_whole_record(client):
    dataset = register(client, scaling={"kind": "bounds", "lower": LOWER, "upper": UPPER, "diameter": 1})
    step = dataset["neighbouring_step"]
    assert step["whole_record"] is True and step["clipped"] is True and step["box_diameter"] == pytest.approx(1.0)
    spans = [u - lo for lo, u in zip(LOWER, UPPER)]
    assert [f["raw_extent"] for f in step["features"]] == pytest.approx([s * math.sqrt(3) for s in spans])
    assert [f["public_range"] for f in step["features"]] == pytest.approx(spans)
    assert all(f["covers_range"] for f in step["features"])
    rel = release(client, dataset["id"])
    assert rel["warnings"] == [] and rel["neighbouring_step"] == step
    bad = {"kind": "bounds", "lower": LOWER, "upper": UPPER, "diameter": 1, "width": 1}
    assert_error(client.post("/v1/datasets", files={"file": ("d.csv", "a,b,c,y\n1,2,3,4\n", "text/csv")},
                             data={"spec": json.dumps(dataset_spec(name="both", scaling=bad))}),
                 422, "validation_error", "'width' or a 'diameter'")


@pytest.mark.parametrize(
    ("scaling", "extents", "covers"),
    [
        ({"kind": "identity"}, [1.0, 1.0, 1.0], None),
        ({"kind": "affine", "offset": [0, 0, 0], "scale": [2.0, 5.0, 0.5]}, [2.0, 5.0, 0.5], None),
        ({"kind": "bounds", "lower": LOWER, "upper": UPPER, "width": 2.0}, [0.5, 10.0, 5.0], False),
        ({"kind": "bounds", "lower": LOWER, "upper": UPPER}, [1.0, 20.0, 10.0], True),  # width 1: diameter √3
    ],
)
def test_a_release_on_less_than_a_whole_record_warns_and_shows_the_step(client, scaling, extents, covers):
    dataset = register(client, scaling=scaling)
    rel = release(client, dataset["id"])
    step = rel["neighbouring_step"]
    assert step["whole_record"] is False and step["scaling_kind"] == scaling["kind"]
    assert step["clipped"] is (scaling["kind"] == "bounds")
    assert [f["raw_extent"] for f in step["features"]] == pytest.approx(extents)
    assert {f["covers_range"] for f in step["features"]} == {covers}
    assert rel["certified"] is True and len(rel["warnings"]) == 1
    assert "hides less than a whole record" in rel["warnings"][0] and "NOT a whole record" in rel["warnings"][0]
    assert client.get(f"/v1/releases/{rel['id']}").json()["warnings"] == rel["warnings"]


def test_po_gp_ucb_shows_no_neighbouring_step(client):
    dataset = register(client, scaling={"kind": "identity"})
    rel = release(client, dataset["id"], mechanism="po-gp-ucb")
    assert rel["neighbouring_step"] is None and len(rel["warnings"]) == 1  # only "not differentially private"


def test_the_cli_asks_for_a_scaling_and_offers_a_record_diameter(curator_cli):
    common = ["dataset", "add", str(curator_cli.csv), "--features", "a,b,c", "--evaluator", "column:y",
              "--epsilon", "1"]
    refused = curator_cli(*common, "--name", "none", exit_code=2)
    assert "--lower/--upper" in refused and "--identity" in refused
    added = flat(curator_cli(*common, "--name", "box", "--lower", "0,0,0", "--upper", "1,2,4"))
    assert "one neighbouring step is a whole record" in added
    assert "c: any change within its public range (width 4) is hidden" in added
    assert "NOT a whole record" in flat(curator_cli(*common, "--name", "raw", "--identity"))
