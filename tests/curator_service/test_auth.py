"""Authentication and permissions, endpoint by endpoint (docs/design.md §5's role column)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from curator_service.app import create_app
from curator_service.settings import Settings
from tests.curator_service.conftest import (
    ADMIN,
    ADMIN_HEADERS,
    AUTH_FAILURES_ALLOWED,
    RELEASE_WAIT_SECONDS,
    assert_error,
    bearer,
)

CURATOR_ONLY = [
    ("POST", "/v1/datasets"),
    ("GET", "/v1/datasets"),
    ("GET", "/v1/datasets/{dataset}"),
    ("POST", "/v1/datasets/{dataset}/releases"),
    ("POST", "/v1/releases/{release}/audits/reconstruction"),
    ("POST", "/v1/keys"),
    ("GET", "/v1/keys"),
    ("DELETE", "/v1/keys/{key}"),
    ("GET", "/v1/queries"),
    ("POST", "/v1/queries/1/answer"),
    ("GET", "/v1/ledger"),
    ("GET", "/v1/audit"),
]
ANY_ROLE = [
    ("GET", "/v1/releases"),
    ("GET", "/v1/releases/{release}"),
    ("GET", "/v1/releases/{release}/inputs"),
    ("GET", "/v1/sessions/{session}"),
    ("GET", "/v1/sessions/{session}/queries"),
    ("POST", "/v1/sessions/{session}/close"),
    ("POST", "/v1/jobs"),
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/1"),
    ("POST", "/v1/jobs/1/cancel"),
]
MODELER_ONLY = [("POST", "/v1/releases/{release}/sessions"), ("POST", "/v1/sessions/{session}/queries")]


@pytest.fixture(scope="module")
def shared_client(tmp_path_factory, job_cluster):
    """One app for the whole module (these tests change nothing that the others look at)."""
    settings = Settings.from_env({}, data_dir=tmp_path_factory.mktemp("auth"), admin_token=ADMIN,
                                 release_wait_seconds=RELEASE_WAIT_SECONDS, auth_failures_allowed=AUTH_FAILURES_ALLOWED)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture(scope="module")
def world(shared_client, open_session):
    client = shared_client
    client.headers.update(ADMIN_HEADERS)
    opened = open_session(client)
    key = opened.key
    ids = {"dataset": opened.dataset["id"], "release": opened.release["id"], "key": key["id"],
           "session": opened.session["id"]}
    client.headers.pop("Authorization")
    return ids, key["token"]


def _call(client, method, path, ids, headers):
    return client.request(method, path.format(**ids), headers=headers, json={})


@pytest.mark.parametrize(("method", "path"), CURATOR_ONLY + ANY_ROLE + MODELER_ONLY)
def test_no_token_and_bad_token_are_401(shared_client, world, method, path):
    ids, _ = world
    client = shared_client
    assert_error(_call(client, method, path, ids, {}), 401, "unauthorized", "Authorization: Bearer")
    assert_error(_call(client, method, path, ids, bearer("pobo_wrong")), 401, "unauthorized", "not valid")


@pytest.mark.parametrize(("method", "path"), CURATOR_ONLY)
def test_modeler_keys_cannot_use_curator_endpoints(shared_client, world, method, path):
    ids, token = world
    assert_error(_call(shared_client, method, path, ids, bearer(token)), 403, "forbidden", "curator")


@pytest.mark.parametrize(("method", "path"), MODELER_ONLY)
def test_curator_cannot_spend_a_modeler_query_budget(shared_client, world, method, path):
    ids, _ = world
    assert_error(_call(shared_client, method, path, ids, ADMIN_HEADERS), 403, "forbidden", "modeler key")


def test_curator_keys_have_curator_powers(shared_client, world):
    ids, _ = world
    client = shared_client
    curator = client.post("/v1/keys", headers=ADMIN_HEADERS, json={
        "name": "deputy", "release_ids": [ids["release"]], "max_queries": 1, "role": "curator"}).json()
    assert client.get("/v1/ledger", headers=bearer(curator["token"])).status_code == 200
    assert client.get(f"/v1/sessions/{ids['session']}/queries", headers=bearer(curator["token"])).status_code == 200


def test_a_modeler_cannot_touch_another_keys_session(shared_client, world):
    ids, _ = world
    client = shared_client
    other = client.post("/v1/keys", headers=ADMIN_HEADERS, json={
        "name": "other", "release_ids": [ids["release"]], "max_queries": 1}).json()
    headers = bearer(other["token"])
    for method, path in [("GET", "/v1/sessions/{session}"), ("GET", "/v1/sessions/{session}/queries"),
                         ("POST", "/v1/sessions/{session}/queries"), ("POST", "/v1/sessions/{session}/close")]:
        response = client.request(method, path.format(**ids), headers=headers, json={"indices": [0]})
        assert_error(response, 404, "not_found", f"session with id {ids['session']}")  # as if it did not exist


def test_health_needs_no_token(shared_client):
    assert shared_client.get("/health").json()["status"] == "ok"


def test_admin_token_can_be_disabled(make_client):
    client = make_client(admin_token=None)
    assert_error(client.get("/v1/datasets"), 401, "unauthorized")
