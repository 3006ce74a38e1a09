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
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import UploadFile

from curator_service.console import charts, security
from curator_service.console.client import Api, ApiRefusal
from curator_service.console.pages import (
    Console,
    checked_form,
    field,
    number,
    numbers,
    redirect,
    refused,
    render,
    whole_number,
)
from curator_service.console.reads import list_sessions
from shared.algorithms.planner import ReleaseSetting, noise_to_spread
from shared.regret import best_so_far

router = APIRouter(prefix="/console", include_in_schema=False)

AUDIT_ROWS = 500
AUDIT_PAGE = 10_000
LIVE_JOB_STATES = ("queued", "running")


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


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> HTMLResponse:
    """Warns when the page came over plain HTTP from another host: the browser would not keep the Secure cookie."""
    plain_http = request.url.scheme == "http" and request.url.hostname not in LOOPBACK_HOSTS
    return render(request, "login.html", plain_http=plain_http)


@router.post("/login")
async def login(request: Request) -> RedirectResponse:
    form = await checked_form(request)
    token = field(form, "token")
    if not token:
        return redirect("/console/login", "Paste the admin token or a curator key.", "error")
    try:
        await Api(request, token).get("/v1/keys")  # curator only: proves the token and its role
    except ApiRefusal as refusal:
        message = ("This is a modeler key; the console is the curator's: log in with the admin token or a "
                   "curator key." if refusal.status == 403 else refusal.detail)
        return redirect("/console/login", message, "error")
    response = redirect("/console/datasets", "Logged in.")
    security.log_in(response, token)
    return response


@router.post("/logout")
async def logout(request: Request) -> RedirectResponse:
    await checked_form(request)
    response = redirect("/console/login", "Logged out.")
    security.log_out(response)
    return response


# --- datasets, ledger, releases ----------------------------------------------------------------------------


@router.get("/datasets", response_class=HTMLResponse)
async def datasets_page(request: Request, api: Console) -> HTMLResponse:
    datasets = await api.get("/v1/datasets")
    return render(request, "datasets.html", page="datasets", datasets=datasets, gauge=charts.gauge)


def _registration_spec(form) -> dict[str, Any]:
    """The registration spec from the form's fields (the API validates it and names what to fix)."""
    columns = [c.strip() for c in field(form, "feature_columns").split(",") if c.strip()]
    kind = field(form, "evaluator_kind")
    evaluator = {"kind": "manual"} if kind == "manual" else {"kind": "column", "column": field(form, "measure_column")}
    if field(form, "scaling_kind") == "identity":
        scaling: dict[str, Any] = {"kind": "identity"}
    else:
        scaling = {"kind": "bounds", "lower": numbers(form, "lower", "Lower bounds"),
                   "upper": numbers(form, "upper", "Upper bounds"),
                   "diameter": number(form, "diameter", "The box diameter")}
    return {"name": field(form, "name"), "feature_columns": columns, "evaluator": evaluator, "scaling": scaling,
            "budget": {"epsilon": number(form, "epsilon", "Budget ε"), "delta": number(form, "delta", "Budget δ")},
            "goal": field(form, "goal") or "maximize"}


@router.post("/datasets")
async def register_dataset(request: Request, api: Console) -> RedirectResponse:
    form = await checked_form(request)
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return redirect("/console/datasets", "Choose the CSV file to register.", "error")
    content = await upload.read()
    try:
        dataset = await api.post("/v1/datasets", data={"spec": json.dumps(_registration_spec(form))},
                                 files={"file": (upload.filename, content, "text/csv")})
    except ApiRefusal as refusal:
        return refused("/console/datasets", refusal)
    page = f"/console/datasets/{dataset['id']}"
    done = f"Registered {dataset['name']!r}: {dataset['n']} rows, {dataset['d']} features"
    if identifier := field(form, "identifier_column"):
        try:
            await api.put(f"/v1/datasets/{dataset['id']}/identifier-column", {"column": identifier})
        except ApiRefusal as refusal:
            return redirect(page, f"{done}, but its identifier column was refused: {refusal.detail}", "error")
        done += f"; rows are identified by {identifier!r}"
    return redirect(page, done + ".")


