"""Ledger entries record what was spent as data (mechanism, DP event with σ and sensitivity, actor), and
dp-accounting's own accountant, replaying a stored event, gets the charged ε back; migration 0006."""

from __future__ import annotations

import time

import pytest
from alembic import command
from alembic.config import Config
from dp_accounting.pld import PLDAccountant
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from curator_service.persistence.db import MIGRATIONS_DIR, make_engine, migrate
from curator_service.persistence.models import LedgerEntry
from curator_service.services.ledger_events import to_dp_accounting
from tests.curator_service.conftest import bearer, modeler_key, register


def entries(client) -> list[LedgerEntry]:
    with client.app.state.db.read() as session:
        return list(session.scalars(select(LedgerEntry).order_by(LedgerEntry.id)))


def replayed_epsilon(event: dict, delta: float) -> float:
    accountant = PLDAccountant(value_discretization_interval=1e-3)
    return accountant.compose(to_dp_accounting(event)).get_epsilon(delta)


def scaled_noise(event: dict, factor: float) -> dict:
    """The event with every part's noise multiplied by ``factor`` (the under-noised control)."""
    if event["class_name"] == "ComposedDpEvent":
        return {**event, "events": [scaled_noise(part, factor) for part in event["events"]]}
    return {**event, "noise_multiplier": event["noise_multiplier"] * factor}


