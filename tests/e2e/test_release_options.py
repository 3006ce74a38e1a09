"""End-to-end (a real ``pobo-curator serve`` on loopback): gaussian release options and private measurements.

One release = one Gaussian mechanism on [inputs, measurements] = one ledger entry; every query of a row returns
the ỹ drawn at release time, to every session and key; manual evaluators are refused; ``dim: "auto"`` is the
identity projection with sensitivity 1; the column evaluator's simulated noise is memoised per row.
"""

from __future__ import annotations

import uuid

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app as modeler_app
from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import RunSettings
from shared.algorithms.planner import release_mu
from shared.api.schemas import MEASUREMENTS_NOTE, PRIVATE_MEASUREMENTS_NOTE, ReleaseOut
from shared.dp.mechanisms import gaussian_delta
from shared.releases import gdp_mu
from tests.e2e.test_sessions import measurements_by_index, raw_table, register

CLIP = [-60.0, 0.0]
"""Public clip of y = −‖x − c‖² on the [0, 8]³ box of ``raw_table``."""


def admin_http(curator) -> httpx.Client:
    return httpx.Client(base_url=curator.url, headers={"Authorization": f"Bearer {curator.admin_token}"}, timeout=60)


def make_release(curator, dataset_id: int, **body) -> ReleaseOut:
    payload = {"mechanism": "gaussian", "epsilon": 2.0, "delta": 1e-5, **body}
    with admin_http(curator) as http:
        response = http.post(f"/v1/datasets/{dataset_id}/releases", json=payload)
    assert response.status_code == 201, response.text
    return ReleaseOut.model_validate(response.json())


def spent(curator, dataset_id: int) -> tuple[float, float]:
    with admin_http(curator) as http:
        budget = http.get(f"/v1/datasets/{dataset_id}").json()["budget"]
    return budget["spent_epsilon"], budget["spent_delta"]


def test_a_joint_release_is_one_ledger_entry_whose_mechanism_costs_exactly_that(curator):
    X, y = raw_table(11)
    dataset = register(curator, X, y)
    release = make_release(curator, dataset.id, measurements={"clip": CLIP, "share": 0.5})

    with admin_http(curator) as http:
        entries = [e for e in http.get("/v1/ledger").json() if e["dataset_id"] == dataset.id]
    assert [(e["epsilon"], e["delta"], e["release_id"], e["purpose"]) for e in entries] == [
        (2.0, 1e-5, release.id, "release of inputs and measurements (gaussian, identity)")]
    assert spent(curator, dataset.id) == (2.0, 1e-5)

    parameters = release.parameters.model_dump()
    mu = gdp_mu(2.0, 1e-5)
    assert parameters["mu"] == pytest.approx(mu, rel=1e-12)
    composed = release_mu(parameters)  # √((Δ_x/σ_x)² + (Δ_y/σ_y)²) over the two parts, from public numbers only
    assert mu * (1 - 1e-9) <= composed <= mu * (1 + 1e-9)
    assert gaussian_delta(1.0 / composed, 2.0) <= 1e-5 * (1 + 1e-9)  # μ-GDP at that μ is (2, 1e-5)-DP
    y_part = parameters["measurements"]["sensitivity"] / parameters["measurements"]["noise_std"]
    assert y_part**2 == pytest.approx(0.5 * mu**2, rel=1e-9)  # ρ = 0.5 of μ² to the measurements
    assert parameters["measurements"]["clip"] == tuple(CLIP) and parameters["input_share"] == pytest.approx(0.5)
    assert release.measurement_noise_std == parameters["measurements"]["noise_std"]
    assert release.measurements_note == PRIVATE_MEASUREMENTS_NOTE and release.certified


def test_every_query_of_a_row_returns_the_same_private_answer_in_every_session_and_key(curator):
    X, y = raw_table(12)
    dataset = register(curator, X, y)
    release = make_release(curator, dataset.id, epsilon=1.0, measurements={"clip": CLIP, "share": 0.5})
    rows = list(range(12))
    answers = []
    for _ in range(2):  # two keys, each with two sessions, each asking twice
        key = curator.issue_key([release.id], max_queries=100, name=f"m-{uuid.uuid4().hex[:6]}")
        client = ModelerClient(curator.url, key.token)
        for _ in range(2):
            session = client.open_session(release.id)
            for _ in range(2):
                answers.append([r.value for r in client.query(session.id, rows)])
            answers.append([q.value for q in client.queries(session.id)][: len(rows)])
        repeated = client.query(client.open_session(release.id).id, [5, 5, 5])
        assert [r.value for r in repeated] == [answers[0][5]] * 3
        assert all(r.status == "done" for r in repeated)
    assert all(a == answers[0] for a in answers)
    true_y = measurements_by_index(curator, dataset.id, y)[rows]
    noise = np.array(answers[0]) - np.clip(true_y, *CLIP)
    # σ_y at ε = 1, ρ = 0.5 is ~300 (clip range 60): the answers are the noisy ỹ, not y
    assert release.measurement_noise_std > 100 and np.all(np.abs(noise) > 1e-6) and np.std(noise) > 30


def test_a_manual_evaluator_cannot_have_private_measurements_and_nothing_is_charged(curator):
    X, y = raw_table(13)
    dataset = register(curator, X, y, evaluator={"kind": "manual"})
    with admin_http(curator) as http:
        response = http.post(f"/v1/datasets/{dataset.id}/releases", json={
            "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": CLIP, "share": 0.5}})
    assert response.status_code == 422 and response.json()["code"] == "validation_error"
    assert "'manual'" in response.json()["detail"] and "remove 'measurements'" in response.json()["detail"]
    assert spent(curator, dataset.id) == (0.0, 0.0)


