"""The query path is an ordinary FastAPI route: its body and response are the declared models (in the OpenAPI
document), and every refusal is the one any modeler route gives, in the same order (the token before the body)."""

from __future__ import annotations

import pytest

from tests.curator_service.conftest import assert_error, bearer


def test_the_openapi_document_declares_the_querys_body_and_response(client):
    operation = client.get("/openapi.json").json()["paths"]["/v1/sessions/{session_id}/queries"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/QueryRequest"} and operation["requestBody"]["required"] is True
    answered = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answered == {"$ref": "#/components/schemas/QueryResponse"}
    [session_id] = operation["parameters"]
    assert (session_id["name"], session_id["in"], session_id["required"]) == ("session_id", "path", True)


def test_a_query_and_its_repeat_answer_the_same_bytes_charged_and_audited_once(client, world):
    key, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    body = b'{"indices": [3, 1, 3], "request_id": "r1"}'
    first = client.post(url, content=body, headers={**bearer(key["token"]), "Content-Type": "application/json"})
    assert first.status_code == 200, first.text
    again = client.post(url, content=body, headers={**bearer(key["token"]),
                                                    "Content-Type": "application/json; charset=utf-8"})
    assert (again.status_code, again.content, again.headers["content-type"]) == (
        200, first.content, first.headers["content-type"])
    assert [r["index"] for r in first.json()["results"]] == [3, 1, 3]
    assert client.get(f"/v1/sessions/{session['id']}").json()["used"] == 3
    events = [(e["actor"], e["action"], e["target"]) for e in client.get("/v1/audit").json()]
    assert events.count((f"key:{key['id']}:modeler", "query.create", f"session:{session['id']} (3 queries)")) == 1


@pytest.mark.parametrize(("session_id", "body", "status", "code", "says"), [
    ("{id}", b'{"indices": [40]}', 422, "validation_error", "index 40 is out of range"),  # the release has 40 rows
    ("9999", b'{"indices": [1]}', 404, "not_found", "there is no session with id 9999"),
    ("{id}", b'{"indices": []}', 422, "validation_error", "'indices'"),
    ("{id}", b'{"indices": [1], "seed": 3}', 422, "validation_error", "'seed'"),
    ("0", b'{"indices": [1]}', 422, "validation_error", "session_id"),
    ("99999999999", b'{"indices": [1]}', 422, "validation_error", "session_id"),
    ("{id}", b'{"indices": [1]', 422, "validation_error", "JSON"),
])
def test_a_refused_query_says_why_and_charges_nothing(client, world, session_id, body, status, code, says):
    key, session = world
    url = f"/v1/sessions/{session_id.format(id=session['id'])}/queries"
    refused = client.post(url, content=body, headers={**bearer(key["token"]), "Content-Type": "application/json"})
    assert_error(refused, status, code, says)
    assert client.get(f"/v1/sessions/{session['id']}").json()["used"] == 0


def test_a_bad_token_is_a_401_audited_before_a_bad_body_is_read(client, world):
    _, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    for body in ({"indices": [1]}, {"indices": []}):
        refused = client.post(url, json=body, headers=bearer("pobo_wrong"))
        assert_error(refused, 401, "unauthorized", "not valid")
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert client.get("/v1/audit").json()[-1]["action"] == "auth.failed"
