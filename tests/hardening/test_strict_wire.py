"""No loose parsing. JSON booleans and strings are not numbers on the wire, and a CSV cell is a number
only in the plain ASCII grammar (no ``1_000``, no Arabic-Indic or full-width digits)."""

from __future__ import annotations

import pytest

from tests.curator_service.conftest import assert_error, dataset_spec, synthetic_table, table_csv, upload

RELEASE = {"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-5}


def with_cell(cell: str) -> str:
    """A 5-row table whose first feature in data row 2 is ``cell``."""
    X, y = synthetic_table(5)
    lines = table_csv(X, y).splitlines()
    lines[2] = ",".join([cell, *lines[2].split(",")[1:]])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("indices", [[True], ["3"], [3.0], [1, False]])
def test_query_indices_must_be_json_integers(world, indices):
    modeler, session = world.modeler, world.session
    response = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": indices})
    assert_error(response, 422, "validation_error", "'indices")
    assert modeler.get(f"/v1/sessions/{session['id']}").json()["used"] == 0


@pytest.mark.parametrize("change", [
    {"seed": True}, {"seed": "7"}, {"seed": 7.0}, {"epsilon": "0.01"}, {"delta": "1e-5"}, {"epsilon": True},
    {"dim": True}, {"dim": "2"}, {"dim": 2.0},
])
def test_release_numbers_must_be_json_numbers(world, change):
    admin, dataset = world.admin, world.dataset
    before = admin.get("/v1/ledger").json()
    response = admin.post(f"/v1/datasets/{dataset['id']}/releases", json={**RELEASE, **change})
    assert_error(response, 422, "validation_error", f"'{next(iter(change))}'")
    assert admin.get("/v1/ledger").json() == before


@pytest.mark.parametrize("change", [{"max_queries": "5"}, {"max_queries": True}, {"release_ids": ["1"]},
                                    {"release_ids": [True]}])
def test_key_numbers_must_be_json_integers(world, change):
    admin = world.admin
    body = {"name": "strict", "release_ids": [1], "max_queries": 5, **change}
    assert_error(admin.post("/v1/keys", json=body), 422, "validation_error", f"'{next(iter(change))}")


@pytest.mark.parametrize("budget", [{"epsilon": "1", "delta": 1e-5}, {"epsilon": 1, "delta": "0.001"},
                                    {"epsilon": True, "delta": 1e-5}])
def test_budget_numbers_must_be_json_numbers(world, budget):
    admin = world.admin
    X, y = synthetic_table(5)
    response = upload(admin, table_csv(X, y), dataset_spec(name="strict-budget", budget=budget))
    assert_error(response, 422, "validation_error", "spec.budget.")


def test_answers_and_job_ids_must_be_json_numbers(world):
    admin, dataset = world.admin, world.dataset
    assert_error(admin.post("/v1/queries/1/answer", json={"value": "1.5"}), 422, "validation_error", "'value'")
    job = {"kind": "dp-mean", "dataset_id": str(dataset["id"]),
           "params": {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1}}
    assert_error(admin.post("/v1/jobs", json=job), 422, "validation_error", "'dataset_id'")


@pytest.mark.parametrize("cell", ["1_000", "١٢", "１２", "٣.٥", "1e1_0", "0x10"])
def test_csv_cells_are_numbers_only_in_the_ascii_grammar(world, cell):
    admin = world.admin
    response = upload(admin, with_cell(cell), dataset_spec(name="strict-cells"))
    assert_error(response, 422, "validation_error", "column 'a'", "data row 2")
    assert cell not in response.text


@pytest.mark.parametrize("cell", ["12", "-3.5", "+.5", "1e-3", "2.E+4", " 7 "])
def test_plain_numbers_still_parse(world, cell):
    admin = world.admin
    response = upload(admin, with_cell(cell), dataset_spec(name=f"plain {cell}"))
    assert response.status_code == 201, response.text
