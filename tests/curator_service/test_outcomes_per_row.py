"""Outcomes a caller sees never depend on one row: a table with one bad cell registers (or is refused naming the
line) by its spec alone, and no job's success differs from the same table with that cell fixed; the column check
answers alike for a missing column and one a job may not read, at any budget; every refusal a caller meets is in
the audit log. Both databases."""

from __future__ import annotations

import time

import numpy as np

from tests.curator_service.conftest import assert_error, bearer, dataset_spec, modeler_key, release, upload

N = 40
LABEL_SPEC = {"feature_columns": ["a", "b", "c"], "evaluator": {"kind": "column", "column": "y"},
              "label_columns": ["label"]}


def table(bad_cell: bool) -> str:
    """Features a, b, c, the measured y, 0/1 labels and an extra column ``z``; with ``bad_cell``, z's data row 7
    (line 8) holds text instead of a number. Everything else is the same in both tables."""
    rng = np.random.default_rng(3)
    X = np.round(rng.uniform(0.1, 0.9, size=(N, 3)), 6)
    y, label, z = X.sum(axis=1), (X[:, 0] > 0.5).astype(int), np.round(rng.uniform(0, 5, size=N), 6)
    lines = ["a,b,c,y,label,z"]
    for i in range(N):
        cell = "n/a" if bad_cell and i == 6 else f"{z[i]:.6f}"
        lines.append(f"{X[i, 0]:.6f},{X[i, 1]:.6f},{X[i, 2]:.6f},{y[i]:.6f},{label[i]},{cell}")
    return "\n".join(lines) + "\n"


JOBS = [
    ("dp-mean", {"column": "z", "lower": 0, "upper": 5, "epsilon": 0.2}),
    ("dp-mean", {"column": "y", "lower": 0, "upper": 3, "epsilon": 0.2}),
    ("dp-mean", {"column": "label", "lower": 0, "upper": 1, "epsilon": 0.2}),
    ("dp-bo", {"label_column": "z", "log10_lambda": [-2, 0], "iterations": 1, "epsilon": 0.2, "delta": 1e-6}),
    ("dp-bo", {"label_column": "label", "log10_lambda": [-2, 0], "iterations": 1, "epsilon": 0.2, "delta": 1e-6}),
]


def outcome(client, dataset_id: int, kind: str, params: dict) -> tuple:
    """What a job's submitter sees: the submission's status (and sentence), then how the job ended."""
    response = client.post("/v1/jobs", json={"kind": kind, "dataset_id": dataset_id, "params": params})
    if response.is_error:
        return response.status_code, response.json()["detail"]
    job = response.json()
    while job["status"] in ("queued", "running"):
        time.sleep(0.05)
        job = client.get(f"/v1/jobs/{job['id']}").json()
    return response.status_code, job["status"], job["certified"], job["message"]


def test_a_declared_numeric_column_with_one_bad_cell_is_refused_at_registration_naming_the_line(make_client,
                                                                                             database_url):
    client = make_client(database_url=database_url)
    spec = dataset_spec(name="declared", **LABEL_SPEC, numeric_columns=["z"])
    response = upload(client, table(bad_cell=True), spec)
    assert_error(response, 422, "validation_error", "column 'z'", "data row 7", "line 8", "finite number")
    assert "n/a" not in response.text
    assert upload(client, table(bad_cell=False), spec).status_code == 201


def test_a_label_column_must_hold_0_or_1(make_client, database_url):
    client = make_client(database_url=database_url)
    csv = table(bad_cell=False).splitlines()
    cells = csv[3].split(",")
    cells[4] = "2"
    csv[3] = ",".join(cells)
    response = upload(client, "\n".join(csv) + "\n", dataset_spec(name="labels", **LABEL_SPEC))
    assert_error(response, 422, "validation_error", "column 'label'", "data row 3", "line 4", "0 or 1")


def test_no_jobs_success_differs_between_a_table_and_the_same_table_with_one_bad_cell(make_client, database_url):
    """``z`` is not declared: both tables register, and every job, on z or on the declared columns, ends alike."""
    client = make_client(database_url=database_url)
    ids = [upload(client, table(bad_cell=bad), dataset_spec(name=f"table-{bad}", **LABEL_SPEC)).json()["id"]
           for bad in (False, True)]
    for kind, params in JOBS:
        fixed, broken = (outcome(client, dataset_id, kind, params) for dataset_id in ids)
        assert fixed == broken, (kind, params, fixed, broken)
        if params.get("column", params.get("label_column")) == "z":  # never read, whatever its cells hold
            assert fixed[0] == 422 and "is not a numeric column of the dataset" in fixed[1], fixed
        else:
            assert fixed[1:3] == ("succeeded", True), fixed
    fixed, broken = ([(e["kind"], e["epsilon"], e["delta"]) for e in client.get(
        "/v1/ledger", params={"dataset_id": dataset_id}).json()] for dataset_id in ids)
    assert fixed == broken and len(fixed) == 3  # the three jobs that ran are charged alike; refusals nothing


