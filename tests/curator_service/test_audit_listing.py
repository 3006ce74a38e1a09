"""``GET /v1/audit``: newest or oldest first, paged with a total, filtered by actor, action, target and "changes
only", and repeated identical events grouped, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from tests.curator_service.conftest import ADMIN_HEADERS, register


def _events(client, **params) -> tuple[list[tuple], int]:
    response = client.get("/v1/audit", params=params)
    assert response.status_code == 200, response.text
    rows = [(e["action"], e["target"], e["count"]) for e in response.json()]
    return rows, int(response.headers["X-Total-Count"])


def test_the_audit_log_pages_filters_and_groups(make_client, database_url):
    client = make_client(database_url=database_url)
    register(client)
    for _ in range(3):
        client.get("/v1/datasets/1")
    client.get("/v1/ledger")
    client.post("/v1/datasets/1/budget", json={"epsilon": 1.0, "reason": "a second study"})
    client.get("/v1/datasets/1/row-order")  # not a change, but it reveals the file's order: always listed
    client.get("/v1/datasets/1", headers={"Authorization": "Bearer wrong"})
    client.get("/v1/datasets/1")
    client.get("/v1/datasets/1", headers=ADMIN_HEADERS)
    with_reads = ["dataset.create", "dataset.read", "dataset.read", "dataset.read", "ledger.read",
                  "dataset.budget_raise", "dataset.row_order", "auth.failed", "dataset.read", "dataset.read"]

    every, total = _events(client)
    assert [action for action, _, _ in every] == with_reads and total == 10
    assert {count for _, _, count in every} == {1}
    newest, _ = _events(client, order="newest")
    assert newest == every[::-1]

    changes, total = _events(client, changes_only=True, order="newest")
    assert [action for action, _, _ in changes] == ["auth.failed", "dataset.row_order", "dataset.budget_raise",
                                                    "dataset.create"]
    assert total == 4

    grouped, total = _events(client, grouped=True)
    assert grouped == [("dataset.create", "dataset:1", 1), ("dataset.read", "dataset:1", 3), ("ledger.read", None, 1),
                       ("dataset.budget_raise", "dataset:1 (+epsilon 1, +delta 0: a second study)", 1),
                       ("dataset.row_order", "dataset:1", 1),
                       ("auth.failed", "GET /v1/datasets/1", 1), ("dataset.read", "dataset:1", 2)]
    assert total == 7
    [run] = client.get("/v1/audit", params={"grouped": True, "offset": 1, "limit": 1}).json()
    assert run["last_id"] == run["id"] + 2 and run["last_at"] >= run["created_at"]
    [same] = client.get("/v1/audit", params={"grouped": True, "order": "newest", "offset": 5, "limit": 1}).json()
    assert same == run  # read from the newest end, a run keeps its first and last event
    page, total = _events(client, grouped=True, order="newest", offset=1, limit=2)
    assert [action for action, _, _ in page] == ["auth.failed", "dataset.row_order"] and total == 7

    reads, total = _events(client, action="dataset.read", grouped=True)
    assert reads == [("dataset.read", "dataset:1", 5)] and total == 1  # the filter runs first: one run of five
    assert _events(client, target="GET /v1")[0] == [("auth.failed", "GET /v1/datasets/1", 1)]
    assert _events(client, actor="admin", action="auth.")[1] == 0


def test_a_bad_order_is_refused_with_a_sentence(client):
    response = client.get("/v1/audit", params={"order": "sideways"})
    assert response.status_code == 422 and "order" in response.json()["detail"]
