"""A form the console refuses itself and answers with a redirect and a one-shot message (no file chosen for the
answers' CSV) is audited as the API audits its refusals, with the method and path and never what was sent. Plain HTTP
against the real server."""

from __future__ import annotations

import httpx

from tests.console.test_console_pages import api
from tests.console.test_release_form import _hidden, _logged_in


def test_a_refusal_answered_by_a_redirect_is_audited(console_curator):
    path = "/console/datasets/1/answers"
    with httpx.Client(base_url=console_curator.url, timeout=60) as console:
        cookies = _logged_in(console, console_curator.admin_token)
        csrf = _hidden(console.get("/console/queries", headers=cookies).text, "csrf")
        answer = console.post(path, data={"csrf": csrf}, files={"file": ("", b"", "text/csv")}, headers=cookies)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/queries"
    with api(console_curator) as admin:
        events = [e for e in admin.get("/v1/audit", params={"action": "refused."}).json()
                  if e["target"] == f"POST {path}"]
    assert [e["action"] for e in events] == ["refused.validation_error"]
