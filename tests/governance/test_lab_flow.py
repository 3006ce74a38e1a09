"""The lab flow: the curator's own row identifier (an MRN) on pending manual queries, answers by
identifier (one or many, from a CSV), "cannot measure", and corrections with a reason kept in the session's lab notes
(never in the audit log).

The identifier column never reaches a modeler; it is checked in every response a modeler's key gets.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import httpx
import numpy as np

from curator_service.testing import curator_command
from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import RunSettings
from shared.api.http_client import ApiClient
from tests.governance.conftest import (
    assert_error,
    create_key,
    http,
    lab_csv,
    make_release,
    mrn,
    register_csv,
)

MANUAL = {"kind": "manual"}


def lab_dataset(server, n: int = 30, seed: int = 0, identifier: str | None = "mrn") -> tuple[dict, dict, dict]:
    """A manual-evaluator dataset with the MRN as its identifier column, a release and a modeler key.
    The lab's own MRN → y book is :func:`truth`."""
    csv, _, _ = lab_csv(n, seed)
    dataset = register_csv(server, csv, evaluator=MANUAL)
    if identifier is not None:
        with http(server) as admin:
            response = admin.put(f"/v1/datasets/{dataset['id']}/identifier-column", json={"column": identifier})
        assert response.status_code == 200, response.text
    release = make_release(server, dataset["id"])
    return dataset, release, create_key(server, [release["id"]], max_queries=20)


def truth(n: int = 30, seed: int = 0) -> dict[str, float]:
    """What the lab would measure for each MRN (the table's y column, which the manual evaluator never reads)."""
    _, _, y = lab_csv(n, seed)
    return {mrn(i): float(v) for i, v in enumerate(y)}


def pending(server, dataset_id: int) -> list[dict]:
    """The lab's worklist: the dataset's pending queries by identifier."""
    with http(server) as admin:
        response = admin.get(f"/v1/datasets/{dataset_id}/worklist")
    assert response.status_code == 200, response.text
    return response.json()["queries"]


def ask(server, token: str, release_id: int, indices: list[int]) -> tuple[int, list[dict]]:
    with http(server, token) as modeler:
        session = modeler.post(f"/v1/releases/{release_id}/sessions").json()
        results = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": indices}).json()["results"]
    return session["id"], results


def answer_csv(server, dataset_id: int, text: str) -> httpx.Response:
    with http(server) as admin:
        return admin.post(f"/v1/datasets/{dataset_id}/answers/csv",
                          files={"file": ("answers.csv", text.encode(), "text/csv")})


def used_queries(server, key_id: int) -> int:
    with http(server) as admin:
        return next(k for k in admin.get("/v1/keys").json() if k["id"] == key_id)["used_queries"]


def test_the_identifier_column_must_be_a_unique_non_feature_column(lab):
    dataset = register_csv(lab, lab_csv()[0], evaluator=MANUAL)
    duplicated = lab_csv()[0].replace(mrn(7), mrn(3))
    with_duplicates = register_csv(lab, duplicated, evaluator=MANUAL)
    path = f"/v1/datasets/{dataset['id']}/identifier-column"
    with http(lab) as admin:
        assert_error(admin.put(path, json={"column": "nope"}), 422, "validation_error", "'nope'", "'mrn'")
        assert_error(admin.put(path, json={"column": "a"}), 422, "validation_error", "feature")
        response = admin.put(f"/v1/datasets/{with_duplicates['id']}/identifier-column", json={"column": "mrn"})
        assert_error(response, 422, "validation_error", "data rows", "unique")
        assert mrn(3) not in response.text  # the sentence names rows, never a value
        assert admin.put(path, json={"column": "mrn"}).json() == {"dataset_id": dataset["id"], "column": "mrn"}


