"""The audit trail records downloads of released inputs, reads of the ledger and of datasets, and
denied or failed authentication; never a token, a data value or an index."""

from __future__ import annotations

import json


def events_since(admin, start: int) -> list[dict]:
    return admin.get("/v1/audit", params={"offset": start}).json()


def test_downloads_of_released_inputs_are_audited_in_both_formats(world):
    admin, modeler, rel, key = world.admin, world.modeler, world.release, world.key
    start = len(admin.get("/v1/audit").json())
    assert modeler.get(f"/v1/releases/{rel['id']}/inputs").status_code == 200
    assert modeler.get(f"/v1/releases/{rel['id']}/inputs", headers={"Accept": "application/x-npy"}).status_code == 200
    downloads = [e for e in events_since(admin, start) if e["action"] == "release.inputs"]
    assert len(downloads) == 2, events_since(admin, start)
    assert all(e["actor"] == f"key:{key['id']}:modeler" and e["target"].startswith(f"release:{rel['id']}")
               for e in downloads)


def test_reads_of_the_ledger_and_of_datasets_are_audited(world):
    admin, dataset = world.admin, world.dataset
    start = len(admin.get("/v1/audit").json())
    admin.get("/v1/ledger")
    admin.get("/v1/datasets")
    admin.get(f"/v1/datasets/{dataset['id']}")
    actions = [(e["action"], e["target"]) for e in events_since(admin, start)]
    assert ("ledger.read", None) in actions or any(a == "ledger.read" for a, _ in actions), actions
    assert ("dataset.list", None) in actions or any(a == "dataset.list" for a, _ in actions), actions
    assert ("dataset.read", f"dataset:{dataset['id']}") in actions, actions


def test_failed_and_denied_authentication_are_audited_without_the_token(world):
    admin, modeler, key = world.admin, world.modeler, world.key
    start = len(admin.get("/v1/audit").json())
    wrong = "pobo_not-a-real-token-4417"
    with_wrong = admin.get("/v1/ledger", headers={"Authorization": f"Bearer {wrong}"})
    without = admin.get("/v1/ledger", headers={"Authorization": ""})
    denied = modeler.get("/v1/ledger")
    assert (with_wrong.status_code, without.status_code, denied.status_code) == (401, 401, 403)
    events = events_since(admin, start)
    failed = [e for e in events if e["action"] == "auth.failed"]
    refused = [e for e in events if e["action"] == "auth.denied"]
    assert len(failed) == 2 and all(e["target"] == "GET /v1/ledger" for e in failed), events
    assert [e["actor"] for e in refused] == [f"key:{key['id']}:modeler"], events
    assert refused[0]["target"] == "GET /v1/ledger"
    text = json.dumps(events)
    assert wrong not in text and "not-a-real" not in text and key["token"] not in text
