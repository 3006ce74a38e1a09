"""The console's pages under ``/console``: each reads and acts through the API as the logged-in token.

Datasets (budget gauge, ledger, cumulative ε chart, register a CSV, make a release, raise the budget, the row
identifier), releases, keys (caps, job kinds, expiry; token shown once; revoke), sessions (queries, best-so-far
chart, corrections), the lab's worklists (answer by the curator's row identifier, one by one or from a CSV,
"cannot measure"), jobs (progress, result, DPareto front) and the audit log (filterable).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any
from urllib.parse import urlencode

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from curator_service.admission import client_address, note_failure
from curator_service.console import charts, security
from curator_service.console.client import Api, ApiRefusal
from curator_service.console.pages import (
    PAGE_HEADERS,
    Console,
    Problems,
    audit_refusal,
    checked_form,
    field,
    kept_values,
    measured,
    number,
    numbers,
    redirect,
    refused,
    render,
    whole_number,
)
from curator_service.console.reads import job_submitters, list_sessions, live_state
from curator_service.console.uploads import KeptFile, KeptUploads
from curator_service.routers.auth import ANONYMOUS
from curator_service.services import audit, console_sessions
from curator_service.services.job_kinds import KINDS
from curator_service.services.planner import MAX_SIMULATED_QUERIES, MAX_SIMULATED_ROWS
from curator_service.services.policy import principal_for_token
from shared.algorithms.kusner.dpbo import lambda_verdict
from shared.algorithms.planner import ReleaseSetting, noise_to_spread
from shared.api.errors import ApiError
from shared.api.schemas import MAX_PLAN_RUNS, UNFINISHED_JOB_STATUSES
from shared.checks import too_long_number
from shared.gp.importance import importance_intervals, importance_warnings
from shared.regret import Goal, best_so_far
from shared.releases.noise_ratio import meaning as noise_meaning
from shared.releases.noise_ratio import release_noise_to_spread

router = APIRouter(prefix="/console", include_in_schema=False)

AUDIT_ROWS = 50


async def act(back: str, call: Callable[[], Awaitable[Any]], done: Callable[[Any], str]) -> RedirectResponse:
    """Runs ``call`` (form parsing and the API request), then back to the page ``back`` with ``done(result)``, or
    with the API's sentence when it refused."""
    try:
        result = await call()
    except ApiRefusal as refusal:
        return refused(back, refusal)
    return redirect(back, done(result))


# --- login -----------------------------------------------------------------------------------------------


@router.get("", response_class=RedirectResponse)
def home() -> RedirectResponse:
    return RedirectResponse("/console/datasets", status_code=303)


@router.get("/live")
async def live(request: Request, api: Console) -> JSONResponse:
    """What static/live.js polls: the count of waiting measurements and a version of the queries and sessions
    (counts and times only, never a value or an index). Not audited: it is the page's own clock, not a read of
    data, and would otherwise fill the audit log with one event every two seconds per open page."""
    state = await run_in_threadpool(live_state, request.app.state.db)
    return JSONResponse({"waiting": state.waiting, "version": state.version}, headers=PAGE_HEADERS)


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> HTMLResponse:
    """Warns when the page came over plain HTTP from another host: the browser would not keep the Secure cookie."""
    plain_http = request.url.scheme == "http" and request.url.hostname not in LOOPBACK_HOSTS
    return render(request, "login.html", plain_http=plain_http)


@router.post("/login")
async def login(request: Request) -> RedirectResponse:
    """Opens a console session for the admin token or a curator key (a failed login counts toward the client's
    back-off, :mod:`curator_service.admission`). The browser gets the session's id, never the token."""
    form = await checked_form(request)
    token = field(form, "token")
    throttle = request.app.state.auth_throttle
    if (wait := throttle.refuses(client_address(request.scope), token or None)) > 0:
        return redirect("/console/login", f"Too many failed logins from this address; wait {math.ceil(wait)} s, "
                        "then log in with the admin token or a curator key.", "error")
    if not token:
        return redirect("/console/login", "Paste the admin token or a curator key.", "error")
    if (previous := security.session_id(request)) is not None:  # a login replaces the browser's session
        await run_in_threadpool(_end_session, request, previous)
    opened = await run_in_threadpool(_open_session, request, token)
    if isinstance(opened, ApiError):
        if opened.status == 401:
            await note_failure(request, throttle)
        response = redirect("/console/login", opened.detail, "error")
        security.log_out(response)  # the browser's previous session, if any, was ended above
        return response
    throttle.proved(token)
    response = redirect("/console/datasets", "Logged in.")
    security.log_in(response, opened)
    return response


LOGIN_TARGET = "POST /console/login"


def _open_session(request: Request, token: str) -> str | ApiError:
    """A new session's id, or the refusal (audited: ``auth.failed``, or ``auth.denied`` for a modeler key)."""
    state = request.app.state
    with state.db.write() as session:
        try:
            principal = principal_for_token(session, token, state.settings.admin_token)
        except ApiError as refusal:
            audit.record(session, ANONYMOUS, "auth.failed", LOGIN_TARGET)
            return refusal
        if not principal.is_curator:
            audit.record(session, principal, "auth.denied", LOGIN_TARGET)
            return ApiError(403, "forbidden", "This is a modeler key; the console is the curator's: log in with "
                            "the admin token or a curator key.")
        return console_sessions.open_session(session, state.settings, principal, token)


@router.post("/logout")
async def logout(request: Request) -> RedirectResponse:
    """Ends the session on the server (its cookie, replayed, leads to the login form) and forgets the cookie."""
    await checked_form(request)
    if (session_id := security.session_id(request)) is not None:
        await run_in_threadpool(_end_session, request, session_id)
    response = redirect("/console/login", "Logged out.")
    security.log_out(response)
    return response


def _end_session(request: Request, session_id: str) -> None:
    state = request.app.state
    principal = console_sessions.principal_of(state.db, session_id, state.settings)
    with state.db.write() as session:
        console_sessions.end_session(session, session_id)
        if principal is not None:
            audit.record(session, principal, "console.logout")


# --- datasets, ledger, releases ----------------------------------------------------------------------------


REGISTRATION_DEFAULTS = {"goal": "maximize", "evaluator_kind": "column", "scaling_kind": "bounds", "diameter": "1",
                         "epsilon": "10", "delta": "1e-5"}