def test_pending_queries_show_the_identifier_and_a_csv_answers_them_all_or_nothing(lab):
    dataset, release, key = lab_dataset(lab)
    book = truth()
    session_id, asked = ask(lab, key["token"], release["id"], [4, 11, 17])
    assert [q["status"] for q in asked] == ["pending"] * 3
    listed = pending(lab, dataset["id"])
    assert [q["query_id"] for q in listed] == [q["query_id"] for q in asked]
    identifiers = [q["identifier"] for q in listed]
    assert all(i in book for i in identifiers) and len(set(identifiers)) == 3
    first, second, third = identifiers

    # A bad line refuses the whole file and stores nothing: an unknown identifier, then a non-number.
    for bad, line in ((f"{first},1.5\nMRN-9999999,2.0\n", 3), (f"{first},1.5\n{second},lots\n", 3)):
        assert_error(answer_csv(lab, dataset["id"], "mrn,value\n" + bad), 422, "validation_error", f"line {line}")
        assert len(pending(lab, dataset["id"])) == 3
    assert "MRN-9999999" not in answer_csv(lab, dataset["id"], "mrn,value\nMRN-9999999,2.0\n").text

    # One by identifier (JSON), two from a CSV.
    with http(lab) as admin:
        one = admin.post(f"/v1/datasets/{dataset['id']}/answers",
                         json={"answers": [{"identifier": first, "value": book[first]}]})
    assert one.status_code == 200, one.text
    assert [(r["query_id"], r["status"]) for r in one.json()["answered"]] == [(asked[0]["query_id"], "done")]
    many = answer_csv(lab, dataset["id"], f"mrn,value\n{second},{book[second]!r}\n{third},{book[third]!r}\n")
    assert many.status_code == 200, many.text
    assert pending(lab, dataset["id"]) == []
    with http(lab, key["token"]) as modeler:
        answers = modeler.get(f"/v1/sessions/{session_id}/queries").json()["queries"]
    assert [(q["status"], q["value"]) for q in answers] == [("done", book[i]) for i in identifiers]
    # Answered once: the same file again is refused (nothing pending for those identifiers).
    assert_error(answer_csv(lab, dataset["id"], f"mrn,value\n{second},1\n"), 422, "validation_error", "line 2")
    assert used_queries(lab, key["id"]) == 3


