"""A python evaluator's failure, of any kind, never puts a raw value in the log or a response (on a query it is an
``unmeasurable`` answer, counted like any other), and targets that are not plain functions of the curator's own
modules are refused at registration.

The curator runs in its own process (``pobo-curator serve``), so its log file is exactly what an operator reads.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.curator_service.conftest import assert_error, dataset_spec, synthetic_table, table_csv, upload
from tests.hardening.conftest import process_client

TARGETS = "tests.hardening.evaluator_targets"
X, Y = synthetic_table(8)


def assert_no_raw_value(text: str) -> None:
    """No cell of the table, as a python evaluator sees it (``repr`` of the float) or as the CSV spells it."""
    cells = np.concatenate([X.ravel(), Y])
    leaked = [v for v in [repr(float(c)) for c in cells] + [f"{c:.9f}" for c in cells] if v in text]
    assert not leaked, f"raw values reached the text: {leaked[:3]}"


@pytest.fixture
def admin(curator_process):
    with process_client(curator_process, curator_process.admin_token) as client:
        yield client


@pytest.fixture
def new_log(curator_process):
    """The server's log written since the test began."""
    start = curator_process.log_path.stat().st_size
    return lambda: curator_process.log_path.read_bytes()[start:].decode(errors="replace")


def python_dataset(admin, function: str) -> dict:
    name = f"{function}-{len(admin.get('/v1/datasets').json())}"
    spec = dataset_spec(name=name, evaluator={"kind": "python", "target": f"{TARGETS}:{function}"})
    response = upload(admin, table_csv(X, Y), spec)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize(("function", "kind"), [("exit_with_row", "SystemExit"), ("fail_with_row", "RuntimeError")])
def test_an_evaluator_failure_on_a_query_is_an_unmeasurable_answer_counted_and_the_log_names_only_its_type(
        curator_process, admin, new_log, function, kind):
    """A refusal, uncharged, would tell a modeler on which rows the curator's code fails (a fact about their data)
    for free: the query is answered ``unmeasurable`` and counts against the key like any answer."""
    dataset = python_dataset(admin, function)
    rel = curator_process.create_release(dataset["id"], "gaussian", 1.0, 1e-5)
    key = curator_process.issue_key([rel.id], max_queries=10)
    with process_client(curator_process, key.token) as modeler:
        session = modeler.post(f"/v1/releases/{rel.id}/sessions").json()
        response = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, 1]})
        assert response.status_code == 200, response.text
        assert [(r["index"], r["status"], r["value"]) for r in response.json()["results"]] == [
            (0, "unmeasurable", None), (1, "unmeasurable", None)]
        assert modeler.get(f"/v1/sessions/{session['id']}").json()["used"] == 2  # counted like any answer
        listed = modeler.get(f"/v1/sessions/{session['id']}/queries").json()["queries"]
        assert [q["status"] for q in listed] == ["unmeasurable", "unmeasurable"]
    assert_no_raw_value(response.text)
    log = new_log()
    assert_no_raw_value(log)
    assert kind in log  # the type, and only that
    assert admin.get("/health").status_code == 200  # the server lives on


def test_rows_an_evaluator_fails_on_are_unmeasurable_and_count_against_the_key_like_the_others(
        curator_process, admin):
    dataset = python_dataset(admin, "fail_on_large_a")
    rel = curator_process.create_release(dataset["id"], "gaussian", 1.0, 1e-5)
    key = curator_process.issue_key([rel.id], max_queries=len(X))
    with process_client(curator_process, key.token) as modeler:
        session = modeler.post(f"/v1/releases/{rel.id}/sessions").json()
        response = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": list(range(len(X)))})
        assert response.status_code == 200, response.text
        statuses = {r["status"] for r in response.json()["results"]}
        assert statuses == {"done", "unmeasurable"}  # the table has rows of both kinds
        assert all((r["value"] is None) == (r["status"] == "unmeasurable") for r in response.json()["results"])
        assert modeler.get(f"/v1/sessions/{session['id']}").json()["used"] == len(X)
        assert_error(modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]}), 409,
                     "query_budget_exhausted")  # unmeasurable answers used the budget up like the others


def test_an_evaluator_exit_during_a_release_with_private_measurements_is_a_json_error(admin, new_log):
    dataset = python_dataset(admin, "exit_with_row")
    response = admin.post(f"/v1/datasets/{dataset['id']}/releases",
                          json={"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5,
                                "measurements": {"clip": [-2, 2], "share": 0.5}})
    assert_error(response, 500, "internal_error", "evaluator", "SystemExit")
    assert_no_raw_value(response.text + new_log())
    assert admin.get("/v1/ledger", params={"dataset_id": dataset["id"]}).json() == []


@pytest.mark.parametrize("target", [
    "builtins:print", "builtins:eval", "os:system", "sys:exit", "subprocess:run", "os.path:join",
    "json:dumps", f"{TARGETS}:leak", f"{TARGETS}:RowHolder",
])
def test_targets_that_are_not_plain_functions_of_the_curators_own_modules_are_refused(admin, target):
    before = admin.get("/v1/datasets").json()
    spec = dataset_spec(name=f"refused {target}", evaluator={"kind": "python", "target": target})
    assert_error(upload(admin, table_csv(X, Y), spec), 422, "validation_error", repr(target))
    assert admin.get("/v1/datasets").json() == before


def test_a_plain_function_of_the_curators_own_module_is_accepted(admin):
    assert python_dataset(admin, "fail_with_row")["evaluator_kind"] == "python"