REGISTRATION_FIELDS = {"spec.name": "name", "spec.feature_columns": "feature_columns", "spec.goal": "goal",
                       "spec.evaluator": "measure_column", "spec.scaling.lower": "lower", "spec.scaling.upper": "upper",
                       "spec.scaling.diameter": "diameter", "spec.scaling": "scaling_kind",
                       "spec.budget.epsilon": "epsilon", "spec.budget.delta": "delta", "spec.budget": "epsilon",
                       "spec.measurement.quantity": "quantity", "spec.measurement.unit": "unit",
                       "spec.measurement.expected_delay_hours": "expected_delay_hours",
                       "spec.label_columns": "label_columns"}
"""Where the API's validation sentences (which quote the field: ``'spec.scaling.lower'``) go on the form."""
REGISTRATION_WORDS = {"a dataset named": "name", "identifier column": "identifier_column",
                      "label column": "label_columns", "CSV": "file",
                      "feature column": "feature_columns", "'lower'": "lower", "'upper'": "upper"}
"""…and where its other sentences go, by what they name (first match)."""


@router.get("/datasets", response_class=HTMLResponse)
async def datasets_page(request: Request, api: Console) -> HTMLResponse:
    return await _datasets_page(request, api)


async def _datasets_page(request: Request, api: Api, form: FormData | None = None, problems: Problems | None = None,
                         kept: KeptFile | None = None, ticket: str = "", status_code: int = 200) -> HTMLResponse:
    datasets = await api.get("/v1/datasets")
    return render(request, "datasets.html", status_code=status_code, page="datasets", datasets=datasets,
                  gauge=charts.gauge, values=kept_values(form, REGISTRATION_DEFAULTS), problems=problems or Problems(),
                  kept_file=kept.filename if kept else None, kept_ticket=ticket)


def _registration_spec(form: FormData, problems: Problems) -> dict[str, Any]:
    """The registration spec from the form's fields; what the console can check itself (numbers, one bound per
    feature) goes into ``problems`` beside its field, the rest the API checks and names."""
    columns = [c.strip() for c in field(form, "feature_columns").split(",") if c.strip()]
    kind = field(form, "evaluator_kind")
    evaluator = {"kind": "manual"} if kind == "manual" else {"kind": "column", "column": field(form, "measure_column")}
    if kind != "manual" and not field(form, "measure_column"):
        problems.setdefault("measure_column", "Name the column that holds the measured value (or choose manual "
                                              "measurement).")
    if field(form, "scaling_kind") == "identity":
        scaling: dict[str, Any] = {"kind": "identity"}
    else:
        scaling = {"kind": "bounds", "lower": problems.check(lambda: numbers(form, "lower", "Lower bounds")),
                   "upper": problems.check(lambda: numbers(form, "upper", "Upper bounds")),
                   "diameter": problems.check(lambda: number(form, "diameter", "The box diameter"))}
        for name, label in (("lower", "lower"), ("upper", "upper")):
            given = scaling[name]
            if given is not None and columns and len(given) != len(columns):
                problems.setdefault(name, f"Give one {label} bound per feature column: {len(columns)} feature "
                                          f"columns, {len(given)} {label} bounds.")
    budget = {"epsilon": problems.check(lambda: number(form, "epsilon", "Budget ε")),
              "delta": problems.check(lambda: number(form, "delta", "Budget δ"))}
    spec = {"name": field(form, "name"), "feature_columns": columns, "evaluator": evaluator, "scaling": scaling,
            "budget": budget, "goal": field(form, "goal") or "maximize",
            "label_columns": [c.strip() for c in field(form, "label_columns").split(",") if c.strip()]}
    if measurement := _measurement(form, problems):
        spec["measurement"] = measurement
    return spec


def _measurement(form: FormData, problems: Problems) -> dict[str, Any] | None:
    """What is measured (``spec.measurement``): the quantity, its unit and the expected delay; None when the form
    names none of them, and a unit or delay without a quantity is a problem beside the quantity's field."""
    quantity, unit = field(form, "quantity"), field(form, "unit")
    delay = problems.check(lambda: number(form, "expected_delay_hours", "The expected delay")) \
        if field(form, "expected_delay_hours") else None
    if not quantity:
        if unit or field(form, "expected_delay_hours"):
            problems.setdefault("quantity", "Name the quantity measured (e.g. HbA1c): the unit and the expected "
                                            "delay describe it.")
        return None
    return {"quantity": quantity, **({"unit": unit} if unit else {}),
            **({"expected_delay_hours": delay} if delay is not None else {})}


@router.post("/datasets", response_model=None)
async def register_dataset(request: Request, api: Console) -> RedirectResponse | HTMLResponse:
    """Registers the CSV; a problem renders the form again with every value kept (the file too, see
    :mod:`curator_service.console.uploads`) and each sentence beside its field."""
    form = await checked_form(request)
    session = security.session_id(request) or ""
    shelf: KeptUploads = request.app.state.console_uploads
    problems = Problems()
    upload = form.get("file")
    ticket = field(form, "kept_file")
    if isinstance(upload, UploadFile) and upload.filename:
        kept: KeptFile | None = KeptFile(session, upload.filename, await upload.read(), 0.0)
        ticket = ""
    else:
        kept = shelf.get(ticket, session) if ticket else None
        if kept is None:
            problems["file"] = "Choose the CSV file to register."
    spec = _registration_spec(form, problems)
    if not problems and kept is not None:
        try:
            dataset = await api.post("/v1/datasets", data={"spec": json.dumps(spec)},
                                     files={"file": (kept.filename, kept.content, "text/csv")})
        except ApiRefusal as refusal:
            problems.place(refusal, REGISTRATION_FIELDS, REGISTRATION_WORDS)
        else:
            if ticket:
                shelf.forget(ticket)
            return await _registered(api, form, dataset)
    if kept is not None and not ticket:
        ticket = shelf.keep(session, kept.filename, kept.content)
    return await _datasets_page(request, api, form, problems, kept, ticket, status_code=422)


async def _registered(api: Api, form: FormData, dataset: dict) -> RedirectResponse:
    page = f"/console/datasets/{dataset['id']}"
    done = f"Registered {dataset['name']!r}: {dataset['n']} rows, {dataset['d']} features"
    if identifier := field(form, "identifier_column"):
        try:
            await api.put(f"/v1/datasets/{dataset['id']}/identifier-column", {"column": identifier})
        except ApiRefusal as refusal:
            return redirect(page, f"{done}, but its identifier column was refused: {refusal.detail}", "error")
        done += f"; rows are identified by {identifier!r}"
    return redirect(page, done + ".")


