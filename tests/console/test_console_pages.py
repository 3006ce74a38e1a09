"""The curator's console in a real browser on a real server: log in, register a CSV, make a release and see the
ledger move, create and revoke a key, answer a pending query while a modeler client waits, jobs, audit, /docs.

Every check reads what the page shows after an interaction (and, where it matters, what the API then says), so a
broken template, route, form or chart fails here. A screenshot of each page is saved (conftest.py).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from urllib.parse import quote

import httpx
import numpy as np
import pytest

from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import RunSettings

D = 2
UNIT_BOX = {"kind": "bounds", "lower": [0.0] * D, "upper": [1.0] * D, "diameter": 1.0}


def table(seed: int, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.95, size=(n, D))
    return X, -np.sum((X - 0.5) ** 2, axis=1)


def csv_file(tmp_path, X: np.ndarray, y: np.ndarray) -> str:
    path = tmp_path / "lab.csv"
    rows = "\n".join(",".join(repr(float(v)) for v in (*x, target)) for x, target in zip(X, y))
    path.write_text(f"x0,x1,y\n{rows}\n")
    return str(path)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def register_manual(curator, name: str):
    X, y = table(5)
    return curator.register_table(name, X, ["x0", "x1"], evaluator={"kind": "manual"}, budget=(10.0, 1e-3),
                                  extra_columns={"y": y}, scaling=UNIT_BOX)


def api(curator, token: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=curator.url, headers={"Authorization": f"Bearer {token or curator.admin_token}"},
                        timeout=30)


def run_in_background(curator, token: str, release_id: int, settings: RunSettings, path):
    """The modeler's real GP-UCB client on its own thread (it waits on manual queries). :func:`finished_run` joins
    it and returns its run record."""
    run = RemoteGPUCB.start(ModelerClient(curator.url, token), release_id, settings, path, poll=0.1, max_poll=0.3,
                            pending_timeout=120)
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["record"] = run.run()
        except Exception as error:  # noqa: BLE001 - any failure of the run: finished_run asserts there was none
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    return worker, outcome


def finished_run(worker: threading.Thread, outcome: dict, timeout: float = 60):
    worker.join(timeout=timeout)
    assert not worker.is_alive(), f"the modeler's run is still waiting {timeout} s after the last answer"
    assert "error" not in outcome, f"the modeler's run failed: {outcome['error']!r}"
    return outcome["record"]


def waiting_rows(console, dataset_id: int, count: int, timeout: float = 120):
    """The first row of the dataset's worklist in the console, ``count`` times: the caller handles each (answers
    it) before the next is looked for."""
    deadline = time.monotonic() + timeout
    for _ in range(count):
        while not (rows := console.all(f'section[data-dataset="{dataset_id}"] tbody tr')):
            assert time.monotonic() < deadline, f"no query of dataset {dataset_id} came to wait in {timeout} s"
            time.sleep(0.3)
            console.open("/console/queries")
        yield rows[0]
        console.open("/console/queries")


def test_login_refuses_a_bad_token_and_a_modeler_key_and_keeps_the_session_in_a_strict_cookie(console):
    console.log_in("pobo_not-a-real-token")
    assert "not valid" in console.flash()
    assert console.session_cookie() is None
    console.shot("login")

    dataset = register_manual(console.curator, unique("login"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    modeler = console.curator.issue_key([release.id], max_queries=3)
    console.log_in(modeler.token)
    assert "modeler key" in console.flash()
    assert console.session_cookie() is None

    console.log_in(console.curator.admin_token)
    assert console.driver.current_url.endswith("/console/datasets")
    assert console.flash() == "Logged in."
    cookie = console.driver.get_cookie("pobo_console")
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    assert console.driver.execute_script("return document.cookie") == ""  # no script can read it

    console.submit("logout")
    assert console.driver.current_url.endswith("/console/login") and console.session_cookie() is None
    console.open("/console/keys")
    assert console.driver.current_url.endswith("/console/login")  # pages need a login


def finished_release_job(console, dataset_id: int, timeout: float = 120) -> None:
    """Waits for the release job the console's confirmation redirected to, then opens the dataset's page."""
    job_id = int(console.driver.current_url.rsplit("/", 1)[1])
    assert "/console/jobs/" in console.driver.current_url and "running" in console.flash()
    deadline = time.monotonic() + timeout
    with api(console.curator) as admin:
        while (job := admin.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, f"the release job did not finish in {timeout} s"
            time.sleep(0.3)
    assert job["status"] == "succeeded", job["message"]
    console.open(f"/console/datasets/{dataset_id}")


def test_register_a_csv_make_a_release_and_see_the_ledger_move(admin_console, tmp_path):
    console = admin_console
    X, y = table(1)
    name = unique("trial")
    console.open("/console/datasets")
    console.by_id("file").send_keys(csv_file(tmp_path, X, y))
    console.fill({"name": name, "feature_columns": "x0, x1", "evaluator_kind": "column", "measure_column": "y",
                  "scaling_kind": "bounds", "lower": "0, 0", "upper": "1, 1", "diameter": "1",
                  "budget_epsilon": "3", "budget_delta": "1e-5"})
    console.submit("register")
    assert f"Registered '{name}': 12 rows, 2 features." == console.flash()
    dataset_url = console.driver.current_url
    assert console.by_id("spent-epsilon").text == "0" and console.by_id("total-epsilon").text == "3"
    assert console.all("#ledger tbody tr") == []
    console.shot("dataset-registered")

    dataset_id = int(dataset_url.rsplit("/", 1)[1])
    console.fill({"mechanism": "gaussian", "release_epsilon": "1.25", "release_delta": "1e-6", "release_dim": "auto"})
    console.submit("review-release")
    assert console.by_id("confirm-epsilon").text == "1.25" and console.by_id("confirm-left").text == "1.75"
    console.submit("make-release")
    made_now = console.driver.current_url == dataset_url  # else a loaded machine turned it into a job
    if made_now:
        assert "certified" in console.flash() and "NOT" not in console.flash()
    else:
        finished_release_job(console, dataset_id)
    assert console.by_id("spent-epsilon").text == "1.25" and console.by_id("remaining-epsilon").text == "1.75"
    (entry,) = console.all("#ledger tbody tr")
    assert "charge" in entry.text and "1.25" in entry.text
    assert entry.find_element("css selector", ".actor").text == "admin"  # who spent: the console's login
    assert entry.find_element("css selector", ".noise").text.startswith("inputs: Gaussian σ")
    points = console.all('svg[data-chart="epsilon-over-time"] circle')
    assert [float(p.get_attribute("data-y")) for p in points] == [0.0, 1.25]  # registration, then the charge
    assert console.one("svg.gauge").get_attribute("data-spent") == "1.25"

    console.fill({"release_epsilon": "2", "release_delta": "1e-6"})  # 1.75 left: refused, nothing charged
    console.submit("review-release")
    problem = console.by_id("release_epsilon-problem").text
    assert "budget" in problem and "left" in problem
    assert console.by_id("spent-epsilon").text == "1.25" and len(console.all("#ledger tbody tr")) == 1
    console.shot("dataset")

    with api(console.curator) as admin:
        (release,) = [r for r in admin.get("/v1/releases").json() if r["dataset_id"] == dataset_id]
        assert release["certified"]
        assert admin.get(f"/v1/datasets/{dataset_id}").json()["budget"]["spent_epsilon"] == 1.25
    console.open("/console/releases")
    row = console.one(f'tr[data-release="{release["id"]}"]')
    assert row.find_element("css selector", ".badge").text == "certified"
    width = 1 / math.sqrt(D)  # unit-diameter box: each feature spans 1/√d after scaling
    expected = release["noise_std"] / (width / math.sqrt(12))
    assert float(row.find_element("css selector", ".noise-to-spread").text) == pytest.approx(expected, rel=1e-2)
    assert "whole record" in row.find_element("css selector", ".step").text
    console.shot("releases")


def test_create_a_key_see_its_token_once_and_revoke_it(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("keys"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    name = unique("consultancy")
    console.open("/console/keys")
    console.fill({"key_name": name, "key_role": "modeler", "max_queries": "7", "epsilon_cap": "1", "jobs": "dp-bo",
                  "expires_at": "2030-01-02T03:04"})
    console.click(f"scope-{release.id}")
    console.submit("create-key")
    token = console.by_id("new-token").text
    assert token.startswith("pobo_")
    console.shot("keys-created")
    with api(console.curator, token) as modeler:
        assert modeler.get(f"/v1/releases/{release.id}").status_code == 200  # the shown token works

    console.open("/console/keys")
    assert console.all("#new-token") == [] and token not in console.driver.page_source  # shown once only
    row = next(r for r in console.all("#keys tbody tr") if r.find_element("css selector", ".key-name").text == name)
    key_id = row.get_attribute("data-key")
    assert "0 / 7" in row.text and row.find_element("css selector", ".key-state").text == "active"
    assert row.find_element("css selector", ".epsilon-cap").text == "0 / 1"
    assert row.find_element("css selector", ".jobs").text == "dp-bo"
    assert row.find_element("css selector", ".expires").text == "2030-01-02 03:04:00 UTC"
    with api(console.curator) as admin:
        policy = admin.get(f"/v1/keys/{key_id}/policy").json()
    assert (policy["epsilon_cap"], policy["jobs"], policy["expires_at"]) == (1.0, ["dp-bo"], "2030-01-02T03:04:00Z")
    console.submit(f"revoke-{key_id}")
    console.submit("confirm-revoke")
    assert console.flash() == f"Key {key_id} revoked: its sessions stop working."
    assert console.one(f'tr[data-key="{key_id}"] .key-state').text == "revoked"
    console.shot("keys")
    with api(console.curator, token) as modeler:
        assert modeler.get(f"/v1/releases/{release.id}").status_code == 401


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(admin_console):
    console = admin_console
    console.open("/console/keys")
    cookies = {"pobo_console": console.session_cookie()}
    with api(console.curator) as admin:
        before = len(admin.get("/v1/keys").json())
        release_id = admin.get("/v1/releases").json()[0]["id"]
    form = {"name": "forged", "role": "curator", "max_queries": "5", "release_ids": str(release_id)}
    for csrf in (None, "0" * 64, "é" * 64):  # missing, forged, and not even ASCII
        body = form if csrf is None else {**form, "csrf": csrf}
        response = httpx.post(f"{console.curator.url}/console/keys", data=body, cookies=cookies)
        assert response.status_code == 403 and "CSRF" in response.text
    valid = console.one('#key-form input[name="csrf"]').get_attribute("value")
    other_browser = httpx.post(f"{console.curator.url}/console/keys", data={**form, "csrf": valid})
    assert other_browser.status_code in (303, 307) and other_browser.headers["location"].endswith("/console/login")
    with api(console.curator) as admin:
        assert len(admin.get("/v1/keys").json()) == before


def test_answer_a_pending_query_in_the_console_while_the_modeler_client_waits(admin_console, tmp_path):
    console = admin_console
    curator = console.curator
    dataset = register_manual(curator, unique("lab"))
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-6)
    key = curator.issue_key([release.id], max_queries=4)
    worker, outcome = run_in_background(curator, key.token, release.id, RunSettings(iterations=2),
                                        tmp_path / "lab-run.json")
    with api(curator) as admin:
        file_rows = admin.get(f"/v1/datasets/{dataset.id}/row-order").json()["rows"]

    answers = {}
    console.open("/console/queries")
    for row in waiting_rows(console, dataset.id, 2):
        query_id = int(row.get_attribute("data-query"))
        with api(curator) as admin:
            (pending,) = [q for q in admin.get("/v1/queries").json()["queries"] if q["query_id"] == query_id]
        # the row is named in the curator's file terms (no identifier column: its file row), not the modeler's index
        row_named = str(file_rows[pending["index"]])
        assert row.find_element("css selector", ".row-id").text == row_named
        assert row.find_element("css selector", ".file-row").text == row_named
        if not answers:
            console.shot("pending-queries")
        value = 10.0 + len(answers)
        console.fill({f"value-{query_id}": str(value)})
        console.submit(f"answer-{query_id}")
        assert console.flash().startswith(f"Query {query_id} answered")
        answers[query_id] = value
    record = finished_run(worker, outcome)
    assert record.finished and {q.query_id: q.value for q in record.done()} == answers

    console.open("/console/queries")
    assert console.all(f'section[data-dataset="{dataset.id}"]') == []
    console.open("/console/sessions")
    (row,) = [r for r in console.all("#sessions tbody tr") if f"{key.id} (" in r.text]
    session_id = row.get_attribute("data-session")
    console.open(f"/console/sessions/{session_id}")
    best = [float(p.get_attribute("data-y")) for p in console.all('svg[data-chart="best-so-far"] circle')]
    assert best == [10.0, 11.0]  # goal maximize: the running maximum of the answers
    console.shot("session")
    console.open("/console/sessions")
    console.shot("sessions")


def test_jobs_show_progress_and_the_dpareto_front(admin_console):
    console = admin_console
    rng = np.random.default_rng(7)
    X = rng.uniform(0, 1, size=(120, D))
    label = (X[:, 0] + 0.3 * rng.standard_normal(120) > 0.5).astype(float)
    dataset = console.curator.register_table(unique("front"), X, ["x0", "x1"], evaluator={"kind": "column",
                                             "column": "label"}, budget=(10.0, 1e-3), extra_columns={"label": label},
                                             scaling=UNIT_BOX)
    params = {"label_column": "label", "initial_points": 3, "iterations": 1, "max_epochs": 2, "seed": 1}
    with api(console.curator) as admin:
        job = admin.post("/v1/jobs", json={"kind": "dpareto", "dataset_id": dataset.id, "params": params}).json()
        deadline = time.monotonic() + 240
        while (job := admin.get(f"/v1/jobs/{job['id']}").json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the dpareto job did not finish in 240 s"
            time.sleep(0.5)
    assert job["status"] == "succeeded", job["message"]
    console.open("/console/jobs")
    row = console.one(f'tr[data-job="{job["id"]}"]')
    assert "succeeded" in row.text and "100%" in row.text
    console.shot("jobs")
    console.open(f"/console/jobs/{job['id']}")
    drawn = {(float(p.get_attribute("data-x")), float(p.get_attribute("data-y")))
             for p in console.all('svg[data-chart="pareto-front"] circle.front')}
    assert drawn == {(p["epsilon"], p["error"]) for p in job["result"]["front"]}
    assert len(console.all('svg[data-chart="pareto-front"] circle')) == len(job["result"]["points"]) + len(drawn)
    console.shot("job-dpareto")


def test_the_audit_log_filters_by_action(admin_console):
    console = admin_console
    dataset = register_manual(console.curator, unique("audit"))
    release = console.curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    key = console.curator.issue_key([release.id], max_queries=1)
    with api(console.curator) as admin:
        admin.delete(f"/v1/keys/{key.id}")
    console.open("/console/audit")
    actions = {a.text for a in console.all("#audit .action")}
    assert {"key.create", "key.revoke", "release.create"} <= actions
    console.fill({"filter-action": "key.revoke"})
    console.submit("filter")
    shown = console.all("#audit tbody tr")
    assert shown and all(r.find_element("css selector", ".action").text.startswith("key.revoke") for r in shown)
    assert any(f"key:{key.id}" in r.text and r.find_element("css selector", ".action").text == "key.revoke"
               for r in shown)
    console.shot("audit")

    injected = '"><i id="injected">x</i>'
    console.open(f"/console/audit?actor={quote(injected)}")  # a reflected value is text, never markup
    assert console.all("#injected") == [] and console.by_id("filter-actor").get_attribute("value") == injected


def test_pages_forbid_other_scripts_framing_and_caching(console):
    """The browser tests above pass under this policy: no page needs another origin, an inline script or eval."""
    response = httpx.get(f"{console.curator.url}/console/login")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy
    assert response.headers["x-frame-options"] == "DENY" and response.headers["cache-control"] == "no-store"


def test_the_login_page_says_when_plain_http_would_lose_the_secure_cookie(console):
    url = f"{console.curator.url}/console/login"
    assert "needs-https" not in httpx.get(url).text  # loopback: browsers keep Secure cookies there
    assert 'id="needs-https"' in httpx.get(url, headers={"Host": "curator.hospital.example"}).text


def test_every_page_and_the_api_reference_load_only_from_the_server(admin_console):
    """Air-gapped: nothing is fetched from another origin (Swagger UI is served from the package)."""
    console = admin_console
    for path in ("/console/datasets", "/console/releases", "/console/keys", "/console/sessions", "/console/queries",
                 "/console/jobs", "/console/audit"):
        console.open(path)
        assert console.all("h1"), path
        assert all(url.startswith(console.curator.url) for url in console.resources()), path
    console.open("/console/datasets")
    console.shot("datasets")
    console.open("/docs")
    deadline = time.monotonic() + 30
    while len(console.all(".opblock")) < 10 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(console.all(".opblock")) >= 10  # Swagger UI rendered the operations
    assert all(url.startswith(console.curator.url) for url in console.resources())
    console.shot("docs", max_height=1400)


def lab_csv(tmp_path, n: int = 12) -> tuple[str, dict[str, float]]:
    """A lab table: an MRN column (text, never a feature), two features and the lab's own book of results."""
    X, y = table(11, n)
    book = {f"MRN-{1000 + i}": float(v) for i, v in enumerate(y)}
    lines = [f"{mrn},{float(x[0])!r},{float(x[1])!r}" for mrn, x in zip(book, X)]
    path = tmp_path / "lab-mrn.csv"
    path.write_text("mrn,x0,x1\n" + "\n".join(lines) + "\n")
    return str(path), book


