"""Console sessions kept by the server, in a real browser on a real server: the cookie holds a random session id
(never a token; useless as a bearer), without Max-Age; logout and the revocation of the key end the session on the
server, so the same cookie replayed leads to the login form; no cookie gets a modeler a console page."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta

import httpx

from curator_service.services.policy import hash_token
from tests.console.test_console_pages import api, register_manual, unique

COOKIE = "pobo_console"


def plant(console, value: str) -> None:
    """Puts ``value`` in the browser as the console's cookie, as a hand-made or stolen cookie would be."""
    console.open("/console/login")
    console.driver.delete_cookie(COOKIE)
    console.driver.add_cookie({"name": COOKIE, "value": value, "path": "/console", "secure": True, "httpOnly": True,
                               "sameSite": "Strict"})


def lands_on_login(console, page: str = "/console/keys") -> bool:
    console.open(page)
    return console.driver.current_url.endswith("/console/login")


def replayed_over_http(curator, value: str) -> httpx.Response:
    return httpx.get(f"{curator.url}/console/keys", cookies={COOKIE: value}, follow_redirects=False)


def login_set_cookie(curator, token: str) -> str:
    """The Set-Cookie header a login answers with (the login form's flow over plain HTTP)."""
    with httpx.Client(base_url=curator.url, follow_redirects=False) as client:
        page = client.get("/console/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        nonce = page.cookies["pobo_console_login"]
        answer = client.post("/console/login", data={"token": token, "csrf": csrf},
                             headers={"Cookie": f"pobo_console_login={nonce}"})
    [header] = [h for h in answer.headers.get_list("set-cookie") if h.startswith(f"{COOKIE}=")]
    return header


def test_the_cookie_is_a_session_id_without_max_age_and_useless_as_a_bearer(console):
    admin = console.curator.admin_token
    console.log_in(admin)
    cookie = console.driver.get_cookie(COOKIE)
    assert "expiry" not in cookie  # a session cookie: the browser never writes it to disk
    value = cookie["value"]
    assert admin not in value and value != hash_token(admin) and len(value) >= 43
    with api(console.curator, value) as as_bearer:
        assert as_bearer.get("/v1/keys").status_code == 401
        assert as_bearer.get("/v1/datasets").status_code == 401
    header = login_set_cookie(console.curator, admin)
    assert "max-age" not in header.lower() and "expires" not in header.lower(), header
    assert {"httponly", "secure", "samesite=strict", "path=/console"} <= {
        part.strip().lower() for part in header.split(";")}
    console.shot("session-cookie")


def test_the_cookie_replayed_after_logout_leads_to_the_login_form(console):
    console.log_in(console.curator.admin_token)
    value = console.session_cookie()
    assert not lands_on_login(console)
    console.submit("logout")
    assert console.session_cookie() is None
    plant(console, value)
    assert lands_on_login(console)
    assert "ended" in console.flash()
    answer = replayed_over_http(console.curator, value)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/login"


def test_the_cookie_replayed_after_the_keys_revocation_leads_to_the_login_form(console):
    dataset = register_manual(console.curator, unique("revoked-session"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    with api(console.curator) as admin:
        key = admin.post("/v1/keys", json={"name": "lab lead", "role": "curator", "release_ids": [release.id],
                                           "max_queries": 1}).json()
    console.log_in(key["token"])
    value = console.session_cookie()
    assert not lands_on_login(console)
    with api(console.curator) as admin:
        assert admin.delete(f"/v1/keys/{key['id']}").status_code == 200
    with sqlite3.connect(console.curator.data_dir / "curator.db") as db:  # ended on the server, not only refused
        ended = db.execute("SELECT ended_at FROM console_sessions WHERE id_hash = ?", (hash_token(value),)).fetchone()
    assert ended is not None and ended[0] is not None
    assert lands_on_login(console)
    plant(console, value)
    assert lands_on_login(console, "/console/datasets")
    assert replayed_over_http(console.curator, value).headers["location"] == "/console/login"


def test_a_modeler_key_gets_no_console_page_by_any_cookie(console):
    dataset = register_manual(console.curator, unique("modeler-cookie"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    modeler = console.curator.issue_key([release.id], max_queries=3)
    console.open("/console/login")
    console.driver.delete_cookie(COOKIE)
    console.log_in(modeler.token)
    assert "modeler key" in console.flash() and console.session_cookie() is None
    planted = [modeler.token, hash_token(modeler.token)]
    for value in planted:
        refused_everywhere(console, value)
    # A session row for the modeler key itself (no login makes one): the role is checked on every request.
    raw = f"planted-{unique('session')}"
    now = datetime.now(UTC).replace(tzinfo=None)
    with sqlite3.connect(console.curator.data_dir / "curator.db") as db:
        db.execute("INSERT INTO console_sessions (id_hash, key_id, credential_hash, created_at, last_seen_at, "
                   "expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                   (hash_token(raw), modeler.id, hash_token(modeler.token), str(now), str(now),
                    str(now + timedelta(hours=1))))
    refused_everywhere(console, raw)


def refused_everywhere(console, value: str) -> None:
    plant(console, value)
    for page in ("/console/jobs", "/console/datasets", "/console/keys"):
        assert lands_on_login(console, page), (value, page)
    assert replayed_over_http(console.curator, value).headers["location"] == "/console/login"
