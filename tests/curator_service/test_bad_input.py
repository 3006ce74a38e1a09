"""docs/design.md §8: every bad input gets a 4xx with a code and a sentence naming what to fix, and stores nothing."""

from __future__ import annotations

import json

import pytest

from tests.curator_service.conftest import (
    assert_error,
    bearer,
    dataset_spec,
    register,
    synthetic_table,
    table_csv,
    upload,
)

X, Y = synthetic_table(5)
GOOD_CSV = table_csv(X, Y)


def _replace_cell(csv: str, line: int, column: int, value: str) -> str:
    lines = csv.splitlines()
    cells = lines[line].split(",")
    cells[column] = value
    lines[line] = ",".join(cells)
    return "\n".join(lines) + "\n"


BAD_DATASETS = [
    ("unknown feature column", GOOD_CSV, dataset_spec(feature_columns=["a", "zz"]), 422, ["'zz'", "not in the CSV"]),
    ("unknown evaluator column", GOOD_CSV, dataset_spec(evaluator={"kind": "column", "column": "nope"}), 422,
     ["'nope'", "evaluator column"]),
    ("non-numeric feature", _replace_cell(GOOD_CSV, 3, 1, "abc"), dataset_spec(), 422,
     ["column 'b'", "data row 3", "finite number"]),
    ("missing value", _replace_cell(GOOD_CSV, 2, 0, ""), dataset_spec(), 422, ["column 'a'", "data row 2", "empty"]),
    ("missing measurement", _replace_cell(GOOD_CSV, 4, 3, "nan"), dataset_spec(), 422, ["column 'y'", "data row 4"]),
    ("n < 2", "a,b,c,y\n0.1,0.2,0.3,1\n", dataset_spec(), 422, ["n >= 2"]),
    ("duplicate header", GOOD_CSV.replace("a,b,c,y", "a,b,a,y", 1), dataset_spec(), 422, ["'a'", "twice"]),
    ("duplicate feature", GOOD_CSV, dataset_spec(feature_columns=["a", "a"]), 422, ["'a'", "twice"]),
    ("measurement as feature", GOOD_CSV, dataset_spec(feature_columns=["a", "y"]), 422, ["'y'", "feature"]),
    ("ragged line", GOOD_CSV + "0.1,0.2\n", dataset_spec(), 422, ["line 7", "fields"]),
    ("empty file", "", dataset_spec(), 422, ["empty"]),
    ("epsilon <= 0", GOOD_CSV, dataset_spec(budget={"epsilon": 0, "delta": 1e-5}), 422, ["spec.budget.epsilon"]),
    ("delta >= 1", GOOD_CSV, dataset_spec(budget={"epsilon": 1, "delta": 1.0}), 422, ["spec.budget.delta"]),
    ("scaling length", GOOD_CSV, dataset_spec(scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1]}), 422,
     ["scaling.lower", "3 feature columns"]),
    ("unknown spec field", GOOD_CSV, {**dataset_spec(), "colour": "red"}, 422, ["spec.colour", "not a known field"]),
    ("python target not importable", GOOD_CSV, dataset_spec(evaluator={"kind": "python", "target": "no_such_mod:f"}),
     422, ["no_such_mod", "cannot be imported"]),
]


@pytest.mark.parametrize(("csv", "spec", "status", "words"), [case[1:] for case in BAD_DATASETS],
                         ids=[case[0] for case in BAD_DATASETS])
def test_bad_dataset_is_refused_and_nothing_is_stored(client, csv, spec, status, words):
    response = upload(client, csv, spec)
    assert_error(response, status, "validation_error", *words)
    assert "0.1" not in response.json()["detail"]  # never echoes a cell
    assert client.get("/v1/datasets").json() == []
    assert [e for e in client.get("/v1/audit").json() if e["action"] == "dataset.create"] == []


def test_spec_that_is_not_json_names_the_part(client):
    response = client.post("/v1/datasets", files={"file": ("d.csv", GOOD_CSV)}, data={"spec": "{not json"})
    assert_error(response, 422, "validation_error", "JSON")


def test_missing_file_part_is_named(client):
    response = client.post("/v1/datasets", data={"spec": json.dumps(dataset_spec())},
                           files={"other": ("x", b"")})
    assert_error(response, 422, "validation_error", "'file'")


def test_server_path_that_does_not_exist(make_client, tmp_path):
    client = make_client(import_root=tmp_path)
    response = client.post("/v1/datasets", json={**dataset_spec(), "path": str(tmp_path / "missing.csv")})
    assert_error(response, 422, "validation_error", "missing.csv", "not a file")


def test_server_path_registration(make_client, tmp_path):
    client = make_client(import_root=tmp_path)  # registration by path reads only inside POBO_IMPORT_ROOT
    path = tmp_path / "table.csv"
    path.write_text(GOOD_CSV)
    response = client.post("/v1/datasets", json={**dataset_spec(), "path": str(path)})
    assert response.status_code == 201, response.text
    assert response.json()["n"] == 5 and response.json()["d"] == 3


