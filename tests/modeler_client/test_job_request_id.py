"""A job is charged at submission, so the modeler's client sends every job under a request_id: a
connection dropped after the curator committed is retried under the same id and the dataset is charged once.
Also the checks the client makes before sending anything: a request id too long for a split ask's part suffix."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.client import REQUEST_ID_MAX_LENGTH, ModelerClient
from shared.api.http_client import ApiClient
from shared.api.schemas import MAX_INDICES_PER_REQUEST
from tests.modeler_client.test_cli_and_plot import flat
from tests.modeler_client.test_job_commands import OFFLINE

DP_MEAN = {"column": "y", "lower": 0.0, "upper": 1.0, "epsilon": 0.5}


class DropsFirstJobAnswer(httpx.HTTPTransport):
    """Delivers the first ``POST /v1/jobs`` to the server, then loses its answer (a dropped connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.job_posts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path == "/v1/jobs":
            self.job_posts += 1
            if self.job_posts == 1:
                response.read()
                raise httpx.ReadError("connection dropped after the server answered", request=request)
        return response


def test_a_job_whose_answer_is_lost_is_retried_and_charged_once(curator):
    rng = np.random.default_rng(3)
    dataset = curator.register_table("request-id", rng.uniform(0, 1, size=(40, 2)), ["a", "b"],
                                     evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
                                     extra_columns={"y": rng.uniform(0, 1, size=40)},
                                     scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1], "diameter": 1})
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, dim=2)
    key = curator.issue_key([release.id], max_queries=10, jobs=["dp-mean"])
    transport = DropsFirstJobAnswer()
    with ModelerClient(curator.url, api=ApiClient(curator.url, key.token, transport=transport, backoff=0.05)) as client:
        job = client.submit_job("dp-mean", dataset.id, DP_MEAN)
        again = client.submit_job("dp-mean", dataset.id, DP_MEAN, request_id="rerun-1")
        rerun = client.submit_job("dp-mean", dataset.id, DP_MEAN, request_id="rerun-1")  # the command rerun by hand
    assert transport.job_posts == 4 and rerun.id == again.id != job.id
    with curator.admin() as api:
        jobs = [j["id"] for j in api.get("/v1/jobs") if j["dataset_id"] == dataset.id and j["kind"] == "dp-mean"]
        charged = [e["job_id"] for e in api.get("/v1/ledger") if e["job_id"] in jobs]
    assert sorted(jobs) == sorted(charged) == sorted({job.id, again.id})  # two jobs, one charge each


def test_a_query_request_id_too_long_for_its_parts_is_refused_before_anything_is_sent():
    client = ModelerClient("http://127.0.0.1:9", "t")  # nothing listens: a request sent would fail differently
    indices = range(MAX_INDICES_PER_REQUEST + 1)  # two parts: the second is "<id>.2"
    with pytest.raises(ValueError, match="shorter"):
        client.query(1, indices, request_id="r" * (REQUEST_ID_MAX_LENGTH - 1))
    with pytest.raises(ValueError, match="shorter"):
        client.query(1, [0], request_id="r" * (REQUEST_ID_MAX_LENGTH + 1))


def test_the_job_commands_take_a_request_id_and_refuse_a_too_long_one_before_sending():
    runner = CliRunner()
    for command in ("dp-bo", "dp-tune"):
        help_text = flat(runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output)
        assert "--request-id" in help_text and "charged once" in help_text
        refused = runner.invoke(app, [command, *OFFLINE, "--request-id", "r" * (REQUEST_ID_MAX_LENGTH + 1)])
        assert refused.exit_code == 2 and "--request-id" in flat(refused.output), refused.output
