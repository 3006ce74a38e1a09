"""Governance per key: job permissions, an (ε, δ) cap across everything a key triggers, expiry.

Each refusal is checked to leave the ledger, the jobs and the releases exactly as they were.
"""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from curator_service.testing import curator_command
from tests.governance.conftest import (
    assert_error,
    create_key,
    http,
    lab_csv,
    ledger,
    make_release,
    register_csv,
)

DP_BO = {"label_column": "label", "log10_lambda": [-3, -1, 0], "iterations": 2, "epsilon": 0.25, "delta": 1e-7}


def dp_mean(epsilon: float) -> dict:
    return {"column": "y", "lower": -1.0, "upper": 0.0, "epsilon": epsilon}


def submit(server, token: str, dataset_id: int, kind: str, params: dict):
    with http(server, token) as client:
        return client.post("/v1/jobs", json={"kind": kind, "dataset_id": dataset_id, "params": params})


def jobs_of(server, dataset_id: int) -> list[dict]:
    with http(server) as admin:
        return [job for job in admin.get("/v1/jobs").json() if job["dataset_id"] == dataset_id]


def wait_until_finished(server, job_ids: list[int], timeout: float = 300.0) -> None:
    """Polls until the jobs are done, failed or cancelled (a loaded machine may take long; a poll costs nothing)."""
    deadline = time.monotonic() + timeout
    with http(server) as admin:
        while any(admin.get(f"/v1/jobs/{i}").json()["status"] in ("queued", "running") for i in job_ids):
            assert time.monotonic() < deadline, f"jobs {job_ids} did not finish within {timeout} s"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def table(lab):
    dataset = register_csv(lab, lab_csv()[0], budget=(50.0, 1e-3))
    return dataset, make_release(lab, dataset["id"])


def test_a_key_without_permission_to_run_dp_bo_gets_403_and_spends_nothing(lab, table):
    dataset, release = table
    for policy in ({}, {"jobs": ["dp-mean"]}):  # the default is no job at all
        token = create_key(lab, [release["id"]], **policy)["token"]
        before = ledger(lab)
        assert_error(submit(lab, token, dataset["id"], "dp-bo", DP_BO), 403, "forbidden", "'dp-bo'", "--jobs")
        assert ledger(lab) == before and not [j for j in jobs_of(lab, dataset["id"]) if j["kind"] == "dp-bo"]
    # The default refuses every kind, dp-mean too; the permitted kind runs (the positive control).
    assert_error(submit(lab, create_key(lab, [release["id"]])["token"], dataset["id"], "dp-mean", dp_mean(0.1)),
                 403, "forbidden", "'dp-mean'")
    allowed = submit(lab, create_key(lab, [release["id"]], jobs=["dp-bo"])["token"], dataset["id"], "dp-bo", DP_BO)
    assert allowed.status_code == 202, allowed.text
    assert [e["epsilon"] for e in ledger(lab) if e["job_id"] == allowed.json()["id"]] == [0.5]


def test_a_key_without_the_job_permission_gets_the_same_403_whatever_it_asks(lab, table):
    """The permission is checked before the job is priced or the dataset looked at, so an unknown
    column, an unaffordable ε and a dataset that does not exist all get the one 403: no column-name oracle, no
    remaining budget in a 409, no dataset existence."""
    dataset, release = table
    token = create_key(lab, [release["id"]])["token"]  # a modeler key runs no job by default
    probes = [(dataset["id"], dp_mean(0.1)), (dataset["id"], {**dp_mean(0.1), "column": "nosuch"}),
              (dataset["id"], dp_mean(100.0)), (2_000_000, dp_mean(0.1))]
    before = ledger(lab)
    answers = [submit(lab, token, dataset_id, "dp-mean", params) for dataset_id, params in probes]
    assert [a.status_code for a in answers] == [403] * len(probes), [a.text for a in answers]
    assert len({a.text for a in answers}) == 1
    assert ledger(lab) == before