TIME_AXIS_MIN_SPAN = 120.0
"""Seconds a time axis spans at least: a new dataset's one point gets two minutes, labelled to the second."""


def _clock(span_seconds: float):
    """Tick labels for a time axis spanning ``span_seconds``: dates past two days, the time of day to the minute past
    ten minutes, else to the second."""
    def label(t: float) -> str:
        moment = datetime.fromtimestamp(t, UTC)
        if span_seconds > 2 * 86400:
            return f"{moment:%Y-%m-%d}"
        return f"{moment:%H:%M}" if span_seconds > 600 else f"{moment:%H:%M:%S}"
    return label


def _epsilon_over_time(dataset: dict, entries: list[dict]):
    """Cumulative ε spent (charges) against time from registration (0), the current total as a dashed line."""
    start = datetime.fromisoformat(dataset["created_at"])
    times, spent, titles, running = [start.timestamp()], [0.0], [f"{start:%Y-%m-%d %H:%M:%S} · registered"], 0.0
    for entry in (e for e in entries if e["kind"] == "charge"):
        running += entry["epsilon"]
        moment = datetime.fromisoformat(entry["created_at"])
        times.append(moment.timestamp())
        spent.append(running)
        titles.append(f"{moment:%Y-%m-%d %H:%M:%S} · {entry['purpose']} · ε {entry['epsilon']:.4g} (total spent "
                      f"{running:.4g})")
    total = dataset["budget"]["total_epsilon"]
    now = max(datetime.now(UTC).timestamp(), times[-1])  # the spending holds until now
    return charts.step_chart(
        "epsilon-over-time", times, spent, titles, x_label="time (UTC)", y_label="ε spent",
        x_text=_clock(max(now - times[0], TIME_AXIS_MIN_SPAN)), y_floor=0.0,
        y_line=(total, f"budget ε {total:.4g}"), x_until=now, x_min_span=TIME_AXIS_MIN_SPAN,
    )


def noise_to_spread_of(release: dict, dataset: dict) -> float | None:
    """σ_x over the spread of rows uniform in the public box (the planner's ratio); None without a box."""
    box = (dataset.get("neighbouring_step") or {}).get("box_diameter")
    parameters = release.get("parameters")
    if box is None or not parameters:
        return None
    setting = ReleaseSetting(n=release["n"], d=dataset["d"], width=box / math.sqrt(dataset["d"]), r=release["dim"])
    return noise_to_spread(parameters, setting)


RELEASE_DEFAULTS = {"mechanism": "gaussian", "epsilon": "", "delta": "1e-6", "dim": "auto"}
RELEASE_FIELDS = {"epsilon": "epsilon", "delta": "delta", "dim": "dim", "mechanism": "mechanism",
                  "projection": "dim", "width": "epsilon"}
RELEASE_WORDS = {"budget": "epsilon", "mechanism": "mechanism", "ε": "epsilon", "δ": "delta", "dimension": "dim"}
MECHANISMS = {"gaussian": "gaussian (certified (ε, δ)-DP)", "po-gp-ucb": "po-gp-ucb (NOT differentially private)"}


def offered_mechanisms(request: Request) -> list[tuple[str, str]]:
    """The mechanisms this server would accept: an uncertified one only where the operator allows it."""
    allowed = request.app.state.settings.allow_uncertified_mechanisms
    return [(name, text) for name, text in MECHANISMS.items() if name == "gaussian" or allowed]


@router.get("/datasets/{dataset_id}", response_class=HTMLResponse)
async def dataset_page(request: Request, api: Console, dataset_id: int) -> HTMLResponse:
    return await _dataset_page(request, api, dataset_id)


async def _dataset_page(request: Request, api: Api, dataset_id: int, form: FormData | None = None,
                        problems: Problems | None = None, plan: dict | None = None, status_code: int = 200, *,
                        budget_form: FormData | None = None, budget_problems: Problems | None = None,
                        identifier_form: FormData | None = None,
                        identifier_problems: Problems | None = None) -> HTMLResponse:
    """The dataset's page; after a release form, its values kept with each problem beside its field, or the
    planner's table for the ε typed; after the raise-the-budget form, its values and problems likewise."""
    dataset = await api.get(f"/v1/datasets/{dataset_id}")
    ledger = await api.get("/v1/ledger", dataset_id=dataset_id)
    releases = await api.get("/v1/releases", dataset_id=dataset_id)
    for release in releases:
        release["noise_to_spread"] = noise_to_spread_of(release, dataset)
    budget = dataset["budget"]
    worklist = await api.get(f"/v1/datasets/{dataset_id}/worklist") if dataset["evaluator_kind"] == "manual" else None
    return render(request, "dataset.html", status_code=status_code, page="datasets", dataset=dataset, ledger=ledger,
                  releases=releases, identifier_column=worklist["identifier_column"] if worklist else None,
                  gauge=charts.gauge(budget["spent_epsilon"], budget["total_epsilon"]),
                  chart=_epsilon_over_time(dataset, ledger), mechanisms=offered_mechanisms(request),
                  values=kept_values(form, RELEASE_DEFAULTS), problems=problems or Problems(), plan=plan,
                  budget_values=kept_values(budget_form, BUDGET_DEFAULTS),
                  budget_problems=budget_problems or Problems(),
                  identifier_values=kept_values(identifier_form, {"column": worklist["identifier_column"] or ""
                                                                  if worklist else ""}),
                  identifier_problems=identifier_problems or Problems())


def _release_options(form: FormData, problems: Problems) -> dict[str, Any]:
    """The release form's mechanism, δ and r (ε is read by the caller: one to make, several to plan)."""
    dim = field(form, "dim") or "auto"
    return {"mechanism": field(form, "mechanism") or "gaussian",
            "delta": problems.check(lambda: number(form, "delta", "δ")),
            "dim": dim if dim == "auto" else problems.check(lambda: whole_number(form, "dim", "The dimension r"))}


PLAN_QUERIES = 20
"""Queries per simulated run in the console's planning panel: as many runs as a request may simulate
(``MAX_SIMULATED_QUERIES``) at this length, so that the regret has a standard error."""


