"""The lab on the command line against a real server: pending queries and a session's queries by the curator's own
identifier (the MRN) with what to measure (which the modeler's ``info`` states too), corrections and "cannot
measure", and tables that stay readable in a pipe 80 columns wide (no column narrower than its header, one line per
row)."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app as modeler_app
from tests.conftest import aligned_table
from tests.curator_service.conftest import ADMIN_HEADERS, bearer, flat


def lab_csv(path, n: int = 12, features: int = 3):
    """A table with an MRN column (text identifiers), ``features`` feature columns f0… and an outcome."""
    rng = np.random.default_rng(3)
    header = ["mrn", *(f"f{j}" for j in range(features)), "outcome"]
    lines = [",".join(header)] + [",".join([f"MRN-{1000 + i}", *(f"{v:.4f}" for v in rng.uniform(0, 1, features)),
                                            f"{rng.uniform(40, 90):.1f}"]) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.filterwarnings("error:Pydantic serializer warnings")  # each row's measurement is a MeasurementSpec
def test_pending_queries_name_the_mrn_and_what_to_measure_and_corrections_go_by_query(curator_cli, tmp_path):
    run = curator_cli
    csv = lab_csv(tmp_path / "lab.csv")
    run("dataset", "add", str(csv), "--name", "lab", "--features", "f0,f1,f2", "--evaluator", "manual",
        "--epsilon", "4", "--lower", "0,0,0", "--upper", "1,1,1", "--measure", "HbA1c", "--unit", "mmol/mol",
        "--expected-delay-hours", "48")
    run("release", "create", "--dataset", "1", "--epsilon", "1")
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        assert admin.put("/v1/datasets/1/identifier-column", json={"column": "mrn"}).status_code == 200
        token = admin.post("/v1/keys", json={"name": "lab", "release_ids": [1], "max_queries": 5}).json()["token"]
    with httpx.Client(base_url=run.url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()["id"]
        modeler.post(f"/v1/sessions/{session}/queries", json={"indices": [4, 7]})
        release = modeler.get("/v1/releases/1").json()
    assert release["measurement"] == {"quantity": "HbA1c", "unit": "mmol/mol", "expected_delay_hours": 48.0,
                                      "plausible_range": None}
    assert release["evaluator_kind"] == "manual" and release["feature_columns"] == ["f0", "f1", "f2"]
    info = CliRunner().invoke(modeler_app, ["info", "--url", run.url, "--token", token, "--release", "1"],
                              env={"COLUMNS": "250"})
    assert info.exit_code == 0, info.output
    assert "HbA1c in mmol/mol, measured by hand in a lab" in " ".join(info.output.split())

    pending = json.loads(run.invoke("queries", "pending", "--json").stdout)
    assert [q["identifier"] for q in pending] == [f"MRN-{1000 + q['row'] - 1}" for q in pending]
    assert {q["measurement"]["quantity"] for q in pending} == {"HbA1c"}
    table = run("queries", "pending")
    assert all(q["identifier"] in table for q in pending) and "HbA1c (mmol/mol)" in table

    first, second = pending
    run("queries", "answer", str(first["query_id"]), "59")
    fixed = json.loads(run.invoke("queries", "correct", str(first["query_id"]), "95", "--reason",
                                  "digits swapped when typed", "--json").stdout)
    assert (fixed["query_id"], fixed["status"], fixed["value"]) == (first["query_id"], "done", 95.0)
    run("queries", "cannot-measure", str(second["query_id"]), "--reason", "sample haemolysed")
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        notes = admin.get(f"/v1/sessions/{session}/notes").json()
    assert [(n["action"], n["old_value"], n["new_value"], n["reason"]) for n in notes] == [
        ("correct", 59.0, 95.0, "digits swapped when typed"), ("cannot_measure", None, None, "sample haemolysed")]
    still = run.invoke("queries", "correct", str(second["query_id"] + 10), "1", "--reason", "x")
    assert still.exit_code == 1 and "(not_found)" in still.stderr

    rows = json.loads(run.invoke("sessions", "--session", str(session), "--json").stdout)
    assert [(r["identifier"], r["status"], r["value"]) for r in rows] == [
        (first["identifier"], "done", 95.0), (second["identifier"], "unmeasurable", None)]
    assert first["identifier"] in run("sessions", "--session", str(session))


def test_an_answered_query_points_to_the_correct_command(curator_cli, tmp_path):
    run = curator_cli
    run("dataset", "add", str(lab_csv(tmp_path / "lab.csv")), "--name", "lab", "--features", "f0,f1,f2",
        "--evaluator", "manual", "--epsilon", "4", "--lower", "0,0,0", "--upper", "1,1,1")
    run("release", "create", "--dataset", "1", "--epsilon", "1")
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        token = admin.post("/v1/keys", json={"name": "lab", "release_ids": [1], "max_queries": 5}).json()["token"]
    with httpx.Client(base_url=run.url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()["id"]
        [query] = modeler.post(f"/v1/sessions/{session}/queries", json={"indices": [2]}).json()["results"]
    [pending] = json.loads(run.invoke("queries", "pending", "--json").stdout)
    assert pending["identifier"] == str(pending["row"])  # no identifier column: the file row
    run("queries", "answer", str(query["query_id"]), "1.5")
    again = run.invoke("queries", "answer", str(query["query_id"]), "2")
    assert again.exit_code == 1
    assert f"pobo-curator queries correct {query['query_id']} VALUE --reason" in flat(again.stderr)


def test_dataset_add_piped_at_80_columns_is_one_line_per_row_and_no_column_is_squeezed(curator_cli, tmp_path):
    run = curator_cli
    csv = lab_csv(tmp_path / "nine.csv", features=9)
    names = ",".join(f"f{j}" for j in range(9))
    result = run.invoke("dataset", "add", str(csv), "--name", "nine features", "--features", names,
                        "--evaluator", "column:outcome", "--epsilon", "4", "--lower", ",".join(["0"] * 9),
                        "--upper", ",".join(["1"] * 9), columns=80)
    assert result.exit_code == 0, result.output
    header = ["id", "name", "n", "d", "measured", "goal", "ε spent / total", "δ spent / total"]
    [row] = aligned_table(result.stdout, header)
    assert row == ["1", "nine features", "12", "9", "column", "maximize", "0 / 4", "0 / 1e-05"]
    assert "dataset 1 features: f0, f1, f2, f3, f4, f5, f6, f7, f8" in result.stdout
    listed = run.invoke("dataset", "list", "--csv").stdout.splitlines()
    assert listed[0] == ",".join(header) and listed[1].startswith("1,nine features,12,9,column,")


def test_a_label_column_must_hold_0_and_1_and_jobs_may_name_only_approved_ones(curator_cli, tmp_path):
    run = curator_cli
    csv = tmp_path / "labels.csv"
    csv.write_text("a,b,y,sick,visits\n" + "".join(f"{i / 10},{i % 3 / 3},{i},{i % 2},{i * 7}\n" for i in range(10)))
    common = ["dataset", "add", str(csv), "--features", "a,b", "--evaluator", "column:y", "--epsilon", "4",
              "--lower", "0,0", "--upper", "1,1"]
    refused = run.invoke(*common, "--name", "counts", "--label-columns", "visits")
    assert refused.exit_code == 1
    assert "column 'visits', data row 2 (line 3 of the file) is not 0 or 1" in flat(refused.stderr)
    added = json.loads(run.invoke(*common, "--name", "ok", "--label-columns", "sick", "--json").stdout)
    assert added["label_columns"] == ["sick"]
    run("release", "create", "--dataset", str(added["id"]), "--epsilon", "1")
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        assert admin.get("/v1/releases/1").json()["label_columns"] == ["sick"]
        job = admin.post("/v1/jobs", json={"kind": "dp-bo", "dataset_id": added["id"],
                                           "params": {"label_column": "y", "epsilon": 1.0, "delta": 1e-6,
                                                      "iterations": 3, "log10_lambda": [-3.0, -1.0]}})
    # 'y' is numeric (the measured column) but not an approved label: refused by public facts alone
    assert job.status_code == 422 and ("label_column 'y' is not one of this dataset's 0/1 label columns (the curator "
                                       "approved 'sick')") in job.json()["detail"]


def test_a_command_without_a_token_names_the_variable_and_the_file_serve_wrote(tmp_path):
    from typer.testing import CliRunner

    from curator_service.cli import app

    result = CliRunner().invoke(app, ["queries", "pending"],
                                env={"POBO_ADMIN_TOKEN": "", "XDG_DATA_HOME": str(tmp_path),
                                                                   "COLUMNS": "200"})
    assert result.exit_code == 2
    said = flat(result.stderr)
    assert "no admin token: set POBO_ADMIN_TOKEN to the admin token (or pass --token)" in said
    assert f"wrote one to {tmp_path / 'pobo-curator' / 'admin_token'}" in said


def test_the_lab_answers_and_corrects_by_mrn_and_a_value_outside_the_plausible_range_must_be_confirmed(curator_cli,
                                                                                                       tmp_path):
    run = curator_cli
    csv = lab_csv(tmp_path / "lab.csv")
    added = run("dataset", "add", str(csv), "--name", "lab", "--features", "f0,f1,f2", "--evaluator", "manual",
                "--epsilon", "4", "--lower", "0,0,0", "--upper", "1,1,1", "--measure", "HbA1c", "--unit", "mmol/mol",
                "--plausible-range", "20", "120", "--identifier-column", "mrn")
    assert "rows are identified by 'mrn'" in flat(added)
    run("release", "create", "--dataset", "1", "--epsilon", "1")
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        token = admin.post("/v1/keys", json={"name": "lab", "release_ids": [1], "max_queries": 5}).json()["token"]
    with httpx.Client(base_url=run.url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()["id"]
        modeler.post(f"/v1/sessions/{session}/queries", json={"indices": [4, 7, 9]})
    first, second, third = json.loads(run.invoke("queries", "pending", "--json").stdout)

    typo = run.invoke("queries", "answer", "--mrn", first["identifier"], "--dataset", "1", "5,9")
    assert typo.exit_code == 1 and "outside the plausible range of HbA1c (20 to 120 mmol/mol)" in flat(typo.stderr)
    assert "--confirm-outside-range" in flat(typo.stderr) and "5.9" not in typo.stderr  # never the value
    answered = run("queries", "answer", "--mrn", first["identifier"], "--dataset", "1", "59,5")  # a decimal comma
    assert f"MRN {first['identifier']}: HbA1c 59.5 mmol/mol (query {first['query_id']} answered)" in flat(answered)
    by_id = run("queries", "answer", str(second["query_id"]), "7", "--confirm-outside-range")
    assert f"MRN {second['identifier']}: HbA1c 7 mmol/mol" in flat(by_id)

    corrected = run("queries", "correct", "--mrn", first["identifier"], "--dataset", "1", "95.5", "--reason",
                    "digits swapped when typed")
    assert f"MRN {first['identifier']}: HbA1c 59.5 → 95.5 mmol/mol (query {first['query_id']} corrected" in flat(
        corrected)
    outside = run.invoke("queries", "correct", "--mrn", first["identifier"], "--dataset", "1", "955",
                         "--reason", "x")
    assert outside.exit_code == 1 and "outside the plausible range" in flat(outside.stderr)
    unknown = run.invoke("queries", "correct", "--mrn", "MRN-9999", "--dataset", "1", "50", "--reason", "x")
    assert unknown.exit_code == 1 and "no answered (or marked cannot measure) query of dataset 1 is for MRN MRN-9999" \
        in flat(unknown.stderr)
    marked = run("queries", "cannot-measure", "--mrn", third["identifier"], "--dataset", "1", "--reason",
                 "sample haemolysed")
    assert f"MRN {third['identifier']}: cannot measure (query {third['query_id']}" in flat(marked)
    with httpx.Client(base_url=run.url, headers=ADMIN_HEADERS) as admin:
        notes = admin.get(f"/v1/sessions/{session}/notes").json()
        assert [(n["query_id"], n["old_value"], n["new_value"]) for n in notes] == [
            (first["query_id"], 59.5, 95.5), (third["query_id"], None, None)]
        assert admin.get("/v1/datasets/1").json()["measurement"]["plausible_range"] == [20.0, 120.0]

    run("dataset", "set", "1", "--no-plausible-range")
    run("dataset", "set-identifier", "1", "f0", exit_code=1)  # a feature is released: never an identifier
    assert "MRN" in run("queries", "correct", "--mrn", first["identifier"], "--dataset", "1", "955", "--reason",
                        "no range any more")
