"""A governance act re-checks its key inside its own write transaction: a budget raise whose key was revoked after
the raise authenticated (in flight) is refused, and so is a key creation (a revoked key mints no token that outlives
it); raises racing a revocation never commit after it. The service
layer imports no HTTP types. On SQLite and PostgreSQL."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import httpx
import pytest

from curator_service.persistence.db import Database
from curator_service.services import keys, ledger
from curator_service.services.key_policy import check_governs
from curator_service.services.policy import principal_for_token
from shared.api.errors import ApiError
from shared.api.schemas import BudgetRaise, KeyCreate
from tests.curator_service.conftest import ADMIN, bearer, modeler_key, register, release

ROOT = Path(__file__).resolve().parents[2]


def governance_key(client, rel: int) -> dict:
    return modeler_key(client, [rel], role="curator", governance=True)


def test_an_in_flight_raise_of_a_key_revoked_since_it_authenticated_is_refused(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client)
    key = governance_key(client, release(client, dataset["id"])["id"])
    db = Database(database_url)
    try:
        with db.read() as session:  # the raise authenticates (its own read transaction) ...
            principal = principal_for_token(session, key["token"], ADMIN)
        assert client.delete(f"/v1/keys/{key['id']}").status_code == 200  # ... the key is revoked ...
        with pytest.raises(ApiError, match="revoked") as refused, db.write() as session:  # ... then its write runs
            check_governs(session, principal, "dataset.budget_raise", f"dataset:{dataset['id']}")
            ledger.raise_budget(session, principal, dataset["id"], BudgetRaise(epsilon=1.0, delta=0.0, reason="r"))
        assert refused.value.status == 401
    finally:
        db.dispose()
    assert not [e for e in client.get("/v1/ledger").json() if e["kind"] == "raise"]


def test_an_in_flight_key_creation_by_a_key_revoked_since_it_authenticated_mints_nothing(make_client, database_url):
    client = make_client(database_url=database_url)
    rel = release(client, register(client)["id"])["id"]
    curator_key = modeler_key(client, [rel], role="curator")
    db = Database(database_url)
    try:
        with db.read() as session:
            principal = principal_for_token(session, curator_key["token"], ADMIN)
        assert client.delete(f"/v1/keys/{curator_key['id']}").status_code == 200
        with pytest.raises(ApiError, match="revoked") as refused, db.write() as session:
            keys.create_key(session, principal, KeyCreate(name="minted", release_ids=[rel], max_queries=5))
        assert refused.value.status == 401
    finally:
        db.dispose()
    assert "minted" not in {k["name"] for k in client.get("/v1/keys").json()}


def test_raises_racing_a_revocation_never_commit_after_it(live_server, database_url):
    url = live_server(database_url=database_url)
    admin = httpx.Client(base_url=url, headers=bearer(ADMIN), timeout=60)
    dataset = register(admin)
    key = governance_key(admin, release(admin, dataset["id"])["id"])
    statuses: list[int] = []
    go, stop = threading.Event(), threading.Event()

    def raise_repeatedly() -> None:
        with httpx.Client(base_url=url, headers=bearer(key["token"]), timeout=60) as client:
            go.wait()
            while not stop.is_set():
                statuses.append(client.post(f"/v1/datasets/{dataset['id']}/budget",
                                            json={"epsilon": 0.01, "delta": 0.0, "reason": "race"}).status_code)

    threads = [threading.Thread(target=raise_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    go.set()
    while statuses.count(201) < 8:
        threading.Event().wait(0.01)
    revoked = admin.delete(f"/v1/keys/{key['id']}")
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    assert revoked.status_code == 200, revoked.text
    events = admin.get("/v1/audit", params={"limit": 10_000}).json()
    [revocation] = [e["id"] for e in events if e["action"] == "key.revoke"]
    raises = [e["id"] for e in events if e["action"] == "dataset.budget_raise"]
    assert raises and statuses.count(201) == len(raises)
    assert max(raises) < revocation, (sorted(raises), revocation)  # none committed after the revocation
    assert set(statuses) <= {201, 401, 429}, statuses  # 401: revoked; 429: the back-off after 401s
    admin.close()


def test_the_service_layer_imports_no_http_types():
    for path in sorted((ROOT / "curator_service" / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.split(".")[0] in {"starlette", "fastapi"}], path

