"""The lab's forms in the console, in a real browser on a real server: a refused answer keeps what was typed with the
sentence beside its field (never a banner in Python's list syntax), a decimal comma is read as a decimal point, a
value outside the plausible range asks to be confirmed, a correction names the row by its MRN and asks before it
saves, the identifier form keeps what was typed, the audit log shows changes only until told otherwise and remembers
it, a curator submits a job from the console and the jobs list says who submitted each, and a form the console refuses
itself is audited like the API's refusals."""

from __future__ import annotations

from modeler_client.client import ModelerClient
from tests.console.test_console_narrow import _mrn_dataset
from tests.console.test_console_pages import api, unique


def _value(console, element_id: str) -> str:
    return console.by_id(element_id).get_attribute("value")


def test_worklist_answers_keep_what_was_typed_read_a_decimal_comma_and_confirm_a_value_outside_the_range(
        admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = _mrn_dataset(curator)
    with api(curator) as admin:
        admin.put(f"/v1/datasets/{dataset.id}/plausible-range", json={"low": 20, "high": 120}).raise_for_status()
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    key = curator.issue_key([release.id], max_queries=4)
    modeler = ModelerClient(curator.url, key.token)
    session = modeler.open_session(release.id)
    first, second = modeler.query(session.id, [2, 5])
    one, two = first.query_id, second.query_id

    console.open("/console/queries")
    assert "plausibly 20 to 120 mmol/mol" in console.one(f'section[data-dataset="{dataset.id}"] .measure-line').text
    console.fill({f"value-{one}": "4..2"})
    console.submit(f"answer-{one}")
    assert _value(console, f"value-{one}") == "4..2"  # kept
    sentence = console.by_id(f"value-{one}-problem").text
    assert sentence.startswith("The measured value must be a number such as 4.2 (a decimal comma, 4,2, is read")
    assert console.all("#flash") == [] and "[{" not in console.driver.page_source.split("<main>")[1]
    console.shot("worklist-refused-answer")

    console.fill({f"value-{one}": "5,9"})  # a typo for 59: outside 20 to 120
    console.submit(f"answer-{one}")
    assert _value(console, f"value-{one}") == "5,9"
    assert "outside the plausible range of HbA1c (20 to 120 mmol/mol)" in console.by_id(f"value-{one}-problem").text
    console.fill({f"value-{one}": "59,5"})
    console.submit(f"answer-{one}")
    assert console.flash() == f"Query {one} answered (59.5); the modeler's client gets the value."
    console.fill({f"value-{two}": "5,9"})
    console.submit(f"answer-{two}")
    console.click(f"confirm-{two}")  # the person checked it: it is right
    console.submit(f"answer-{two}")
    assert console.flash().startswith(f"Query {two} answered (5.9)")
    with api(curator) as admin:
        values = {q["query_id"]: q["value"] for q in admin.get(f"/v1/sessions/{session.id}/queries").json()["queries"]}
        assert values == {one: 59.5, two: 5.9}
        refusals = [e for e in admin.get("/v1/audit", params={"action": "refused."}).json()
                    if e["target"] == f"POST /console/queries/{one}/answer"]
        assert {e["action"] for e in refusals} == {"refused.validation_error"}  # the console's own, audited
        assert not any("4..2" in (e["target"] or "") for e in admin.get("/v1/audit").json())

    console.open(f"/console/sessions/{session.id}")
    mrn = console.one(f'#queries tr[data-query="{one}"] .row-id').text
    assert mrn.startswith("MRN-004711")
    console.fill({f"correct-value-{one}": "95,5", f"correct-reason-{one}": "digits swapped"})
    console.submit(f"correct-{one}")
    assert console.by_id("confirm-change").text.startswith(f"MRN {mrn}: HbA1c 59.5 → 95.5 mmol/mol")
    assert console.all("#confirm-outside") == []
    console.shot("correction-confirm")
    console.submit("save-correction")
    assert console.flash().startswith(f"Query {one} corrected")
    assert console.one(f'tr[data-query="{one}"] .value').text == "95.5"
    console.fill({f"correct-value-{two}": "1200", f"correct-reason-{two}": "unit slip"})
    console.submit(f"correct-{two}")
    assert "outside the plausible range of HbA1c (20 to 120 mmol/mol)" in console.by_id("confirm-outside").text
    console.submit("cancel-correction")
    assert console.one(f'tr[data-query="{two}"] .value').text == "5.9"  # nothing saved


def test_the_identifier_form_keeps_what_was_typed_and_the_audit_log_remembers_changes_only(admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = _mrn_dataset(curator)
    console.open(f"/console/datasets/{dataset.id}")
    console.fill({"identifier_column": "x0"})
    console.submit("set-identifier")
    assert _value(console, "identifier_column") == "x0"
    assert "is a feature column" in console.by_id("identifier_column-problem").text

    console.open("/console/audit")
    console.driver.delete_cookie("pobo_audit_changes")  # as on a first visit
    console.open("/console/audit")
    assert console.by_id("filter-changes").is_selected()  # changes only by default
    assert not {"dataset.read", "dataset.list"} & {a.text for a in console.all("#audit .action")}
    console.click("filter-changes")
    console.submit("filter")
    assert "dataset.read" in {a.text for a in console.all("#audit .action")}
    console.open("/console/audit")  # the choice is remembered
    assert not console.by_id("filter-changes").is_selected()
    console.click("filter-changes")
    console.submit("filter")
    console.open("/console/audit")
    assert console.by_id("filter-changes").is_selected()


def test_a_curator_submits_a_job_from_the_console_and_the_list_says_who(admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = _mrn_dataset(curator)
    console.open("/console/jobs")
    console.fill({"job_kind": "dp-mean", "job_dataset": str(dataset.id), "job_params": '{"column": "x0", "lower": 0'})
    console.submit("submit-job")
    assert _value(console, "job_params") == '{"column": "x0", "lower": 0'
    assert console.by_id("job_params-problem").text.startswith("The parameters must be a JSON object")
    console.fill({"job_params": '{"column": "x0", "lower": 0, "upper": 1, "epsilon": 0.5}'})
    console.submit("submit-job")
    assert console.flash().endswith("(dp-mean) submitted.")
    job_id = console.driver.current_url.rsplit("/", 1)[1]
    console.open("/console/jobs")
    assert console.one(f'tr[data-job="{job_id}"] .by').text == "admin"
    name = unique("jobber")
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    with api(curator) as admin:
        made = admin.post("/v1/keys", json={"name": name, "role": "curator", "release_ids": [release.id],
                                             "max_queries": 1})
        assert made.status_code == 201, made.text
        made = made.json()
    with api(curator, made["token"]) as other:
        other_job = other.post("/v1/jobs", json={"kind": "dp-mean", "dataset_id": dataset.id, "params": {
            "column": "x1", "lower": 0, "upper": 1, "epsilon": 0.5}}).json()["id"]
    console.open("/console/jobs")
    assert console.one(f'tr[data-job="{other_job}"] .by').text == f"key {made['id']} ({name})"