def _clock(span_seconds: float):
    """Tick labels for a time axis spanning ``span_seconds``: dates past two days, else the time of day (with
    milliseconds when the span is a few seconds)."""
    def label(t: float) -> str:
        moment = datetime.fromtimestamp(t, UTC)
        if span_seconds > 2 * 86400:
            return f"{moment:%Y-%m-%d}"
        return f"{moment:%H:%M:%S}" + (f".{moment.microsecond // 1000:03d}" if span_seconds <= 8 else "")
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
    return charts.step_chart(
        "epsilon-over-time", times, spent, titles, x_label="time (UTC)", y_label="ε spent",
        x_text=_clock(times[-1] - times[0]), y_floor=0.0,
        y_line=(total, f"budget ε {total:.4g}"),
    )


def noise_to_spread_of(release: dict, dataset: dict) -> float | None:
    """σ_x over the spread of rows uniform in the public box (the planner's ratio); None without a box."""
    box = (dataset.get("neighbouring_step") or {}).get("box_diameter")
    parameters = release.get("parameters")
    if box is None or not parameters:
        return None
    setting = ReleaseSetting(n=release["n"], d=dataset["d"], width=box / math.sqrt(dataset["d"]), r=release["dim"])
    return noise_to_spread(parameters, setting)


@router.get("/datasets/{dataset_id}", response_class=HTMLResponse)
async def dataset_page(request: Request, api: Console, dataset_id: int) -> HTMLResponse:
    dataset = await api.get(f"/v1/datasets/{dataset_id}")
    ledger = await api.get("/v1/ledger", dataset_id=dataset_id)
    releases = await api.get("/v1/releases", dataset_id=dataset_id)
    for release in releases:
        release["noise_to_spread"] = noise_to_spread_of(release, dataset)
    budget = dataset["budget"]
    worklist = await api.get(f"/v1/datasets/{dataset_id}/worklist") if dataset["evaluator_kind"] == "manual" else None
    return render(request, "dataset.html", page="datasets", dataset=dataset, ledger=ledger, releases=releases,
                  identifier_column=worklist["identifier_column"] if worklist else None,
                  gauge=charts.gauge(budget["spent_epsilon"], budget["total_epsilon"]),
                  chart=_epsilon_over_time(dataset, ledger), release_request_id=f"console-{uuid.uuid4().hex}")


@router.post("/datasets/{dataset_id}/releases")
async def make_release(request: Request, api: Console, dataset_id: int) -> RedirectResponse:
    form = await checked_form(request)

    def body() -> dict[str, Any]:
        dim = field(form, "dim") or "auto"
        request_id = field(form, "request_id")  # the form's own: its retries return the same release or job
        return {"mechanism": field(form, "mechanism"), "epsilon": number(form, "epsilon", "ε"),
                "delta": number(form, "delta", "δ"),
                "dim": dim if dim == "auto" else whole_number(form, "dim", "The dimension r"),
                **({"request_id": request_id} if request_id else {})}

    back = f"/console/datasets/{dataset_id}"
    try:
        made = await api.post(f"/v1/datasets/{dataset_id}/releases", body())
    except ApiRefusal as refusal:
        return refused(back, refusal)
    if made.get("kind") == "release":  # 202: the release's job is still running; its page shows the progress
        return redirect(f"/console/jobs/{made['id']}", f"Release job {made['id']} is running; the release is "
                        "stored and charged when it finishes (cancel it here to charge nothing).")
    return redirect(back, f"Release {made['id']} made ({made['mechanism']}, "
                          f"{'certified' if made['certified'] else 'NOT certified'}, ε {made['epsilon']:g}).")


