"""A modeler cannot tell an object that exists but is not its own from one that does not exist (both
are 404 with the same sentence), and a job's unknown-column error names only columns the caller may see."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.curator_service.conftest import assert_error, dataset_spec, release, upload

MISSING = 999_999


def same_sentence(a: str, b: str) -> bool:
    """Equal once the ids are taken out (each sentence names the id it was asked about)."""
    return re.sub(r"\d+", "N", a) == re.sub(r"\d+", "N", b)


@pytest.fixture
def world(connect):
    """Two releases, two modeler keys: ``mine`` is scoped to release A and has a session and a job; ``theirs``
    is scoped to release B and has its own session and job."""
    admin = connect()
    rng = np.random.default_rng(1)
    rows = "\n".join(f"{a:.6f},{b:.6f},{int(c)},{int(s)}" for a, b, c, s in
                     zip(rng.random(30), rng.random(30), rng.random(30) < 0.5, rng.random(30) < 0.5))
    csv = "a,b,outcome_y,secret_diagnosis\n" + rows + "\n"
    ids = {}
    for name in ("A", "B"):
        spec = dataset_spec(name=name, feature_columns=["a", "b"], evaluator={"kind": "column", "column": "outcome_y"},
                            scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1], "diameter": 1})
        dataset = upload(admin, csv, spec).json()
        ids[name] = (dataset["id"], release(admin, dataset["id"], dim=2)["id"])
    clients = {}
    for who, name in (("mine", "A"), ("theirs", "B")):
        key = admin.post("/v1/keys", json={"name": who, "release_ids": [ids[name][1]], "max_queries": 10,
                                           "jobs": ["dp-mean", "dp-bo"]})
        assert key.status_code == 201, key.text
        client = connect(key.json()["token"], url=str(admin.base_url))
        session = client.post(f"/v1/releases/{ids[name][1]}/sessions").json()
        job = client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": ids[name][0],
                                             "params": {"column": "a", "lower": 0, "upper": 1, "epsilon": 0.1}})
        assert job.status_code == 202, job.text
        clients[who] = (client, {"dataset": ids[name][0], "release": ids[name][1], "session": session["id"],
                                 "job": job.json()["id"]})
    return admin, clients


PER_OBJECT = [
    ("GET", "/v1/releases/{release}", None), ("GET", "/v1/releases/{release}/inputs", None),
    ("POST", "/v1/releases/{release}/sessions", None), ("GET", "/v1/sessions/{session}", None),
    ("GET", "/v1/sessions/{session}/queries", None), ("POST", "/v1/sessions/{session}/queries", {"indices": [0]}),
    ("POST", "/v1/sessions/{session}/close", None), ("GET", "/v1/jobs/{job}", None),
    ("POST", "/v1/jobs/{job}/cancel", None),
    ("POST", "/v1/jobs", {"kind": "dp-mean", "dataset_id": "{dataset}",
                          "params": {"column": "a", "lower": 0, "upper": 1, "epsilon": 0.1}}),
]


def fill(template, ids):
    if isinstance(template, str):
        text = template.format(**ids)
        return int(text) if text.isdigit() else text
    if isinstance(template, dict):
        return {key: fill(value, ids) for key, value in template.items()}
    return template


@pytest.mark.parametrize(("method", "path", "body"), PER_OBJECT, ids=[f"{m} {p}" for m, p, _ in PER_OBJECT])
def test_not_yours_and_missing_are_the_same_404(world, method, path, body):
    _, clients = world
    mine, _ = clients["mine"]
    _, their_ids = clients["theirs"]
    missing_ids = dict.fromkeys(their_ids, MISSING)
    not_yours = mine.request(method, fill(path, their_ids), json=fill(body, their_ids))
    missing = mine.request(method, fill(path, missing_ids), json=fill(body, missing_ids))
    assert_error(not_yours, 404, "not_found")
    assert_error(missing, 404, "not_found")
    assert same_sentence(not_yours.json()["detail"], missing.json()["detail"]), (not_yours.text, missing.text)


@pytest.mark.parametrize(("kind", "params"), [
    ("dp-mean", {"column": "nope", "lower": 0, "upper": 1, "epsilon": 0.1}),
    ("dp-bo", {"label_column": "nope", "log10_lambda": [-2, 0], "iterations": 2, "epsilon": 0.5, "delta": 1e-6}),
])
def test_a_modelers_unknown_column_error_lists_no_column_it_may_not_see(world, kind, params):
    _, clients = world
    mine, ids = clients["mine"]
    response = mine.post("/v1/jobs", json={"kind": kind, "dataset_id": ids["dataset"], "params": params})
    assert_error(response, 422, "validation_error", "'nope'")
    for hidden in ("secret_diagnosis", "outcome_y"):
        assert hidden not in response.text, response.text


def test_the_curator_still_sees_every_numeric_column_in_the_error(world):
    admin, clients = world
    _, ids = clients["mine"]
    response = admin.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": ids["dataset"],
                                            "params": {"column": "nope", "lower": 0, "upper": 1, "epsilon": 0.1}})
    assert_error(response, 422, "validation_error", "'nope'", "the numeric columns are", "'outcome_y'")