def test_a_key_capped_at_epsilon_1_cannot_spend_1_5_and_the_cap_spans_everything_it_triggers(lab, table):
    dataset, release = table
    key = create_key(lab, [release["id"]], epsilon_cap=1.0, jobs=["dp-mean"])
    before = ledger(lab)
    refused = submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(1.5))
    assert_error(refused, 409, "budget_exceeded", "cap", "epsilon=1.5", "--epsilon-cap")
    assert ledger(lab) == before and not [j for j in jobs_of(lab, dataset["id"]) if j["epsilon"] == 1.5]
    # Cumulative: 0.6 fits, a second 0.6 does not (1.2 > 1), 0.4 fills the cap exactly, then nothing more.
    first = submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.6))
    assert first.status_code == 202
    assert_error(submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.6)), 409, "budget_exceeded", "cap")
    second = submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.4))
    assert second.status_code == 202
    # Both finished first: else the key's limit of unfinished jobs (POBO_JOB_LIMIT_PER_KEY = 2) answers before the
    # cap does, and since a key runs one job at a time on two workers the second is often still queued.
    wait_until_finished(lab, [first.json()["id"], second.json()["id"]])
    assert_error(submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.01)), 409, "budget_exceeded", "cap")
    with http(lab) as admin:
        policy = admin.get(f"/v1/keys/{key['id']}/policy").json()
    assert policy["epsilon_cap"] == 1.0 and policy["spent_epsilon"] == pytest.approx(1.0)
    assert policy["jobs"] == ["dp-mean"]
    # The modeler may read its own key's policy; the dataset's budget paid for the two jobs only.
    with http(lab, key["token"]) as modeler:
        assert modeler.get("/v1/keys/me/policy").json() == policy
    assert sum(e["epsilon"] for e in ledger(lab)) == pytest.approx(sum(e["epsilon"] for e in before) + 1.0)


def test_a_policy_can_be_replaced_later_and_the_change_is_audited(lab, table):
    dataset, release = table
    key = create_key(lab, [release["id"]])
    assert_error(submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.2)), 403, "forbidden")
    with http(lab) as admin:
        granted = admin.put(f"/v1/keys/{key['id']}/policy", json={"jobs": ["dp-mean"], "epsilon_cap": 0.3})
        assert granted.status_code == 200, granted.text
        assert (granted.json()["jobs"], granted.json()["epsilon_cap"]) == (["dp-mean"], 0.3)
        assert submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.2)).status_code == 202
        assert_error(submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.2)), 409, "budget_exceeded", "cap")
        # An explicit null returns a field to the role's default: the jobs list goes back to none.
        assert admin.put(f"/v1/keys/{key['id']}/policy", json={"jobs": None}).json()["jobs"] == []
        assert any(e["action"] == "key.policy" and e["target"] == f"key:{key['id']} (set: epsilon_cap, jobs)"
                   for e in admin.get("/v1/audit").json())
    assert_error(submit(lab, key["token"], dataset["id"], "dp-mean", dp_mean(0.2)), 403, "forbidden")


def test_a_policy_update_keeps_the_fields_it_does_not_send(lab, table):
    """Extending an expiry alone must not silently drop the key's caps and job list."""
    _, release = table
    key = create_key(lab, [release["id"]], epsilon_cap=0.5, delta_cap=1e-6, jobs=["dp-mean"])
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    with http(lab) as admin:
        extended = admin.put(f"/v1/keys/{key['id']}/policy", json={"expires_at": later})
        assert extended.status_code == 200, extended.text
        policy = admin.get(f"/v1/keys/{key['id']}/policy").json()
    assert (policy["epsilon_cap"], policy["delta_cap"], policy["jobs"]) == (0.5, 1e-6, ["dp-mean"])
    assert datetime.fromisoformat(policy["expires_at"]) == datetime.fromisoformat(later)


