"""Who may choose the noise: seeds come only from the curator in research mode; production is the default."""

from __future__ import annotations

import os
import time

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from curator_service.cli.serve import serve
from curator_service.persistence.db import MIGRATIONS_DIR, make_engine, migrate
from curator_service.persistence.models import Job, Release
from curator_service.services.job_kinds import KINDS
from curator_service.settings import Settings
from shared.api.schemas import SEEDED_JOB_WARNING, UNCHARGED_JOB_WARNING, UNKNOWN_SEED_WARNING
from tests.curator_service.conftest import assert_error, bearer, modeler_key, register, release

MODELER_KINDS = sorted(name for name, kind in KINDS.items() if "modeler" in kind.roles)


def test_the_service_defaults_to_production_mode(tmp_path, monkeypatch):
    assert Settings.from_env({}, data_dir=tmp_path).mode == "production"
    assert Settings(data_dir=tmp_path, database_url="sqlite://").mode == "production"
    started = {}
    monkeypatch.setattr("uvicorn.Server.run",
                        lambda server, *args: started.setdefault("settings", server.config.app.state.settings))
    for name in ("POBO_MODE", "POBO_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POBO_ADMIN_TOKEN", "production-mode-test-token-0123456789")
    umask = os.umask(0o022)
    try:
        serve(host="127.0.0.1", port=1, data_dir=tmp_path, database_url=None)
    finally:
        assert os.umask(umask) == 0o077  # serve makes everything it writes owner-only
    assert started["settings"].mode == "production"


def test_modeler_kinds_exist():
    assert {"dp-mean", "dp-bo", "dp-tune"} <= set(MODELER_KINDS)


@pytest.mark.parametrize("mode", ["research", "production"])
@pytest.mark.parametrize("kind", MODELER_KINDS)
def test_a_modeler_key_can_never_send_a_job_seed(make_client, mode, kind):
    client = make_client(mode=mode)
    dataset = register(client)
    # allowed: the seed is the refusal
    key = modeler_key(client, [release(client, dataset["id"], seed=None)["id"]], jobs=[kind])
    entries_before = client.get("/v1/ledger").json()
    response = client.post("/v1/jobs", json={"kind": kind, "dataset_id": dataset["id"], "params": {"seed": 1}},
                           headers=bearer(key["token"]))
    assert_error(response, 403, "seed_refused", "modeler key", "'seed'")
    jobs = [job for job in client.get("/v1/jobs").json() if job["kind"] != "release"]  # the key's release is a job
    assert jobs == [] and client.get("/v1/ledger").json() == entries_before


def test_the_curator_may_seed_a_job_in_research_mode_only(make_client):
    params = {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1, "seed": 1}
    research = make_client()
    dataset = register(research)
    assert research.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"],
                                           "params": params}).status_code == 202
    production = make_client(mode="production")
    assert_error(production.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"], "params": params}),
                 403, "seed_refused", "production")


def test_releases_and_audits_take_seeds_from_the_curator_only(client):
    """A modeler key cannot reach the seeded endpoints at all: both are curator-only."""
    dataset = register(client)
    rel = release(client, dataset["id"], seed=None)
    headers = bearer(modeler_key(client, [rel["id"]])["token"])
    body = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "seed": 1}
    assert_error(client.post(f"/v1/datasets/{dataset['id']}/releases", json=body, headers=headers), 403, "forbidden")
    assert_error(client.post(f"/v1/releases/{rel['id']}/audits/reconstruction", json={"known": 4, "seed": 1},
                             headers=headers), 403, "forbidden")


def _wait(client, job_id, timeout=30.0):
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def test_a_seeded_job_is_labelled_uncertified(client):
    dataset = register(client)
    params = {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.1}
    submitted = [client.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset["id"], "params": p}).json()
                 for p in ({**params, "seed": 2}, params)]
    seeded, unseeded = (_wait(client, job["id"]) for job in submitted)
    assert (seeded["seeded"], seeded["certified"], seeded["warnings"]) == (True, False, [SEEDED_JOB_WARNING])
    assert (unseeded["seeded"], unseeded["certified"], unseeded["warnings"]) == (False, True, [])
    assert submitted[0]["certified"] is False and submitted[0]["warnings"] == [SEEDED_JOB_WARNING]
    assert [job["certified"] for job in client.get("/v1/jobs").json()] == [False, True]


def test_a_job_charged_nothing_is_not_called_certified(client):
    dataset = register(client)
    job = client.post("/v1/jobs", json={"kind": "dpareto", "dataset_id": dataset["id"],
                                        "params": {"label_column": "y", "iterations": 0, "initial_points": 2}}).json()
    assert job["epsilon"] == job["delta"] == 0 and job["certified"] is False
    assert job["warnings"] == [UNCHARGED_JOB_WARNING]
    client.post(f"/v1/jobs/{job['id']}/cancel")


def test_migration_0002_uncertifies_old_releases_and_fails_queued_modeler_seeded_jobs(tmp_path, make_client):
    """A database at revision 0001 (seeds were not recorded; modeler keys could seed jobs) upgraded at start."""
    engine = make_engine(f"sqlite:///{tmp_path / 'curator.db'}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        now = "2026-01-01 00:00:00"
        connection.execute(text(
            'INSERT INTO datasets (id, name, n, d, columns, feature_columns, evaluator, scaling, goal, budget_epsilon,'
            ' budget_delta, "table", created_at) VALUES (1, \'old\', 2, 1, :columns, :columns, :evaluator, :scaling,'
            ' \'maximize\', 1, 0.001, x\'00\', :now)'),
            {"columns": '["a"]', "evaluator": '{"kind": "manual"}', "scaling": '{"kind": "identity"}', "now": now})
        connection.execute(text(
            "INSERT INTO releases (id, dataset_id, mechanism, certified, epsilon, delta, n, dim, inputs, created_at)"
            " VALUES (1, 1, 'gaussian', 1, 0.5, 1e-5, 2, 1, x'00', :now)"), {"now": now})
        for key_id, role in ((1, "modeler"), (2, "curator")):
            connection.execute(text(
                "INSERT INTO api_keys (id, name, role, token_hash, release_ids, max_queries, used_queries, revoked,"
                " created_at) VALUES (:id, 'k', :role, :hash, '[1]', 1, 0, 0, :now)"),
                {"id": key_id, "role": role, "hash": str(key_id) * 64, "now": now})
        for job_id, key_id, params in ((1, 1, '{"seed": 3}'), (2, 1, '{}'), (3, 2, '{"seed": 3}')):
            connection.execute(text(
                "INSERT INTO jobs (id, kind, dataset_id, key_id, params, status, progress, epsilon, delta,"
                " cancel_requested, created_at) VALUES (:id, 'gone', 1, :key, :params, 'queued', 0, 0, 0, 0, :now)"),
                {"id": job_id, "key": key_id, "params": params, "now": now})
    engine.dispose()
    with Session(make_engine(f"sqlite:///{tmp_path / 'curator.db'}")) as session:
        migrate(session.get_bind())
        old = session.get(Release, 1)
        assert (old.seeded, old.certified) == (None, False)
        jobs = {job.id: job for job in session.scalars(select(Job))}
        assert jobs[1].status == "failed" and "modeler key and a seed" in jobs[1].message
        assert jobs[2].status == jobs[3].status == "queued"  # no seed, or the curator's (research mode decides)
    shown = make_client().get("/v1/releases/1").json()
    assert shown["certified"] is False and shown["seeded"] is None and shown["warnings"][0] == UNKNOWN_SEED_WARNING
