"""Releases: both mechanisms, operator switches, inputs paging and .npy, and no raw value in any response."""

from __future__ import annotations

import io

import numpy as np
import pytest

from shared.api.schemas import (
    MEASUREMENTS_NOTE,
    PRIVATE_MEASUREMENTS_NOTE,
    SEEDED_WARNING,
    UNCERTIFIED_MEASUREMENTS_NOTE,
    UNCERTIFIED_WARNING,
)
from shared.releases import omega
from tests.curator_service.conftest import (
    assert_error,
    bearer,
    dataset_spec,
    modeler_key,
    register,
    release,
    synthetic_table,
    table_csv,
    upload,
)


def test_gaussian_release_is_certified_with_public_noise_std(client):
    dataset = register(client)
    rel = release(client, dataset["id"], epsilon=2.0, delta=1e-5, dim=2)
    assert rel["certified"] is True and rel["warnings"] == []
    assert rel["dim"] == 2 and rel["n"] == 40 and rel["noise_std"] > 0 and rel["sensitivity"] > 0
    assert rel["omega"] is None and rel["lifted"] is None


def test_po_gp_ucb_is_refused_unless_enabled(make_client):
    client = make_client(allow_uncertified_mechanisms=False)
    dataset = register(client)
    response = client.post(f"/v1/datasets/{dataset['id']}/releases",
                           json={"mechanism": "po-gp-ucb", "epsilon": 1.0, "delta": 1e-5})
    assert_error(response, 403, "uncertified_mechanism_disabled", "POBO_ALLOW_UNCERTIFIED_MECHANISMS")
    assert client.get("/v1/ledger").json() == []


def test_po_gp_ucb_is_marked_uncertified_everywhere_it_is_shown(client):
    dataset = register(client)
    rel = release(client, dataset["id"], mechanism="po-gp-ucb", epsilon=1.0, delta=1e-5, dim="auto")
    assert rel["certified"] is False and rel["warnings"] == [UNCERTIFIED_WARNING]
    assert rel["omega"] == pytest.approx(omega(1.0, 1e-5, rel["dim"]))
    key = modeler_key(client, [rel["id"]])
    for body in (client.get(f"/v1/releases/{rel['id']}").json(), client.get("/v1/releases").json()[0],
                 client.get(f"/v1/releases/{rel['id']}", headers=bearer(key["token"])).json()):
        assert body["certified"] is False and UNCERTIFIED_WARNING in body["warnings"]


def test_a_seeded_release_is_labelled_uncertified_in_every_response(client):
    dataset = register(client)
    seeded = release(client, dataset["id"], seed=3)
    unseeded = release(client, dataset["id"])
    assert (seeded["seeded"], seeded["certified"], seeded["warnings"]) == (True, False, [SEEDED_WARNING])
    assert (unseeded["seeded"], unseeded["certified"], unseeded["warnings"]) == (False, True, [])
    key = modeler_key(client, [seeded["id"]])
    audit = client.post(f"/v1/releases/{seeded['id']}/audits/reconstruction", json={"known": 4})
    for body in (client.get(f"/v1/releases/{seeded['id']}").json(), client.get("/v1/releases").json()[0],
                 client.get(f"/v1/releases/{seeded['id']}", headers=bearer(key["token"])).json(),
                 client.get("/v1/releases", headers=bearer(key["token"])).json()[0]):
        assert body["seeded"] is True and body["certified"] is False and body["warnings"] == [SEEDED_WARNING]
    assert audit.json()["warnings"] == [SEEDED_WARNING]
    po = release(client, dataset["id"], mechanism="po-gp-ucb", seed=4)
    assert po["warnings"] == [UNCERTIFIED_WARNING, SEEDED_WARNING] and po["certified"] is False


def test_only_a_certified_release_says_its_private_measurements_are_covered(client):
    """A seeded release's ỹ come from a reproducible generator: its note must not claim coverage, and its warning
    must say the answers are reproducible too."""
    dataset = register(client)
    measurements = {"clip": [-2.0, 2.0], "share": 0.5}
    seeded = release(client, dataset["id"], seed=3, measurements=measurements)
    certified = release(client, dataset["id"], measurements=measurements)
    plain = release(client, dataset["id"], seed=3)
    assert seeded["certified"] is False and seeded["measurements_note"] == UNCERTIFIED_MEASUREMENTS_NOTE
    assert "NOT covered" in seeded["measurements_note"] and "covered by the release" not in seeded["measurements_note"]
    assert seeded["warnings"] == [SEEDED_WARNING] and "ỹ are reproducible" in SEEDED_WARNING
    assert certified["certified"] is True and certified["measurements_note"] == PRIVATE_MEASUREMENTS_NOTE
    assert plain["measurements_note"] == MEASUREMENTS_NOTE


