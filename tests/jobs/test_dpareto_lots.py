"""A dpareto job whose smallest lot is more than half its training rows is refused at submission (a 422 naming the
rows and the lot), not failed when it runs: the dataset's n and the held-out fraction are known to ``cost``."""

from __future__ import annotations

from tests.curator_service.conftest import assert_error
from tests.jobs.test_dpareto_limits_and_baselines import labelled
from tests.jobs.test_engine import wait

TINY = {"label_column": "y", "initial_points": 2, "iterations": 0, "max_epochs": 2}


def test_a_smallest_lot_over_half_the_training_rows_is_a_422_at_submission(client):
    """20 rows, 6 held out (test_fraction 0.3): 14 training rows take lots of at least 7, not the default 8."""
    dataset = labelled(client, n=20)
    submit = lambda params: client.post("/v1/jobs", json={"kind": "dpareto", "dataset_id": dataset["id"],  # noqa: E731
                                                          "params": params})
    assert_error(submit(TINY), 422, "validation_error", "14 training rows are too few for lots of at least 8",
                 "batch_size", "test_fraction")
    assert_error(submit({**TINY, "test_fraction": 0.5, "batch_size": [6, 9]}), 422, "validation_error",
                 "10 training rows are too few for lots of at least 6")
    assert client.get("/v1/jobs").json() == []

    job = submit({**TINY, "batch_size": [7, 512], "seed": 1})  # the boundary: lots in [7, 14]
    assert job.status_code == 202, job.text
    done = wait(client, job.json()["id"], timeout=300.0)
    assert done["status"] == "succeeded", done["message"]
    assert done["result"]["n_train"] == 14
    assert all(7 <= p["params"]["lot_size"] <= 14 for p in done["result"]["points"])
