"""A dataset registered before migration 0003 keeps its file's row order (``source_rows`` NULL): every release of
it says so, private measurements, which need an order independent of the values, are refused on it, and the
planner says its bound's premise may fail there."""

from __future__ import annotations

import json

from alembic import command
from alembic.config import Config
from sqlalchemy import text

from curator_service.persistence.blobs import RawTable
from curator_service.persistence.db import MIGRATIONS_DIR, make_engine
from shared.api.schemas import FILE_ORDER_WARNING, ScalingSpec
from tests.curator_service.conftest import assert_error, dataset_spec, register, release, synthetic_table

MEASUREMENTS = {"clip": [-2.0, 2.0], "share": 0.5}


def old_dataset(database: str) -> int:
    """A dataset stored at revision 0002 (rows in the file's order), as an older pobo left it; its id."""
    X, y = synthetic_table(30)
    table = RawTable({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}, ("a", "b", "c"))
    spec = dataset_spec(name="old")
    engine = make_engine(database)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
        connection.execute(text(
            'INSERT INTO datasets (id, name, n, d, columns, feature_columns, evaluator, scaling, goal, budget_epsilon,'
            ' budget_delta, "table", created_at) VALUES (1, \'old\', 30, 3, :columns, :features, :evaluator,'
            ' :scaling, \'maximize\', 10, 0.001, :table, \'2026-01-01 00:00:00\')'),
            {"columns": json.dumps(["a", "b", "c", "y"]), "features": json.dumps(["a", "b", "c"]),
             "evaluator": json.dumps(spec["evaluator"]),
             "scaling": ScalingSpec.model_validate(spec["scaling"]).model_dump_json(),
             "table": table.encode()})
    engine.dispose()
    return 1


def test_every_release_of_a_file_order_dataset_warns_and_private_measurements_are_refused(tmp_path, make_client):
    dataset_id = old_dataset(f"sqlite:///{tmp_path / 'curator.db'}")
    client = make_client(mode="production")  # migrated to head at start; source_rows stays NULL

    plain = release(client, dataset_id)
    assert FILE_ORDER_WARNING in plain["warnings"]
    assert "re-register the table" in FILE_ORDER_WARNING and "row indices may reveal it" in FILE_ORDER_WARNING
    assert all(FILE_ORDER_WARNING in shown["warnings"]
               for shown in (client.get(f"/v1/releases/{plain['id']}").json(), *client.get("/v1/releases").json()))

    refused = client.post(f"/v1/datasets/{dataset_id}/releases", json={
        "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": MEASUREMENTS})
    assert_error(refused, 422, "validation_error", "file's order", "re-register the table")
    assert client.get(f"/v1/datasets/{dataset_id}").json()["budget"]["spent_epsilon"] == 1.0  # the plain one only

    plan = client.post(f"/v1/datasets/{dataset_id}/plan", json={"epsilons": [1.0]}).json()
    assert "pick rate on an ordinary record is at most 1/n" in plan["assumptions"]
    assert "keeps its file's row order" in plan["assumptions"] and "re-register the table" in plan["assumptions"]

    fresh = register(client)  # registered now: a secret order, so neither the warning nor the refusal
    private = release(client, fresh["id"], measurements=MEASUREMENTS)
    assert FILE_ORDER_WARNING not in private["warnings"] and private["parameters"]["measurements"] is not None
