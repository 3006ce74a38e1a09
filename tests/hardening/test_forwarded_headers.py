"""The client address the back-off counts and the audit trail names, through a real uvicorn server configured as
``pobo-curator serve`` configures it: ``X-Forwarded-For`` is believed only from the peers POBO_FORWARDED_ALLOW_IPS
names (none by default), so a caller on the host cannot rotate it to escape the back-off."""

from __future__ import annotations

import httpx

from tests.curator_service.conftest import ADMIN, bearer


def guesses(url: str, count: int) -> list[int]:
    """``count`` bad tokens, each from a different claimed address; their statuses."""
    with httpx.Client(base_url=url, timeout=30) as client:
        return [client.get("/v1/keys", headers={**bearer(f"pobo_guess{i}"),
                                                "X-Forwarded-For": f"10.{i // 250}.{i % 250}.7"}).status_code
                for i in range(count)]


def audited_clients(url: str) -> set[str]:
    """The addresses of the audited waits (the admin's token passes the wait: it was used before the guesses)."""
    with httpx.Client(base_url=url, timeout=30, headers=bearer(ADMIN)) as client:
        events = client.get("/v1/audit").json()
    return {e["target"].split(":")[0] for e in events if e["action"] == "auth.throttled"}


def test_a_rotated_forwarded_for_from_loopback_is_throttled_like_any_caller(live_server):
    url = live_server(auth_failures_allowed=10)
    audited_clients(url)
    statuses = guesses(url, 60)
    assert statuses[:10] == [401] * 10
    assert statuses.count(429) >= 45, statuses  # after its allowance the one peer waits, whatever it claims
    assert audited_clients(url) == {"client 127.0.0.1"}  # the peer's address, never a claimed one


def test_the_named_proxys_forwarded_for_is_the_client(live_server):
    url = live_server(auth_failures_allowed=10, forwarded_allow_ips="127.0.0.1")
    assert guesses(url, 60) == [401] * 60  # each forwarded client failed once: none waits
