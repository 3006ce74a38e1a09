"""Query path: at most 1,000 indices per request (a 422 that charges and stores nothing; the modeler
client splits a larger ask), and the one-transaction path keeps its refusals audited (the refusal commits although
the request fails). Speed is measured by benchmarks/service_latency.py, not here."""

from __future__ import annotations

import numpy as np

from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from shared.api.schemas import MAX_INDICES_PER_REQUEST
from tests.curator_service.conftest import assert_error, bearer


def used(client, session) -> int:
    return client.get(f"/v1/sessions/{session['id']}").json()["used"]


def test_more_indices_than_the_cap_are_a_422_that_charges_and_stores_nothing(client, world):
    key, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    too_many = [i % 40 for i in range(MAX_INDICES_PER_REQUEST + 1)]
    refused = client.post(url, json={"indices": too_many, "request_id": "big"}, headers=bearer(key["token"]))
    assert_error(refused, 422, "validation_error", "'indices'", str(MAX_INDICES_PER_REQUEST))
    assert used(client, session) == 0
    assert client.get(url, headers=bearer(key["token"])).json() == {"queries": []}
    assert not client.get("/v1/audit", params={"action": "query.create"}).json()

    # the positive control: exactly the cap is answered and charged, and its request_id was not used up
    answered = client.post(url, json={"indices": too_many[:-1], "request_id": "big"}, headers=bearer(key["token"]))
    assert answered.status_code == 200, answered.text
    assert len(answered.json()["results"]) == MAX_INDICES_PER_REQUEST == used(client, session)


def test_the_openapi_document_states_the_cap(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["QueryRequest"]
    assert schema["properties"]["indices"]["maxItems"] == MAX_INDICES_PER_REQUEST


def test_refusals_on_the_query_path_are_audited_though_the_request_fails(client, world):
    """The key is looked up inside the request's write transaction; a refusal is committed in it before the error
    leaves: a bad token (401, ``auth.failed``), the admin token (403, ``auth.denied``), also with a malformed body
    (the token is checked before the 422)."""
    key, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    start = len(client.get("/v1/audit").json())
    for body in ({"indices": [0]}, {"indices": "not a list"}):
        assert_error(client.post(url, json=body, headers=bearer("pobo_wrong")), 401, "unauthorized", "not valid")
        assert_error(client.post(url, json=body), 403, "forbidden", "modeler key")
    events = [(e["actor"], e["action"], e["target"]) for e in client.get("/v1/audit").json()[start:]]
    target = f"POST {url}"
    assert events == [("anonymous", "auth.failed", target), ("admin", "auth.denied", target)] * 2, events
    assert used(client, session) == 0
    # the modeler's own malformed body is a plain 422, charged nothing
    assert_error(client.post(url, json={"indices": "not a list"}, headers=bearer(key["token"])), 422,
                 "validation_error", "'indices'")


def test_a_revoked_key_is_refused_in_the_same_transaction_as_its_charge(client, world):
    key, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    assert client.post(url, json={"indices": [1]}, headers=bearer(key["token"])).status_code == 200
    assert client.delete(f"/v1/keys/{key['id']}").status_code == 200
    assert_error(client.post(url, json={"indices": [2]}, headers=bearer(key["token"])), 401, "unauthorized", "revoked")
    assert used(client, session) == 1


def test_the_modeler_client_splits_a_larger_ask_and_a_repeat_is_not_charged_again(tmp_path, job_cluster):
    """Against a real server: 2,500 indices go in three requests, answered in order; repeating the call with its
    request_id repeats every part under its own id, uncharged."""
    with LocalCurator(tmp_path) as curator:
        X = np.random.default_rng(0).uniform(size=(50, 2))
        dataset = curator.register_table("split", X, ["a", "b"], evaluator={"kind": "column", "column": "y"},
                                         budget=(10.0, 1e-3), extra_columns={"y": np.arange(50.0)},
                                         scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1], "diameter": 1})
        rel = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2)
        key = curator.issue_key([rel.id], max_queries=3000)
        modeler = ModelerClient(curator.url, key.token)
        session = modeler.open_session(rel.id)
        indices = [(7 * k) % 50 for k in range(2500)]
        results = modeler.query(session.id, indices, request_id="run-1")
        assert [r.index for r in results] == indices
        value_of: dict[int, float] = {}  # y = 0…49 in the file's order; indices name rows in a secret order
        assert all(value_of.setdefault(r.index, r.value) == r.value for r in results)
        assert len(set(value_of.values())) == len(value_of) == len(set(indices))
        assert modeler.session(session.id).used == 2500
        again = modeler.query(session.id, indices, request_id="run-1")
        assert [r.query_id for r in again] == [r.query_id for r in results]
        assert modeler.session(session.id).used == 2500
