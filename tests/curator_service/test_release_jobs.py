"""Releases are jobs: 201 with the release when it finishes within the wait, else 202 with its job;
idempotent by ``request_id``; charged once, when stored; a cancelled one charges nothing; progress per chunk; the
CLI follows the job to the end. The jobs run on the suite's Dask cluster (tests/conftest.py)."""

from __future__ import annotations

import json
import re
import time

import httpx
import numpy as np
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from curator_service.app import create_app
from curator_service.cli import app as cli_app
from curator_service.jobs import DatasetInfo, JobContext
from curator_service.persistence.blobs import RawTable
from curator_service.services.job_kinds import release as release_kind
from shared.api.schemas import UNCERTIFIED_WARNING, ScalingSpec
from shared.dp.noise import seeded_streams
from shared.releases import gaussian
from tests.curator_service.conftest import (
    ADMIN,
    ADMIN_HEADERS,
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

BODY = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "dim": 3}
LONG_N = 90_000  # × 3 features: 270,000 samples, two chunks of the safe sampler, seconds of work


def releases_url(dataset: dict) -> str:
    return f"/v1/datasets/{dataset['id']}/releases"


def finished(client: TestClient, job_id: int, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


def register_long(client: TestClient) -> dict:
    X = np.random.default_rng(1).uniform(0.1, 0.9, size=(LONG_N, 3))
    response = upload(client, table_csv(X, X.sum(axis=1)), dataset_spec(name="long"))
    assert response.status_code == 201, response.text
    return response.json()


def test_a_small_release_answers_201_and_its_job_records_the_release(client):
    dataset = register(client)
    made = release(client, dataset["id"])
    [job] = client.get("/v1/jobs").json()
    assert (job["kind"], job["status"], job["result"]) == ("release", "succeeded", {"release_id": made["id"]})
    [entry] = client.get("/v1/ledger").json()
    assert (entry["release_id"], entry["epsilon"]) == (made["id"], 1.0)


def test_past_the_wait_the_answer_is_202_with_the_job_which_then_stores_the_release_once(make_client):
    client = make_client(release_wait_seconds=0)
    dataset = register(client)
    response = client.post(releases_url(dataset), json=BODY)
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["kind"] == "release" and job["status"] in ("queued", "running")
    assert response.headers["location"] == f"/v1/jobs/{job['id']}"
    # Charged when stored, not at submission: a charge read now means the job had already stored the release (on an
    # idle machine a 40-row release may be done by the time the ledger is read).
    ledger = client.get("/v1/ledger").json()
    assert ledger == [] or client.get(f"/v1/jobs/{job['id']}").json()["status"] == "succeeded"
    done = finished(client, job["id"])
    assert (done["status"], done["progress"]) == ("succeeded", 1.0)
    made = client.get(f"/v1/releases/{done['result']['release_id']}").json()
    assert made["certified"] and made["n"] == 40
    assert [e["release_id"] for e in client.get("/v1/ledger").json()] == [made["id"]]


def test_the_job_of_an_uncertified_release_says_so(make_client):
    client = make_client(release_wait_seconds=0)
    dataset = register(client)
    job = client.post(releases_url(dataset), json={**BODY, "mechanism": "po-gp-ucb"}).json()
    assert job["certified"] is False and UNCERTIFIED_WARNING in job["warnings"]
    certified = client.post(releases_url(dataset), json=BODY).json()
    assert certified["certified"] is True and certified["warnings"] == []
    for made in (job, certified):
        finished(client, made["id"])


def test_a_retried_request_id_returns_the_same_release_charged_once_and_another_body_is_a_conflict(client):
    dataset = register(client)
    first = client.post(releases_url(dataset), json={**BODY, "request_id": "release-1"})
    again = client.post(releases_url(dataset), json={**BODY, "request_id": "release-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert_error(client.post(releases_url(dataset), json={**BODY, "epsilon": 2.0, "request_id": "release-1"}),
                 409, "conflict", "request_id")
    assert len(client.get("/v1/ledger").json()) == len(client.get("/v1/releases").json()) == 1


def test_cancelling_a_release_before_it_is_stored_charges_nothing(make_client):
    client = make_client(release_wait_seconds=0)
    dataset = register_long(client)
    response = client.post(releases_url(dataset), json=BODY)
    assert response.status_code == 202, response.text
    cancelled = client.post(f"/v1/jobs/{response.json()['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    job = finished(client, response.json()["id"])
    assert job["status"] == "cancelled" and "nothing was charged" in job["message"]
    assert client.get("/v1/ledger").json() == [] and client.get("/v1/releases").json() == []
    assert client.get(f"/v1/datasets/{dataset['id']}").json()["budget"]["spent_epsilon"] == 0


def test_a_release_that_cannot_fit_is_refused_at_submission(client):
    dataset = register(client, budget={"epsilon": 1.0, "delta": 1e-3})
    assert_error(client.post(releases_url(dataset), json={**BODY, "epsilon": 1.5}), 409, "budget_exceeded",
                 "epsilon=1.5")
    assert client.get("/v1/jobs").json() == []


def run_context(n: int, seed: int, progress: list) -> JobContext:
    """The context a worker gives the kind (no cluster: ``ctx.map`` is a loop here), for an n × 3 table."""
    X, y = synthetic_table(n, seed)
    table = RawTable({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}, ("a", "b", "c"))
    info = DatasetInfo(id=1, n=n, d=3, columns=("a", "b", "c", "y"), numeric_columns=("a", "b", "c", "y"),
                       feature_columns=("a", "b", "c"), evaluator={"kind": "column", "column": "y"},
                       scaling=ScalingSpec.model_validate(dataset_spec()["scaling"]))
    noise, rng = seeded_streams(0)
    return JobContext(job_id=1, params=release_kind.KIND.parse({**BODY, "seed": 0}), dataset=info, table=table,
                      epsilon=1.0, delta=1e-5, noise=noise, rng=rng,
                      progress=lambda fraction, message=None: progress.append(fraction), cancelled=lambda: False)


def test_the_job_reports_progress_per_chunk_and_the_same_for_any_data_of_the_same_size(monkeypatch):
    monkeypatch.setattr(gaussian, "CHUNK_SAMPLES", 300)  # 100 rows a chunk at r = 3
    seen: list[list[float]] = []
    for seed in (0, 1):
        seen.append([])
        computed = release_kind.run(run_context(1_000, seed, seen[-1]))
        assert computed.Z.shape == (1_000, 3)
    assert seen[0] == seen[1] == [0.0] + [(i + 1) / 10 for i in range(10)]


def invoke(url: str, *args: str):
    return CliRunner().invoke(cli_app, [*args, "--url", url, "--token", ADMIN], env={"COLUMNS": "250"})


def test_the_cli_follows_a_release_job_to_the_end_or_prints_the_job_with_no_wait(live_server):
    url = live_server(release_wait_seconds=0)
    with httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=60) as http:
        dataset = register(http)
        followed = invoke(url, "release", "create", "--dataset", str(dataset["id"]), "--epsilon", "1", "--json")
        assert followed.exit_code == 0, followed.output
        made = json.loads(followed.stdout)
        assert made["certified"] and made["dataset_id"] == dataset["id"]
        [job] = http.get("/v1/jobs").json()
        assert job["result"] == {"release_id": made["id"]} and job["request_id"]  # the CLI sent a fresh request_id
        queued = invoke(url, "release", "create", "--dataset", str(dataset["id"]), "--epsilon", "1", "--no-wait",
                        "--request-id", "cli-1", "--json")
        assert queued.exit_code == 0, queued.output
        job = json.loads(queued.stdout)
        assert (job["kind"], job["request_id"]) == ("release", "cli-1")
        released = http.get(f"/v1/jobs/{job['id']}").json()
        while released["status"] in ("queued", "running"):
            time.sleep(0.1)
            released = http.get(f"/v1/jobs/{job['id']}").json()
        again = invoke(url, "release", "create", "--dataset", str(dataset["id"]), "--epsilon", "1",
                       "--request-id", "cli-1", "--json")  # picks up the release that job stored: no new charge
        assert json.loads(again.stdout)["id"] == released["result"]["release_id"]
        assert len(http.get("/v1/ledger").json()) == 2



def form_csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_the_console_form_sends_a_release_past_the_wait_to_its_job_page(make_settings):
    app = create_app(make_settings(release_wait_seconds=0))
    with TestClient(app, base_url="https://testserver", headers=ADMIN_HEADERS) as browser:
        dataset = register(browser)
        login = browser.post("/console/login",
                             data={"token": ADMIN, "csrf": form_csrf(browser.get("/console/login").text)},
                             follow_redirects=False)
        assert login.status_code == 303, login.text
        page = browser.get(f"/console/datasets/{dataset['id']}").text
        made = browser.post(f"/console/datasets/{dataset['id']}/releases", follow_redirects=False,
                            data={"mechanism": "gaussian", "epsilon": "1", "delta": "1e-5", "dim": "auto",
                                  "csrf": form_csrf(page)})
        [job] = browser.get("/v1/jobs").json()
        assert (made.status_code, made.headers["location"]) == (303, f"/console/jobs/{job['id']}")
        assert "Release job" in browser.get(made.headers["location"]).text


def test_a_release_whose_curator_key_was_revoked_before_it_was_stored_charges_nothing(make_client):
    client = make_client(release_wait_seconds=0)
    dataset = register_long(client)
    small = client.post(releases_url(register(client)), json=BODY).json()
    key = modeler_key(client, [finished(client, small["id"])["result"]["release_id"]], role="curator")
    response = client.post(releases_url(dataset), json=BODY, headers=bearer(key["token"]))
    assert response.status_code == 202, response.text
    assert client.delete(f"/v1/keys/{key['id']}").status_code == 200
    job = finished(client, response.json()["id"])
    assert job["status"] == "failed" and "revoked" in job["message"] and "nothing was" in job["message"]
    assert len(client.get("/v1/ledger").json()) == len(client.get("/v1/releases").json()) == 1  # the admin's only
