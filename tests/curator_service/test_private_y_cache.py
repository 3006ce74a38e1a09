"""The query path keeps a release's decoded private measurements ỹ: two queries decode the stored blob
once, and the cache is keyed by the release's identity, so a new database whose release has the same id is never
answered from the old one's ỹ."""

from __future__ import annotations

import pytest

import curator_service.services.queries as queries
from tests.curator_service.conftest import bearer, modeler_key, register

MEASURED = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": [-2, 2], "share": 0.5}}


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    """Counts the query path's decodings of a ỹ blob."""
    calls: list[int] = []
    decode = queries.decode_matrix

    def counting(blob: bytes):
        calls.append(len(blob))
        return decode(blob)

    monkeypatch.setattr(queries, "decode_matrix", counting)
    return calls


def measured_answers(client, indices: list[int], times: int) -> list[list[float]]:
    """A measured release (fresh noise) and ``times`` queries of ``indices`` through one modeler session."""
    dataset = register(client, n=30)
    release = client.post(f"/v1/datasets/{dataset['id']}/releases", json=MEASURED)
    assert release.status_code == 201, release.text
    token = modeler_key(client, [release.json()["id"]], max_queries=50)["token"]
    session = client.post(f"/v1/releases/{release.json()['id']}/sessions", headers=bearer(token)).json()
    return [[r["value"] for r in client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": indices},
                                             headers=bearer(token)).json()["results"]] for _ in range(times)]


def test_two_queries_decode_the_private_measurements_once(client, decodes):
    first, second = measured_answers(client, [0, 5, 7], times=2)
    assert first == second and len(decodes) == 1


def test_a_new_database_with_the_same_release_id_is_not_answered_from_the_old_ones_cache(
        make_client, tmp_path, decodes):
    (old,) = measured_answers(make_client(), [0, 1, 2], times=1)
    (new,) = measured_answers(make_client(data_dir=tmp_path / "replaced"), [0, 1, 2], times=1)
    # Both databases' releases have id 1: keyed by the id alone, the new one would be answered with the old ỹ.
    assert len(decodes) == 2 and new != old