def test_the_column_check_answers_alike_for_a_missing_column_and_one_no_job_may_read_at_any_budget(
        make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = upload(client, table(bad_cell=True), dataset_spec(name="t", **LABEL_SPEC, budget={
        "epsilon": 0.5, "delta": 1e-3})).json()
    rel = release(client, dataset["id"], epsilon=0.1, delta=1e-6, dim=2)
    key = modeler_key(client, [rel["id"]], jobs=["dp-mean"])
    modeler = bearer(key["token"])

    def answer(column: str, epsilon: float) -> tuple[int, str]:
        response = client.post("/v1/jobs", headers=modeler, json={
            "kind": "dp-mean", "dataset_id": dataset["id"],
            "params": {"column": column, "lower": 0, "upper": 1, "epsilon": epsilon}})
        return response.status_code, response.json()["detail"].replace(repr(column), "<column>")

    for epsilon in (0.05, 5.0):  # within the budget, then beyond it
        missing, text_column = answer("no-such-column", epsilon), answer("z", epsilon)
        assert missing == text_column, (epsilon, missing, text_column)
        assert missing[0] == (422 if epsilon < 0.4 else 409), missing
    assert answer("y", 5.0)[0] == 409  # a column it may read: the same 409 beyond the budget


def test_every_refusal_a_caller_meets_is_in_the_audit_log(make_client, database_url):
    client = make_client(database_url=database_url, mode="production")
    dataset = upload(client, table(bad_cell=False), dataset_spec(name="t", **LABEL_SPEC)).json()
    rel = release(client, dataset["id"], epsilon=0.1, delta=1e-6, dim=2)
    key = modeler_key(client, [rel["id"]], max_queries=1, jobs=["dp-mean"])
    modeler = bearer(key["token"])
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=modeler).json()
    mean = {"column": "y", "lower": 0, "upper": 3, "epsilon": 0.1}
    refusals = [
        (client.post("/v1/jobs", headers=modeler, json={"kind": "dp-mean", "dataset_id": dataset["id"],
                                                          "params": {**mean, "seed": 1}}), "refused.seed_refused"),
        (client.post("/v1/jobs", headers=modeler, json={"kind": "dpareto", "dataset_id": dataset["id"],
                                                          "params": {"label_column": "label"}}), "refused.forbidden"),
        (client.post("/v1/jobs", headers=modeler, json={"kind": "dp-mean", "dataset_id": dataset["id"],
                                                          "params": {**mean, "epsilon": 100}}),
         "refused.budget_exceeded"),
        (client.post(f"/v1/sessions/{session['id']}/queries", headers=modeler, json={"indices": [0, 1]}),
         "refused.query_budget_exhausted"),
        (client.post(f"/v1/sessions/{session['id']}/queries", headers=modeler, json={"indices": [N]}),
         "refused.validation_error"),
        (client.get("/v1/releases/999", headers=modeler), "refused.not_found"),
        (client.post(f"/v1/datasets/{dataset['id']}/releases", json={"mechanism": "gaussian", "epsilon": 0.1,
                                                                     "delta": 1e-6, "seed": 3}),
         "refused.seed_refused"),
        (client.get("/v1/keys", headers=modeler), "auth.denied"),
        (client.get("/v1/keys", headers=bearer("nobody")), "auth.failed"),
    ]
    events = client.get("/v1/audit").json()
    refused = [e for e in events if e["action"].startswith(("refused.", "auth."))]
    assert [e["action"] for e in refused] == [action for _, action in refusals], refused
    for (response, _), event in zip(refusals, refused, strict=True):
        assert 400 <= response.status_code < 500, response.text
        assert event["target"] == f"{response.request.method} {response.request.url.path}"
    assert {e["actor"] for e in refused[:6]} == {f"key:{key['id']}:modeler"}
    assert refused[6]["actor"] == "admin" and refused[-1]["actor"] == "anonymous"