def test_a_capped_curator_key_can_neither_lift_its_own_cap_nor_mint_keys(lab, table):
    """The cap of a curator key binds it: it neither lifts its own cap nor mints a key to spend through."""
    dataset, release = table
    capped = create_key(lab, [release["id"]], role="curator", epsilon_cap=1.0)
    with http(lab, capped["token"]) as client:
        assert_error(client.put(f"/v1/keys/{capped['id']}/policy", json={"epsilon_cap": None}), 403, "forbidden",
                     "its own policy")
        assert_error(client.post("/v1/keys", json={"name": "escape", "release_ids": [release["id"]],
                                                   "max_queries": 5, "role": "curator"}), 403, "forbidden", "cap")
        assert_error(client.post(f"/v1/datasets/{dataset['id']}/releases",
                                 json={"mechanism": "gaussian", "epsilon": 5.0, "delta": 1e-6}),
                     409, "budget_exceeded", "cap")
    with http(lab) as admin:
        assert admin.get(f"/v1/keys/{capped['id']}/policy").json()["epsilon_cap"] == 1.0
        assert "escape" not in {k["name"] for k in admin.get("/v1/keys").json()}
    # An uncapped curator key still creates keys, and a governance key changes policies (the positive controls).
    uncapped = create_key(lab, [release["id"]], role="curator")
    with http(lab, uncapped["token"]) as client:
        minted = client.post("/v1/keys", json={"name": "by-uncapped", "release_ids": [release["id"]],
                                               "max_queries": 5})
        assert minted.status_code == 201, minted.text
    governor = create_key(lab, [release["id"]], role="curator", governance=True)
    with http(lab, governor["token"]) as client:
        lifted = client.put(f"/v1/keys/{capped['id']}/policy", json={"epsilon_cap": 2.0})
        assert lifted.status_code == 200 and lifted.json()["epsilon_cap"] == 2.0, lifted.text


def _charge_at_once(lab, token: str, dataset_id: int, start: threading.Barrier, statuses: list[int]) -> None:
    """A 0.6 dp-mean charge submitted once every thread has reached ``start``; its status code goes to ``statuses``."""
    start.wait()
    statuses.append(submit(lab, token, dataset_id, "dp-mean", dp_mean(0.6)).status_code)


