"""Bounded requests before authentication (curator_service.admission): a missing or bad token is refused before the
body is read, bodies are limited (JSON 1 MiB, uploads their own limit; the query path's own reading too), and a
client that keeps failing to authenticate must wait, in the API and the console alike."""

from __future__ import annotations

import json
import re
import socket
import time
from types import SimpleNamespace

import pytest
from fastapi.params import File, Form
from fastapi.routing import APIRoute, iter_route_contexts

from curator_service.admission import MAX_WAIT_SECONDS, PROVEN_SECONDS, UPLOAD_ROUTES, AuthThrottle
from curator_service.console.security import read_flash
from tests.curator_service.conftest import (
    ADMIN,
    assert_error,
    bearer,
    dataset_spec,
    modeler_key,
    register,
    release,
    synthetic_table,
    table_csv,
    upload,
)

DECLARED = 200_000_000  # bytes a request says it will send; none of them is ever sent


def first_response(url: str, head: bytes, timeout: float = 5.0) -> tuple[bytes, float]:
    """Sends only a request's head (its body never follows) and returns the status line and how long it took."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        started = time.perf_counter()
        connection.sendall(head)
        try:
            answer = connection.recv(4096)
        except TimeoutError:
            return b"(no answer: the server waits for the body)", time.perf_counter() - started
        return answer.split(b"\r\n", 1)[0], time.perf_counter() - started


@pytest.mark.parametrize("authorization", ["", "Authorization: Bearer pobo_not-a-key\r\n"])
@pytest.mark.parametrize("length", [f"Content-Length: {DECLARED}", "Transfer-Encoding: chunked"])
def test_a_missing_or_bad_token_is_refused_before_any_of_the_body_is_read(live_server, authorization, length):
    url = live_server()
    head = (f"POST /v1/keys HTTP/1.1\r\nHost: pobo\r\nContent-Type: application/json\r\n{authorization}{length}"
            "\r\n\r\n").encode()
    status, seconds = first_response(url, head)
    assert status == b"HTTP/1.1 401 Unauthorized" and seconds < 2.0, (status, seconds)


def test_json_bodies_are_limited_and_uploads_keep_their_own_limit(make_client):
    client = make_client(max_json_bytes=10_000)
    padded = {"name": "k", "release_ids": [1], "max_queries": 1, "pad": "x" * 20_000}
    assert_error(client.post("/v1/keys", json=padded), 413, "payload_too_large", "10000 bytes", "POBO_MAX_JSON_BYTES")
    chunked = client.post("/v1/keys", content=iter([json.dumps(padded).encode()]),
                          headers={"Content-Type": "application/json"})  # no declared length: counted as it comes
    assert_error(chunked, 413, "payload_too_large", "POBO_MAX_JSON_BYTES")
    X, y = synthetic_table(600)
    csv = table_csv(X, y)
    assert len(csv) > 20_000
    assert upload(client, csv, dataset_spec()).status_code == 201  # a multipart CSV to an upload route
    # A multipart body is not an upload anywhere else.
    assert_error(client.post("/v1/keys", files={"file": ("a.csv", csv, "text/csv")}), 413, "payload_too_large",
                 "POBO_MAX_JSON_BYTES")


def test_the_query_paths_own_body_reading_obeys_the_json_limit(make_client, open_session):
    client = make_client(max_json_bytes=10_000)
    opened = open_session(client)
    key, session = opened.key, opened.session
    body = json.dumps({"indices": list(range(1000)), "request_id": "r" * 100, "pad": " " * 10_000}).encode()
    headers = {**bearer(key["token"]), "Content-Type": "application/json"}
    path = f"/v1/sessions/{session['id']}/queries"
    assert_error(client.post(path, content=body, headers=headers), 413, "payload_too_large", "POBO_MAX_JSON_BYTES")
    assert_error(client.post(path, content=iter([body]), headers=headers), 413, "payload_too_large",
                 "POBO_MAX_JSON_BYTES")
    assert client.get(f"/v1/sessions/{session['id']}/queries", headers=bearer(key["token"])).json()["queries"] == []


def test_the_upload_routes_are_routes_and_every_route_with_a_file_is_one(make_client):
    routes = [route for route in iter_route_contexts(make_client().app.routes)
              if isinstance(route.original_route, APIRoute)]
    assert set(UPLOAD_ROUTES) <= {route.path for route in routes if "POST" in route.methods}
    with_files = {route.path for route in routes
                  if any(isinstance(field.field_info, File | Form) for field in route.dependant.body_params)}
    assert with_files and with_files <= set(UPLOAD_ROUTES)


def test_the_wait_doubles_up_to_its_cap_and_is_forgotten_after_quiet_minutes():
    now = [0.0]
    throttle = AuthThrottle(allowed=3, clock=lambda: now[0])
    assert [throttle.failed("10.0.0.1")[1] for _ in range(3)] == [0.0, 0.0, 0.0]
    assert throttle.wait("10.0.0.1") == 0.0
    waits = [throttle.failed("10.0.0.1")[1] for _ in range(12)]
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0] and waits[-1] == MAX_WAIT_SECONDS
    assert throttle.wait("10.0.0.1") == MAX_WAIT_SECONDS and throttle.wait("10.0.0.2") == 0.0
    now[0] += 16 * 60  # a quarter of an hour without a failure: counted afresh
    assert throttle.wait("10.0.0.1") == 0.0 and throttle.failed("10.0.0.1") == (1, 0.0)


def test_repeated_bad_tokens_make_the_client_wait_and_the_wait_is_audited_once(make_client):
    client = make_client(auth_failures_allowed=3)
    for _ in range(4):  # the fourth failure starts a wait of 1 s
        assert_error(client.get("/v1/keys", headers=bearer("pobo_guess")), 401, "unauthorized")
    for headers in (bearer("pobo_guess"), {}, bearer(ADMIN)):  # a waiting address gets 429 whatever it presents
        waiting = client.get("/v1/keys", headers=headers)
        assert_error(waiting, 429, "too_many_requests", "wait 1 s")
        assert waiting.headers["retry-after"] == "1"
    time.sleep(1.1)
    assert_error(client.get("/v1/keys", headers=bearer("pobo_guess")), 401, "unauthorized")
    assert_error(client.get("/v1/keys", headers=bearer(ADMIN)), 429, "too_many_requests", "wait 2 s")
    time.sleep(2.1)
    events = client.get("/v1/audit", headers=bearer(ADMIN)).json()
    assert sum(e["action"] == "auth.failed" for e in events) == 5  # each 401, none of the 429s
    assert [e["target"] for e in events if e["action"] == "auth.throttled"] == [
        "client testclient: 4 failed authentications; waits 1 s",
        "client testclient: 5 failed authentications; waits 2 s"]


def test_a_proven_token_passes_a_waiting_address_and_a_guess_or_an_unused_token_does_not():
    now = [0.0]
    throttle = AuthThrottle(allowed=1, clock=lambda: now[0])
    throttle.proved("pobo_used")
    for _ in range(3):
        throttle.failed("10.0.0.1")
    assert throttle.refuses("10.0.0.1", "pobo_guess") == 2.0 and throttle.refuses("10.0.0.1", None) == 2.0
    assert throttle.refuses("10.0.0.1", "pobo_unused") == 2.0
    assert throttle.refuses("10.0.0.1", "pobo_used") == 0.0
    now[0] += PROVEN_SECONDS + 1  # long unused: waits like any token (the address waits again)
    for _ in range(12):
        throttle.failed("10.0.0.1")
    assert throttle.refuses("10.0.0.1", "pobo_used") == MAX_WAIT_SECONDS


def test_one_callers_bad_tokens_do_not_lock_out_the_others_on_its_address(make_client):
    """Behind a NAT (or a proxy whose headers are not believed) every caller shares one address: a guesser's
    failures make its guesses wait, and the admin and a modeler who used their tokens lately go on working."""
    client = make_client(auth_failures_allowed=3)
    rel = release(client, register(client)["id"])
    key = modeler_key(client, [rel["id"]])
    unused = modeler_key(client, [rel["id"]])
    assert client.get("/v1/releases", headers=bearer(key["token"])).status_code == 200
    for _ in range(20):
        client.get("/v1/keys", headers=bearer("pobo_guess"))
    assert_error(client.get("/v1/keys", headers=bearer("pobo_guess")), 429, "too_many_requests")
    assert_error(client.get("/v1/keys", headers={"Authorization": "Basic eDp5"}), 429, "too_many_requests")
    assert client.get("/v1/keys", headers=bearer(ADMIN)).status_code == 200
    session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=bearer(key["token"]))
    assert session.status_code == 201, session.text
    queried = client.post(f"/v1/sessions/{session.json()['id']}/queries", json={"indices": [0]},
                          headers=bearer(key["token"]))
    assert queried.status_code == 200, queried.text
    # A token not yet used cannot be told from a guess: it waits with the address.
    assert_error(client.get("/v1/releases", headers=bearer(unused["token"])), 429, "too_many_requests")


def console_form(client) -> tuple[str, str]:
    """The login form's pre-login nonce cookie and its CSRF token."""
    page = client.get("/console/login")
    return page.cookies["pobo_console_login"], re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def console_login(client, token: str):
    nonce, csrf = console_form(client)
    return client.post("/console/login", data={"token": token, "csrf": csrf},
                       headers={"Cookie": f"pobo_console_login={nonce}"}, follow_redirects=False)


def flash(response) -> str:
    """The one-shot message a console redirect leaves for the next page."""
    return read_flash(SimpleNamespace(cookies=response.cookies))[1]


def test_failed_console_logins_count_toward_the_same_wait(make_client):
    client = make_client(auth_failures_allowed=2)
    client.headers.pop("Authorization")
    for _ in range(3):
        assert "not valid" in flash(console_login(client, "pobo_guess"))
    assert "Too many failed logins" in flash(console_login(client, ADMIN))  # even the right token waits
    assert_error(client.get("/v1/keys", headers=bearer(ADMIN)), 429, "too_many_requests")
    time.sleep(1.1)
    assert "pobo_console" in console_login(client, ADMIN).cookies


def test_the_audit_view_groups_a_run_of_the_same_failure_into_one_row(make_client):
    client = make_client()
    for _ in range(6):
        client.get("/v1/datasets", headers=bearer("pobo_guess"))
    session = console_login(client, ADMIN).cookies["pobo_console"]
    page = client.get("/console/audit", headers={"Cookie": f"pobo_console={session}"}).text
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)
    failed = [row for row in rows if "auth.failed" in row]
    assert len(failed) == 1 and "×6" in failed[0] and "GET /v1/datasets" in failed[0], failed