def simulated_runs(n: int, count: int) -> int:
    """Stand-in runs the planning panel asks for with ``count`` ε: 0 when fewer than 2 fit in one request."""
    runs = min(MAX_PLAN_RUNS, MAX_SIMULATED_QUERIES // ((count + 1) * PLAN_QUERIES))
    return runs if runs >= 2 and PLAN_QUERIES <= n <= MAX_SIMULATED_ROWS else 0


async def _plan(api: Api, dataset_id: int, epsilons: list[float], options: dict[str, Any], simulate: int = 0) -> dict:
    """The planner's table (``POST /v1/datasets/{id}/plan``): noise and bound at each ε, and the simulated regret
    with ``simulate`` stand-in runs; it charges nothing."""
    body = {"epsilons": epsilons, "delta": options["delta"], "dim": options["dim"]}
    if simulate:
        body |= {"simulate_runs": simulate, "queries": PLAN_QUERIES}
    return await api.post(f"/v1/datasets/{dataset_id}/plan", body)


@router.post("/datasets/{dataset_id}/plan", response_class=HTMLResponse)
async def plan_release(request: Request, api: Console, dataset_id: int) -> HTMLResponse:
    """The planning panel: the planner's table for the ε values typed, nothing charged."""
    form = await checked_form(request)
    problems = Problems()
    options = _release_options(form, problems)
    epsilons = problems.check(lambda: numbers(form, "epsilon", "ε"))
    if epsilons == [] and "epsilon" not in problems:
        problems["epsilon"] = "Type one ε or several, separated by commas, to plan for."
    if options["mechanism"] != "gaussian":
        problems.setdefault("mechanism", "The planner plans gaussian releases; po-gp-ucb adds no noise to plan.")
    plan = None
    if not problems and epsilons is not None:
        try:
            n = (await api.get(f"/v1/datasets/{dataset_id}"))["n"]
            plan = await _plan(api, dataset_id, epsilons, options, simulated_runs(n, len(epsilons)))
        except ApiRefusal as refusal:
            problems.place(refusal, RELEASE_FIELDS, RELEASE_WORDS)
    return await _dataset_page(request, api, dataset_id, form, problems, plan, 422 if problems else 200)


@router.post("/datasets/{dataset_id}/release-form", response_class=HTMLResponse)
async def release_form_again(request: Request, api: Console, dataset_id: int) -> HTMLResponse:
    """Back from the confirmation to the release form, with the values as they were."""
    return await _dataset_page(request, api, dataset_id, await checked_form(request))


@router.post("/datasets/{dataset_id}/review-release", response_class=HTMLResponse)
async def review_release(request: Request, api: Console, dataset_id: int) -> HTMLResponse:
    """The confirmation step: what the release spends, what is left, what it buys (the planner's row, for a
    gaussian release) and that it cannot be undone; only its button makes and charges the release."""
    form = await checked_form(request)
    problems = Problems()
    options = _release_options(form, problems)
    epsilon = problems.check(lambda: number(form, "epsilon", "ε"))
    if options["mechanism"] not in dict(offered_mechanisms(request)):
        problems["mechanism"] = f"Mechanism {options['mechanism']!r} is not offered by this server; use gaussian."
    if problems or epsilon is None:
        return await _dataset_page(request, api, dataset_id, form, problems, status_code=422)
    dataset = await api.get(f"/v1/datasets/{dataset_id}")
    budget = dataset["budget"]
    if epsilon > budget["remaining_epsilon"] or options["delta"] > budget["remaining_delta"]:
        problems["epsilon" if epsilon > budget["remaining_epsilon"] else "delta"] = (
            f"This release needs ε {epsilon:g}, δ {options['delta']:g} and the budget has ε "
            f"{budget['remaining_epsilon']:.6g}, δ {budget['remaining_delta']:.3g} left; lower them or raise the "
            "budget.")
        return await _dataset_page(request, api, dataset_id, form, problems, status_code=422)
    planned = None
    if options["mechanism"] == "gaussian":
        try:
            planned = (await _plan(api, dataset_id, [epsilon], options))["rows"][0]
            planned["noise_meaning"] = noise_meaning(planned["noise_to_spread"])
        except ApiRefusal as refusal:  # e.g. no public box to plan for: the confirmation says so
            planned = {"refusal": refusal.detail}
    return render(request, "release_confirm.html", page="datasets", dataset=dataset, epsilon=epsilon,
                  options=options, planned=planned, release_request_id=f"console-{uuid.uuid4().hex}")


@router.post("/datasets/{dataset_id}/releases", response_model=None)
async def make_release(request: Request, api: Console, dataset_id: int) -> RedirectResponse | HTMLResponse:
    form = await checked_form(request)
    problems = Problems()
    options = _release_options(form, problems)
    epsilon = problems.check(lambda: number(form, "epsilon", "ε"))
    request_id = field(form, "request_id")  # the confirmation's own: its retries return the same release or job
    made = None
    if not problems:
        try:
            made = await api.post(f"/v1/datasets/{dataset_id}/releases",
                                  {**options, "epsilon": epsilon, **({"request_id": request_id} if request_id else {})})
        except ApiRefusal as refusal:
            problems.place(refusal, RELEASE_FIELDS, RELEASE_WORDS)
    if made is None:
        return await _dataset_page(request, api, dataset_id, form, problems, status_code=422)
    if made.get("kind") == "release":  # 202: the release's job is still running; its page shows the progress
        return redirect(f"/console/jobs/{made['id']}", f"Release job {made['id']} is running; the release is "
                        "stored and charged when it finishes (cancel it here to charge nothing).")
    return redirect(f"/console/datasets/{dataset_id}", f"Release {made['id']} made ({made['mechanism']}, "
                    f"{'certified' if made['certified'] else 'NOT certified'}, ε {made['epsilon']:g}).")


BUDGET_DEFAULTS = {"epsilon": "1", "delta": "0", "reason": ""}
BUDGET_FIELDS = {"epsilon": "epsilon", "delta": "delta", "reason": "reason"}
BUDGET_WORDS = {"ε": "epsilon", "δ": "delta", "reason": "reason"}


@router.post("/datasets/{dataset_id}/budget", response_model=None)
async def raise_budget(request: Request, api: Console, dataset_id: int) -> RedirectResponse | HTMLResponse:
    """Raises the budget; a problem renders the page again with the form's values kept and the sentence beside its
    field."""
    form = await checked_form(request)
    problems = Problems()
    body = {"epsilon": problems.check(lambda: number(form, "epsilon", "ε")),
            "delta": problems.check(lambda: number(form, "delta", "δ")), "reason": field(form, "reason")}
    if not body["reason"]:
        problems.setdefault("reason", "Say why the budget is raised: the reason is kept in the ledger.")
    if not problems:
        try:
            await api.post(f"/v1/datasets/{dataset_id}/budget", body)
        except ApiRefusal as refusal:
            problems.place(refusal, BUDGET_FIELDS, BUDGET_WORDS)
        else:
            return redirect(f"/console/datasets/{dataset_id}", "Budget raised (recorded in the ledger).")
    return await _dataset_page(request, api, dataset_id, budget_form=form, budget_problems=problems,
                               status_code=422)


@router.post("/datasets/{dataset_id}/identifier-column", response_model=None)
async def set_identifier_column(request: Request, api: Console, dataset_id: int) -> RedirectResponse | HTMLResponse:
    """Names the identifier column; a refusal renders the page again with the column typed and the sentence beside
    the field."""
    form = await checked_form(request)
    problems = Problems()
    if not field(form, "column"):
        problems["column"] = "Type the name of the column that identifies a row (e.g. mrn)."
    else:
        try:
            done = await api.put(f"/v1/datasets/{dataset_id}/identifier-column", {"column": field(form, "column")})
        except ApiRefusal as refusal:
            problems.place(refusal, {}, {"column": "column"})
        else:
            return redirect(f"/console/datasets/{dataset_id}", f"Rows are now identified by {done['column']!r} (it "
                            "never leaves the curator).")
    return await _dataset_page(request, api, dataset_id, status_code=422, identifier_form=form,
                               identifier_problems=problems)


@router.get("/releases", response_class=HTMLResponse)
async def releases_page(request: Request, api: Console) -> HTMLResponse:
    datasets = {d["id"]: d for d in await api.get("/v1/datasets")}
    releases = await api.get("/v1/releases")
    for release in releases:
        release["noise_to_spread"] = noise_to_spread_of(release, datasets[release["dataset_id"]])
    return render(request, "releases.html", page="releases", releases=releases, datasets=datasets)


# --- keys ------------------------------------------------------------------------------------------------

KEY_DEFAULTS = {"role": "modeler", "max_queries": "100", "release_ids": []}
KEY_FIELDS = {"name": "name", "role": "role", "release_ids": "release_ids", "max_queries": "max_queries",
              "epsilon_cap": "epsilon_cap", "delta_cap": "delta_cap", "jobs": "jobs", "expires_at": "expires_at"}
KEY_WORDS = {"release": "release_ids", "job": "jobs", "expir": "expires_at", "ε cap": "epsilon_cap",
             "δ cap": "delta_cap", "queries": "max_queries"}


async def _keys_page(request: Request, api: Api, created: dict | None = None, form: FormData | None = None,
                     problems: Problems | None = None, status_code: int = 200) -> HTMLResponse:
    keys = await _keys_with_policies(api)
    return render(request, "keys.html", status_code=status_code, page="keys", keys=keys,
                  releases=await api.get("/v1/releases"), created=created,
                  values=kept_values(form, KEY_DEFAULTS, multiple=("release_ids",)), problems=problems or Problems())


async def _keys_with_policies(api: Api) -> list[dict]:
    """Every key with its caps, job kinds and expiry, and what it has spent against its caps."""
    keys = await api.get("/v1/keys")
    now = datetime.now(UTC)
    for key in keys:
        key["policy"] = policy = await api.get(f"/v1/keys/{key['id']}/policy")
        key["expired"] = policy["expires_at"] is not None and datetime.fromisoformat(policy["expires_at"]) <= now
    return keys


def _key_body(form: FormData, problems: Problems) -> dict[str, Any]:
    """``POST /v1/keys``: the key and its policy (an empty field leaves the role's default)."""
    chosen = [v for v in form.getlist("release_ids") if isinstance(v, str)]
    if (too_long := next(filter(None, map(too_long_number, chosen)), None)) is not None:
        problems.setdefault("release_ids", f"A release id {too_long}")
    release_ids = [int(v) for v in chosen if v.isascii() and v.isdigit() and too_long_number(v) is None]
    body: dict[str, Any] = {"name": field(form, "name"), "role": field(form, "role") or "modeler",
                            "release_ids": release_ids,
                            "max_queries": problems.check(lambda: whole_number(form, "max_queries", "Max queries"))}
    for name, label in (("epsilon_cap", "The ε cap"), ("delta_cap", "The δ cap")):
        if field(form, name):
            body[name] = problems.check(partial(number, form, name, label))
    if jobs := field(form, "jobs"):
        body["jobs"] = [kind.strip() for kind in jobs.split(",") if kind.strip()]
    if expires := field(form, "expires_at"):
        body["expires_at"] = expires if expires.endswith("Z") else expires + "Z"  # the form's local time is UTC
    return body


@router.get("/keys", response_class=HTMLResponse)
async def keys_page(request: Request, api: Console) -> HTMLResponse:
    return await _keys_page(request, api)


@router.post("/keys", response_class=HTMLResponse)
async def create_key(request: Request, api: Console) -> HTMLResponse:
    """Renders the token on this response only (not a redirect: it must never sit in a cookie or a URL)."""
    form = await checked_form(request)
    problems = Problems()
    body = _key_body(form, problems)
    if not problems:
        try:
            created = await api.post("/v1/keys", body)
        except ApiRefusal as refusal:
            problems.place(refusal, KEY_FIELDS, KEY_WORDS)
        else:
            return await _keys_page(request, api, created=created)
    return await _keys_page(request, api, form=form, problems=problems, status_code=422)


@router.get("/keys/{key_id}/revoke", response_class=HTMLResponse)
async def confirm_revoke(request: Request, api: Console, key_id: int) -> HTMLResponse:
    """The confirmation step: who loses access, what stays spent, and that it cannot be undone."""
    keys = [k for k in await _keys_with_policies(api) if k["id"] == key_id]
    if not keys:
        raise ApiRefusal(404, "not_found", f"there is no key {key_id}; see the keys page")
    sessions = [s for s in await run_in_threadpool(_sessions, request) if s.key_id == key_id]
    return render(request, "revoke_confirm.html", page="keys", key=keys[0],
                  open_sessions=[s for s in sessions if s.status == "open"],
                  pending=sum(s.pending for s in sessions))


def _sessions(request: Request) -> list:
    with request.app.state.db.read() as session:
        return list_sessions(session)


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, api: Console, key_id: int) -> RedirectResponse:
    await checked_form(request)
    return await act("/console/keys", lambda: api.delete(f"/v1/keys/{key_id}"),
                     lambda _: f"Key {key_id} revoked: its sessions stop working.")


