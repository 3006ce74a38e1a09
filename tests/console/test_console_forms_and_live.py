"""The console as people use it, in a real browser on a real server: a refused form keeps every value with the
sentence beside its field, irreversible acts ask first (saying what they spend and that they cannot be undone), the
planning panel charges nothing, pending queries arrive without a reload, the layout holds at 360 px and ``/`` leads
to the console. Each check reads what the page shows and what the API then says.
"""

from __future__ import annotations

import time

import httpx
import numpy as np

from modeler_client.client import ModelerClient
from shared.api.governance import KeyCreateWithPolicy
from tests.console.test_console_pages import api, register_manual, unique

TEN = [f"f{i}" for i in range(10)]


def charges(curator, dataset_id: int) -> list[dict]:
    with api(curator) as admin:
        return [e for e in admin.get("/v1/ledger", params={"dataset_id": dataset_id}).json() if e["kind"] == "charge"]


def value(console, element_id: str) -> str:
    return console.by_id(element_id).get_attribute("value")


def test_a_refused_registration_keeps_every_value_the_file_too_with_the_sentence_beside_its_field(admin_console,
                                                                                                  tmp_path):
    console = admin_console
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(20, 10))
    path = tmp_path / "ten.csv"
    path.write_text("mrn," + ",".join(TEN) + "\n" + "\n".join(
        f"MRN-{i}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(X)) + "\n")
    name = unique("ten")
    typed = {"name": name, "feature_columns": ", ".join(TEN), "goal": "minimize", "evaluator_kind": "manual",
             "identifier_column": "mrn", "scaling_kind": "bounds", "lower": ", ".join(["0"] * 9),
             "upper": ", ".join(["1"] * 10), "diameter": "1", "budget_epsilon": "4", "budget_delta": "1e-6"}
    console.open("/console/datasets")
    console.by_id("file").send_keys(str(path))
    console.fill(typed)
    console.submit("register")

    problem = console.by_id("lower-problem")
    assert problem.text == "Give one lower bound per feature column: 10 feature columns, 9 lower bounds."
    assert problem.find_element("xpath", "..").find_element("css selector", "input").get_attribute("id") == "lower"
    assert console.by_id("lower").get_attribute("aria-invalid") == "true"
    assert console.all("#flash") == []  # beside its field, not at the top
    for element_id, typed_value in typed.items():
        assert value(console, element_id) == typed_value, element_id
    assert console.by_id("kept-file").text.startswith("kept: ten.csv")
    console.shot("register-refused")
    with api(console.curator) as admin:
        assert name not in {d["name"] for d in admin.get("/v1/datasets").json()}

    console.fill({"lower": ", ".join(["0"] * 10)})  # the file is not chosen again
    console.submit("register")
    assert console.flash() == f"Registered '{name}': 20 rows, 10 features; rows are identified by 'mrn'."


def test_revoking_a_key_asks_first_and_says_it_cannot_be_undone(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("revoke"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    key = console.curator.issue_key([release.id], max_queries=5, name=unique("lab-partner"))
    console.open("/console/keys")
    console.submit(f"revoke-{key.id}")
    text = console.by_id("revoke-confirmation").text
    assert "cannot be undone" in text and "gives no budget back" in text and "0 of 5 queries" in text
    console.shot("revoke-confirm")
    with api(console.curator, key.token) as modeler:
        assert modeler.get(f"/v1/releases/{release.id}").status_code == 200  # asking revoked nothing
    console.submit("keep-key")
    assert console.one(f'tr[data-key="{key.id}"] .key-state').text == "active"

    console.submit(f"revoke-{key.id}")
    console.submit("confirm-revoke")
    assert console.flash() == f"Key {key.id} revoked: its sessions stop working."
    with api(console.curator, key.token) as modeler:
        assert modeler.get(f"/v1/releases/{release.id}").status_code == 401


def test_a_release_is_reviewed_before_it_spends_and_the_review_charges_nothing(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("review"))
    console.open(f"/console/datasets/{dataset.id}")
    assert value(console, "release_epsilon") == ""  # nothing pre-filled to spend
    console.fill({"release_epsilon": "1.5", "release_delta": "1e-6"})
    console.submit("review-release")
    text = console.by_id("release-confirmation").text
    assert "cannot be undone" in text
    assert console.by_id("confirm-epsilon").text == "1.5" and console.by_id("confirm-left").text == "8.5"
    assert "noise / spread" in console.by_id("confirm-plan").text
    assert console.by_id("make-release").text == "Spend ε 1.5 and make the release"
    console.shot("release-confirm")
    assert charges(console.curator, dataset.id) == []

    console.submit("change-release")  # back to the form, values kept
    assert value(console, "release_epsilon") == "1.5"
    console.submit("review-release")
    console.submit("make-release")
    deadline = time.monotonic() + 120  # a slow machine turns the release into a job the console shows
    while not charges(console.curator, dataset.id):
        assert time.monotonic() < deadline, "the confirmed release was not charged"
        time.sleep(0.3)
    assert [e["epsilon"] for e in charges(console.curator, dataset.id)] == [1.5]


def test_the_planning_panel_shows_the_planners_table_and_charges_nothing(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("plan"))
    console.open(f"/console/datasets/{dataset.id}")
    console.fill({"release_epsilon": "0.5, 2, 8", "release_delta": "1e-6"})
    console.submit("plan-release")
    rows = console.all("#plan-table tbody tr")
    assert [float(r.get_attribute("data-epsilon")) for r in rows] == [0.5, 2.0, 8.0]
    spread = [float(r.find_element("css selector", ".noise-to-spread").text.split()[0]) for r in rows]
    assert spread[0] > spread[1] > spread[2] > 0  # more ε, less noise
    assert value(console, "release_epsilon") == "0.5, 2, 8"  # the form keeps what was typed
    assert console.by_id("spent-epsilon").text == "0"
    console.shot("release-plan")
    assert charges(console.curator, dataset.id) == []
    with api(console.curator) as admin:
        assert admin.get(f"/v1/datasets/{dataset.id}").json()["budget"]["spent_epsilon"] == 0


def test_a_query_posted_by_a_modeler_appears_on_the_open_worklist_without_a_reload(admin_console):
    console = admin_console
    curator = console.curator
    dataset = register_manual(curator, unique("live"))
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    key = curator.issue_key([release.id], max_queries=3)
    console.open("/console/queries")
    console.driver.execute_script("window.notReloaded = true")
    before = int(console.by_id("waiting-count").text)
    modeler = ModelerClient(curator.url, key.token)
    session = modeler.open_session(release.id)
    posted = time.monotonic()
    (result,) = modeler.query(session.id, [4])
    deadline = posted + 5.0
    while not (rows := console.all(f'section[data-dataset="{dataset.id}"] tbody tr')):
        assert time.monotonic() < deadline, "the modeler's query did not appear within 5 s"
        time.sleep(0.1)
    assert rows[0].get_attribute("data-query") == str(result.query_id)
    assert console.driver.execute_script("return window.notReloaded === true")  # updated in place, no reload
    assert int(console.by_id("waiting-count").text) == before + 1
    console.shot("pending-live")


def test_the_console_holds_at_360_px_without_sideways_scrolling(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("narrow"))
    console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    driver = console.driver
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 360, "height": 780, "deviceScaleFactor": 1, "mobile": True})
    try:
        for path in ("/console/datasets", f"/console/datasets/{dataset.id}", "/console/releases", "/console/keys",
                     "/console/sessions", "/console/queries", "/console/jobs", "/console/audit"):
            console.open(path)
            widths = driver.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert widths[0] <= widths[1] == 360, (path, widths)
        console.open(f"/console/datasets/{dataset.id}")
        driver.save_screenshot(str(console.screenshots / "dataset-360px.png"))
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_servers_address_leads_to_the_console_and_the_login_page_opens_without_an_error(console):
    answer = httpx.get(console.curator.url + "/")
    assert answer.status_code == 307 and answer.headers["location"] == "/console"
    console.driver.delete_all_cookies()
    console.open("/")
    assert console.driver.current_url.endswith("/console/login")
    assert console.all("#flash") == [] and console.all(".error") == []
    assert console.all("#token")


def test_the_audit_log_is_paged_newest_first_and_filters_by_actor_action_and_changes_only(admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = register_manual(curator, unique("audit-filter"))
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    partner = curator.issue_key([release.id], max_queries=2, name=unique("partner"))
    reader = curator.create_key(KeyCreateWithPolicy(name=unique("reader"), role="curator", release_ids=[release.id],
                                                    max_queries=1))
    with api(curator, reader.token) as other_curator:
        for _ in range(4):  # the same read four times in a row: one row, ×4
            other_curator.get(f"/v1/datasets/{dataset.id}")
        other_curator.delete(f"/v1/keys/{partner.id}")  # outside its policy: refused, and a refusal is listed
    actor = f"key:{reader.id}:{reader.name}"

    console.open("/console/audit")
    rows = console.all("#audit tbody tr")
    assert len(rows) == 50 or console.all("#older-page") == []  # one page at a time
    ids = [int(r.find_element("css selector", "td").text.split("–")[0]) for r in rows]
    assert ids == sorted(ids, reverse=True)  # newest first
    console.fill({"filter-actor": actor})
    if console.by_id("filter-changes").is_selected():  # changes only is the default: show the reads too
        console.click("filter-changes")
    console.submit("filter")
    shown = [(r.find_element("css selector", ".action").text, r.find_element("css selector", ".count").text)
             for r in console.all("#audit tbody tr")]
    assert shown == [("key.revoke.refused", "1"), ("dataset.read", "×4")], shown
    console.click("filter-changes")
    console.submit("filter")
    assert [r.find_element("css selector", ".action").text for r in console.all("#audit tbody tr")] == [
        "key.revoke.refused"]
    assert console.by_id("filter-changes").is_selected() and value(console, "filter-actor") == actor
    console.shot("audit-filtered")

    console.open("/console/audit?changes=1")
    assert not {"dataset.read", "dataset.list", "ledger.read"} & {a.text for a in console.all("#audit .action")}
    if console.all("#older-page"):
        first = console.one("#audit tbody tr td").text
        console.submit("older-page")
        assert "page 2 of" in console.by_id("audit-summary").text and console.one("#audit tbody tr td").text != first


def test_the_session_page_of_an_identity_release_shows_parameter_importance(admin_console):
    """y depends on the dose only: the ARD fit on the session's answers ranks it first."""
    console, curator = admin_console, admin_console.curator
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(60, 2))
    dataset = curator.register_table(unique("importance"), X, ["dose", "noise_feature"],
                                     evaluator={"kind": "column", "column": "y"}, budget=(250.0, 1e-3),
                                     extra_columns={"y": np.sin(6 * X[:, 0])},
                                     scaling={"kind": "bounds", "lower": [0.0, 0.0], "upper": [1.0, 1.0],
                                              "diameter": 1.0})
    release = curator.create_release(dataset.id, "gaussian", 200.0, 1e-3, seed=2)  # research mode: a reproducible draw
    assert release.projection == "identity", release.projection
    key = curator.issue_key([release.id], max_queries=30)
    modeler = ModelerClient(curator.url, key.token)
    session = modeler.open_session(release.id)
    modeler.query(session.id, list(range(0, 60, 3)))
    console.open(f"/console/sessions/{session.id}")
    bars = {b.get_attribute("data-label"): float(b.get_attribute("data-value"))
            for b in console.all('svg[data-chart="importance"] rect')}
    assert bars["dose"] == 1.0 > bars["noise_feature"], bars
    console.shot("session-importance")
