"""Least privilege for keys: no key changes its own policy, a key makes or changes keys only inside its own policy,
and budget raises and key governance need the admin token or a governance key. Each refusal is a 403 with a
sentence, audited as ``<action>.refused`` with its reason, and changes nothing. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.curator_service.conftest import assert_error, bearer, modeler_key, register, release


@pytest.fixture
def world(make_client, database_url):
    client = make_client(database_url=database_url)
    dataset = register(client)
    return client, dataset, release(client, dataset["id"])["id"]


def moment(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


def refusals(client, action: str) -> list[dict]:
    return [e for e in client.get("/v1/audit", params={"action": action}).json() if e["action"] == action]


def policy_of(client, key_id: int) -> dict:
    return client.get(f"/v1/keys/{key_id}/policy").json()


def test_a_restricted_key_cannot_widen_its_own_policy(world):
    client, _, rel = world
    restricted = modeler_key(client, [rel], role="curator", jobs=["dp-mean"], expires_at=moment(30))
    before = policy_of(client, restricted["id"])
    for change in ({"jobs": None, "expires_at": None}, {"jobs": ["dp-mean", "dp-bo"]}, {"expires_at": moment(60)},
                   {"governance": True}):
        refused = client.put(f"/v1/keys/{restricted['id']}/policy", json=change, headers=bearer(restricted["token"]))
        assert_error(refused, 403, "forbidden", "its own policy")
    assert policy_of(client, restricted["id"]) == before
    events = refusals(client, "key.policy.refused")
    assert len(events) == 4 and all(e["target"] == f"key:{restricted['id']} (its own policy)" for e in events)
    assert {e["actor"] for e in events} == {f"key:{restricted['id']}:modeler"}


def test_not_even_a_governance_key_changes_its_own_policy(world):
    client, _, rel = world
    governor = modeler_key(client, [rel], role="curator", governance=True, expires_at=moment(30))
    refused = client.put(f"/v1/keys/{governor['id']}/policy", json={"expires_at": None},
                         headers=bearer(governor["token"]))
    assert_error(refused, 403, "forbidden", "its own policy")
    assert policy_of(client, governor["id"])["expires_at"] is not None


def test_a_restricted_key_cannot_create_a_wider_key(world):
    client, _, rel = world
    expiry = moment(30)
    restricted = modeler_key(client, [rel], role="curator", jobs=["dp-mean"], expires_at=expiry)
    as_restricted = bearer(restricted["token"])
    key = {"name": "child", "release_ids": [rel], "max_queries": 5, "role": "curator"}
    for wider, words in (({"jobs": ["dp-mean"]}, "expires at"),                    # never expires
                         ({"jobs": ["dp-mean"], "expires_at": moment(31)}, "expires at"),  # expires later
                         ({"expires_at": expiry}, "may not run itself"),               # every job kind
                         ({"jobs": ["dp-mean", "dp-bo"], "expires_at": expiry}, "'dp-bo'")):
        refused = client.post("/v1/keys", json={**key, **wider}, headers=as_restricted)
        assert_error(refused, 403, "forbidden", "creating a key refused", words)
    assert "child" not in {k["name"] for k in client.get("/v1/keys").json()}
    assert len(refusals(client, "key.create.refused")) == 4
    # Inside its own policy it still creates keys (the positive control).
    made = client.post("/v1/keys", json={**key, "jobs": ["dp-mean"], "expires_at": moment(29)}, headers=as_restricted)
    assert made.status_code == 201, made.text
    assert policy_of(client, made.json()["id"])["jobs"] == ["dp-mean"]
    modeler = client.post("/v1/keys", json={**key, "role": "modeler", "expires_at": expiry}, headers=as_restricted)
    assert modeler.status_code == 201, modeler.text  # a modeler key runs no job kind by default: inside


def test_a_capped_key_cannot_raise_a_budget_or_revoke_another_key(world):
    client, dataset, rel = world
    capped = modeler_key(client, [rel], role="curator", epsilon_cap=0.1)
    other = modeler_key(client, [rel], role="curator")
    budget, ledger = client.get(f"/v1/datasets/{dataset['id']}").json()["budget"], client.get("/v1/ledger").json()
    as_capped = bearer(capped["token"])
    raised = client.post(f"/v1/datasets/{dataset['id']}/budget", headers=as_capped,
                         json={"epsilon": 100.0, "delta": 0.0, "reason": "more"})
    assert_error(raised, 403, "forbidden", "raising a dataset's budget needs the admin token or a curator key "
                                           "marked for governance")
    revoked = client.delete(f"/v1/keys/{other['id']}", headers=as_capped)
    assert_error(revoked, 403, "forbidden", "revoking a key needs the admin token")
    assert client.get(f"/v1/datasets/{dataset['id']}").json()["budget"] == budget
    assert client.get("/v1/ledger").json() == ledger
    assert {k["id"]: k["revoked"] for k in client.get("/v1/keys").json()}[other["id"]] is False
    assert client.get("/v1/keys", headers=bearer(other["token"])).status_code == 200
    [raise_refusal] = refusals(client, "dataset.budget_raise.refused")
    [revoke_refusal] = refusals(client, "key.revoke.refused")
    assert raise_refusal["target"] == f"dataset:{dataset['id']} (not a governance key)"
    assert revoke_refusal["target"] == f"key:{other['id']} (not a governance key)"
    assert raise_refusal["actor"] == revoke_refusal["actor"] == f"key:{capped['id']}:modeler"


def test_key_governance_needs_a_governance_key_and_each_act_is_audited(world):
    client, dataset, rel = world
    plain = modeler_key(client, [rel], role="curator")  # uncapped, unrestricted, but not marked for governance
    target = modeler_key(client, [rel], role="curator", jobs=["dp-mean"])
    for refused in (client.put(f"/v1/keys/{target['id']}/policy", json={"jobs": None}, headers=bearer(plain["token"])),
                    client.delete(f"/v1/keys/{target['id']}", headers=bearer(plain["token"])),
                    client.post(f"/v1/datasets/{dataset['id']}/budget", headers=bearer(plain["token"]),
                                json={"epsilon": 1.0, "delta": 0.0, "reason": "more"})):
        assert_error(refused, 403, "forbidden", "governance")
    marked = client.post("/v1/keys", json={"name": "g", "release_ids": [rel], "max_queries": 1, "role": "curator",
                                           "governance": True}, headers=bearer(plain["token"]))
    assert_error(marked, 403, "forbidden", "only the admin token or a governance key may mark a key for governance")
    governor = modeler_key(client, [rel], role="curator", governance=True)
    assert policy_of(client, governor["id"])["governance"] is True
    as_governor = bearer(governor["token"])
    changed = client.put(f"/v1/keys/{target['id']}/policy", json={"jobs": None}, headers=as_governor)
    assert changed.status_code == 200 and len(changed.json()["jobs"]) > 1, changed.text
    raised = client.post(f"/v1/datasets/{dataset['id']}/budget", headers=as_governor,
                         json={"epsilon": 1.0, "delta": 0.0, "reason": "second study approved"})
    assert raised.status_code == 201, raised.text
    assert client.delete(f"/v1/keys/{target['id']}", headers=as_governor).status_code == 200
    acts = {e["action"]: e for e in client.get("/v1/audit").json() if e["actor"].startswith(f"key:{governor['id']}:")}
    assert acts["dataset.budget_raise"]["target"].endswith("second study approved)")
    assert acts["key.policy"]["target"] == f"key:{target['id']} (set: jobs)"
    assert acts["key.revoke"]["target"] == f"key:{target['id']}"


@pytest.mark.parametrize("policy, words", [
    ({"role": "modeler", "governance": True}, "curator keys only"),
    ({"role": "curator", "governance": True, "epsilon_cap": 1.0}, "no 'epsilon_cap'"),
    ({"role": "curator", "governance": True, "jobs": ["dp-mean"]}, "no 'epsilon_cap', 'delta_cap' or 'jobs'"),
])
def test_a_governance_key_has_no_cap_and_no_job_list(world, policy, words):
    client, _, rel = world
    refused = client.post("/v1/keys", json={"name": "g", "release_ids": [rel], "max_queries": 1, **policy})
    assert_error(refused, 422, "validation_error", words)
