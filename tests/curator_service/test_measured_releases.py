"""Private measurements in the service: a python evaluator is called for every row at release time and never on
the query path; its failure charges nothing; migration 0005; the public parameters' wire model."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.orm import Session

from curator_service.persistence.db import MIGRATIONS_DIR, make_engine, migrate
from curator_service.persistence.models import Dataset, Release
from shared.api.schemas import ReleaseParameters
from shared.releases import gaussian_release
from shared.releases.gaussian import PcaOption
from shared.releases.measurements import MeasurementOption
from tests.curator_service.conftest import assert_error, bearer, modeler_key, register, release

THIS = "tests.curator_service.test_measured_releases"
# A release's measurements run on a job worker, queries in the API process: calls are counted in a file both see
# (set while the tests are collected, before the suite's cluster starts its workers, which inherit it).
CALLS_FILE = Path(os.environ.setdefault("POBO_TEST_EVALUATOR_CALLS", tempfile.mkdtemp())) / "calls"


def score(row: dict) -> float:
    """A deterministic curator-side measurement that counts its calls."""
    with CALLS_FILE.open("a") as calls_file:
        calls_file.write(f"{row['a']}\n")
    return row["a"] + row["b"]


def slow_score(row: dict) -> float:
    time.sleep(0.005)
    return score(row)


def broken(row: dict) -> float:
    raise RuntimeError(f"cannot score {row}")


def calls() -> int:
    return len(CALLS_FILE.read_text().splitlines()) if CALLS_FILE.exists() else 0


def test_a_python_evaluator_is_called_once_per_row_at_release_time_and_never_by_a_query(client):
    dataset = register(client, n=25, evaluator={"kind": "python", "target": f"{THIS}:score"})
    CALLS_FILE.unlink(missing_ok=True)
    made = client.post(f"/v1/datasets/{dataset['id']}/releases", json={
        "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": [0, 2], "share": 0.5}})
    assert made.status_code == 201, made.text
    assert calls() == 25
    key = modeler_key(client, [made.json()["id"]], max_queries=20)
    session = client.post(f"/v1/releases/{made.json()['id']}/sessions", headers=bearer(key["token"])).json()
    answers = client.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, 1, 0]},
                          headers=bearer(key["token"])).json()["results"]
    assert calls() == 25  # the query path only reads the stored ỹ
    assert answers[0]["value"] == answers[2]["value"] != answers[1]["value"]


def test_a_cancelled_release_stops_calling_its_python_evaluator_within_a_few_hundred_rows(make_client):
    """The job shows `cancelled` within a second either way (its heartbeat); the evaluator's loop stopping is what
    the stop check adds: without it all n rows were measured after the cancel."""
    n = 4000
    client = make_client(release_wait_seconds=0)
    dataset = register(client, n=n, evaluator={"kind": "python", "target": f"{THIS}:slow_score"})
    CALLS_FILE.unlink(missing_ok=True)
    made = client.post(f"/v1/datasets/{dataset['id']}/releases", json={
        "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": [0, 2], "share": 0.5}})
    assert made.status_code == 202, made.text
    deadline = time.monotonic() + 300
    while calls() < 10:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.post(f"/v1/jobs/{made.json()['id']}/cancel").status_code == 200
    settled, last = time.monotonic(), calls()
    while time.monotonic() - settled < 3:  # until no call for 3 s
        assert time.monotonic() < deadline
        time.sleep(0.2)
        if (now := calls()) != last:
            settled, last = time.monotonic(), now
    assert last < n, "the evaluator measured every row after the cancel"
    job = client.get(f"/v1/jobs/{made.json()['id']}").json()
    assert job["status"] == "cancelled" and client.get("/v1/releases").json() == []
    print(f"stopped after {last} of {n} rows")


def test_a_failing_python_evaluator_stops_the_release_before_anything_is_charged(client):
    dataset = register(client, evaluator={"kind": "python", "target": f"{THIS}:broken"})
    response = client.post(f"/v1/datasets/{dataset['id']}/releases", json={
        "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": [0, 2], "share": 0.5}})
    assert_error(response, 500, "internal_error", "raised RuntimeError on a row", "nothing was stored or charged")
    assert "cannot score" not in response.text
    assert client.get(f"/v1/datasets/{dataset['id']}").json()["budget"]["spent_epsilon"] == 0
    assert client.get("/v1/releases").json() == []


def test_the_wire_model_holds_every_public_parameter_of_every_release_kind():
    """The service stores ``public_parameters()`` through ReleaseParameters: a parameter added to one must be in
    the other, or a release would lose it (or fail to be stored)."""
    X = np.zeros((4, 3))
    for r, options in ((3, {}), (2, {}), (5, {}), (2, {"projection": "pca", "pca": PcaOption(0.2, 1.0)}),
                       (3, {"y": np.zeros(4), "measurements": MeasurementOption((0.0, 1.0), 0.3)})):
        parameters = gaussian_release(X, 1.0, 1e-5, r, 0, **options).public_parameters()
        stored = ReleaseParameters.model_validate(parameters).model_dump(mode="json")
        assert stored == json.loads(json.dumps(parameters))


def test_migration_0005_keys_old_datasets_and_leaves_old_releases_unrecorded(tmp_path, make_client):
    """A database at revision 0004 upgraded at start: old datasets get a simulation key (memoised noise from now
    on); old releases have no recorded projection, parameters or private measurements, and are still served."""
    engine = make_engine(f"sqlite:///{tmp_path / 'curator.db'}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0004")
        now = "2026-01-01 00:00:00"
        for dataset_id in (1, 2):
            connection.execute(text(
                'INSERT INTO datasets (id, name, n, d, columns, feature_columns, evaluator, scaling, goal, '
                'budget_epsilon, budget_delta, "table", created_at) VALUES (:id, :name, 2, 1, :columns, :columns, '
                ':evaluator, :scaling, \'maximize\', 1, 0.001, x\'00\', :now)'),
                {"id": dataset_id, "name": f"old{dataset_id}", "columns": '["a"]', "evaluator": '{"kind": "manual"}',
                 "scaling": '{"kind": "identity"}', "now": now})
        connection.execute(text(
            "INSERT INTO releases (id, dataset_id, mechanism, certified, seeded, epsilon, delta, n, dim, noise_std,"
            " sensitivity, inputs, created_at)"
            " VALUES (1, 1, 'gaussian', 1, 0, 0.5, 1e-5, 2, 1, 3.0, 1.0, x'00', :now)"),
            {"now": now})
    engine.dispose()
    with Session(make_engine(f"sqlite:///{tmp_path / 'curator.db'}")) as session:
        migrate(session.get_bind())
        keys = [session.get(Dataset, i).simulation_key for i in (1, 2)]
        assert all(len(k) == 32 and int(k, 16) >= 0 for k in keys) and keys[0] != keys[1]
        old = session.get(Release, 1)
        assert (old.projection, old.parameters, old.measurements) == (None, None, None)
    shown = make_client(mode="production").get("/v1/releases/1").json()
    assert shown["certified"] is True and shown["projection"] is None and shown["parameters"] is None


def test_a_modeler_key_is_never_scoped_to_private_and_plain_measurements_of_one_dataset(client):
    """A plain release answers the true y_i, which the private release's noise is meant to hide."""
    first, other = register(client, name="first"), register(client, name="other")
    measurements = {"clip": [-2.0, 2.0], "share": 0.5}
    private = release(client, first["id"], measurements=measurements)["id"]
    plain, plain_other = release(client, first["id"])["id"], release(client, other["id"])["id"]
    private_too = release(client, first["id"], measurements=measurements)["id"]

    mixed = client.post("/v1/keys", json={"name": "m", "release_ids": [private, plain], "max_queries": 5})
    assert_error(mixed, 422, "validation_error", f"dataset {first['id']}", f"[{private}]", f"[{plain}]",
                 "scope the key to one kind only")
    assert client.get("/v1/keys").json() == []
    for allowed in ([private, private_too, plain_other], [plain, plain_other]):
        assert modeler_key(client, allowed)["release_ids"] == sorted(allowed)
    assert modeler_key(client, [private, plain], role="curator")["role"] == "curator"  # sees everything anyway
    note = client.get(f"/v1/releases/{private}").json()["measurements_note"]
    assert "only if no other release of this dataset returns y as computed" in note

