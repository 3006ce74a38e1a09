"""The registration's measurement and label columns, the raise-the-budget form and the mechanism menu, in a real
browser on a real server: the quantity and unit typed at registration are what every worklist row asks the lab to
measure and what the session's page says its queries measure; a refused form keeps its values with the sentence beside
its field; a server that refuses uncertified mechanisms does not offer them."""

from __future__ import annotations

import numpy as np

from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from tests.console.conftest import ConsoleBrowser
from tests.console.test_console_pages import UNIT_BOX, api, register_manual, unique


def value(console, element_id: str) -> str:
    return console.by_id(element_id).get_attribute("value")


def test_the_registrations_quantity_unit_and_label_columns_reach_every_worklist_row_and_the_session_page(
        admin_console, tmp_path):
    console, curator = admin_console, admin_console.curator
    rng = np.random.default_rng(4)
    X = rng.uniform(0.05, 0.95, size=(12, 2))
    path = tmp_path / "hba1c.csv"
    path.write_text("mrn,x0,x1,responder\n" + "\n".join(
        f"MRN-{i},{float(x[0])!r},{float(x[1])!r},{i % 2}" for i, x in enumerate(X)) + "\n")
    name = unique("hba1c")
    typed = {"name": name, "feature_columns": "x0, x1", "goal": "minimize", "evaluator_kind": "manual",
             "quantity": "HbA1c", "unit": "mmol/mol", "expected_delay_hours": "two days",
             "label_columns": "responder", "identifier_column": "mrn", "scaling_kind": "bounds", "lower": "0, 0",
             "upper": "1, 1", "diameter": "1", "budget_epsilon": "4", "budget_delta": "1e-6"}
    console.open("/console/datasets")
    console.by_id("file").send_keys(str(path))
    console.fill(typed)
    console.submit("register")

    assert console.by_id("expected_delay_hours-problem").text.startswith(
        "The expected delay must be a finite decimal number")
    assert console.by_id("expected_delay_hours").get_attribute("aria-invalid") == "true"
    for element_id, typed_value in typed.items():
        assert value(console, element_id) == typed_value, element_id
    console.shot("register-measure-refused")
    with api(curator) as admin:
        assert name not in {d["name"] for d in admin.get("/v1/datasets").json()}

    console.fill({"expected_delay_hours": "48"})
    console.submit("register")
    assert console.all(".problem") == [], [p.text for p in console.all(".problem")]
    assert console.flash().startswith(f"Registered '{name}': 12 rows, 2 features")
    with api(curator) as admin:
        (dataset,) = [d for d in admin.get("/v1/datasets").json() if d["name"] == name]
    assert dataset["measurement"] == {"quantity": "HbA1c", "unit": "mmol/mol", "expected_delay_hours": 48.0,
                                      "plausible_range": None}
    assert dataset["label_columns"] == ["responder"]

    release = curator.create_release(dataset["id"], "gaussian", 1.0, 1e-6)
    modeler = ModelerClient(curator.url, curator.issue_key([release.id], max_queries=3).token)
    session = modeler.open_session(release.id)
    asked = [r.query_id for r in modeler.query(session.id, [2]) + modeler.query(session.id, [7])]
    console.open("/console/queries")
    section = f'section[data-dataset="{dataset["id"]}"]'
    rows = console.all(f"{section} tbody tr")
    assert sorted(int(r.get_attribute("data-query")) for r in rows) == sorted(asked)
    assert [r.find_element("css selector", ".measure").text for r in rows] == ["HbA1c (mmol/mol)"] * 2
    assert console.one(f"{section} .measure-line").text == "Measure: HbA1c in mmol/mol; usually back within 48 h."
    console.shot("worklist-measure")
    console.open(f"/console/sessions/{session.id}")
    assert console.by_id("session-measure").text == "Each query measures HbA1c in mmol/mol; usually back within 48 h."
    console.shot("session-measure")


def test_a_refused_budget_raise_keeps_its_values_with_the_sentence_beside_its_field(admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = register_manual(curator, unique("raise"))
    with api(curator) as admin:
        before = admin.get(f"/v1/datasets/{dataset.id}").json()["budget"]
    page = f"/console/datasets/{dataset.id}"
    for typed, field, sentence in (
        ({"raise_epsilon": "lots", "raise_delta": "0", "raise_reason": "a second study"}, "raise_epsilon",
         "ε must be a finite decimal number"),
        ({"raise_epsilon": "2", "raise_delta": "0.999", "raise_reason": "a second study"}, "raise_delta", "'delta'"),
    ):
        console.open(page)
        console.fill(typed)
        console.submit("raise-budget")
        assert sentence in console.by_id(f"{field}-problem").text
        assert console.by_id(field).get_attribute("aria-invalid") == "true"
        assert console.all("#flash") == []
        for element_id, typed_value in typed.items():
            assert value(console, element_id) == typed_value, element_id
    with api(curator) as admin:
        assert admin.get(f"/v1/datasets/{dataset.id}").json()["budget"] == before

    console.fill({"raise_delta": "0"})
    console.submit("raise-budget")
    assert console.flash() == "Budget raised (recorded in the ledger)."
    with api(curator) as admin:
        assert admin.get(f"/v1/datasets/{dataset.id}").json()["budget"]["total_epsilon"] == before["total_epsilon"] + 2


def mechanisms_offered(console: ConsoleBrowser, dataset_id: int) -> list[str]:
    console.open(f"/console/datasets/{dataset_id}")
    return [o.get_attribute("value") for o in console.all("#mechanism option")]


def test_the_release_form_offers_po_gp_ucb_only_where_the_server_allows_it(admin_console, tmp_path):
    allowing = admin_console  # the test server enables uncertified mechanisms, as the local demo does
    dataset = register_manual(allowing.curator, unique("menu"))
    assert mechanisms_offered(allowing, dataset.id) == ["gaussian", "po-gp-ucb"]

    strict = LocalCurator(tmp_path / "strict", env={"POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false"}).start()
    browser = ConsoleBrowser(allowing.driver, strict, allowing.screenshots)
    try:
        dataset = strict.register_table(unique("menu"), np.full((4, 2), 0.5), ["x0", "x1"],
                                        evaluator={"kind": "manual"}, budget=(1.0, 1e-6), scaling=UNIT_BOX)
        browser.log_in(strict.admin_token)
        assert mechanisms_offered(browser, dataset.id) == ["gaussian"]
    finally:
        allowing.driver.delete_all_cookies()  # the shared browser logs in again on the session's server
        strict.stop()
