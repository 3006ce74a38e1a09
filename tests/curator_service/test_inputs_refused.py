"""Every input a caller controls is answered with a 4xx and a sentence, on both databases: control characters in
any string of a body, a path or a query (PostgreSQL cannot store U+0000 at all), CSV cells the ``csv`` module
cannot read, and the console's number fields. A refused caller's ``auth.failed`` row is written with its target
escaped, and nothing else is stored."""

from __future__ import annotations

import re

import pytest

from tests.curator_service.conftest import (
    ADMIN,
    assert_error,
    bearer,
    dataset_spec,
    register,
    synthetic_table,
    table_csv,
    upload,
)

CONTROL = ["\x00", "\x1b", "\x7f"]  # NUL (PostgreSQL's DataError), an escape (a terminal's), DEL


@pytest.fixture
def world(make_client, database_url, open_session):
    """A curator's client on either database, with a dataset, a release, a modeler key and its open session."""
    client = make_client(database_url=database_url)
    opened = open_session(client)
    return client, opened.dataset, opened.key, opened.session


def _stored(client) -> tuple:
    """What a refused request must leave as it was: datasets, keys, releases, ledger, jobs."""
    return tuple(len(client.get(path).json()) for path in ("/v1/datasets", "/v1/keys", "/v1/releases", "/v1/ledger",
                                                            "/v1/jobs"))


def _bodies(dataset: dict, key: dict, session: dict, bad: str) -> list[tuple[str, str, dict, str, dict | None]]:
    """(method, path, JSON body, the field the sentence must name, headers) for a string field of each kind."""
    modeler = bearer(key["token"])
    return [
        ("POST", "/v1/keys", {"name": f"a{bad}b", "release_ids": [1], "max_queries": 1}, "'name'", None),
        ("POST", f"/v1/datasets/{dataset['id']}/budget", {"epsilon": 1.0, "reason": f"more{bad}"}, "'reason'", None),
        ("POST", f"/v1/datasets/{dataset['id']}/releases",
         {"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-6, "dim": 2, "request_id": f"r{bad}"}, "'request_id'",
         None),
        ("POST", f"/v1/sessions/{session['id']}/queries", {"indices": [0], "request_id": f"q{bad}"}, "'request_id'",
         modeler),
        ("POST", "/v1/jobs", {"kind": "dp-mean", "dataset_id": dataset["id"],
                              "params": {"column": f"y{bad}", "lower": 0, "upper": 1, "epsilon": 0.1}},
         "'params.column'", None),
        ("POST", "/v1/jobs", {"kind": "dp-mean", "dataset_id": dataset["id"], "params": {f"k{bad}": 1}}, "'params.k",
         None),
        ("PUT", f"/v1/keys/{key['id']}/policy", {"jobs": [f"dp-mean{bad}"]}, "'jobs.0'", None),
        ("PUT", f"/v1/datasets/{dataset['id']}/identifier-column", {"column": f"a{bad}"}, "'column'", None),
    ]


@pytest.mark.parametrize("bad", CONTROL, ids=["nul", "escape", "del"])
def test_a_control_character_in_any_body_string_is_a_422_naming_the_field(world, bad):
    client, dataset, key, session = world
    before = _stored(client)
    for method, path, body, field, headers in _bodies(dataset, key, session, bad):
        response = client.request(method, path, json=body, headers=headers)
        assert_error(response, 422, "validation_error", field, "control character")
        assert bad not in response.text and "\\u00" not in response.text  # the sentence never echoes the character
    assert _stored(client) == before
    assert client.get(f"/v1/sessions/{session['id']}/queries").json()["queries"] == []  # nothing answered or charged
    assert client.get(f"/v1/keys/{key['id']}/policy").json()["jobs"] == []


def test_a_control_character_in_the_registration_spec_or_the_csv_header_is_a_422(world):
    client, *_ = world
    X, y = synthetic_table(5)
    assert_error(upload(client, table_csv(X, y), dataset_spec(name="bad\x00name")), 422, "validation_error",
                 "'name'", "control character")
    assert_error(upload(client, table_csv(X, y), dataset_spec(name="other", feature_columns=["a", "b\x00"])), 422,
                 "validation_error", "'feature_columns.1'")
    header = table_csv(X, y, columns=("a", "b", "c", "y\x01"))
    assert_error(upload(client, header, dataset_spec(name="other", evaluator={"kind": "manual"})), 422,
                 "validation_error", "column 4 of the CSV header", "control character")
    assert [d["name"] for d in client.get("/v1/datasets").json()] == ["synthetic"]


def test_a_control_character_in_a_query_parameter_is_a_422(world):
    client, *_ = world
    for query in ("actor=admin%00", "action=key.%1b", "actor=%7f"):
        assert_error(client.get(f"/v1/audit?{query}"), 422, "validation_error", "control character")
    assert client.get("/v1/audit?actor=admin").status_code == 200  # the positive control


@pytest.mark.parametrize(("path", "escaped"), [("/v1/datasets/1%00", "/v1/datasets/1\\x00"),
                                               ("/v1/releases/%00", "/v1/releases/\\x00"),
                                               ("/v1/datasets/%1b%5b31m/worklist", "/v1/datasets/\\x1b[31m/worklist")])
def test_a_control_character_in_a_path_is_a_4xx_and_a_refused_callers_row_is_written_escaped(world, path, escaped):
    client, *_ = world
    assert_error(client.get(path), 422, "validation_error")
    refused = client.get(path, headers=bearer("not-a-token"))
    assert_error(refused, 401, "unauthorized")
    failed = client.get("/v1/audit", params={"action": "auth.failed"}).json()
    assert failed, "the refused caller's auth.failed row was not written"
    target = failed[-1]["target"]
    assert target == f"GET {escaped}", target
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in target)


