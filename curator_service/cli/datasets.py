"""``pobo-curator dataset add/list/show``, ``budget raise`` and ``plan``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from curator_service.cli.common import (
    USAGE_ERROR,
    Csv,
    Json,
    Server,
    build,
    connects,
    console,
    curator,
    fail,
    numbers,
    print_json,
    show,
    show_step,
    single,
    split,
)
from curator_service.cli.queries import measure_cell
from curator_service.cli.releases import (
    DEFAULT_RELEASE_DELTA,
    RELEASE_FLAGS,
    MeasurementsClip,
    MeasurementsShare,
    PcaClipNorm,
    PcaShare,
    Projection,
    release_options,
)
from shared.api.errors import ApiError
from shared.api.schemas import BudgetRaise, DatasetFromPath, DatasetOut, DatasetSpec, PlanOut, PlanRequest

dataset_app = typer.Typer(help="Register, list and show datasets.", no_args_is_help=True)
budget_app = typer.Typer(help="Raise a dataset's privacy budget (a recorded ledger entry).", no_args_is_help=True)

DEFAULT_DATASET_DELTA = 1e-5

SPEC_FLAGS = {"name": "--name", "feature_columns": "--features", "evaluator": "--evaluator",
              "evaluator.column": "--evaluator column:<name>", "evaluator.target": "--evaluator python:<target>",
              "evaluator.noise_std": "--noise-std", "budget": "--epsilon", "budget.epsilon": "--epsilon",
              "budget.delta": "--delta", "goal": "--goal", "scaling": "--lower/--upper or --identity",
              "scaling.lower": "--lower", "scaling.upper": "--upper", "scaling.diameter": "--diameter",
              "measurement.quantity": "--measure", "measurement.unit": "--unit",
              "measurement.expected_delay_hours": "--expected-delay-hours",
              "measurement.plausible_range": "--plausible-range", "label_columns": "--label-columns"}
BUDGET_FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "reason": "--reason"}
PLAN_FLAGS = {**RELEASE_FLAGS, "epsilons": "--epsilon", "width": "--width", "simulate_runs": "--simulate",
              "queries": "--queries"}


def _evaluator(text: str, noise_std: float) -> dict[str, Any]:
    kind, _, rest = text.partition(":")
    kinds: dict[str, dict[str, Any]] = {"column": {"kind": "column", "column": rest, "noise_std": noise_std},
                                        "python": {"kind": "python", "target": rest},
                                        "manual": {"kind": "manual"}}
    return kinds.get(kind, {"kind": kind})


def _spec(name: str | None, features: str | None, evaluator: str | None, noise_std: float, epsilon: float | None,
          delta: float, goal: str, lower: str | None, upper: str | None, diameter: float, identity: bool,
          spec_file: Path | None, measurement: dict[str, Any], label_columns: str | None) -> dict[str, Any]:
    """The dataset spec from ``--spec`` (a JSON file) overridden by the individual options."""
    spec: dict[str, Any] = json.loads(spec_file.read_text()) if spec_file else {}
    if measurement.get("quantity") is not None:
        spec["measurement"] = {name: value for name, value in measurement.items() if value is not None}
    elif any(value is not None for value in measurement.values()):
        fail("--unit, --expected-delay-hours and --plausible-range describe a quantity: give --measure too (e.g. "
             "--measure HbA1c)", USAGE_ERROR)
    if label_columns:
        spec["label_columns"] = split(label_columns)
    if name:
        spec["name"] = name
    if features:
        spec["feature_columns"] = split(features)
    if evaluator:
        spec["evaluator"] = _evaluator(evaluator, noise_std)
    if epsilon is not None:
        spec["budget"] = {"epsilon": epsilon, "delta": delta}
    if (lower or upper) and identity:
        fail("give --lower/--upper (bounds scaling) or --identity, not both", USAGE_ERROR)
    if lower or upper:
        spec["scaling"] = {"kind": "bounds", "lower": numbers(lower, "--lower"), "upper": numbers(upper, "--upper"),
                           "diameter": diameter}
    elif identity:
        spec["scaling"] = {"kind": "identity"}
    if "scaling" not in spec:
        fail("choose the public scaling: --lower/--upper with --diameter (default 1: one neighbouring step is a "
             "whole record), or --identity (raw units, no clipping)", USAGE_ERROR)
    spec.setdefault("goal", goal)
    return spec


@dataset_app.command("add")
@connects
def dataset_add(
    server: Server,
    csv: Annotated[Path, typer.Argument(help="The CSV (uploaded; with --on-server, a path on the curator's host).")],
    name: Annotated[str | None, typer.Option(help="Dataset name.")] = None,
    features: Annotated[str | None, typer.Option(help="Feature columns, comma-separated.")] = None,
    evaluator: Annotated[str | None, typer.Option(help="'column:<name>', 'python:<module>:<function>' "
                                                   "or 'manual'.")] = None,
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
    measure: Annotated[str | None, typer.Option(help="What is measured, in public words shown to the lab and to "
                                                "modelers (e.g. HbA1c).")] = None,
    unit: Annotated[str | None, typer.Option(help="The measurement's unit (e.g. mmol/mol).")] = None,
    expected_delay_hours: Annotated[float | None, typer.Option(help="How long a measurement usually takes, in hours "
                                                               "(the lab's turnaround; told to modelers).")] = None,
    plausible_range: Annotated[tuple[float, float] | None, typer.Option(
        metavar="LOW HIGH", help="The values a manual measurement plausibly takes, in its unit (public): an answer "
                                 "outside it must be confirmed (--confirm-outside-range).")] = None,
    identifier_column: Annotated[str | None, typer.Option(help="The column that names a row for you, e.g. mrn "
                                                          "(never a feature; never sent to a modeler).")] = None,
    label_columns: Annotated[str | None, typer.Option(help="0/1 columns jobs may name as labels (public names), "
                                                      "comma-separated.")] = None,
    spec: Annotated[Path | None, typer.Option(help="A JSON DatasetSpec; the options above override it.")] = None,
    on_server: Annotated[bool, typer.Option(help="CSV is a path on the server: register it without "
                                              "uploading.")] = False,
    as_json: Json = False,
) -> None:
    """Register a dataset (and, with --identifier-column, name the column that identifies its rows, e.g. the MRN)."""
    measurement = {"quantity": measure, "unit": unit, "expected_delay_hours": expected_delay_hours,
                   "plausible_range": list(plausible_range) if plausible_range else None}
    values = _spec(name, features, evaluator, noise_std, epsilon, delta, goal, lower, upper, diameter, identity, spec,
                   measurement, label_columns)
    if on_server:
        from_path = build(DatasetFromPath, {**values, "path": str(csv)}, SPEC_FLAGS)
    else:
        body = build(DatasetSpec, values, SPEC_FLAGS)
        if not csv.is_file():
            fail(f"there is no file {str(csv)!r}; give the path of a CSV (or --on-server for a path on the "
                 "curator's host)", USAGE_ERROR)
    with curator(server, SPEC_FLAGS) as admin:
        out = admin.register_path(from_path) if on_server else admin.register_csv(csv.read_bytes(), body, csv.name)
        if identifier_column:
            try:
                admin.set_identifier_column(out.id, identifier_column)
            except ApiError as refusal:
                fail(f"dataset {out.id} is registered, but its identifier column was refused: {refusal.detail}; "
                     f"name another with `pobo-curator dataset set-identifier {out.id} COLUMN`")
    _show_datasets(out, "registered", as_json)
    if identifier_column and not as_json:
        console.print(f"dataset {out.id}: rows are identified by {identifier_column!r} (it never leaves the curator)",
                      highlight=False)


@dataset_app.command("set-identifier")
@connects
def dataset_set_identifier(
    server: Server,
    dataset: Annotated[int, typer.Argument(help="Dataset id.")],
    column: Annotated[str, typer.Argument(help="The column that names a row for you, e.g. mrn.")],
) -> None:
    """Name the column that identifies a row for the lab (e.g. the MRN): worklists, answers by --mrn and the echo of
    every answer use it. It is never a feature and never sent to a modeler."""
    with curator(server, {"column": "COLUMN"}) as admin:
        out = admin.set_identifier_column(dataset, column)
    console.print(f"dataset {out.dataset_id}: rows are identified by {out.column!r} (it never leaves the curator)",
                  highlight=False)


@dataset_app.command("set")
@connects
def dataset_set(
    server: Server,
    dataset: Annotated[int, typer.Argument(help="Dataset id.")],
    plausible_range: Annotated[tuple[float, float] | None, typer.Option(
        metavar="LOW HIGH", help="The values a manual measurement plausibly takes, in its unit (public).")] = None,
    no_plausible_range: Annotated[bool, typer.Option(help="Remove the plausible range.")] = False,
) -> None:
    """Change what a manual dataset's measurement says: its plausible range (answers outside it must be confirmed
    with --confirm-outside-range)."""
    if (plausible_range is None) == (not no_plausible_range):
        fail("give --plausible-range LOW HIGH, or --no-plausible-range", USAGE_ERROR)
    low, high = plausible_range or (None, None)
    with curator(server, {"low": "--plausible-range LOW", "high": "--plausible-range HIGH"}) as admin:
        out = admin.set_plausible_range(dataset, low, high)
    console.print(f"dataset {dataset}: {out.quantity} "
                  + (f"plausibly between {out.range_text()}" if out.plausible_range else "has no plausible range"),
                  highlight=False)


def _show_datasets(datasets: DatasetOut | list[DatasetOut], title: str, as_json: bool, as_csv: bool = False) -> None:
    """A table of datasets and their neighbouring steps, or JSON (an object for one, a list for a listing)."""
    if as_json:
        print_json(datasets)
        return
    datasets = [datasets] if isinstance(datasets, DatasetOut) else datasets
    rows = [{**d.model_dump(mode="json"), "measured": d.evaluator_kind + (f": {measure_cell(d.measurement)}"
                                                                          if d.measurement else ""),
             "ε spent / total": f"{d.budget.spent_epsilon:.3g} / {d.budget.total_epsilon:.3g}",
             "δ spent / total": f"{d.budget.spent_delta:.2g} / {d.budget.total_delta:.2g}"} for d in datasets]
    show(rows, ["id", "name", "n", "d", "measured", "goal", "ε spent / total", "δ spent / total"], title,
         as_csv=as_csv)
    if as_csv:
        return
    for dataset in datasets:
        console.print(f"dataset {dataset.id} features: {', '.join(dataset.feature_columns)}", highlight=False)
        if dataset.label_columns:
            console.print(f"dataset {dataset.id} label columns (0/1, public): {', '.join(dataset.label_columns)}",
                          highlight=False)
        show_step(f"dataset {dataset.id}", dataset.neighbouring_step)


@dataset_app.command("list")
@connects
def dataset_list(server: Server, as_json: Json = False, as_csv: Csv = False) -> None:
    """List datasets with their budgets."""
    with curator(server) as admin:
        _show_datasets(admin.datasets(), "datasets", as_json, as_csv)


@dataset_app.command("show")
@connects
def dataset_show(
    server: Server,
    dataset: Annotated[int, typer.Argument(help="Dataset id.")],
    as_json: Json = False,
) -> None:
    """One dataset's metadata, budget and neighbouring step."""
    with curator(server) as admin:
        _show_datasets(admin.dataset(dataset), f"dataset {dataset}", as_json)