def test_queries_answer_from_csv_command(lab, tmp_path):
    dataset, release, key = lab_dataset(lab)
    book = truth()
    ask(lab, key["token"], release["id"], [6, 9])
    first, second = [q["identifier"] for q in pending(lab, dataset["id"])]
    answers = tmp_path / "answers.csv"

    def answer(text: str) -> subprocess.CompletedProcess:
        answers.write_text(text)
        command = [*curator_command(), "queries", "answer", "--from-csv", str(answers), "--dataset",
                   str(dataset["id"]), "--url", lab.url, "--token", lab.admin_token]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env={**lab.env, "COLUMNS": "200"})

    refused = answer(f"mrn,value\n{first},{book[first]!r}\n{second},n/a\n")
    assert refused.returncode == 1 and "line 3" in refused.stderr and len(pending(lab, dataset["id"])) == 2
    done = answer(f"mrn,value\n{first},{book[first]!r}\n{second},{book[second]!r}\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answered from answers.csv" in done.stdout and pending(lab, dataset["id"]) == []


def test_cannot_measure_tells_the_modeler_by_its_own_status_and_counts_once(lab):
    dataset, release, key = lab_dataset(lab)
    session_id, asked = ask(lab, key["token"], release["id"], [2, 5])
    with http(lab) as admin:
        marked = admin.post(f"/v1/queries/{asked[0]['query_id']}/cannot-measure",
                            json={"reason": "sample haemolysed"})
        assert marked.status_code == 200, marked.text
        assert (marked.json()["status"], marked.json()["value"]) == ("unmeasurable", None)
        assert_error(admin.post(f"/v1/queries/{asked[0]['query_id']}/cannot-measure", json={"reason": "again"}),
                     409, "conflict", "not pending")
        audit = admin.get("/v1/audit").json()
        notes = admin.get(f"/v1/sessions/{session_id}/notes").json()
    (event,) = [e for e in audit if e["action"] == "query.cannot_measure"]
    assert event["target"] == f"query:{asked[0]['query_id']}"  # the lab's free text may name a patient: not here
    assert [(n["query_id"], n["action"], n["old_status"], n["reason"]) for n in notes] == [
        (asked[0]["query_id"], "cannot_measure", "pending", "sample haemolysed")]
    assert [q["query_id"] for q in pending(lab, dataset["id"])] == [asked[1]["query_id"]]
    with http(lab, key["token"]) as modeler:
        statuses = [q["status"] for q in modeler.get(f"/v1/sessions/{session_id}/queries").json()["queries"]]
    assert statuses == ["unmeasurable", "pending"]
    assert used_queries(lab, key["id"]) == 2  # charged once when asked; never again


def test_a_correction_keeps_the_old_value_and_the_reason_in_the_lab_notes_and_the_audit_log_neither(lab):
    dataset, release, key = lab_dataset(lab)
    session_id, (query,) = ask(lab, key["token"], release["id"], [8])
    identifier = pending(lab, dataset["id"])[0]["identifier"]
    with http(lab) as admin:
        admin.post(f"/v1/datasets/{dataset['id']}/answers", json={"answers": [{"identifier": identifier,
                                                                                "value": 12.5}]})
        assert_error(admin.post(f"/v1/queries/{query['query_id']}/correct", json={"value": 1.25}), 422,
                     "validation_error", "reason")
        fixed = admin.post(f"/v1/queries/{query['query_id']}/correct",
                           json={"value": 1.25, "reason": "decimal point misread"})
        assert fixed.status_code == 200, fixed.text
        assert (fixed.json()["status"], fixed.json()["value"]) == ("done", 1.25)
        audit = admin.get("/v1/audit").json()
        (note,) = admin.get(f"/v1/sessions/{session_id}/notes").json()
        with http(lab, key["token"]) as modeler:  # the notes are the curator's
            assert_error(modeler.get(f"/v1/sessions/{session_id}/notes"), 403, "forbidden")
    assert (note["old_status"], note["old_value"], note["new_value"], note["reason"]) == (
        "done", 12.5, 1.25, "decimal point misread")
    (event,) = [e for e in audit if e["action"] == "query.correct"]
    assert event["target"] == f"query:{query['query_id']}"
    _, X, _ = lab_csv()
    text = json.dumps(audit)
    targets = [e["target"] or "" for e in audit]
    assert not [t for t in targets if "12.5" in t or "1.25" in t or "misread" in t]  # no measured value, no free text
    assert not [v for v in X.ravel() if f"{v:.9f}" in text or repr(float(v)) in text]  # never a feature value


def test_only_answers_typed_by_the_curator_can_be_corrected(lab):
    """A private measurement's ỹ must never be replaced by a true value; an evaluator's answer is not the lab's."""
    dataset = register_csv(lab, lab_csv()[0])  # column evaluator: y
    plain = make_release(lab, dataset["id"])
    with http(lab) as admin:
        private = admin.post(f"/v1/datasets/{dataset['id']}/releases", json={
            "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-6,
            "measurements": {"clip": [-1.0, 0.0], "share": 0.5}}).json()
    for release, words in ((plain, "column evaluator"), (private, "private measurements")):
        key = create_key(lab, [release["id"]])
        session_id, (query,) = ask(lab, key["token"], release["id"], [3])
        with http(lab) as admin:
            refused = admin.post(f"/v1/queries/{query['query_id']}/correct", json={"value": 0.5, "reason": "typo"})
            assert_error(refused, 409, "conflict", words)
        with http(lab, key["token"]) as modeler:
            (listed,) = modeler.get(f"/v1/sessions/{session_id}/queries").json()["queries"]
        assert listed["value"] == query["value"] != 0.5


def test_the_identifier_never_reaches_a_modeler(lab):
    dataset, release, key = lab_dataset(lab)
    seen: list[httpx.Response] = []

    def keep(response: httpx.Response) -> None:
        response.read()
        seen.append(response)

    with httpx.Client(base_url=lab.url, headers={"Authorization": f"Bearer {key['token']}"},
                      event_hooks={"response": [keep]}) as modeler:
        modeler.get("/v1/releases")
        modeler.get(f"/v1/releases/{release['id']}")
        modeler.get(f"/v1/releases/{release['id']}/inputs")
        modeler.get(f"/v1/releases/{release['id']}/inputs", headers={"Accept": "application/x-npy"})
        session = modeler.post(f"/v1/releases/{release['id']}/sessions").json()
        modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [0, 1, 2]})
        modeler.get(f"/v1/sessions/{session['id']}")
        modeler.get("/v1/keys/me/policy")
        (a, b, c) = pending(lab, dataset["id"])
        with http(lab) as admin:
            admin.post(f"/v1/datasets/{dataset['id']}/answers", json={"answers": [{"identifier": a["identifier"],
                                                                                    "value": 0.5}]})
            admin.post(f"/v1/queries/{b['query_id']}/cannot-measure", json={"reason": "no sample"})
        modeler.get(f"/v1/sessions/{session['id']}/queries")
        modeler.get("/v1/queries")  # the pending lists are the curator's: refused
        modeler.get(f"/v1/datasets/{dataset['id']}/worklist")
        modeler.post(f"/v1/datasets/{dataset['id']}/answers", json={"answers": []})
        modeler.put(f"/v1/datasets/{dataset['id']}/identifier-column", json={"column": "mrn"})
        modeler.post(f"/v1/sessions/{session['id']}/close")
    assert len(seen) == 14 and [r.status_code for r in seen[-5:]] == [403, 403, 403, 403, 200]
    for response in seen:
        assert b"MRN-" not in response.content and b"mrn" not in response.content.lower(), response.url


