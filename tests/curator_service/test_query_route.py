"""The query path's route: a plainly well-formed request skips FastAPI's dependency solving and per-request
body handling, and answers exactly what FastAPI's handler answers (the same bytes and headers, the same charge and
audit); anything else is FastAPI's, with its refusals as on every modeler route."""

from __future__ import annotations

import fastapi.routing
import pytest

from tests.curator_service.conftest import assert_error, bearer


@pytest.fixture
def solved(monkeypatch) -> list[str]:
    """The paths of the requests FastAPI solved dependencies for (its handler ran)."""
    paths: list[str] = []
    solve = fastapi.routing.solve_dependencies

    async def counting(*, request, **kwargs):
        paths.append(request.url.path)
        return await solve(request=request, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    return paths


def test_a_well_formed_query_skips_fastapis_handler_and_answers_what_it_answers(client, world, solved):
    key, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    body = b'{"indices": [3, 1, 3], "request_id": "r1"}'
    fast = client.post(url, content=body, headers={**bearer(key["token"]), "Content-Type": "application/json"})
    assert fast.status_code == 200, fast.text
    assert url not in solved

    # The same request_id through FastAPI's handler (another spelling of the JSON media type): the stored answers,
    # uncharged, in the same bytes and headers.
    slow = client.post(url, content=body, headers={**bearer(key["token"]),
                                                   "Content-Type": "application/json; charset=utf-8"})
    assert url in solved
    assert (slow.status_code, slow.content, slow.headers["content-type"], slow.headers["content-length"]) == (
        200, fast.content, fast.headers["content-type"], fast.headers["content-length"])
    assert [r["index"] for r in fast.json()["results"]] == [3, 1, 3]
    assert client.get(f"/v1/sessions/{session['id']}").json()["used"] == 3
    events = [(e["actor"], e["action"], e["target"]) for e in client.get("/v1/audit").json()]
    assert events.count((f"key:{key['id']}:modeler", "query.create", f"session:{session['id']} (3 queries)")) == 1


@pytest.mark.parametrize(("session_id", "body", "status", "code", "by_fastapi"), [
    ("{id}", b'{"indices": [40]}', 422, "validation_error", False),  # the model accepts it; the release has 40 rows
    ("9999", b'{"indices": [1]}', 404, "not_found", False),
    ("{id}", b'{"indices": []}', 422, "validation_error", True),
    ("{id}", b'{"indices": [1], "seed": 3}', 422, "validation_error", True),
    ("0", b'{"indices": [1]}', 422, "validation_error", True),
    ("99999999999", b'{"indices": [1]}', 422, "validation_error", True),
    ("{id}", b'{"indices": [1]', 422, "validation_error", None),  # FastAPI refuses it before its dependencies
])
def test_a_refused_query_is_refused_as_before_and_charges_nothing(client, world, solved, session_id, body, status,
                                                                 code, by_fastapi):
    key, session = world
    url = f"/v1/sessions/{session_id.format(id=session['id'])}/queries"
    refused = client.post(url, content=body, headers={**bearer(key["token"]), "Content-Type": "application/json"})
    assert_error(refused, status, code)
    assert client.get(f"/v1/sessions/{session['id']}").json()["used"] == 0
    # what the model or the path's validation refuses is FastAPI's answer; what only the data refuses, the service's
    if by_fastapi is not None:
        assert (url in solved) == by_fastapi


def test_a_bad_token_with_a_well_formed_body_is_a_401_audited(client, world, solved):
    _, session = world
    url = f"/v1/sessions/{session['id']}/queries"
    refused = client.post(url, json={"indices": [1]}, headers=bearer("pobo_wrong"))
    assert_error(refused, 401, "unauthorized", "not valid")
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert url not in solved
    assert client.get("/v1/audit").json()[-1]["action"] == "auth.failed"