def test_concurrent_charges_of_one_key_on_two_datasets_cannot_both_pass_its_cap(lab, table):
    """Each charge locks its own dataset; only the key's row lock stops two of them from both reading the key's
    spend as 0 (PostgreSQL, READ COMMITTED). Five rounds of two simultaneous 0.6 charges under a cap of 1."""
    first, release = table
    second = register_csv(lab, lab_csv(seed=2)[0], budget=(50.0, 1e-3))
    for _ in range(5):
        token = create_key(lab, [release["id"], make_release(lab, second["id"], epsilon=0.01)["id"]],
                           epsilon_cap=1.0, jobs=["dp-mean"])["token"]
        start, statuses = threading.Barrier(2), []
        workers = [threading.Thread(target=_charge_at_once, args=(lab, token, d["id"], start, statuses))
                   for d in (first, second)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert sorted(statuses) == [202, 409]


def test_a_delta_cap_counts_the_whole_charge(lab, table):
    dataset, release = table
    token = create_key(lab, [release["id"]], delta_cap=1e-7, jobs=["dp-bo"])["token"]
    before = ledger(lab)
    # dp-bo releases λ̃ and ṽ: (2ε, 2δ) = (0.5, 2e-7) > the δ cap.
    assert_error(submit(lab, token, dataset["id"], "dp-bo", DP_BO), 409, "budget_exceeded", "cap", "delta")
    assert ledger(lab) == before


def test_a_curator_keys_cap_spans_releases_of_every_dataset(lab, table):
    first, release = table
    second = register_csv(lab, lab_csv(seed=1)[0])
    curator = create_key(lab, [release["id"]], role="curator", epsilon_cap=1.0)
    make_release(lab, first["id"], epsilon=0.6, token=curator["token"])
    before = ledger(lab)
    with http(lab, curator["token"]) as client:
        refused = client.post(f"/v1/datasets/{second['id']}/releases",
                              json={"mechanism": "gaussian", "epsilon": 0.6, "delta": 1e-6})
        assert_error(refused, 409, "budget_exceeded", "cap")
        assert ledger(lab) == before
        assert not [r for r in client.get("/v1/releases").json() if r["dataset_id"] == second["id"]]
    make_release(lab, second["id"], epsilon=0.4, token=curator["token"])  # exactly what is left
    # A curator key without a job list may run every kind (the curator's powers); the cap still holds.
    assert_error(submit(lab, curator["token"], first["id"], "dp-mean", dp_mean(0.1)), 409, "budget_exceeded", "cap")


def test_an_expired_key_gets_401_everywhere(lab, table):
    _, release = table
    key = create_key(lab, [release["id"]])
    with http(lab, key["token"]) as modeler, http(lab) as admin:
        assert modeler.get(f"/v1/releases/{release['id']}").status_code == 200
        session = modeler.post(f"/v1/releases/{release['id']}/sessions").json()
        # The expiry is set once the key was used, not at its creation: three requests had to fit in the 3 s before
        # it, which a loaded machine need not grant. Now only this one request has 5 s.
        expires = datetime.now(UTC) + timedelta(seconds=5)
        moved = admin.put(f"/v1/keys/{key['id']}/policy", json={"expires_at": expires.isoformat()})
        assert moved.status_code == 200, moved.text
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.5)
        for response in (modeler.get(f"/v1/releases/{release['id']}"),
                         modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0]})):
            assert_error(response, 401, "unauthorized", "expired")
        assert next(k for k in admin.get("/v1/keys").json() if k["id"] == key["id"])["used_queries"] == 0


@pytest.mark.parametrize(("policy", "words"), [
    ({"jobs": ["nope"]}, ["'nope'", "dp-mean"]),
    ({"jobs": ["dpareto"]}, ["'dpareto'", "curator"]),
    ({"epsilon_cap": 0}, ["epsilon_cap"]),
    ({"delta_cap": 1}, ["delta_cap"]),
    ({"expires_at": "2020-01-01T00:00:00Z"}, ["expires_at", "future"]),
])
def test_bad_policies_are_refused_with_a_sentence(lab, table, policy, words):
    _, release = table
    with http(lab) as admin:
        keys = admin.get("/v1/keys").json()
        response = admin.post("/v1/keys", json={"name": "x", "release_ids": [release["id"]], "max_queries": 1,
                                                **policy})
        assert_error(response, 422, "validation_error", *words)
        assert admin.get("/v1/keys").json() == keys


def test_key_create_command_takes_the_policy(lab, table):
    _, release = table
    command = [*curator_command(), "key", "create", "--name", "lab", "--release", str(release["id"]),
               "--max-queries", "5", "--epsilon-cap", "1", "--delta-cap", "1e-7", "--jobs", "dp-mean,dp-bo",
               "--expires", "2031-02-03", "--url", lab.url, "--token", lab.admin_token]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**lab.env, "COLUMNS": "250"})
    assert done.returncode == 0, done.stdout + done.stderr
    with http(lab) as admin:
        key = admin.get("/v1/keys").json()[-1]
        policy = admin.get(f"/v1/keys/{key['id']}/policy").json()
    assert (policy["epsilon_cap"], policy["delta_cap"], policy["jobs"]) == (1.0, 1e-7, ["dp-bo", "dp-mean"])
    assert policy["expires_at"].startswith("2031-02-03T00:00:00")
    assert "2031-02-03" in done.stdout and "dp-bo, dp-mean" in done.stdout
