"""``pobo-curator``: run the service, and administer it through its own HTTP API (DESIGN §6)."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from curator_service.settings import Settings
from shared.api.http_client import ApiClient, ApiError
from shared.api.schemas import ReleaseParameters

app = typer.Typer(help="The pobo curator: serve the API, register data, make releases, issue keys.",
                  no_args_is_help=True)
dataset_app = typer.Typer(help="Register and list datasets.", no_args_is_help=True)
release_app = typer.Typer(help="Make releases of a dataset's inputs.", no_args_is_help=True)
key_app = typer.Typer(help="Issue API keys.", no_args_is_help=True)
queries_app = typer.Typer(help="Manual measurements: list pending queries and answer them.", no_args_is_help=True)
audit_app = typer.Typer(help="Privacy audits of releases.", no_args_is_help=True)
budget_app = typer.Typer(help="Raise a dataset's privacy budget (a recorded ledger entry).", no_args_is_help=True)
for sub, name in ((dataset_app, "dataset"), (release_app, "release"), (key_app, "key"),
                  (queries_app, "queries"), (audit_app, "audit"), (budget_app, "budget")):
    app.add_typer(sub, name=name)

console = Console()
ADMIN_TOKEN_FILE = "admin_token"

Url = Annotated[str, typer.Option("--url", envvar="POBO_URL", help="The curator service's base URL.")]
Token = Annotated[str, typer.Option("--token", envvar="POBO_ADMIN_TOKEN", help="Admin token or a curator key.")]
DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_DATASET_DELTA = 1e-5
DEFAULT_RELEASE_DELTA = 1e-6


@contextmanager
def client(url: str, token: str) -> Iterator[ApiClient]:
    """An API client; an error answer ends the command with the server's sentence and exit code 1."""
    try:
        with ApiClient(url, token) as api:
            yield api
    except ApiError as exc:
        console.print(f"[red]error[/red] ({exc.code}): {exc.detail}")
        raise typer.Exit(1) from None


def show(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str,
         format_cell: Callable[[str, Any], str] | None = None) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*[(format_cell or _cell)(column, row.get(column)) for column in columns])
    console.print(table)


def _cell(_column: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _admin_token(data_dir: Path) -> str:
    """POBO_ADMIN_TOKEN, or a token kept in ``<data dir>/admin_token`` (created once, mode 0600)."""
    path = data_dir / ADMIN_TOKEN_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    data_dir: Annotated[Path | None, typer.Option(help="Where the embedded database lives (POBO_DATA_DIR).")] = None,
    database_url: Annotated[str | None, typer.Option(help="SQLAlchemy URL, e.g. postgresql+psycopg://… "
                                                     "(POBO_DATABASE_URL; default: SQLite in the data dir).")] = None,
) -> None:
    """Run the curator service (one process; jobs run in its worker threads)."""
    import uvicorn

    os.umask(0o077)  # everything the service writes (database, WAL, admin token) is for its owner only

    from curator_service.app import create_app

    settings = Settings.from_env(data_dir=data_dir, database_url=database_url)
    if settings.admin_token is None:
        settings = Settings.from_env(data_dir=data_dir, database_url=database_url,
                                     admin_token=_admin_token(settings.data_dir))
        console.print(f"admin token: POBO_ADMIN_TOKEN is unset, using the one in {settings.data_dir / ADMIN_TOKEN_FILE}")
    console.print(f"pobo curator on http://{host}:{port} (mode {settings.mode}, "
                  f"uncertified mechanisms {'enabled' if settings.allow_uncertified_mechanisms else 'disabled'})")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