def test_seed_is_refused_in_production(make_client):
    client = make_client(mode="production")
    dataset = register(client)
    response = client.post(f"/v1/datasets/{dataset['id']}/releases",
                           json={"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "seed": 3})
    assert_error(response, 403, "seed_refused", "production", "'seed'")
    assert client.get("/v1/ledger").json() == []
    assert release(client, dataset["id"], seed=None)["certified"] is True  # unseeded: the OpenDP sampler


def test_inputs_paging_and_npy_agree(client):
    dataset = register(client, n=25)
    rel = release(client, dataset["id"], dim=2)
    npy = client.get(f"/v1/releases/{rel['id']}/inputs", headers={"Accept": "application/x-npy"})
    assert npy.headers["content-type"] == "application/x-npy"
    Z = np.load(io.BytesIO(npy.content), allow_pickle=False)
    assert Z.shape == (25, 2)
    rows = []
    for offset in range(0, 25, 10):
        page = client.get(f"/v1/releases/{rel['id']}/inputs", params={"offset": offset, "limit": 10}).json()
        assert page["n"] == 25 and page["dim"] == 2 and page["offset"] == offset
        rows += page["rows"]
    np.testing.assert_array_equal(np.array(rows), Z)
    assert_error(client.get(f"/v1/releases/{rel['id']}/inputs", params={"offset": 26}), 422, "validation_error",
                 "'offset'", "25 rows")


def test_the_same_seed_gives_the_same_release(client):
    dataset = register(client)
    a, b = release(client, dataset["id"], seed=5), release(client, dataset["id"], seed=5)
    za = client.get(f"/v1/releases/{a['id']}/inputs").json()["rows"]
    assert za == client.get(f"/v1/releases/{b['id']}/inputs").json()["rows"]


def _raw_strings(X: np.ndarray) -> set[str]:
    """Every way a raw feature value could be spelled in a JSON body."""
    return {text for v in X.ravel() for text in (repr(float(v)), f"{v:.9f}".rstrip("0"))}


def test_no_response_ever_contains_a_raw_feature_value(client):
    X, y = synthetic_table(30)
    dataset = upload(client, table_csv(X, y), dataset_spec()).json()
    bodies = [str(dataset)]
    for mechanism in ("gaussian", "po-gp-ucb"):
        rel = release(client, dataset["id"], mechanism=mechanism)
        key = modeler_key(client, [rel["id"]], max_queries=30)
        headers = bearer(key["token"])
        session = client.post(f"/v1/releases/{rel['id']}/sessions", headers=headers)
        sid = session.json()["id"]
        responses = [
            session,
            client.post(f"/v1/sessions/{sid}/queries", json={"indices": list(range(30))}, headers=headers),
            client.get(f"/v1/sessions/{sid}/queries", headers=headers),
            client.get(f"/v1/releases/{rel['id']}/inputs", headers=headers),
            client.get(f"/v1/releases/{rel['id']}", headers=headers),
            client.post(f"/v1/releases/{rel['id']}/audits/reconstruction", json={"known": 4, "seed": 0}),
            client.post(f"/v1/sessions/{sid}/queries", json={"indices": [31]}, headers=headers),
            client.get(f"/v1/datasets/{dataset['id']}"),
        ]
        bodies += [r.text for r in responses]
    bodies += [client.get(path).text for path in ("/v1/ledger", "/v1/audit", "/v1/keys", "/v1/datasets", "/v1/jobs")]
    raw = _raw_strings(X)
    leaks = [s for s in raw for body in bodies if s in body]
    assert leaks == []
    # Sanity: the measurements (which are released by design) are found, so the search itself works.
    assert any(repr(float(v)) in bodies[2] for v in y)


def test_reconstruction_audit_breaks_po_gp_ucb_but_not_gaussian(client):
    dataset = register(client, n=60)
    gauss = release(client, dataset["id"], epsilon=1.0, dim=3)
    po = release(client, dataset["id"], mechanism="po-gp-ucb", epsilon=1.0, dim=3)
    attack = {"known": 4, "seed": 0}
    po_report = client.post(f"/v1/releases/{po['id']}/audits/reconstruction", json=attack).json()
    gauss_report = client.post(f"/v1/releases/{gauss['id']}/audits/reconstruction", json=attack).json()
    assert po_report["max_relative_error"] < 1e-6 and po_report["warnings"] == [UNCERTIFIED_WARNING]
    assert gauss_report["median_relative_error"] > 0.5 and gauss_report["noise_std"] == gauss["noise_std"]
    assert set(po_report) >= {"known", "max_relative_error", "median_relative_error", "rms_error", "noise_std"}
    assert_error(client.post(f"/v1/releases/{po['id']}/audits/reconstruction", json={"known": 3}), 422,
                 "validation_error", "d + 1 = 4")


def test_reconstruction_audit_refuses_a_seed_in_production(make_client):
    client = make_client(mode="production")
    rel = release(client, register(client)["id"], seed=None)
    url = f"/v1/releases/{rel['id']}/audits/reconstruction"
    assert_error(client.post(url, json={"known": 4, "seed": 0}), 403, "seed_refused", "production", "'seed'")
    assert client.post(url, json={"known": 4}).status_code == 200
    assert [e["action"] for e in client.get("/v1/audit").json()].count("release.audit_reconstruction") == 1


def test_a_seeded_release_draws_its_noise_independently_of_m():
    """With X = 0, Z is the noise G alone; one seed used twice made G's first d rows noise_std · M."""
    from curator_service.services.releases import compute_release
    from shared.api.schemas import ReleaseCreate
    from shared.dp.noise import seeded_streams

    d, r, seed = 3, 2, 7
    body = ReleaseCreate(mechanism="gaussian", epsilon=1.0, delta=1e-5, dim=r, seed=seed)
    computed = compute_release(np.zeros((20, d)), body, None, *seeded_streams(seed))
    same_stream_m = np.random.default_rng(seed).standard_normal((d, r))
    assert not np.allclose(computed.Z[:d] / computed.noise_std, same_stream_m)