def test_a_cell_longer_than_the_csv_field_limit_is_a_422_naming_its_line(world, make_client):
    client, *_ = world
    X, y = synthetic_table(6)
    lines = table_csv(X, y).splitlines()
    lines[4] = ",".join([lines[4].split(",")[0], "9" * 131_073, *lines[4].split(",")[2:]])
    response = upload(client, "\n".join(lines) + "\n", dataset_spec(name="long-cell"))
    assert_error(response, 422, "validation_error", "line 5", "131,072 characters")
    assert "9999" not in response.text
    manual = register(client, name="lab", evaluator={"kind": "manual"})
    answers = "mrn,value\n1,0.5\n2," + "1" * 200_000 + "\n"
    response = client.post(f"/v1/datasets/{manual['id']}/answers/csv", files={"file": ("a.csv", answers, "text/csv")})
    assert_error(response, 422, "validation_error", "line 3", "131,072 characters")
    assert [d["name"] for d in client.get("/v1/datasets").json()] == ["synthetic", "lab"]


# --- the console's number fields ----------------------------------------------------------------------------------

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _console(client):
    """The client logged in to the console over HTTPS (its cookie is Secure); returns a form poster."""
    client.base_url = client.base_url.copy_with(scheme="https")
    client.headers.pop("Authorization")
    page = client.get("/console/login")
    client.post("/console/login", data={"token": ADMIN, "csrf": CSRF.search(page.text).group(1)},
                follow_redirects=False)

    def post(page_path: str, form_path: str, **form: str):
        csrf = CSRF.search(client.get(page_path).text).group(1)
        return client.post(form_path, data={"csrf": csrf, **form}, follow_redirects=False)

    return post