@budget_app.command("raise")
@connects
def budget_raise(
    server: Server,
    dataset: Annotated[int, typer.Option(help="Dataset id.")],
    reason: Annotated[str, typer.Option(help="Why the budget is raised (kept in the ledger).")],
    epsilon: Annotated[float, typer.Option(help="ε added to the total.")] = 0.0,
    delta: Annotated[float, typer.Option(help="δ added to the total.")] = 0.0,
    as_json: Json = False,
) -> None:
    """Raise a dataset's total budget; the ledger and the audit trail record it."""
    body = build(BudgetRaise, {"epsilon": epsilon, "delta": delta, "reason": reason}, BUDGET_FLAGS)
    with curator(server, BUDGET_FLAGS) as admin:
        out = admin.raise_budget(dataset, body)
    single(out, as_json, ["total_epsilon", "spent_epsilon", "remaining_epsilon", "total_delta", "spent_delta",
                             "remaining_delta"], f"dataset {dataset}: budget raised")


@connects
def plan(
    server: Server,
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
    as_json: Json = False,
) -> None:
    """What a gaussian release would buy at each ε, before anything is charged (reads no row)."""
    values = {"epsilons": numbers(epsilon, "--epsilon"), "delta": delta, "simulate_runs": simulate,
              "queries": queries, "width": width,
              **release_options(dim, projection, pca_share, pca_clip_norm, measurements_clip, measurements_share)}
    body = build(PlanRequest, values, PLAN_FLAGS)
    with curator(server, PLAN_FLAGS) as admin:
        out = admin.plan(dataset, body)
    if as_json:
        print_json(out)
    else:
        _show_plan(out)