def test_a_gaussian_release_records_each_part_and_replays_to_its_charge(client):
    dataset = register(client)
    made = client.post(f"/v1/datasets/{dataset['id']}/releases", json={
        "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "measurements": {"clip": [-3, 3], "share": 0.4}})
    assert made.status_code == 201, made.text
    parameters = made.json()["parameters"]
    [entry] = entries(client)
    assert (entry.mechanism, entry.actor, entry.release_id) == ("gaussian", "admin", made.json()["id"])
    inputs, measurements = entry.event["events"]
    assert (inputs["part"], inputs["std"], inputs["sensitivity"]) == (
        "inputs", parameters["noise_std"], parameters["sensitivity"])
    assert (measurements["std"], measurements["sensitivity"]) == (
        parameters["measurements"]["noise_std"], parameters["measurements"]["sensitivity"])
    # dp-accounting's PLD accountant on the stored event: the charged ε (tight, up to its discretisation) ...
    assert replayed_epsilon(entry.event, 1e-5) == pytest.approx(1.0, rel=0.02)
    # ... and the same event with 10% less noise would have cost clearly more: the record is not vacuous.
    assert replayed_epsilon(scaled_noise(entry.event, 1 / 1.1), 1e-5) > 1.08


def test_the_actor_is_the_key_that_caused_the_spend(client):
    dataset = register(client)
    made = client.post(f"/v1/datasets/{dataset['id']}/releases",
                       json={"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-5}).json()
    curator_key = modeler_key(client, [made["id"]], role="curator")
    by_key = client.post(f"/v1/datasets/{dataset['id']}/releases", headers=bearer(curator_key["token"]),
                         json={"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-5})
    assert by_key.status_code == 201, by_key.text
    key = modeler_key(client, [made["id"]], jobs=["dp-mean"])
    job = client.post("/v1/jobs", headers=bearer(key["token"]), json={
        "kind": "dp-mean", "dataset_id": dataset["id"], "params": {"column": "y", "lower": -2, "upper": 2,
                                                                    "epsilon": 0.25}})
    assert job.status_code == 202, job.text
    raised = client.post(f"/v1/datasets/{dataset['id']}/budget", json={"epsilon": 1.0, "reason": "new study"})
    assert raised.status_code == 201, raised.text
    release_entry, key_release_entry, job_entry, raise_entry = entries(client)
    assert (release_entry.actor, key_release_entry.actor) == ("admin", f"key:{curator_key['id']}:modeler")
    assert (job_entry.mechanism, job_entry.actor, job_entry.job_id) == (
        "job:dp-mean", f"key:{key['id']}:modeler", job.json()["id"])
    # dp-mean states its Laplace mechanism: scale Δ/ε with the Δ its result reports; replayed, it costs ε = 0.25.
    deadline = time.monotonic() + 30
    while (done := client.get(f"/v1/jobs/{job.json()['id']}").json())["status"] != "succeeded":
        assert time.monotonic() < deadline and done["status"] in ("queued", "running"), done
        time.sleep(0.05)
    sensitivity = done["result"]["sensitivity"]
    assert job_entry.event == {"class_name": "LaplaceDpEvent", "noise_multiplier": pytest.approx(4.0),
                               "scale": pytest.approx(sensitivity / 0.25), "sensitivity": sensitivity,
                               "part": "mean of y"}
    assert replayed_epsilon(job_entry.event, 1e-9) == pytest.approx(0.25, rel=0.02)
    assert (raise_entry.kind, raise_entry.actor, raise_entry.mechanism, raise_entry.event) == (
        "raise", "admin", None, None)


def test_po_gp_ucb_is_recorded_as_not_private(client):
    dataset = register(client)
    made = client.post(f"/v1/datasets/{dataset['id']}/releases",
                       json={"mechanism": "po-gp-ucb", "epsilon": 1.0, "delta": 1e-5, "dim": 2})
    assert made.status_code == 201, made.text
    [entry] = entries(client)
    assert (entry.mechanism, entry.event) == ("po-gp-ucb", {"class_name": "NonPrivateDpEvent"})


def test_migration_0006_fills_old_entries_with_what_is_known(tmp_path):
    """A database at 0005 with a gaussian and a po-gp-ucb release, a job, a raise, their audit events, and an
    entry whose audit event is missing: upgraded, each entry has its mechanism, event and actor where known."""
    url = f"sqlite:///{tmp_path / 'curator.db'}"
    engine = make_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    now = "2026-01-01 00:00:00"
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0005")
        run = lambda sql, **values: connection.execute(text(sql), {"now": now, **values})  # noqa: E731
        run('INSERT INTO datasets (id, name, n, d, columns, feature_columns, evaluator, scaling, goal, budget_epsilon, '
            'budget_delta, "table", created_at) VALUES (1, \'old\', 2, 1, \'["a"]\', \'["a"]\', \'{"kind": '
            '"manual"}\', '
            '\'{"kind": "identity"}\', \'maximize\', 10, 0.001, x\'00\', :now)')
        for release_id, mechanism, std, sensitivity in ((1, "gaussian", 3.0, 1.5), (2, "po-gp-ucb", None, None),
                                                         (3, "gaussian", 2.0, 1.0)):
            run("INSERT INTO releases (id, dataset_id, mechanism, certified, seeded, epsilon, delta, n, dim, noise_std,"
                " sensitivity, inputs, created_at) VALUES (:id, 1, :mechanism, 1, 0, 0.5, 1e-5, 2, 1, :std, :sens,"
                " x'00', :now)", id=release_id, mechanism=mechanism, std=std, sens=sensitivity)
        run("INSERT INTO jobs (id, kind, dataset_id, key_id, params, status, progress, epsilon, delta, "
            "cancel_requested, created_at) VALUES (1, 'dp-mean', 1, NULL, '{}', 'succeeded', 1, 0.2, 0, 0, :now)")
        for entry_id, kind, release_id, job_id in ((1, "charge", 1, None), (2, "charge", 2, None),
                                                   (3, "charge", None, 1), (4, "raise", None, None),
                                                   (5, "charge", 3, None)):
            run("INSERT INTO ledger (id, dataset_id, kind, epsilon, delta, purpose, release_id, job_id, created_at)"
                " VALUES (:id, 1, :kind, 0.5, 1e-5, 'old', :release, :job, :now)",
                id=entry_id, kind=kind, release=release_id, job=job_id)
        for actor, action, target in (("admin", "release.create", "release:1"), ("key:7:lab", "release.create",
                                      "release:2"), ("key:8:m", "job.submit", "job:1 (dp-mean)"),
                                      ("admin", "dataset.budget_raise", "dataset:1")):
            run("INSERT INTO audit_events (actor, action, target, created_at) VALUES (:actor, :action, :target, :now)",
                actor=actor, action=action, target=target)
    engine.dispose()
    with Session(make_engine(url)) as session:
        migrate(session.get_bind())
        rows = {row.id: row for row in session.scalars(select(LedgerEntry))}
    assert (rows[1].mechanism, rows[1].actor) == ("gaussian", "admin")
    assert rows[1].event == {"class_name": "GaussianDpEvent", "noise_multiplier": 2.0, "std": 3.0,
                             "sensitivity": 1.5, "part": "inputs"}
    assert (rows[2].mechanism, rows[2].event, rows[2].actor) == (
        "po-gp-ucb", {"class_name": "NonPrivateDpEvent"}, "key:7:lab")
    assert (rows[3].mechanism, rows[3].actor, rows[3].event["class_name"]) == (
        "job:dp-mean", "key:8:m", "UnsupportedDpEvent")
    assert (rows[4].mechanism, rows[4].event, rows[4].actor) == (None, None, "admin")
    assert (rows[5].mechanism, rows[5].actor) == ("gaussian", None)  # no audit event: the actor is not known
