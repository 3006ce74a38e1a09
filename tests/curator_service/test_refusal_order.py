"""What a job submission's refusal says depends on public facts only, in one order: the key's job limit, the
dataset's budget and the key's own cap come before the column check, so a key over its cap gets the same 409
whether its column is one it may read or not; dp-tune's label column refusals are one sentence."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from curator_service.services.job_kinds.inputs import check_label_column
from tests.curator_service.conftest import assert_error, bearer, modeler_key, register, release


def mean_job(client, token: str, dataset_id: int, column: str):
    return client.post("/v1/jobs", headers=bearer(token), json={
        "kind": "dp-mean", "dataset_id": dataset_id,
        "params": {"column": column, "lower": 0.0, "upper": 1.0, "epsilon": 0.5}})


def test_over_its_cap_a_key_gets_409_for_a_column_it_may_read_and_one_it_may_not(make_client):
    client = make_client()
    dataset = register(client)
    key = modeler_key(client, [release(client, dataset["id"])["id"]], jobs=["dp-mean"], epsilon_cap=0.1)
    for column in ("y", "no such column"):
        assert_error(mean_job(client, key["token"], dataset["id"], column), 409, "budget_exceeded",
                     "this key's own cap")


def test_dp_tunes_two_label_refusals_are_one_sentence(make_client):
    for labels in ((), ("l",)):
        dataset = SimpleNamespace(feature_columns=("a",), label_columns=labels, numeric_columns=("a", "l", "m"))
        sentences = set()
        for column in ("a", "m") if labels else ("a",):  # a feature; a numeric column the curator did not approve
            with pytest.raises(ValueError) as refused:
                check_label_column(dataset, column)
            sentences.add(str(refused.value).replace(repr(column), "COLUMN"))
        assert len(sentences) == 1 and "is not one of this dataset's 0/1 label columns" in sentences.pop()
    client = make_client()
    dataset = register(client)
    answer = client.post("/v1/jobs", json={"kind": "dp-tune", "dataset_id": dataset["id"],
                                           "params": {"label_column": "a", "epsilon": 0.5, "k": 2,
                                                      "max_iterations": 1, "final_epsilon": 0.5,
                                                      "final_delta": 1e-6, "candidates": [
                                                          {"learning_rate": 0.05, "batch_size": 1, "epochs": 1,
                                                           "clip_norm": 1.0}]}})
    assert_error(answer, 422, "validation_error", "label_column 'a' is not one of this dataset's 0/1 label columns")