@pytest.mark.parametrize(("body", "words"), [
    ({"mechanism": "po-gp-ucb", "measurements": {"clip": CLIP, "share": 0.5}}, "'gaussian' mechanism only"),
    ({"projection": "pca"}, "give both or neither"),
    ({"projection": "identity", "dim": 2}, "r must equal d = 3"),
    ({"dim": 2, "projection": "pca", "pca": {"share": 0.5, "clip_norm": 1.0},
      "measurements": {"clip": CLIP, "share": 0.5}}, "positive share"),
    ({"measurements": {"clip": [1.0, 0.0], "share": 0.5}}, "a < b"),
    ({"measurements": {"clip": CLIP, "share": 1.0}}, "must be in (0, 1)"),
])
def test_bad_release_options_are_refused_with_a_sentence_and_nothing_is_charged(curator, body, words):
    X, y = raw_table(14)
    dataset = register(curator, X, y)
    with admin_http(curator) as http:
        response = http.post(f"/v1/datasets/{dataset.id}/releases",
                             json={"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, **body})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation_error" and words in response.json()["detail"]
    assert spent(curator, dataset.id) == (0.0, 0.0)


def test_the_default_release_keeps_every_feature_with_the_identity_projection_and_sensitivity_one(curator):
    d = 12  # above the old cap of 10, where 'auto' used to draw a Gaussian M
    rng = np.random.default_rng(15)
    X = rng.uniform(0.0, 1.0, size=(30, d))
    dataset = curator.register_table(
        f"wide-{uuid.uuid4().hex[:8]}", X, [f"x{j}" for j in range(d)], evaluator={"kind": "column", "column": "y"},
        budget=(10.0, 1e-3), extra_columns={"y": X.sum(axis=1)},
        scaling={"kind": "bounds", "lower": [0.0] * d, "upper": [1.0] * d, "diameter": 1.0})
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5)
    assert (release.dim, release.projection, release.parameters.projection) == (d, "identity", "identity")
    assert release.parameters.projection_sensitivity == 1.0
    assert 1.0 <= release.sensitivity == release.parameters.sensitivity <= 1.0 + 1e-12  # + the sampler's grid slack
    assert release.parameters.floating_point_safe and release.parameters.measurements is None
    assert release.measurements_note == MEASUREMENTS_NOTE and release.measurement_noise_std is None


def test_the_column_evaluators_simulated_noise_is_drawn_once_per_row(curator):
    X, y = raw_table(16)
    dataset = register(curator, X, y, evaluator={"kind": "column", "column": "y", "noise_std": 0.5})
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5)
    key = curator.issue_key([release.id], max_queries=30)
    client = ModelerClient(curator.url, key.token)
    first, second = (client.open_session(release.id) for _ in range(2))
    answers = [[r.value for r in client.query(s.id, [3, 4, 3])] for s in (first, second, first)]
    assert answers[0] == answers[1] == answers[2] and answers[0][0] == answers[0][2]
    true_y = measurements_by_index(curator, dataset.id, y)
    simulated = np.array(answers[0][:2]) - true_y[[3, 4]]
    assert np.all(np.abs(simulated) > 1e-9) and np.all(np.abs(simulated) < 5 * 0.5)  # noisy, but the same noise
    # memoised, so a deterministic input to private measurements: allowed
    private = make_release(curator, dataset.id, epsilon=1.0, measurements={"clip": CLIP, "share": 0.5})
    assert private.parameters.measurements is not None


def test_gp_ucb_runs_on_private_measurements_with_their_noise_as_observation_noise(curator, tmp_path):
    X, y = raw_table(17)
    dataset = register(curator, X, y)
    release = make_release(curator, dataset.id, epsilon=8.0, measurements={"clip": CLIP, "share": 0.5})
    key = curator.issue_key([release.id], max_queries=10)
    client = ModelerClient(curator.url, key.token)
    loop = RemoteGPUCB.start(client, release.id, RunSettings(iterations=8), tmp_path / "run.json",
                             requery=False, measurement_noise_std=release.measurement_noise_std)
    record = loop.run()
    indices = [q.index for q in record.done()]
    assert len(set(indices)) == 8  # never re-queried: a memoised answer cannot change
    again = client.query(client.open_session(release.id).id, indices[:2])
    assert [r.value for r in again] == [q.value for q in record.done()][:2]
    assert record.release.measurement_noise_std == release.measurement_noise_std


def test_pobo_modeler_info_states_the_projection_and_every_public_parameter(curator):
    X, y = raw_table(18)
    dataset = register(curator, X, y)
    release = make_release(curator, dataset.id, measurements={"clip": CLIP, "share": 0.5})
    key = curator.issue_key([release.id], max_queries=1)
    result = CliRunner().invoke(modeler_app, ["info", "--url", curator.url, "--token", key.token,
                                              "--release", str(release.id)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "projection identity, r = 3" in out and f"μ = {release.parameters.mu:.4g} (GDP)" in out
    assert f"noise σ_y = {release.measurement_noise_std:.6g}" in out and "clip [-60, 0], share 0.5" in out
    assert "Measurements are private" in out