@pytest.mark.parametrize("text", ["nan", "inf", "-Infinity", "1e999", "²", "١", "1_0"])
def test_a_console_number_that_is_not_an_ascii_finite_decimal_is_a_form_error(world, text):
    client, dataset, _, _ = world
    budget = client.get(f"/v1/datasets/{dataset['id']}").json()["budget"]
    keys, releases = len(client.get("/v1/keys").json()), len(client.get("/v1/releases").json())
    post = _console(client)
    page = f"/console/datasets/{dataset['id']}"
    forms = [
        (page, f"{page}/budget", {"epsilon": text, "delta": "0", "reason": "more"}),
        (page, f"{page}/releases", {"mechanism": "gaussian", "epsilon": text, "delta": "1e-6", "dim": "2"}),
        (page, f"{page}/releases", {"mechanism": "gaussian", "epsilon": "0.5", "delta": "1e-6", "dim": text}),
        ("/console/keys", "/console/keys", {"name": "k", "role": "modeler", "max_queries": text, "release_ids": "1"}),
        ("/console/keys", "/console/keys", {"name": "k", "role": "modeler", "max_queries": "5", "release_ids": text,
                                            "epsilon_cap": text}),
    ]
    for page_path, form_path, form in forms:
        response = post(page_path, form_path, **form)
        # A form that keeps its values is shown again (422) with the sentence beside the field; the others lead
        # back to their page (303), which shows it as a message.
        assert response.status_code in (303, 422), (form_path, response.status_code, response.text[:300])
        if response.status_code == 303:
            assert "/console/login" not in response.headers["location"]
            shown = client.get(response.headers["location"]).text
        else:
            shown = response.text
        assert re.search(r"must be (a finite decimal|a whole number)", shown), (form_path, form)
    api = client.get(f"/v1/datasets/{dataset['id']}", headers=bearer(ADMIN)).json()["budget"]
    assert api == budget
    assert len(client.get("/v1/keys", headers=bearer(ADMIN)).json()) == keys
    assert len(client.get("/v1/releases", headers=bearer(ADMIN)).json()) == releases


def test_a_console_number_in_ascii_still_works(world):
    client, dataset, _, _ = world
    post = _console(client)
    page = f"/console/datasets/{dataset['id']}"
    assert post(page, f"{page}/budget", epsilon="1.5e0", delta="0", reason="more").status_code == 303
    total = client.get(f"/v1/datasets/{dataset['id']}", headers=bearer(ADMIN)).json()["budget"]["total_epsilon"]
    assert total == pytest.approx(11.5)



def test_a_number_of_5000_digits_is_a_422_with_a_sentence_in_the_api_and_the_console(world):
    client, dataset, key, session = world
    big = "9" * 5000  # Python's int() refuses more than 4,300 digits
    json_headers = {"Content-Type": "application/json"}
    for path, body, headers in (
        ("/v1/keys", f'{{"name": "k", "release_ids": [1], "max_queries": {big}}}', json_headers),
        (f"/v1/datasets/{dataset['id']}/budget", f'{{"epsilon": {big}, "delta": 0, "reason": "r"}}', json_headers),
        (f"/v1/sessions/{session['id']}/queries", f'{{"indices": [{big}]}}', {**json_headers, **bearer(key["token"])}),
    ):
        assert_error(client.post(path, content=body, headers=headers), 422, "validation_error",
                     "more than 4,300 digits", "at most 64 characters")
    stored = _stored(client)
    post = _console(client)
    page = f"/console/datasets/{dataset['id']}"
    for page_path, form_path, form in (
        ("/console/keys", "/console/keys", {"name": "k", "role": "modeler", "max_queries": big, "release_ids": "1"}),
        ("/console/keys", "/console/keys", {"name": "k", "role": "modeler", "max_queries": "5", "release_ids": big}),
        (page, f"{page}/releases", {"mechanism": "gaussian", "epsilon": "0.5", "delta": "1e-6", "dim": big}),
        (page, f"{page}/budget", {"epsilon": big, "delta": "0", "reason": "more"}),
    ):
        response = post(page_path, form_path, **form)
        assert response.status_code in (303, 422), (form_path, response.status_code, response.text[:300])
        shown = client.get(response.headers["location"]).text if response.status_code == 303 else response.text
        assert "is a number of 5000 characters" in shown, (form_path, form)
    client.headers["Authorization"] = f"Bearer {ADMIN}"
    assert _stored(client) == stored