def _spec(name: str | None, features: str | None, evaluator: str | None, noise_std: float, epsilon: float | None,
          delta: float, goal: str, lower: str | None, upper: str | None, diameter: float, identity: bool,
          spec_file: Path | None) -> dict[str, Any]:
    """A DatasetSpec dict from ``--spec`` (a JSON file) overridden by the individual options."""
    spec: dict[str, Any] = json.loads(spec_file.read_text()) if spec_file else {}
    if name:
        spec["name"] = name
    if features:
        spec["feature_columns"] = _split(features)
    if evaluator:
        kind, _, rest = evaluator.partition(":")
        spec["evaluator"] = {"column": {"kind": "column", "column": rest, "noise_std": noise_std},
                             "python": {"kind": "python", "target": rest},
                             "manual": {"kind": "manual"}}.get(kind, {"kind": kind})
    if epsilon is not None:
        spec["budget"] = {"epsilon": epsilon, "delta": delta}
    if (lower or upper) and identity:
        raise typer.BadParameter("give --lower/--upper (bounds scaling) or --identity, not both")
    if lower or upper:
        spec["scaling"] = {"kind": "bounds", "lower": [float(v) for v in _split(lower)],
                           "upper": [float(v) for v in _split(upper)], "diameter": diameter}
    elif identity:
        spec["scaling"] = {"kind": "identity"}
    if "scaling" not in spec:
        raise typer.BadParameter("choose the public scaling: --lower/--upper with --diameter (default 1: one "
                                 "neighbouring step is a whole record), or --identity (raw units, no clipping)")
    spec.setdefault("goal", goal)
    return spec