# --- sessions and pending queries ----------------------------------------------------------------------------


@router.get("/sessions", response_class=HTMLResponse)
async def sessions_page(request: Request, api: Console) -> HTMLResponse:
    keys = {k["id"]: k for k in await api.get("/v1/keys")}  # curator only: checked before reading the database
    sessions = await run_in_threadpool(_sessions, request)
    return render(request, "sessions.html", page="sessions", sessions=sessions, keys=keys)


def _best_so_far(queries: list[dict], goal: Goal):
    answered = [q for q in queries if q["status"] == "done" and q["value"] is not None]
    best = best_so_far([q["value"] for q in answered], goal).tolist()
    xs = [float(number_) for number_ in range(1, len(answered) + 1)]
    titles = [f"answer {number_} (query {query['query_id']}): {query['value']:.6g}; best so far {current:.6g}"
              for number_, (query, current) in enumerate(zip(answered, best), start=1)]
    return charts.step_chart("best-so-far", xs, best, titles, x_label="answered queries",
                             y_label=f"best so far ({goal})", whole_x=True)


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
async def session_page(request: Request, api: Console, session_id: int) -> HTMLResponse:
    return await _session_page(request, api, session_id)


async def _session_page(request: Request, api: Api, session_id: int, confirm: dict | None = None,
                        refused: dict | None = None, status_code: int = 200) -> HTMLResponse:
    """The session's page; ``confirm``: a correction to confirm (its row, old and new value); ``refused``: a
    correction's typed values and problems, shown in its row."""
    status = await api.get(f"/v1/sessions/{session_id}")
    queries = (await api.get(f"/v1/sessions/{session_id}/queries"))["queries"]
    release = await api.get(f"/v1/releases/{status['release_id']}")
    dataset = await api.get(f"/v1/datasets/{release['dataset_id']}")
    correctable = dataset["evaluator_kind"] == "manual"  # only answers the curator typed (the API says why)
    notes = await api.get(f"/v1/sessions/{session_id}/notes")
    lab = {q["query_id"]: q for q in await api.get(f"/v1/sessions/{session_id}/lab-queries")}
    for query in queries:  # the row each query asked for, by the curator's identifier (the MRN)
        query["identifier"] = lab[query["query_id"]]["identifier"]
    identifier_column = (await api.get(f"/v1/datasets/{dataset['id']}/worklist"))["identifier_column"]
    if confirm is not None:
        asked = next((q for q in queries if q["query_id"] == confirm["query_id"]), None)
        if asked is None:
            raise ApiRefusal(404, "not_found", f"session {session_id} has no query {confirm['query_id']}")
        return render(request, "correct_confirm.html", page="sessions", session=status, query=asked,
                      identifier_column=identifier_column, measurement=dataset.get("measurement"), **confirm,
                      outside=_outside(dataset.get("measurement"), confirm["value"]))
    return render(request, "session.html", status_code=status_code, page="sessions", session=status,
                  queries=queries, release=release, refused=refused or {},
                  correctable=correctable, notes=notes, chart=_best_so_far(queries, release["goal"]),
                  identifier_column=identifier_column,
                  identifiers={q: lab[q]["identifier"] for q in lab},
                  importance=await _importance(api, release, dataset, queries))


