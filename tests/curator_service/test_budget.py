"""Budgets: defaults that leave room for more than one release, and raises that are recorded, never silent."""

from __future__ import annotations

import pytest

from tests.curator_service.conftest import assert_error, bearer, flat, modeler_key, register, release


def test_a_raise_is_a_ledger_entry_and_an_audit_event(client):
    dataset = register(client, budget={"epsilon": 1.0, "delta": 1e-5})
    release(client, dataset["id"], epsilon=1.0, delta=1e-5)
    refused = client.post(f"/v1/datasets/{dataset['id']}/releases",
                          json={"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-6, "dim": 2})
    assert_error(refused, 409, "budget_exceeded", "raise the budget")
    raised = client.post(f"/v1/datasets/{dataset['id']}/budget",
                         json={"epsilon": 0.5, "delta": 1e-6, "reason": "second study approved by the DPO"})
    assert raised.status_code == 201, raised.text
    assert raised.json() == {"total_epsilon": 1.5, "total_delta": pytest.approx(1.1e-5), "spent_epsilon": 1.0,
                             "spent_delta": 1e-5, "remaining_epsilon": 0.5, "remaining_delta": pytest.approx(1e-6)}
    assert client.get(f"/v1/datasets/{dataset['id']}").json()["budget"] == raised.json()
    entry = client.get("/v1/ledger").json()[-1]
    assert (entry["kind"], entry["epsilon"], entry["delta"]) == ("raise", 0.5, 1e-6)
    assert "second study approved by the DPO" in entry["purpose"] and entry["release_id"] is None
    [event] = client.get("/v1/audit", params={"action": "dataset.budget_raise"}).json()
    assert (event["actor"], event["target"]) == (  # the act with its amounts and reason
        "admin", f"dataset:{dataset['id']} (+epsilon 0.5, +delta 1e-06: second study approved by the DPO)")
    release(client, dataset["id"], epsilon=0.5, delta=1e-6)
    assert [e["kind"] for e in client.get("/v1/ledger").json()] == ["charge", "raise", "charge"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"epsilon": 0, "delta": 0, "reason": "nothing"}, ["above 0"]),
        ({"epsilon": 1}, ["'reason'", "required"]),
        ({"delta": 0.999, "reason": "too much"}, ["'delta' 1 or more"]),
        ({"epsilon": -1, "reason": "lower it"}, ["'epsilon'"]),
    ],
)
def test_bad_raises_are_refused_and_change_nothing(client, body, words):
    dataset = register(client)
    before = client.get(f"/v1/datasets/{dataset['id']}").json()["budget"]
    assert_error(client.post(f"/v1/datasets/{dataset['id']}/budget", json=body), 422, "validation_error", *words)
    assert client.get(f"/v1/datasets/{dataset['id']}").json()["budget"] == before
    assert client.get("/v1/ledger").json() == []


def test_only_the_curator_may_raise_a_budget(client):
    dataset = register(client)
    headers = bearer(modeler_key(client, [release(client, dataset["id"])["id"]])["token"])
    response = client.post(f"/v1/datasets/{dataset['id']}/budget", json={"epsilon": 5, "reason": "me"},
                           headers=headers)
    assert_error(response, 403, "forbidden")


def test_cli_defaults_leave_room_and_a_raise_shows_in_the_ledger(curator_cli):
    curator_cli("dataset", "add", str(curator_cli.csv), "--name", "t", "--features", "a,b,c", "--evaluator",
                "column:y", "--epsilon", "3", "--lower", "0,0,0", "--upper", "1,1,1")
    for _ in range(2):  # the default release δ is a tenth of the default dataset δ: the first leaves room
        curator_cli("release", "create", "--dataset", "1", "--epsilon", "1", "--dim", "2")
    listed = flat(curator_cli("dataset", "list"))
    assert "2 / 3" in listed and "2e-06 / 1e-05" in listed
    curator_cli("budget", "raise", "--dataset", "1", "--epsilon", "2", "--reason", "extension approved")
    assert "2 / 5" in curator_cli("dataset", "list")
    ledger = flat(curator_cli("ledger"))
    assert "raise" in ledger and "budget raised by the curator: extension approved" in ledger