def test_a_modeler_run_waits_on_the_lab_which_answers_by_mrn_and_the_run_finishes(lab, tmp_path):
    """The modeler's real client runs GP-UCB on a manual evaluator and waits; the lab answers by MRN: the
    first by hand, then from CSV files, and marks the third query "cannot measure". The run is told, never
    asks for that row again and finishes with every query charged once."""
    dataset, release, key = lab_dataset(lab)
    book = truth()
    iterations = 6
    handled: list[tuple[str, str]] = []
    stop = threading.Event()

    def lab_user() -> None:
        while not stop.is_set() and len(handled) < iterations:
            for query in pending(lab, dataset["id"]):
                identifier = query["identifier"]
                with http(lab) as admin:
                    if len(handled) == 0:
                        admin.post(f"/v1/datasets/{dataset['id']}/answers",
                                   json={"answers": [{"identifier": identifier, "value": book[identifier]}]})
                        handled.append(("by hand", identifier))
                    elif len(handled) == 2:
                        admin.post(f"/v1/queries/{query['query_id']}/cannot-measure", json={"reason": "no sample"})
                        handled.append(("cannot measure", identifier))
                    else:
                        answer_csv(lab, dataset["id"], f"mrn,value\n{identifier},{book[identifier]!r}\n")
                        handled.append(("csv", identifier))
            time.sleep(0.05)

    worker = threading.Thread(target=lab_user, daemon=True)
    worker.start()
    try:
        client = ModelerClient(lab.url, api=ApiClient(lab.url, key["token"]))
        settings = RunSettings(iterations=iterations, hyperparameters="fixed", lengthscale=0.3, signal_variance=0.05,
                               noise_variance=1e-4)
        run = RemoteGPUCB.start(client, release["id"], settings, tmp_path / "run.json", poll=0.05, max_poll=0.2,
                                pending_timeout=20).run()
    finally:
        stop.set()
        worker.join(timeout=10)
    assert run.finished and len(run.queries) == iterations
    assert [q.status for q in run.queries].count("unmeasurable") == 1
    unmeasurable = next(q for q in run.queries if q.status == "unmeasurable")
    assert [q.index for q in run.queries].count(unmeasurable.index) == 1  # never asked again
    assert [kind for kind, _ in handled] == ["by hand", "csv", "cannot measure", "csv", "csv", "csv"]
    for query, (kind, identifier) in zip(run.queries, handled):  # sequential GP-UCB: one pending at a time
        assert (query.status, query.value) == (("unmeasurable", None) if kind == "cannot measure"
                                               else ("done", book[identifier]))
    assert used_queries(lab, key["id"]) == iterations
    assert np.isfinite(run.best_so_far()).all()
