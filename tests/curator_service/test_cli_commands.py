"""Every ``pobo-curator`` admin command against a real server on loopback: listings as tables and as ``--json``,
keys, releases, sessions, the audit log, budget raises, jobs; errors on stderr, naming the flag, non-zero exit."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from sqlalchemy import create_engine

from curator_service import __version__
from curator_service.jobs import JobKind
from curator_service.jobs.outcomes import JobCancelled
from curator_service.persistence.db import schema_revision
from curator_service.services.job_kinds import KINDS
from tests.curator_service.conftest import ADMIN_HEADERS, UNCANCELLED_LIMIT_SECONDS, AnyParams, bearer, flat


def add_dataset_and_release(run, evaluator: str = "column:y") -> None:
    run("dataset", "add", str(run.csv), "--name", "t", "--features", "a,b,c", "--evaluator", evaluator,
        "--epsilon", "4", "--lower", "0,0,0", "--upper", "1,1,1")
    run("release", "create", "--dataset", "1", "--epsilon", "1")


def as_json(run, *args: str):
    """A command's ``--json`` output, parsed (stdout only: nothing else may be mixed into it)."""
    result = run.invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_version(curator_cli):
    result = curator_cli.invoke("--version", connect=False)
    assert result.exit_code == 0 and result.stdout.strip() == f"pobo-curator {__version__}"