IMPORTANCE_MIN_ANSWERS = 5
IMPORTANCE_MAX_ROWS = 100_000  # one page of released inputs


async def _importance(api: Api, release: dict, dataset: dict, queries: list[dict]) -> dict | None:
    """Parameter importance for an identity release (its coordinates are the named features): the modeler's own ARD
    fit on the session's answered queries, 1/ℓ_j relative to the largest, with the half-samples' intervals and the
    warnings of :func:`shared.gp.importance.importance_warnings`; None for other releases or too few answers. The
    inputs are the released (noisy) Z the modeler sees, read through the API (an audited ``release.inputs``)."""
    answered = [q for q in queries if q["status"] == "done" and q["value"] is not None]
    if (release.get("projection") != "identity" or len(answered) < IMPORTANCE_MIN_ANSWERS
            or release["n"] > IMPORTANCE_MAX_ROWS):
        return None
    Z = np.asarray((await api.get(f"/v1/releases/{release['id']}/inputs", limit=IMPORTANCE_MAX_ROWS))["rows"])
    X, y = Z[[q["index"] for q in answered]], np.asarray([q["value"] for q in answered])
    found = await run_in_threadpool(importance_intervals, X, y, np.ptp(Z, axis=0))
    names = dataset["feature_columns"]
    warnings = importance_warnings(names, found, len(answered), release_noise_to_spread(release, Z))
    titles = [f"{name}: lengthscale {scale:.3g} (importance {r:.2f} of the largest; half-samples {lo:.2f}–{hi:.2f})"
              for name, scale, r, lo, hi in zip(names, found.lengthscales, found.relative, found.low, found.high)]
    order = np.argsort(found.relative)[::-1]
    rows = [{"name": names[j], "relative": float(found.relative[j]), "low": float(found.low[j]),
             "high": float(found.high[j]), "first": float(found.first_share[j])} for j in order]
    return {"chart": charts.bar_chart("importance", names, found.relative.tolist(), titles,
                                      caption="parameter importance: 1 / ARD lengthscale, relative to the largest"),
            "rows": rows, "warnings": warnings, "answers": len(answered)}


@router.get("/queries", response_class=HTMLResponse)
async def pending_page(request: Request, api: Console) -> HTMLResponse:
    return await _pending_page(request, api)


async def _pending_page(request: Request, api: Api, refused: dict | None = None,
                        status_code: int = 200) -> HTMLResponse:
    """Each dataset's worklist: its pending queries by the curator's own row identifier (the MRN). After a refused
    answer, ``refused`` holds its query id, what was typed, the sentence and whether it asks to confirm a value
    outside the plausible range."""
    waiting = sorted({q["dataset_id"] for q in (await api.get("/v1/queries"))["queries"]})
    names = {d["id"]: d["name"] for d in await api.get("/v1/datasets")}
    worklists = [await api.get(f"/v1/datasets/{dataset_id}/worklist") for dataset_id in waiting]
    return render(request, "queries.html", status_code=status_code, page="queries", worklists=worklists, names=names,
                  refused=refused or {})


OUTSIDE_RANGE = "outside_plausible_range"


