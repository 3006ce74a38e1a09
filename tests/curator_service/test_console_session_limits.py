"""A console session ends on the server by itself: after its idle limit, after its absolute limit however busy, and
when the admin token it was opened with changes. Its id never authenticates the API. On SQLite and PostgreSQL."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from curator_service.app import create_app
from tests.curator_service.conftest import ADMIN, assert_error, bearer
from tests.curator_service.test_admission import console_login


def page(client, session: str, path: str = "/console/keys"):
    return client.get(path, headers={"Cookie": f"pobo_console={session}"}, follow_redirects=False)


def test_a_session_unused_for_its_idle_limit_has_ended(make_client, database_url):
    client = make_client(database_url=database_url, console_idle_seconds=2)
    session = console_login(client, ADMIN).cookies["pobo_console"]
    assert page(client, session).status_code == 200
    time.sleep(2.2)
    ended = page(client, session)
    assert ended.status_code == 303 and ended.headers["location"] == "/console/login"


def test_a_busy_session_still_ends_at_its_absolute_limit(make_client, database_url):
    client = make_client(database_url=database_url, console_session_seconds=6, console_idle_seconds=60)
    session = console_login(client, ADMIN).cookies["pobo_console"]
    opened = time.monotonic()  # after the login's answer: the session is at least this old
    while time.monotonic() < opened + 1.0:
        assert page(client, session).status_code == 200
        time.sleep(0.2)
    time.sleep(max(0.0, opened + 6.2 - time.monotonic()))
    assert page(client, session).headers["location"] == "/console/login"


def test_a_new_admin_token_ends_the_sessions_of_the_old_one(make_settings, database_url):
    settings = make_settings(database_url=database_url)
    with TestClient(create_app(settings)) as first:
        session = console_login(first, ADMIN).cookies["pobo_console"]
        assert page(first, session).status_code == 200
        assert_error(first.get("/v1/keys", headers=bearer(session)), 401, "unauthorized")
    rotated = settings.model_copy(update={"admin_token": "a-new-admin-token-of-32-characters-or-more"})
    with TestClient(create_app(rotated)) as second:  # the same database, restarted with another token
        assert page(second, session).headers["location"] == "/console/login"