def test_keys_are_listed_without_tokens_and_revoked(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    created = as_json(run, "key", "create", "--name", "acme", "--release", "1", "--max-queries", "5")
    [listed] = as_json(run, "key", "list")
    assert "token" not in listed and listed["id"] == created["id"] and listed["revoked"] is False
    assert listed["release_ids"] == [1] and listed["max_queries"] == 5
    with httpx.Client(base_url=run.url, headers=bearer(created["token"])) as modeler:
        assert modeler.get("/v1/releases").status_code == 200
        assert "revoked" in flat(run("key", "revoke", str(created["id"])))
        assert modeler.get("/v1/releases").status_code == 401
    assert as_json(run, "key", "list")[0]["revoked"] is True
    assert "acme" in run("key", "list") and "revoked" in run("key", "list")


def test_releases_and_datasets_list_and_show(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    run("release", "create", "--dataset", "1", "--epsilon", "0.5", "--dim", "2")
    listed = as_json(run, "release", "list")
    assert [r["id"] for r in listed] == [1, 2] and [r["dim"] for r in listed] == [3, 2]
    assert [r["id"] for r in as_json(run, "release", "list", "--dataset", "1")] == [1, 2]
    shown = as_json(run, "release", "show", "2")
    assert shown == listed[1]
    table = flat(run("release", "show", "1"))
    assert "release 1: projection identity, r = 3" in table
    assert "release 1: features are clipped to the public bounds" in table
    assert shown["measurements_note"][:30] in table
    [dataset] = as_json(run, "dataset", "list")
    assert dataset["budget"]["spent_epsilon"] == pytest.approx(1.5)
    assert as_json(run, "dataset", "show", "1") == dataset
    ledger = as_json(run, "ledger")
    assert [(e["release_id"], e["epsilon"]) for e in ledger] == [(1, 1.0), (2, 0.5)]


def test_sessions_and_their_queries(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    token = as_json(run, "key", "create", "--name", "acme", "--release", "1", "--max-queries", "5")["token"]
    with httpx.Client(base_url=run.url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()
        modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [3, 1]})
    [listed] = as_json(run, "sessions")
    assert (listed["id"], listed["release_id"], listed["used"], listed["max_queries"]) == (session["id"], 1, 2, 5)
    assert as_json(run, "sessions", "--release", "2") == []
    queries = as_json(run, "sessions", "--session", str(session["id"]))
    assert [(q["index"], q["status"]) for q in queries] == [(3, "done"), (1, "done")]
    assert "used / max_queries" in flat(run("sessions"))


def test_pending_manual_queries_and_their_answers_as_json(curator_cli):
    run = curator_cli
    add_dataset_and_release(run, evaluator="manual")
    token = as_json(run, "key", "create", "--name", "lab", "--release", "1", "--max-queries", "5")["token"]
    with httpx.Client(base_url=run.url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()
        modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [2]})
    [pending] = as_json(run, "queries", "pending", "--dataset", "1")
    assert (pending["index"], pending["session_id"]) == (2, session["id"]) and 1 <= pending["row"] <= 20
    answered = as_json(run, "queries", "answer", str(pending["query_id"]), "0.25")
    assert answered == [{"query_id": pending["query_id"], "index": 2, "status": "done", "value": 0.25}]
    assert as_json(run, "queries", "pending") == []


def test_the_audit_log_filters_by_actor_and_action(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    key = as_json(run, "key", "create", "--name", "acme", "--release", "1", "--max-queries", "5")
    with httpx.Client(base_url=run.url, headers=bearer(key["token"])) as modeler:
        modeler.post("/v1/releases/1/sessions")
    actions = [e["action"] for e in as_json(run, "audit", "log", "--oldest-first")]
    # a release is a job
    assert actions == ["dataset.create", "job.submit", "release.create", "key.create", "session.open"]
    assert [e["action"] for e in as_json(run, "audit", "log")] == actions[::-1]  # newest first by default
    mine = as_json(run, "audit", "log", "--actor", f"key:{key['id']}:acme")
    assert [e["action"] for e in mine] == ["session.open"]
    assert [e["target"] for e in as_json(run, "audit", "log", "--action", "key.")] == [f"key:{key['id']}"]
    assert [e["action"] for e in as_json(run, "audit", "log", "--offset", "2", "--limit", "1")] == ["release.create"]
    assert "audit log" in run("audit", "log")


def test_the_audit_log_hides_reads_groups_repeats_and_pages(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    for _ in range(4):
        run("dataset", "show", "1")
    run("ledger")
    [ledger, reads, *_] = as_json(run, "audit", "log")
    assert (ledger["action"], reads["action"], reads["count"]) == ("ledger.read", "dataset.read", 4)
    assert reads["last_id"] == reads["id"] + 3
    assert [e["action"] for e in as_json(run, "audit", "log", "--changes-only")] == \
        ["release.create", "job.submit", "dataset.create"]
    assert len(as_json(run, "audit", "log", "--each", "--action", "dataset.read")) == 4
    page = run("audit", "log", "--limit", "2")
    assert "×4" in page and "lines 1–2 of 5; the next page: --offset 2" in flat(page)
    lines = run("audit", "log", "--csv", "--changes-only").splitlines()
    assert lines[0] == "id,created_at,actor,action,target,count,last_at" and len(lines) == 4


def test_budget_raise_is_a_ledger_entry(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    raised = as_json(run, "budget", "raise", "--dataset", "1", "--epsilon", "2", "--reason", "second study")
    assert [(raised["total_epsilon"], raised["spent_epsilon"])] == [(6.0, 1.0)]
    assert [e["kind"] for e in as_json(run, "ledger", "--dataset", "1")] == ["charge", "raise"]
    assert "budget raised by the curator: second study" in flat(run("ledger"))


def _waits_for_cancel(ctx) -> dict:
    """Until cancelled or UNCANCELLED_LIMIT_SECONDS."""
    deadline = time.monotonic() + UNCANCELLED_LIMIT_SECONDS
    while not ctx.cancelled():
        if time.monotonic() > deadline:
            raise RuntimeError("never cancelled")
        time.sleep(0.02)
    raise JobCancelled


def test_jobs_list_show_and_cancel(curator_cli, monkeypatch):
    run = curator_cli
    monkeypatch.setitem(KINDS, "wait", JobKind(name="wait", description="runs until cancelled",
                                               cost=lambda p, d: (0.0, 0.0), params=AnyParams, run=_waits_for_cancel,
                                               needs_dataset=False))
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        job = admin.post("/v1/jobs", json={"kind": "wait"}).json()
    [listed] = as_json(run, "jobs", "list")
    assert (listed["id"], listed["kind"]) == (job["id"], "wait") and listed["status"] in ("queued", "running")
    assert as_json(run, "jobs", "list", "--status", "succeeded") == []
    run("jobs", "cancel", str(job["id"]))
    deadline = time.monotonic() + 20
    while as_json(run, "jobs", "show", str(job["id"]))["status"] != "cancelled":
        assert time.monotonic() < deadline, "the job did not stop"
        time.sleep(0.05)
    assert [j["id"] for j in as_json(run, "jobs", "list", "--status", "cancelled")] == [job["id"]]
    refused = run.invoke("jobs", "cancel", "99")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "(not_found)" in refused.stderr and "job with id 99" in flat(refused.stderr)
    assert "wait" in run("jobs", "show", str(job["id"]))


@pytest.mark.parametrize(("args", "flag", "field"), [
    (("key", "create", "--name", "x", "--release", "1", "--max-queries", "0"), "--max-queries", "max_queries"),
    (("release", "create", "--dataset", "1", "--epsilon", "-1"), "--epsilon", "'epsilon'"),
    (("budget", "raise", "--dataset", "1", "--reason", "more"), "--epsilon", "'epsilon'"),
    (("release", "create", "--dataset", "1", "--epsilon", "1", "--dim", "9" * 5000), "--dim", "Traceback"),
    (("release", "create", "--dataset", "1", "--epsilon", "1", "--dim", "\u00b2"), "--dim", "Traceback"),
    (("plan", "--dataset", "1", "--epsilon", "1", "--simulate", "99"), "--simulate", "simulate_runs"),
    (("dataset", "add", "x.csv", "--name", "t", "--features", "a", "--evaluator", "manual", "--epsilon", "0",
      "--identity"), "--epsilon", "budget.epsilon"),
])
def test_a_bad_option_is_named_by_its_flag_on_stderr(curator_cli, args, flag, field):
    result = curator_cli.invoke(*args)
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert flag in result.stderr and field not in result.stderr, result.stderr


def test_a_refusal_by_the_server_goes_to_stderr_with_exit_1_and_flags(curator_cli):
    run = curator_cli
    add_dataset_and_release(run)
    result = run.invoke("key", "create", "--name", "x", "--release", "7", "--max-queries", "3")
    assert result.exit_code == 1 and result.stdout == ""
    assert "(validation_error) --release names releases that do not exist: [7]" in flat(result.stderr)
    missing = run.invoke("release", "show", "9")
    assert missing.exit_code == 1 and "(not_found)" in missing.stderr and "release with id 9" in flat(missing.stderr)
    wrong = run.invoke("dataset", "list", token="wrong")
    assert wrong.exit_code == 1 and "(unauthorized)" in wrong.stderr


def test_upgrade_brings_a_fresh_database_to_the_newest_revision(curator_cli, tmp_path):
    result = curator_cli.invoke("upgrade", "--data-dir", str(tmp_path / "fresh"), connect=False)
    assert result.exit_code == 0, result.output
    engine = create_engine(f"sqlite:///{tmp_path / 'fresh' / 'curator.db'}")
    revision = schema_revision(engine)
    engine.dispose()
    assert revision is not None and revision in result.stdout
