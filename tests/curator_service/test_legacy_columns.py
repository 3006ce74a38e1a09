"""A dataset registered before columns were declared (revision 0010 derived its numeric columns from its cells) is
limited to its declared columns by revision 0013, with a warning naming what jobs may no longer read: a job naming a
column with one bad cell and one naming a column without get the same answer."""

from __future__ import annotations

import logging
import time

import numpy as np
from sqlalchemy import text

from curator_service.persistence.db import migrate
from shared.api.schemas import UNFINISHED_JOB_STATUSES
from tests.curator_service.conftest import assert_error, bearer, dataset_spec, modeler_key, release, upload


def legacy_dataset(client) -> dict:
    """A table with a numeric extra column ``x`` and a column ``z`` with one bad cell, its row made as revision 0010
    made a dataset registered before it: every column stored as numbers readable, no label columns."""
    rng = np.random.default_rng(0)
    lines = ["a,b,c,y,x,z"] + [",".join(f"{v:.6f}" for v in rng.uniform(0, 1, 6)) for _ in range(30)]
    lines[7] = lines[7].rsplit(",", 1)[0] + ",n/a"
    response = upload(client, "\n".join(lines) + "\n", dataset_spec(name="legacy"))
    assert response.status_code == 201, response.text
    dataset = response.json()
    with client.app.state.db.engine.begin() as connection:
        connection.execute(text("UPDATE datasets SET label_columns = NULL, numeric_columns = :numeric WHERE id = :id"),
                           {"numeric": '["a", "b", "c", "y", "x"]', "id": dataset["id"]})
        connection.execute(text("UPDATE alembic_version SET version_num = '0012'"))
    return dataset


def job(client, token: str, dataset_id: int, column: str):
    return client.post("/v1/jobs", headers=bearer(token), json={
        "kind": "dp-mean", "dataset_id": dataset_id,
        "params": {"column": column, "lower": 0.0, "upper": 1.0, "epsilon": 0.5}})


def test_a_legacy_datasets_undeclared_columns_answer_alike_whatever_their_cells(make_client, caplog):
    client = make_client()
    dataset = legacy_dataset(client)
    key = modeler_key(client, [release(client, dataset["id"])["id"]], jobs=["dp-mean"])
    submitted = job(client, key["token"], dataset["id"], "x")
    assert submitted.status_code in (201, 202), submitted.text  # 0010's cell-derived columns
    deadline = time.monotonic() + 120  # the job's worker writes to the database: migrate once it has finished
    while client.get(f"/v1/jobs/{submitted.json()['id']}").json()["status"] in UNFINISHED_JOB_STATUSES:
        assert time.monotonic() < deadline, "the dp-mean job did not finish in 120 s"
        time.sleep(0.2)
    with caplog.at_level(logging.WARNING, logger="curator_service.migrations"):
        migrate(client.app.state.db.engine)
    [warning] = [r.getMessage() for r in caplog.records if r.name == "curator_service.migrations"]
    assert "dataset 1 ('legacy')" in warning and "['x']" in warning and "n/a" not in warning
    with client.app.state.db.engine.connect() as connection:
        assert connection.execute(text("SELECT numeric_columns FROM datasets")).scalar_one() in (
            '["a", "b", "c", "y"]', ["a", "b", "c", "y"])
    answers = [job(client, key["token"], dataset["id"], column) for column in ("x", "z")]
    for answer in answers:
        assert_error(answer, 422, "validation_error", "is not a numeric column of the dataset")
    assert answers[0].json()["detail"].replace("'x'", "'z'") == answers[1].json()["detail"]