@router.post("/datasets/{dataset_id}/budget")
async def raise_budget(request: Request, api: Console, dataset_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act(
        f"/console/datasets/{dataset_id}",
        lambda: api.post(f"/v1/datasets/{dataset_id}/budget", {"epsilon": number(form, "epsilon", "ε"),
                                                                "delta": number(form, "delta", "δ"),
                                                                "reason": field(form, "reason")}),
        lambda _: "Budget raised (recorded in the ledger).",
    )


@router.post("/datasets/{dataset_id}/identifier-column")
async def set_identifier_column(request: Request, api: Console, dataset_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act(f"/console/datasets/{dataset_id}",
                     lambda: api.put(f"/v1/datasets/{dataset_id}/identifier-column",
                                     {"column": field(form, "column")}),
                     lambda r: f"Rows are now identified by {r['column']!r} (it never leaves the curator).")


@router.get("/releases", response_class=HTMLResponse)
async def releases_page(request: Request, api: Console) -> HTMLResponse:
    datasets = {d["id"]: d for d in await api.get("/v1/datasets")}
    releases = await api.get("/v1/releases")
    for release in releases:
        release["noise_to_spread"] = noise_to_spread_of(release, datasets[release["dataset_id"]])
    return render(request, "releases.html", page="releases", releases=releases, datasets=datasets)


# --- keys ------------------------------------------------------------------------------------------------

async def _keys_page(request: Request, api: Api, created: dict | None = None) -> HTMLResponse:
    keys = await api.get("/v1/keys")
    now = datetime.now(UTC)
    for key in keys:  # caps, job kinds and expiry, with what the key has spent against its caps
        key["policy"] = policy = await api.get(f"/v1/keys/{key['id']}/policy")
        key["expired"] = policy["expires_at"] is not None and datetime.fromisoformat(policy["expires_at"]) <= now
    return render(request, "keys.html", page="keys", keys=keys, releases=await api.get("/v1/releases"),
                  created=created)


def _key_body(form) -> dict[str, Any]:
    """``POST /v1/keys``: the key and its policy (an empty field leaves the role's default)."""
    release_ids = [int(v) for v in form.getlist("release_ids")
                   if isinstance(v, str) and v.isascii() and v.isdigit()]
    body: dict[str, Any] = {"name": field(form, "name"), "role": field(form, "role") or "modeler",
                            "release_ids": release_ids, "max_queries": whole_number(form, "max_queries", "Max queries")}
    for name, label in (("epsilon_cap", "The ε cap"), ("delta_cap", "The δ cap")):
        if field(form, name):
            body[name] = number(form, name, label)
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
    try:
        created = await api.post("/v1/keys", _key_body(form))
    except ApiRefusal as refusal:
        return refused("/console/keys", refusal)
    return await _keys_page(request, api, created=created)


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, api: Console, key_id: int) -> RedirectResponse:
    await checked_form(request)
    return await act("/console/keys", lambda: api.delete(f"/v1/keys/{key_id}"),
                     lambda _: f"Key {key_id} revoked: its sessions stop working.")


# --- sessions and pending queries ----------------------------------------------------------------------------


@router.get("/sessions", response_class=HTMLResponse)
async def sessions_page(request: Request, api: Console) -> HTMLResponse:
    keys = {k["id"]: k for k in await api.get("/v1/keys")}  # curator only: checked before reading the database
    with request.app.state.db.read() as session:
        sessions = list_sessions(session)
    return render(request, "sessions.html", page="sessions", sessions=sessions, keys=keys)


def _best_so_far(queries: list[dict], goal: str):
    answered = [q for q in queries if q["status"] == "done" and q["value"] is not None]
    best = best_so_far([q["value"] for q in answered], goal).tolist()
    xs = [float(number_) for number_ in range(1, len(answered) + 1)]
    titles = [f"answer {number_} (query {query['query_id']}): {query['value']:.6g}; best so far {current:.6g}"
              for number_, (query, current) in enumerate(zip(answered, best), start=1)]
    return charts.step_chart("best-so-far", xs, best, titles, x_label="answered queries",
                             y_label=f"best so far ({goal})")


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
async def session_page(request: Request, api: Console, session_id: int) -> HTMLResponse:
    status = await api.get(f"/v1/sessions/{session_id}")
    queries = (await api.get(f"/v1/sessions/{session_id}/queries"))["queries"]
    release = await api.get(f"/v1/releases/{status['release_id']}")
    dataset = await api.get(f"/v1/datasets/{release['dataset_id']}")
    correctable = dataset["evaluator_kind"] == "manual"  # only answers the curator typed (the API says why)
    notes = await api.get(f"/v1/sessions/{session_id}/notes")
    return render(request, "session.html", page="sessions", session=status, queries=queries, release=release,
                  correctable=correctable, notes=notes, chart=_best_so_far(queries, release["goal"]))


@router.get("/queries", response_class=HTMLResponse)
async def pending_page(request: Request, api: Console) -> HTMLResponse:
    """Each dataset's worklist: its pending queries by the curator's own row identifier."""
    waiting = sorted({q["dataset_id"] for q in (await api.get("/v1/queries"))["queries"]})
    names = {d["id"]: d["name"] for d in await api.get("/v1/datasets")}
    worklists = [await api.get(f"/v1/datasets/{dataset_id}/worklist") for dataset_id in waiting]
    return render(request, "queries.html", page="queries", worklists=worklists, names=names)


@router.post("/queries/{query_id}/answer")
async def answer_query(request: Request, api: Console, query_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act(
        "/console/queries",
        lambda: api.post(f"/v1/queries/{query_id}/answer", {"value": number(form, "value", "The measured value")}),
        lambda _: f"Query {query_id} answered; the modeler's client gets the value.",
    )


@router.post("/queries/{query_id}/cannot-measure")
async def cannot_measure(request: Request, api: Console, query_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act("/console/queries",
                     lambda: api.post(f"/v1/queries/{query_id}/cannot-measure", {"reason": field(form, "reason")}),
                     lambda _: f"Query {query_id} marked 'cannot measure'; the modeler's client is told (no new charge).")


@router.post("/datasets/{dataset_id}/answers")
async def answers_from_csv(request: Request, api: Console, dataset_id: int) -> RedirectResponse:
    form = await checked_form(request)
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return redirect("/console/queries", "Choose the CSV of answers (identifier,value lines).", "error")
    content = await upload.read()
    return await act("/console/queries",
                     lambda: api.post(f"/v1/datasets/{dataset_id}/answers/csv",
                                      files={"file": (upload.filename, content, "text/csv")}),
                     lambda r: f"{len(r['answered'])} queries answered from {upload.filename}.")


@router.post("/sessions/{session_id}/queries/{query_id}/correct")
async def correct_answer(request: Request, api: Console, session_id: int, query_id: int) -> RedirectResponse:
    form = await checked_form(request)
    return await act(f"/console/sessions/{session_id}",
                     lambda: api.post(f"/v1/queries/{query_id}/correct",
                                      {"value": number(form, "value", "The corrected value"),
                                       "reason": field(form, "reason")}),
                     lambda _: f"Query {query_id} corrected; the session's lab notes keep the old value and the reason.")


# --- jobs and audit ----------------------------------------------------------------------------------------


@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(request: Request, api: Console) -> HTMLResponse:
    jobs = sorted(await api.get("/v1/jobs"), key=lambda j: j["id"], reverse=True)
    live = any(j["status"] in LIVE_JOB_STATES for j in jobs)
    return render(request, "jobs.html", page="jobs", jobs=jobs, refresh=live)


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
    return render(request, "job.html", page="jobs", job=job, front=_front(result),
                  result_text=json.dumps(result, indent=2) if result is not None else None,
                  refresh=job["status"] in LIVE_JOB_STATES)


@router.post("/jobs/{job_id}/cancel")
async def cancel_job(request: Request, api: Console, job_id: int) -> RedirectResponse:
    await checked_form(request)
    return await act(f"/console/jobs/{job_id}", lambda: api.post(f"/v1/jobs/{job_id}/cancel"),
                     lambda _: f"Cancellation of job {job_id} requested.")


@router.get("/audit", response_class=HTMLResponse)
async def audit_page(request: Request, api: Console, actor: str = "", action: str = "",
                     target: str = "") -> HTMLResponse:
    """The newest :data:`AUDIT_ROWS` events whose actor, action and target contain the filters (any case)."""
    events: list[dict] = []
    while len(page := await api.get("/v1/audit", offset=len(events), limit=AUDIT_PAGE)) > 0:
        events += page
        if len(page) < AUDIT_PAGE:
            break
    wanted = {"actor": actor.strip().lower(), "action": action.strip().lower(), "target": target.strip().lower()}
    matching = [e for e in reversed(events)
                if all(text in (e.get(name) or "").lower() for name, text in wanted.items())]
    return render(request, "audit.html", page="audit", events=matching[:AUDIT_ROWS], total=len(matching),
                  filters=wanted, shown=AUDIT_ROWS)