@dataset_app.command("add")
def dataset_add(
    csv: Annotated[Path, typer.Argument(help="The CSV (uploaded; with --on-server, a path on the curator's host).")],
    name: Annotated[str | None, typer.Option(help="Dataset name.")] = None,
    features: Annotated[str | None, typer.Option(help="Feature columns, comma-separated.")] = None,
    evaluator: Annotated[str | None, typer.Option(help="'column:<name>', 'python:<module>:<function>' or 'manual'.")] = None,
    noise_std: Annotated[float, typer.Option(help="Measurement noise for a column evaluator.")] = 0.0,
    epsilon: Annotated[float | None, typer.Option(help="Total privacy budget ε.")] = None,
    delta: Annotated[float, typer.Option(help="Total privacy budget δ.")] = DEFAULT_DATASET_DELTA,
    goal: Annotated[str, typer.Option(help="maximize or minimize.")] = "maximize",
    lower: Annotated[str | None, typer.Option(help="Public per-feature lower bounds (bounds scaling).")] = None,
    upper: Annotated[str | None, typer.Option(help="Public per-feature upper bounds (bounds scaling).")] = None,
    diameter: Annotated[float, typer.Option(help="ℓ2 diameter of the scaled public box (bounds scaling): 1 makes one "
                                            "neighbouring step a whole record.")] = 1.0,
    identity: Annotated[bool, typer.Option(help="Use the features as given: no clipping, one neighbouring step is "
                                           "one raw unit (hides far less than a record).")] = False,
    spec: Annotated[Path | None, typer.Option(help="A JSON DatasetSpec; the options above override it.")] = None,
    on_server: Annotated[bool, typer.Option(help="CSV is a path on the server: register it without uploading.")] = False,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Register a dataset."""
    body = _spec(name, features, evaluator, noise_std, epsilon, delta, goal, lower, upper, diameter, identity, spec)
    with client(url, token) as api:
        if on_server:
            out = api.post("/v1/datasets", {**body, "path": str(csv)})
        else:
            with csv.open("rb") as handle:
                out = api.post("/v1/datasets", files={"file": (csv.name, handle, "text/csv")},
                               data={"spec": json.dumps(body)})
    _show_datasets([out], "registered")


def _show_datasets(rows: list[dict[str, Any]], title: str) -> None:
    for row in rows:
        budget = row["budget"]
        row["ε spent / total"] = f"{budget['spent_epsilon']:.4g} / {budget['total_epsilon']:.4g}"
        row["δ spent / total"] = f"{budget['spent_delta']:.3g} / {budget['total_delta']:.3g}"
        row["features"] = ", ".join(row["feature_columns"])
    show(rows, ["id", "name", "n", "d", "features", "evaluator_kind", "ε spent / total", "δ spent / total"], title)
    for row in rows:
        _show_step(f"dataset {row['id']}", row["neighbouring_step"])


def _show_step(what: str, step: dict[str, Any] | None) -> None:
    """One neighbouring step in the table's own units: the summary, then each feature's raw extent."""
    if step is None:
        return
    colour = "green" if step["whole_record"] else "yellow"
    console.print(f"[{colour}]{what}: {step['summary']}[/{colour}]")
    for feature in step["features"]:
        of_range = "" if feature["public_range"] is None else (
            f" of its public range {feature['public_range']:.4g}" + (" (all of it)" if feature["covers_range"] else ""))
        console.print(f"  {feature['feature']}: one step spans {feature['raw_extent']:.4g} raw units{of_range}")


@dataset_app.command("list")
def dataset_list(url: Url = DEFAULT_URL, token: Token = "") -> None:
    """List datasets with their budgets."""
    with client(url, token) as api:
        _show_datasets(api.get("/v1/datasets"), "datasets")


Projection = Annotated[str, typer.Option(help="gaussian: auto (identity at r = d, haar above, jl below), identity, "
                                         "haar, jl, or pca (with --pca-share and --pca-clip-norm).")]
PcaShare = Annotated[float | None, typer.Option(help="DP-PCA: the fraction of the budget for the subspace, in (0, 1).")]
PcaClipNorm = Annotated[float | None, typer.Option(help="DP-PCA: bound on the scaled rows' norm (public: fixed "
                                                  "without looking at the data).")]
MeasurementsClip = Annotated[str | None, typer.Option(help="Private measurements: the clip 'a,b' of y (public: "
                                                      "fixed without looking at the data).")]
MeasurementsShare = Annotated[float | None, typer.Option(help="Private measurements: their budget share ρ in (0, 1).")]


def _release_options(dim: str, projection: str, pca_share: float | None, pca_clip_norm: float | None,
                     measurements_clip: str | None, measurements_share: float | None) -> dict[str, Any]:
    """The release options of a request body (``dim``, ``projection``, ``pca``, ``measurements``)."""
    body: dict[str, Any] = {"dim": dim if dim == "auto" else int(dim), "projection": projection}
    if pca_share is not None or pca_clip_norm is not None:
        if pca_share is None or pca_clip_norm is None:
            raise typer.BadParameter("DP-PCA needs both --pca-share and --pca-clip-norm")
        body["pca"] = {"share": pca_share, "clip_norm": pca_clip_norm}
    if measurements_clip is not None or measurements_share is not None:
        clip = [float(v) for v in _split(measurements_clip)]
        if len(clip) != 2 or measurements_share is None:
            raise typer.BadParameter("private measurements need --measurements-clip 'a,b' and --measurements-share")
        body["measurements"] = {"clip": clip, "share": measurements_share}
    return body


@release_app.command("create")
def release_create(
    dataset: Annotated[int, typer.Option(help="Dataset id.")],
    epsilon: Annotated[float, typer.Option(help="ε charged for the release (every part of it, once).")],
    delta: Annotated[float, typer.Option(help="δ charged for the release (default: a tenth of the default "
                                          "dataset δ, so one release leaves room for others).")] = DEFAULT_RELEASE_DELTA,
    mechanism: Annotated[str, typer.Option(help="gaussian (certified) or po-gp-ucb (NOT DP).")] = "gaussian",
    dim: Annotated[str, typer.Option(help="Projection dimension r, or 'auto' (gaussian: r = d).")] = "auto",
    projection: Projection = "auto",
    pca_share: PcaShare = None,
    pca_clip_norm: PcaClipNorm = None,
    measurements_clip: MeasurementsClip = None,
    measurements_share: MeasurementsShare = None,
    seed: Annotated[int | None, typer.Option(help="Research mode only.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Release a dataset's inputs, and optionally private measurements (charged once to its budget)."""
    body = {"mechanism": mechanism, "epsilon": epsilon, "delta": delta,
            **_release_options(dim, projection, pca_share, pca_clip_norm, measurements_clip, measurements_share)}
    if seed is not None:
        body["seed"] = seed
    with client(url, token) as api:
        out = api.post(f"/v1/datasets/{dataset}/releases", body)
    _show_releases([out], "release")
    _show_step(f"release {out['id']}", out["neighbouring_step"])


@release_app.command("list")
def release_list(url: Url = DEFAULT_URL, token: Token = "") -> None:
    """List releases: mechanism, whether certified or seeded, cost, projection and noise."""
    with client(url, token) as api:
        _show_releases(api.get("/v1/releases"), "releases")


def _release_cell(column: str, value: Any) -> str:
    if column == "certified":
        return "[green]yes[/green]" if value else "[bold red]NO[/bold red]"
    if column == "seeded":
        return {True: "[bold red]yes[/bold red]", False: "no", None: "[bold red]unknown[/bold red]"}[value]
    return _cell(column, value)


def _show_releases(rows: list[dict[str, Any]], title: str) -> None:
    """The releases' table, then every release's public parameters and warnings, one per line."""
    for row in rows:
        measurements = (row["parameters"] or {}).get("measurements")
        row["σ_y"] = measurements["noise_std"] if measurements else None
    show(rows, ["id", "dataset_id", "mechanism", "certified", "seeded", "epsilon", "delta", "n", "dim", "projection",
                "noise_std", "σ_y"], title, _release_cell)
    for row in rows:
        if row["parameters"]:
            lines = ReleaseParameters.model_validate(row["parameters"]).summary_lines()
            console.print(f"release {row['id']}: " + "\n  ".join(lines))
        for warning in row["warnings"]:
            console.print(f"[yellow]warning (release {row['id']}):[/yellow] {warning}")


@app.command()
def plan(
    dataset: Annotated[int, typer.Option(help="Dataset id.")],
    epsilon: Annotated[str, typer.Option(help="The ε to plan for, comma-separated (e.g. 0.5,1,2,4).")],
    delta: Annotated[float, typer.Option(help="δ of the planned release.")] = DEFAULT_RELEASE_DELTA,
    dim: Annotated[str, typer.Option(help="Projection dimension r, or 'auto' (r = d).")] = "auto",
    projection: Projection = "auto",
    pca_share: PcaShare = None,
    pca_clip_norm: PcaClipNorm = None,
    measurements_clip: MeasurementsClip = None,
    measurements_share: MeasurementsShare = None,
    width: Annotated[float | None, typer.Option(help="Range [0, width] of each scaled feature (public: fixed "
                                                "without looking at the data; default: the dataset's bounds "
                                                "scaling).")] = None,
    simulate: Annotated[int, typer.Option(help="Stand-in tables to simulate GP-UCB on (0: noise and bound "
                                          "only).")] = 0,
    queries: Annotated[int, typer.Option(help="Queries per simulated run.")] = 50,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """What a gaussian release would buy at each ε, before anything is charged (reads no row)."""
    body = {"epsilons": [float(v) for v in _split(epsilon)], "delta": delta, "simulate_runs": simulate,
            "queries": queries,
            **_release_options(dim, projection, pca_share, pca_clip_norm, measurements_clip, measurements_share)}
    if width is not None:
        body["width"] = width
    with client(url, token) as api:
        out = api.post(f"/v1/datasets/{dataset}/plan", body)
    _show_plan(out)


def _show_plan(out: dict[str, Any]) -> None:
    n = out["n"]
    rows = []
    for row in out["rows"]:
        measurements = row["parameters"]["measurements"]
        multiple = row["random_search_multiple"]
        rows.append({
            "ε": row["epsilon"], "μ": row["mu"], "input σ": row["parameters"]["noise_std"],
            "σ_y": measurements["noise_std"] if measurements else None, "noise / spread": row["noise_to_spread"],
            "random search per query": (f"at most {multiple:.3g}×" if multiple < 0.999 * n
                                        else f"at most {n}× (says nothing)"),
            "regret": None if row["regret"] is None else f"{row['regret']:.3f} ± {row['regret_stderr']:.3f}",
        })
    columns = ["ε", "μ", "input σ", "σ_y", "noise / spread", "random search per query", "regret"]
    show(rows, columns, f"plan for dataset {out['dataset_id']} (n = {n}, d = {out['d']}, width {out['width']:.4g}, "
                        f"δ = {out['delta']:g}, r = {out['rows'][0]['parameters']['dim']}, "
                        f"{out['rows'][0]['parameters']['projection']})")
    console.print(f"the bound: {out['assumptions']}")
    console.print(f"the bound covers {out['bound_covers']}")
    if out["random_search_regret"] is not None:
        half = out["half_gap_epsilon"]
        console.print(f"simulated on {out['simulate_runs']} stand-in table(s) of the same n, d and public box, "
                      f"{out['queries']} queries: random search {out['random_search_regret']:.3f}, non-private "
                      f"GP-UCB {out['non_private_regret']:.3f}; half the gap is forecast at "
                      + (f"ε = {half:g}" if half is not None else "no planned ε (plan larger ones)"))
    console.print("nothing was charged and no row was read")


@key_app.command("create")
def key_create(
    name: Annotated[str, typer.Option(help="Who the key is for.")],
    release: Annotated[list[int], typer.Option(help="Release id in scope (repeat for several).")],
    max_queries: Annotated[int, typer.Option(help="Query budget of the key.")],
    role: Annotated[str, typer.Option(help="modeler or curator.")] = "modeler",
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Create an API key; its token is printed once."""
    with client(url, token) as api:
        out = api.post("/v1/keys", {"name": name, "release_ids": release, "max_queries": max_queries, "role": role})
    show([out], ["id", "name", "role", "release_ids", "max_queries"], "key")
    console.print(f"token (shown once; only its hash is stored): [bold]{out['token']}[/bold]")


@app.command()
def ledger(
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """The privacy ledger: every (ε, δ) spent, by whom and for what."""
    with client(url, token) as api:
        rows = api.get("/v1/ledger", params={"dataset_id": dataset} if dataset is not None else None)
    show(rows, ["id", "dataset_id", "kind", "epsilon", "delta", "purpose", "release_id", "job_id", "created_at"],
         "ledger")


@budget_app.command("raise")
def budget_raise(
    dataset: Annotated[int, typer.Option(help="Dataset id.")],
    reason: Annotated[str, typer.Option(help="Why the budget is raised (kept in the ledger).")],
    epsilon: Annotated[float, typer.Option(help="ε added to the total.")] = 0.0,
    delta: Annotated[float, typer.Option(help="δ added to the total.")] = 0.0,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Raise a dataset's total budget; the ledger and the audit trail record it."""
    with client(url, token) as api:
        out = api.post(f"/v1/datasets/{dataset}/budget", {"epsilon": epsilon, "delta": delta, "reason": reason})
    show([out], ["total_epsilon", "spent_epsilon", "remaining_epsilon", "total_delta", "spent_delta",
                 "remaining_delta"], f"dataset {dataset}: budget raised")


@queries_app.command("pending")
def queries_pending(
    dataset: Annotated[int | None, typer.Option(help="Only this dataset.")] = None,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Queries waiting for a manual measurement (measure row `row` of the file you registered)."""
    with client(url, token) as api:
        out = api.get("/v1/queries", params={"dataset_id": dataset} if dataset is not None else None)
    show(out["queries"], ["query_id", "dataset_id", "row", "session_id", "release_id", "created_at"], "pending queries")
    console.print("row: the row's number in the file you registered (1 = the first data row, after the header)")


@queries_app.command("answer")
def queries_answer(
    query_id: Annotated[int, typer.Argument(help="The pending query's id.")],
    value: Annotated[float, typer.Argument(help="The measured value.")],
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Post the measurement of a pending manual query."""
    with client(url, token) as api:
        out = api.post(f"/v1/queries/{query_id}/answer", {"value": value})
    show([out], ["query_id", "index", "status", "value"], "answered")


@audit_app.command("reconstruction")
def audit_reconstruction(
    release: Annotated[int, typer.Option(help="Release id.")],
    known: Annotated[int, typer.Option(help="Records the attacker knows (d + 1 break po-gp-ucb).")],
    seed: Annotated[int | None, typer.Option(help="Which rows are known (research mode).")] = None,
    url: Url = DEFAULT_URL,
    token: Token = "",
) -> None:
    """Attack a release with K known records; prints aggregate reconstruction errors only."""
    body: dict[str, Any] = {"known": known}
    if seed is not None:
        body["seed"] = seed
    with client(url, token) as api:
        out = api.post(f"/v1/releases/{release}/audits/reconstruction", body)
    show([out], ["release_id", "mechanism", "known", "reconstructed", "max_relative_error", "median_relative_error",
                 "rms_error", "baseline_rms_error", "noise_std", "noise_floor_rms"], "reconstruction audit")
    for warning in out["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")


if __name__ == "__main__":  # pragma: no cover
    app()
