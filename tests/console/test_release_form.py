"""The console's release confirmation is idempotent: the same confirmation posted twice (a double click, a browser's
resubmit after a slow answer) makes and charges one release. Plain HTTP against the real server (no browser needed):
the console's cookies are ``Secure``, so they are carried by hand over loopback."""

from __future__ import annotations

import re
import time
import uuid

import httpx
import numpy as np

from curator_service.console.security import LOGIN_NONCE_COOKIE, SESSION_COOKIE

UNIT_BOX = {"kind": "bounds", "lower": [0.0, 0.0], "upper": [1.0, 1.0], "diameter": 1.0}


def _hidden(page: str, name: str) -> str:
    (value,) = set(re.findall(rf'name="{name}" value="([^"]*)"', page))
    return value


def _set_cookie(response: httpx.Response, name: str) -> str:
    (value,) = [v.split("=", 1)[1].split(";", 1)[0] for v in response.headers.get_list("set-cookie")
                if v.startswith(f"{name}=")]
    return value


def _logged_in(console: httpx.Client, token: str) -> dict[str, str]:
    """The Cookie header of a logged-in console (httpx keeps no Secure cookie over plain HTTP)."""
    login = console.get("/console/login")
    nonce = {"Cookie": f"{LOGIN_NONCE_COOKIE}={_set_cookie(login, LOGIN_NONCE_COOKIE)}"}
    answer = console.post("/console/login", data={"token": token, "csrf": _hidden(login.text, "csrf")}, headers=nonce)
    return {"Cookie": f"{SESSION_COOKIE}={_set_cookie(answer, SESSION_COOKIE)}"}


def test_the_same_release_form_posted_twice_makes_and_charges_one_release(console_curator):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    dataset = console_curator.register_table(f"form-{uuid.uuid4().hex[:6]}", X, ["x0", "x1"],
                                             evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
                                             extra_columns={"y": X.sum(axis=1)}, scaling=UNIT_BOX)
    page_path = f"/console/datasets/{dataset.id}"
    with httpx.Client(base_url=console_curator.url, timeout=60) as console, \
            httpx.Client(base_url=console_curator.url, timeout=60,
                         headers={"Authorization": f"Bearer {console_curator.admin_token}"}) as admin:
        cookies = _logged_in(console, console_curator.admin_token)
        page = console.get(page_path, headers=cookies).text
        typed = {"csrf": _hidden(page, "csrf"), "mechanism": "gaussian", "epsilon": "1", "delta": "1e-6", "dim": "auto"}
        review = console.post(f"{page_path}/review-release", data=typed, headers=cookies)
        assert review.status_code == 200 and not [e for e in admin.get("/v1/ledger", params={
            "dataset_id": dataset.id}).json() if e["kind"] == "charge"], "the review charges nothing"
        (form,) = re.findall(r'<form[^>]*action="[^"]*/releases".*?</form>', review.text, flags=re.S)
        fields = {"csrf": typed["csrf"], "request_id": _hidden(form, "request_id"), "mechanism": "gaussian",
                  "epsilon": _hidden(form, "epsilon"), "delta": "1e-6", "dim": "auto"}
        assert fields["request_id"], "the confirmation carries its own request_id"
        for _ in range(2):
            answer = console.post(f"{page_path}/releases", data=fields, headers=cookies)
            assert answer.status_code == 303, answer.text
        (job,) = [j for j in admin.get("/v1/jobs").json() if j["kind"] == "release" and j["dataset_id"] == dataset.id]
        assert job["request_id"] == fields["request_id"]
        deadline = time.monotonic() + 300  # a poll: the job is small, the machine may be loaded
        while job["status"] not in ("succeeded", "failed", "cancelled") and time.monotonic() < deadline:
            time.sleep(0.2)
            job = admin.get(f"/v1/jobs/{job['id']}").json()
        assert job["status"] == "succeeded", job
        ledger = admin.get("/v1/ledger", params={"dataset_id": dataset.id}).json()
        charges = [e for e in ledger if e["kind"] == "charge"]
        assert [(e["epsilon"], e["release_id"]) for e in charges] == [(1.0, job["result"]["release_id"])]
        assert [r["id"] for r in admin.get("/v1/releases", params={"dataset_id": dataset.id}).json()] == [
            job["result"]["release_id"]]
        # A newly rendered confirmation is a new request: it makes a second release.
        fresh = console.post(f"{page_path}/review-release", data=typed, headers=cookies).text
        assert _hidden(fresh, "request_id") != fields["request_id"]