def test_the_lab_answers_by_mrn_from_a_csv_and_cannot_measure_while_the_modeler_run_waits(admin_console, tmp_path):
    """The lab's flow in the browser: rows named by MRN; one answer typed, one from an uploaded CSV, one
    "cannot measure" (the client is told and not charged twice); the run finishes; a wrong answer is corrected
    with a reason that the session's lab notes keep (never the audit log)."""
    console, curator = admin_console, admin_console.curator
    path, book = lab_csv(tmp_path)
    name = unique("lab-mrn")
    console.open("/console/datasets")
    console.by_id("file").send_keys(path)
    console.fill({"name": name, "feature_columns": "x0,x1", "evaluator_kind": "manual", "identifier_column": "mrn",
                  "scaling_kind": "bounds", "lower": "0,0", "upper": "1,1", "diameter": "1", "budget_epsilon": "5"})
    console.submit("register")
    assert console.flash().endswith("rows are identified by 'mrn'.")
    assert console.by_id("identifier-column").text == "mrn"
    dataset_id = int(console.driver.current_url.rsplit("/", 1)[1])
    release = curator.create_release(dataset_id, "gaussian", 2.0, 1e-6)
    key = curator.issue_key([release.id], max_queries=3)
    settings = RunSettings(iterations=3, hyperparameters="fixed", lengthscale=0.3, signal_variance=0.05,
                           noise_variance=1e-4)
    worker, outcome = run_in_background(curator, key.token, release.id, settings, tmp_path / "run.json")

    handled: list[tuple[str, str]] = []
    console.open("/console/queries")
    for row in waiting_rows(console, dataset_id, 3):
        query_id, mrn = row.get_attribute("data-query"), row.find_element("css selector", ".row-id").text
        assert mrn in book  # the lab's own identifier, not an index
        if len(handled) == 0:
            console.shot("lab-worklist")
            console.fill({f"value-{query_id}": repr(book[mrn])})
            console.submit(f"answer-{query_id}")
            handled.append(("typed", mrn))
        elif len(handled) == 1:
            answers = tmp_path / "answers.csv"
            answers.write_text(f"mrn,value\n{mrn},{book[mrn]!r}\n")
            console.by_id(f"answers-file-{dataset_id}").send_keys(str(answers))
            console.submit(f"answers-upload-{dataset_id}")
            assert console.flash() == "1 queries answered from answers.csv."
            handled.append(("csv", mrn))
        else:
            console.fill({f"reason-{query_id}": "no sample left"})
            console.submit(f"cannot-{query_id}")
            assert "cannot measure" in console.flash()
            handled.append(("cannot measure", mrn))
    record = finished_run(worker, outcome)
    assert record.finished and [q.status for q in record.queries] == ["done", "done", "unmeasurable"]
    assert [q.value for q in record.queries[:2]] == [book[mrn] for _, mrn in handled[:2]]
    with api(curator) as admin:
        assert next(k for k in admin.get("/v1/keys").json() if k["id"] == key.id)["used_queries"] == 3

    console.open("/console/sessions")
    (row,) = [r for r in console.all("#sessions tbody tr") if f"{key.id} (" in r.text]
    session_id = row.get_attribute("data-session")
    console.open(f"/console/sessions/{session_id}")
    first, _, third = (q.get_attribute("data-query") for q in console.all("#queries tbody tr"))
    assert console.one(f'tr[data-query="{third}"] .status').text == "cannot measure"
    console.fill({f"correct-value-{first}": "0.5", f"correct-reason-{first}": "transcription error"})
    console.submit(f"correct-{first}")
    assert console.by_id("confirm-change").text.startswith(f"MRN {handled[0][1]}: ")  # asks first, by the MRN
    console.submit("save-correction")
    assert console.flash().startswith(f"Query {first} corrected")
    assert console.one(f'tr[data-query="{first}"] .value').text == "0.5"
    assert "transcription error" in console.one(f'#notes tr[data-query="{first}"] .reason').text
    assert "no sample left" in console.one(f'#notes tr[data-query="{third}"] .reason').text
    console.shot("session-lab")
    console.open("/console/audit?action=query.correct")  # the filter matches an action's prefix
    (event,) = [r for r in console.all("#audit tbody tr") if f"query:{first}" in r.text]
    assert "transcription error" not in event.text  # the audit log keeps no free text