def test_duplicate_dataset_name_is_a_conflict(client):
    register(client)
    response = upload(client, GOOD_CSV, dataset_spec())
    assert_error(response, 409, "conflict", "'synthetic'", "already exists")
    assert len(client.get("/v1/datasets").json()) == 1


def test_oversized_upload_is_413(make_client):
    small = make_client(max_upload_bytes=2000)
    X, y = synthetic_table(200)
    response = upload(small, table_csv(X, y), dataset_spec())
    assert_error(response, 413, "payload_too_large", "2000 bytes")
    assert small.get("/v1/datasets").json() == []


def test_oversized_chunked_upload_is_413(make_client):
    small = make_client(max_upload_bytes=2000)

    def chunks():
        for _ in range(50):
            yield b"x" * 100

    response = small.post("/v1/datasets", content=chunks(), headers={"content-type": "application/json"})
    assert_error(response, 413, "payload_too_large")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"epsilon": 0}, ["'epsilon'", "greater than 0"]),
        ({"epsilon": -1}, ["'epsilon'"]),
        ({"delta": 0}, ["'delta'"]),
        ({"delta": 1.5}, ["'delta'"]),
        ({"dim": 0}, ["'dim'", "at least 1"]),
        ({"dim": 5000}, ["'dim'", "at most"]),
        ({"mechanism": "laplace"}, ["'mechanism'"]),
        ({"epsilon": "lots"}, ["'epsilon'"]),
    ],
)
def test_bad_release_parameters(client, body, words):
    dataset = register(client)
    payload = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "dim": 2, **body}
    response = client.post(f"/v1/datasets/{dataset['id']}/releases", json=payload)
    assert_error(response, 422, "validation_error", *words)
    assert client.get("/v1/releases").json() == []
    assert client.get("/v1/ledger").json() == []


def test_query_index_out_of_range_names_the_valid_range(client, open_session):
    opened = open_session(client, n=40)
    key, session = opened.key, opened.session
    response = client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, 40]},
                           headers=bearer(key["token"]))
    assert_error(response, 422, "validation_error", "index 40", "0 to 39")
    response = client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, -1]},
                           headers=bearer(key["token"]))
    assert_error(response, 422, "validation_error", "'indices.1'", "greater than or equal to 0")  # the wire model
    queries = client.get(f"/v1/sessions/{session['id']}/queries", headers=bearer(key["token"])).json()
    assert queries == {"queries": []}
    assert client.get(f"/v1/sessions/{session['id']}", headers=bearer(key["token"])).json()["used"] == 0


def test_empty_indices_and_unknown_fields(client, open_session):
    opened = open_session(client)
    key, session = opened.key, opened.session
    url = f"/v1/sessions/{session['id']}/queries"
    assert_error(client.post(url, json={"indices": []}, headers=bearer(key["token"])), 422, "validation_error",
                 "'indices'")
    assert_error(client.post(url, json={"indices": [1], "rows": [[1]]}, headers=bearer(key["token"])), 422,
                 "validation_error", "'rows'", "not a known field")
    assert_error(client.post(url, content=b"{", headers={**bearer(key["token"]), "content-type": "application/json"}),
                 422, "validation_error", "JSON")


def test_unknown_ids_are_404_in_the_error_model(client):
    assert_error(client.get("/v1/datasets/99"), 404, "not_found", "dataset", "99")
    assert_error(client.get("/v1/releases/7"), 404, "not_found", "release", "7")
    assert_error(client.post("/v1/queries/5/answer", json={"value": 1.0}), 404, "not_found", "query")
    assert_error(client.get("/v1/nowhere"), 404, "not_found", "/docs")


def test_an_infinite_epsilon_is_a_validation_error_everywhere(client):
    """Python's JSON reader takes ``Infinity``; an infinite ε must be refused as bad input, never charged."""
    dataset = register(client)
    headers = {"content-type": "application/json"}
    spec = json.dumps({**dataset_spec(name="unbounded"), "budget": {"epsilon": 1.0, "delta": 1e-3}})
    body = spec.replace('"epsilon": 1.0', '"epsilon": Infinity')
    registration = client.post("/v1/datasets", files={"file": ("data.csv", GOOD_CSV, "text/csv")}, data={"spec": body})
    assert_error(registration, 422, "validation_error", "'spec.budget.epsilon'")
    release_body = '{"mechanism": "gaussian", "epsilon": Infinity, "delta": 1e-5, "dim": 2}'
    assert_error(client.post(f"/v1/datasets/{dataset['id']}/releases", content=release_body, headers=headers),
                 422, "validation_error", "'epsilon'")
    job_body = (f'{{"kind": "dp-mean", "dataset_id": {dataset["id"]}, "params": {{"column": "y", "lower": 0, '
                '"upper": 1, "epsilon": Infinity}}')
    assert_error(client.post("/v1/jobs", content=job_body, headers=headers), 422, "validation_error", "epsilon")
    assert [d["name"] for d in client.get("/v1/datasets").json()] == ["synthetic"]
    assert client.get("/v1/ledger").json() == [] and client.get("/v1/jobs").json() == []
