"""``pobo-curator release create/list/show``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from curator_service.admin_client import CuratorAdmin
from curator_service.cli.common import (
    USAGE_ERROR,
    Json,
    Server,
    build,
    cell,
    connects,
    console,
    curator,
    errors,
    fail,
    numbers,
    print_json,
    show,
    show_step,
    single,
)
from curator_service.cli.jobs import JOB_COLUMNS
from shared.api.schemas import JobOut, ReleaseCreate, ReleaseOut
from shared.releases.noise_ratio import release_noise_to_spread

release_app = typer.Typer(help="Make, list and show releases of a dataset's inputs.", no_args_is_help=True)

DEFAULT_RELEASE_DELTA = 1e-6
RELEASE_FLAGS = {"mechanism": "--mechanism", "epsilon": "--epsilon", "delta": "--delta", "dim": "--dim",
                 "projection": "--projection", "pca.share": "--pca-share", "pca.clip_norm": "--pca-clip-norm",
                 "measurements.clip": "--measurements-clip", "measurements.share": "--measurements-share",
                 "seed": "--seed", "request_id": "--request-id"}

Projection = Annotated[str, typer.Option(help="gaussian: auto (identity at r = d, haar above, jl below), identity, "
                                         "haar, jl, or pca (with --pca-share and --pca-clip-norm).")]
PcaShare = Annotated[float | None, typer.Option(help="DP-PCA: the fraction of the budget for the subspace, in (0, 1).")]
PcaClipNorm = Annotated[float | None, typer.Option(help="DP-PCA: bound on the scaled rows' norm (public: fixed "
                                                  "without looking at the data).")]
MeasurementsClip = Annotated[str | None, typer.Option(help="Private measurements: the clip 'a,b' of y (public: "
                                                      "fixed without looking at the data).")]
MeasurementsShare = Annotated[float | None, typer.Option(help="Private measurements: their budget share ρ in (0, 1).")]


def release_options(dim: str, projection: str, pca_share: float | None, pca_clip_norm: float | None,
                    measurements_clip: str | None, measurements_share: float | None) -> dict[str, Any]:
    """The release options of a request body (``dim``, ``projection``, ``pca``, ``measurements``)."""
    # ASCII digits, bounded before int(): "²" is a digit to str.isdigit, and int() refuses 4,301 digits or more.
    if dim != "auto" and not (dim.isascii() and dim.isdigit() and len(dim) <= 9):
        fail("--dim takes a whole number r >= 1 (at most 9 digits) or 'auto'", USAGE_ERROR)
    body: dict[str, Any] = {"dim": dim if dim == "auto" else int(dim), "projection": projection}
    if (projection == "pca") != (pca_share is not None and pca_clip_norm is not None):
        fail("DP-PCA is --projection pca with both --pca-share and --pca-clip-norm: give all three or none",
             USAGE_ERROR)
    if projection == "pca":
        body["pca"] = {"share": pca_share, "clip_norm": pca_clip_norm}
    if measurements_clip is not None or measurements_share is not None:
        clip = numbers(measurements_clip, "--measurements-clip")
        if len(clip) != 2 or measurements_share is None:
            fail("private measurements need --measurements-clip 'a,b' and --measurements-share", USAGE_ERROR)
        body["measurements"] = {"clip": clip, "share": measurements_share}
    return body


@release_app.command("create")
@connects
def release_create(
    server: Server,
    dataset: Annotated[int, typer.Option(help="Dataset id.")],
    epsilon: Annotated[float, typer.Option(help="ε charged for the release (every part of it, once).")],
    delta: Annotated[float, typer.Option(help="δ charged for the release (default: a tenth of the default dataset "
                                          "δ, so one release leaves room for others).")] = DEFAULT_RELEASE_DELTA,
    mechanism: Annotated[str, typer.Option(help="gaussian (certified) or po-gp-ucb (NOT DP).")] = "gaussian",
    dim: Annotated[str, typer.Option(help="Projection dimension r, or 'auto' (gaussian: r = d).")] = "auto",
    projection: Projection = "auto",
    pca_share: PcaShare = None,
    pca_clip_norm: PcaClipNorm = None,
    measurements_clip: MeasurementsClip = None,
    measurements_share: MeasurementsShare = None,
    seed: Annotated[int | None, typer.Option(help="Research mode only.")] = None,
    request_id: Annotated[str | None, typer.Option(help="Idempotency key (default: a fresh UUID). Run the command "
                                                   "again with the same one to pick up a release whose outcome you "
                                                   "did not see: it is made and charged once.")] = None,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Print the release's job and exit instead of following "
                                          "it (`pobo-curator jobs show ID` later; its result names the release).")]
    = False,
    as_json: Json = False,
) -> None:
    """Release a dataset's inputs, and optionally private measurements (charged once to its budget, when stored).

    A large release runs as a job: the command follows it with a progress bar until it is stored (no time limit;
    Ctrl-C stops following and leaves it running; `pobo-curator jobs cancel ID` stops it uncharged)."""
    values = {"mechanism": mechanism, "epsilon": epsilon, "delta": delta, "seed": seed, "request_id": request_id,
              **release_options(dim, projection, pca_share, pca_clip_norm, measurements_clip, measurements_share)}
    body = build(ReleaseCreate, values, RELEASE_FLAGS)
    with curator(server, RELEASE_FLAGS) as admin:
        made = admin.submit_release(dataset, body)
        if isinstance(made, JobOut):
            if no_wait:
                single(made, as_json, JOB_COLUMNS, f"release job {made.id} (follow: pobo-curator jobs show {made.id})")
                return
            made = follow_release(admin, made)
    show_releases(made, "release", as_json)


def follow_release(admin: CuratorAdmin, job: JobOut) -> ReleaseOut:
    """Follows a release's job with a progress bar on stderr (stdout stays the result) and returns the release."""
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=errors, transient=True) as bar:
        task = bar.add_task(f"release job {job.id}", total=1.0)
        bar.update(task, completed=job.progress)  # a fraction: add_task's `completed` is typed as a whole count

        def update(current: JobOut) -> None:
            bar.update(task, completed=current.progress,
                       description=f"release job {current.id}: {current.message or current.status}")

        try:
            return admin.release_of(admin.follow_job(job.id, update))
        except KeyboardInterrupt:
            fail(f"stopped following release job {job.id}; it keeps running: `pobo-curator jobs show {job.id}` "
                 f"follows it, `pobo-curator jobs cancel {job.id}` stops it before it is charged", 130)