def _outside(measurement: dict | None, value: float) -> str | None:
    """The sentence asking to confirm ``value`` outside the plausible range of ``measurement`` (None inside it)."""
    measurement = measurement or {}
    low, high = measurement.get("plausible_range") or (None, None)
    if low is None or high is None or low <= value <= high:
        return None
    unit = f" {measurement['unit']}" if measurement.get("unit") else ""
    return (f"{value:g}{unit} lies outside the plausible range of {measurement['quantity']} ({low:g} to {high:g}"
            f"{unit}). Check it; if it is right, tick the box and save it again.")


@router.post("/queries/{query_id}/answer", response_model=None)
async def answer_query(request: Request, api: Console, query_id: int) -> RedirectResponse | HTMLResponse:
    """Answers a pending query; a problem (not a number, outside the plausible range unconfirmed, the API's
    refusal) renders the worklist again with what was typed and the sentence beside the field."""
    form = await checked_form(request)
    problems = Problems()
    value = problems.check(lambda: measured(form, "value", "The measured value"))
    confirmed = field(form, "confirm_outside_range") == "1"
    outside = False
    if value is not None:
        try:
            out = await api.post(f"/v1/queries/{query_id}/answer",
                                 {"value": value, "confirm_outside_range": confirmed})
        except ApiRefusal as refusal:
            outside = refusal.code == OUTSIDE_RANGE
            problems.place(refusal, {}, {})
        else:
            return redirect("/console/queries", f"Query {query_id} answered ({out['value']:g}); the modeler's client "
                            "gets the value.")
    return await _pending_page(request, api, {"query_id": query_id, "value": field(form, "value"),
                                              "problem": next(iter(problems.values())), "outside": outside},
                               status_code=422)


@router.post("/queries/{query_id}/cannot-measure")
async def cannot_measure(request: Request, api: Console, query_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act("/console/queries",
                     lambda: api.post(f"/v1/queries/{query_id}/cannot-measure", {"reason": field(form, "reason")}),
                     lambda _: f"Query {query_id} marked 'cannot measure'; the modeler's client is told "
                               "(no new charge).")


@router.post("/datasets/{dataset_id}/answers")
async def answers_from_csv(request: Request, api: Console, dataset_id: int) -> RedirectResponse:
    form = await checked_form(request)
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        audit_refusal(request, 422)  # refused here, not by the API: audited as the API audits its own
        return redirect("/console/queries", "Choose the CSV of answers (identifier,value lines).", "error")
    content = await upload.read()
    return await act("/console/queries",
                     lambda: api.post(f"/v1/datasets/{dataset_id}/answers/csv",
                                      files={"file": (upload.filename, content, "text/csv")}),
                     lambda r: f"{len(r['answered'])} queries answered from {upload.filename}.")


@router.post("/sessions/{session_id}/queries/{query_id}/correct", response_model=None)
async def correct_answer(request: Request, api: Console, session_id: int,
                         query_id: int) -> RedirectResponse | HTMLResponse:
    """Two steps: the form's post shows the change by the row's MRN (and whether the new value lies outside the
    plausible range) and asks to confirm; only the confirmation's post (``confirmed``) corrects the answer. A
    problem renders the session page again with what was typed and the sentence beside the field."""
    form = await checked_form(request)
    problems = Problems()
    value = problems.check(lambda: measured(form, "value", "The corrected value"))
    reason = field(form, "reason")
    if not reason:
        problems.setdefault("reason", "Say why the answer changes: the reason is kept in the session's lab notes.")
    if not problems and field(form, "confirmed") != "1":
        return await _session_page(request, api, session_id, confirm={"query_id": query_id, "value": value,
                                                                       "reason": reason})
    if not problems:
        try:
            await api.post(f"/v1/queries/{query_id}/correct",
                           {"value": value, "reason": reason,
                            "confirm_outside_range": field(form, "confirm_outside_range") == "1"})
        except ApiRefusal as refusal:
            problems.place(refusal, {}, {"reason": "reason"})
        else:
            return redirect(f"/console/sessions/{session_id}", f"Query {query_id} corrected; the session's lab notes "
                            "keep the old value and the reason.")
    return await _session_page(request, api, session_id, refused={
        "query_id": query_id, "value": field(form, "value"), "reason": reason, "problems": problems},
        status_code=422)


# --- jobs and audit ----------------------------------------------------------------------------------------


JOB_DEFAULTS = {"kind": "dp-mean", "dataset_id": "", "params": ""}
JOB_WORDS = {"'params": "params", "param": "params", "kind": "kind", "dataset": "dataset_id"}


def offered_job_kinds() -> list[tuple[str, str]]:
    """The kinds a curator submits through ``POST /v1/jobs`` (a release has its own form), with what each does."""
    return [(name, kind.description) for name, kind in KINDS.items() if kind.endpoint is None]


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(request: Request, api: Console) -> HTMLResponse:
    return await _jobs_page(request, api)


async def _jobs_page(request: Request, api: Api, form: FormData | None = None, problems: Problems | None = None,
                     status_code: int = 200) -> HTMLResponse:
    """Every job newest first with who submitted it ("by"), and the form for a new one."""
    jobs = sorted(await api.get("/v1/jobs"), key=lambda j: j["id"], reverse=True)
    names = {k["id"]: k["name"] for k in await api.get("/v1/keys")}
    submitters = await run_in_threadpool(_job_submitters, request)
    for job in jobs:
        key_id = submitters.get(job["id"])
        job["by"] = "admin" if not key_id else f"key {key_id}" + (f" ({names[key_id]})" if key_id in names else "")
    live = any(j["status"] in UNFINISHED_JOB_STATUSES for j in jobs) and form is None
    return render(request, "jobs.html", status_code=status_code, page="jobs", jobs=jobs, refresh=live,
                  kinds=offered_job_kinds(), datasets=await api.get("/v1/datasets"),
                  request_id=f"console-{uuid.uuid4().hex}",
                  values=kept_values(form, JOB_DEFAULTS), problems=problems or Problems())


def _job_submitters(request: Request) -> dict[int, int | None]:
    with request.app.state.db.read() as session:
        return job_submitters(session)


@router.post("/jobs", response_model=None)
async def submit_job(request: Request, api: Console) -> RedirectResponse | HTMLResponse:
    """Submits a job of one of the curator's kinds; its parameters are JSON. A problem renders the form again with
    what was typed and the sentence beside its field."""
    form = await checked_form(request)
    problems = Problems()
    kind = field(form, "kind")
    if kind not in dict(offered_job_kinds()):
        problems["kind"] = f"Choose one of the job kinds offered ({', '.join(dict(offered_job_kinds()))})."
    dataset_id = problems.check(lambda: whole_number(form, "dataset_id", "The dataset")) \
        if field(form, "dataset_id") else None
    try:
        params = json.loads(field(form, "params") or "{}")
    except json.JSONDecodeError as error:
        problems["params"] = (f"The parameters must be a JSON object such as {{\"epsilon\": 0.5}}: {error.msg} at "
                              f"line {error.lineno}, column {error.colno}.")
        params = None
    if params is not None and not isinstance(params, dict):
        problems["params"] = "The parameters must be a JSON object (in braces), such as {\"epsilon\": 0.5}."
    if not problems:
        try:
            job = await api.post("/v1/jobs", {"kind": kind, "dataset_id": dataset_id, "params": params,
                                              "request_id": field(form, "request_id") or None})
        except ApiRefusal as refusal:
            problems.place(refusal, {"params": "params", "kind": "kind", "dataset_id": "dataset_id"}, JOB_WORDS)
        else:
            return redirect(f"/console/jobs/{job['id']}", f"Job {job['id']} ({job['kind']}) submitted.")
    return await _jobs_page(request, api, form, problems, status_code=422)


def _front(result: dict | None):
    if not result or "front" not in result or "points" not in result:
        return None
    return charts.front_chart("pareto-front", [(p["epsilon"], p["error"]) for p in result["points"]],
                              [(p["epsilon"], p["error"]) for p in result["front"]], x_label="ε",
                              y_label="classification error")


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, api: Console, job_id: int) -> HTMLResponse:
    job = await api.get(f"/v1/jobs/{job_id}")
    result = job.get("result")
    return render(request, "job.html", page="jobs", job=job, result=result, front=_front(result),
                  notes=result_notes(job["kind"], result) if result else [],
                  result_text=json.dumps(result, indent=2) if result is not None else None,
                  refresh=job["status"] in UNFINISHED_JOB_STATUSES)