RISK_COLUMN = "risk: ≤ × random search per query (lower is safer)"


def _show_plan(out: PlanOut) -> None:
    n, width = out.n, out.width
    rows = []
    for row in out.rows:
        measurements = row.parameters.measurements
        multiple = row.random_search_multiple
        rows.append({
            "ε": f"{row.epsilon:g}", "μ": f"{row.mu:.2g}",
            "input noise σ": f"{row.parameters.noise_std:.2g} ({row.parameters.noise_std / width:.0%} of a range)",
            "measurement noise σ_y": "-" if measurements is None else f"{measurements.noise_std:.2g}",
            "noise / spread": f"{row.noise_to_spread:.2g}" + (" ⚠ mostly noise" if row.noise_to_spread > 1 else ""),
            RISK_COLUMN: (f"{multiple:.2g}×" if multiple < 0.999 * n else "no bound"),
            "utility: simulated regret ± s.e. (lower is better)": (
                "-" if row.regret is None else f"{row.regret:.2f} ± {row.regret_stderr:.2f}"),
        })
    first = out.rows[0].parameters
    show(rows, list(rows[0]),
         f"plan for dataset {out.dataset_id} (n = {n}, d = {out.d}, each scaled feature in [0, {width:.3g}], "
         f"δ = {out.delta:g}, r = {first.dim}, {first.projection})")
    console.print("input noise σ: added to every released coordinate, in scaled units (a feature's range is "
                  f"[0, {width:.3g}]); measurement noise σ_y: in the measurement's own unit; noise / spread: above 1 "
                  "(⚠) the released inputs are mostly noise; risk: how many times a random guess's chance any "
                  "modeler can have of first hitting a target row per query — a privacy risk, lower is safer, not a "
                  "utility; utility: simulated distance from the best row's value, in standard deviations of the "
                  "measured values (0 = found it) with its standard error over the stand-in tables", highlight=False)
    unit = out.unit_noise_epsilon
    console.print("ε needed for noise / spread ≈ 1: " + (f"{unit:.3g}" if unit is not None else "outside 1e-4 to 1e8")
                  + " (below it the released inputs are mostly noise)", highlight=False)
    console.print(f"the bound: {out.assumptions}", highlight=False)
    console.print(f"the bound covers {out.bound_covers}", highlight=False)
    if out.random_search_regret is not None:
        half = out.half_gap_epsilon
        console.print(f"simulated on {out.simulate_runs} stand-in table(s) of the same n, d and public box, "
                      f"{out.queries} queries: random search {out.random_search_regret:.2f}, non-private "
                      f"GP-UCB {out.non_private_regret:.2f} (σ of y); half the gap is forecast at "
                      + (f"ε = {half:g}" if half is not None else "no planned ε (plan larger ones)"), highlight=False)
    console.print("nothing was charged and no row was read")
