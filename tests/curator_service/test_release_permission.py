"""A key's ``jobs`` list governs the kinds submitted through ``POST /v1/jobs``, not releases.

Releases are jobs of kind ``release`` created only by their own endpoint; a curator key whose policy lists other kinds
still releases, and its ε/δ cap counts them. A modeler key runs only its list.
"""

from __future__ import annotations

from tests.curator_service.conftest import register

GAUSSIAN = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5}


def bearer(key: dict) -> dict[str, str]:
    return {"Authorization": f"Bearer {key['token']}"}


def new_key(client, release_id: int, **policy) -> dict:
    response = client.post("/v1/keys", json={"name": "k", "release_ids": [release_id], "max_queries": 10, **policy})
    assert response.status_code == 201, response.text
    return response.json()


def test_a_curator_key_listing_dp_mean_can_release_within_its_cap(client):
    dataset = register(client)
    first = client.post(f"/v1/datasets/{dataset['id']}/releases", json=GAUSSIAN)
    assert first.status_code == 201, first.text
    curator = new_key(client, first.json()["id"], role="curator", jobs=["dp-mean"], epsilon_cap=1.5)
    released = client.post(f"/v1/datasets/{dataset['id']}/releases", headers=bearer(curator), json=GAUSSIAN)
    assert released.status_code == 201, released.text
    # The cap still applies to releases: 1.0 spent, another 1.0 would pass 1.5.
    over = client.post(f"/v1/datasets/{dataset['id']}/releases", headers=bearer(curator), json=GAUSSIAN)
    assert over.status_code == 409 and over.json()["code"] == "budget_exceeded", over.text
    # The list still limits what it submits through POST /v1/jobs.
    refused = client.post("/v1/jobs", headers=bearer(curator), json={
        "kind": "dp-bo", "dataset_id": dataset["id"], "params": {}})
    assert refused.status_code == 403 and "'dp-bo'" in refused.json()["detail"], refused.text


def test_a_modeler_key_still_runs_only_its_listed_kinds_and_never_releases(client):
    dataset = register(client)
    release = client.post(f"/v1/datasets/{dataset['id']}/releases", json=GAUSSIAN)
    assert release.status_code == 201, release.text
    modeler = new_key(client, release.json()["id"], jobs=["dp-mean"])
    refused = client.post("/v1/jobs", headers=bearer(modeler), json={
        "kind": "dp-bo", "dataset_id": dataset["id"], "params": {}})
    assert refused.status_code == 403 and "'dp-bo'" in refused.json()["detail"], refused.text
    assert client.post(f"/v1/datasets/{dataset['id']}/releases", headers=bearer(modeler),
                       json=GAUSSIAN).status_code == 403