LAPLACE_95 = math.log(20.0)
"""A Laplace(b) draw lies within ±b·ln 20 ≈ ±3b of zero with probability 95 %."""


def result_notes(kind: str, result: dict) -> list[str]:
    """Plain sentences for a result whose numbers mislead when read alone: a released value its noise dwarfs, a
    selection its noise makes close to uniform, learners that learned nothing."""
    notes = []
    if kind == "dp-bo":
        value, scale = result["validation_accuracy"], result["value_noise_scale"]
        if scale > abs(value):
            notes.append(f"ṽ = {value:.3g} is mostly noise: its Laplace noise scale {scale:.3g} is "
                         f"{scale / max(abs(value), 1e-12):.0f}× the value, so the true best accuracy lies anywhere "
                         f"in ṽ ± {LAPLACE_95 * scale:.2g} (95 %); accuracies are between 0 and 1. A larger ε or a "
                         "larger validation set makes it informative.")
        # the result's ε is the job's total: λ̃ is one of its two releases
        notes.append(lambda_verdict(result["selection_sensitivity"], result["epsilon"] / 2,
                                    result.get("grid_size") or 2).sentence)
    if kind == "dp-tune":
        held = result["held_out"]
        if held["accuracy"] is not None and held["noise_scale"] > 0.1:
            notes.append(f"The held-out accuracy {held['accuracy']:.3g} carries Laplace noise of scale "
                         f"{held['noise_scale']:.3g} (±{LAPLACE_95 * held['noise_scale']:.2g} at 95 %).")
        if result["selected"] is None:
            notes.append("No candidate was selected: the private selection stopped before any passed its threshold.")
    if kind == "dpareto" and result.get("diagnosis"):
        notes.append(result["diagnosis"])
    return notes


@router.post("/jobs/{job_id}/cancel")
async def cancel_job(request: Request, api: Console, job_id: int) -> RedirectResponse:
    await checked_form(request)
    return await act(f"/console/jobs/{job_id}", lambda: api.post(f"/v1/jobs/{job_id}/cancel"),
                     lambda _: f"Cancellation of job {job_id} requested.")


AUDIT_CHANGES_COOKIE = "pobo_audit_changes"
"""Remembers the audit page's "changes only" choice ("1" or "0"; unset: changes only)."""


@router.get("/audit", response_class=HTMLResponse)
async def audit_page(request: Request, api: Console, actor: str = "", action: str = "", target: str = "",
                     changes: str = "", filtered: str = "", page: int = 1) -> HTMLResponse:
    """The audit log newest first, :data:`AUDIT_ROWS` rows a page, each run of identical events one row; filtered
    by actor, action (a prefix), target (contained) and "changes only" (reads hidden), all in the API's query.
    "Changes only" is the default; the filter form's choice (``filtered``) is remembered in a cookie, so the next
    visit shows the log as it was last filtered."""
    if filtered or changes:
        changes = "1" if changes else "0"
    else:
        changes = request.cookies.get(AUDIT_CHANGES_COOKIE, "1")
    changes = "" if changes == "0" else "1"
    response = await _audit_page(request, api, actor, action, target, changes, page)
    response.set_cookie(AUDIT_CHANGES_COOKIE, changes or "0", path="/console/audit", secure=True, httponly=True,
                        samesite="strict")
    return response


async def _audit_page(request: Request, api: Api, actor: str, action: str, target: str, changes: str,
                      page: int) -> HTMLResponse:
    wanted = {"actor": actor.strip(), "action": action.strip(), "target": target.strip()}
    page = max(1, page)
    params = {name: text for name, text in wanted.items() if text}
    answer = await api.respond("GET", "/v1/audit", params={
        **params, "changes_only": bool(changes), "order": "newest", "grouped": True,
        "offset": (page - 1) * AUDIT_ROWS, "limit": AUDIT_ROWS})
    total = int(answer.headers.get("x-total-count", "0"))
    actors = ["admin"] + [f"key:{k['id']}:{k['name']}" for k in await api.get("/v1/keys")]
    pages = max(1, math.ceil(total / AUDIT_ROWS))
    query = {**params, "filtered": "1", **({"changes": "1"} if changes else {})}
    links = {number_: "/console/audit?" + urlencode({**query, "page": number_}) for number_ in (page - 1, page + 1)
             if 1 <= number_ <= pages}
    return render(request, "audit.html", page="audit", rows=answer.json(), total=total, filters=wanted,
                  changes=bool(changes), actors=actors, page_number=page, pages=pages, links=links)