@release_app.command("list")
@connects
def release_list(
    server: Server,
    dataset: Annotated[int | None, typer.Option(help="Only this dataset's releases.")] = None,
    as_json: Json = False,
) -> None:
    """List releases: mechanism, whether certified or seeded, cost, projection and noise."""
    with curator(server) as admin:
        show_releases(admin.releases(dataset), "releases", as_json)


@release_app.command("show")
@connects
def release_show(
    server: Server,
    release: Annotated[int, typer.Argument(help="Release id.")],
    as_json: Json = False,
) -> None:
    """One release: its metadata, every public parameter, its neighbouring step and warnings."""
    with curator(server) as admin:
        out = admin.release_info(release)
    show_releases(out, f"release {release}", as_json)
    if not as_json:
        show_step(f"release {out.id}", out.neighbouring_step)
        console.print(out.measurements_note)


def _release_cell(column: str, value: Any) -> str:
    if column == "certified":
        return "[green]yes[/green]" if value else "[bold red]NO[/bold red]"
    if column == "seeded":
        return {True: "[bold red]yes[/bold red]", False: "no", None: "[bold red]unknown[/bold red]"}[value]
    return cell(column, value)


def noise_to_spread_line(release: ReleaseOut) -> str:
    """``noise / spread …`` and what it means (:mod:`shared.releases.noise_ratio`), or why it cannot be said."""
    ratio = release_noise_to_spread(release)
    if ratio is None:
        return ("noise / spread: not stated here (no public box); `pobo-modeler info` reads it off the released "
                "rows")
    colour = "bold red" if ratio.too_noisy else "green"
    return f"noise / spread [{colour}]{ratio.text()}[/]. {ratio.sentence()}"


def show_releases(releases: ReleaseOut | list[ReleaseOut], title: str, as_json: bool) -> None:
    """The releases' table, then every release's public parameters and warnings, one per line; or JSON (an object
    for one release, a list for a listing)."""
    if as_json:
        print_json(releases)
        return
    releases = [releases] if isinstance(releases, ReleaseOut) else releases
    rows = []
    for release in releases:
        measurements = release.parameters.measurements if release.parameters else None
        rows.append({**release.model_dump(mode="json"), "σ_y": measurements.noise_std if measurements else None})
    show(rows, ["id", "dataset_id", "mechanism", "certified", "seeded", "epsilon", "delta", "n", "dim", "projection",
                "noise_std", "σ_y"], title, _release_cell)
    for release in releases:
        if release.parameters:
            console.print(f"release {release.id}: " + "\n  ".join(release.parameters.summary_lines()))
        if release.noise_std is not None:
            console.print(f"release {release.id}: {noise_to_spread_line(release)}")
        for warning in release.warnings:
            console.print(f"[yellow]warning (release {release.id}):[/yellow] {warning}")
