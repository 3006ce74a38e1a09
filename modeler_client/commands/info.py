"""``pobo-modeler info``: client version, server health, the key's queries left and caps, and the metadata of
releases in scope."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from modeler_client import __version__
from modeler_client.commands.common import (
    OptionalToken,
    OptionalUrl,
    connect,
    console,
    reports_api_errors,
    show_release_warnings,
)
from shared.api.governance import KeyPolicyOut
from shared.api.scaling import step_line
from shared.api.schemas import NeighbouringStep, ReleaseOut
from shared.releases.noise_ratio import NoiseToSpread, release_noise_to_spread


def step_text(step: NeighbouringStep) -> str:
    """What the release hides, in the table's own units: the summary, then one plain line per feature."""
    colour = "green" if step.whole_record else "yellow"
    return "\n".join([f"[{colour}]{step.summary}[/]", *(step_line(feature) for feature in step.features)])


def measured_text(release: ReleaseOut) -> str:
    """What a query measures, how, and how long an answer takes."""
    m = release.measurement
    what = "—" if m is None else m.quantity + (f" in {m.unit}" if m.unit else "")
    how = {"manual": "by hand in a lab: a query stays pending until someone measures the row",
           "column": "at once, from the curator's table", "python": "at once, by the curator's program",
           None: "not stated"}[release.evaluator_kind]
    delay = "" if m is None or m.expected_delay_hours is None else f"; expect about {_duration(m.expected_delay_hours)}"
    return f"{what}, measured {how}{delay}"


def _duration(hours: float) -> str:
    return f"{hours:.2g} hours" if hours < 48 else f"{hours / 24:.2g} days"


def noise_text(ratio: NoiseToSpread | None) -> str:
    """The noise-to-spread ratio and what it means (:mod:`shared.releases.noise_ratio`)."""
    if ratio is None:
        return "— (no input noise)"
    colour = "bold red" if ratio.too_noisy else "green"
    return f"[{colour}]{ratio.text()}[/]\n{ratio.sentence()}"


def release_ratio(client, release: ReleaseOut) -> NoiseToSpread | None:
    """From the public box when the release states one, else from its released rows (fetched only then)."""
    ratio = release_noise_to_spread(release)
    if ratio is None and release.noise_std is not None:
        ratio = release_noise_to_spread(release, client.inputs(release.id))
    return ratio


def release_table(release: ReleaseOut, ratio: NoiseToSpread | None = None) -> Table:
    table = Table(title=f"release {release.id}", show_header=False)
    certified = ("[bold green]yes[/]" if release.certified
                 else "[bold red]NO: not certified differentially private (see the warning)[/]")
    rows = {
        "mechanism": release.mechanism,
        "certified DP": certified,
        "seeded": {True: "[bold red]yes: reproducible noise, NOT certified[/]", False: "no",
                   None: "[bold red]unknown: possibly seeded, NOT certified[/]"}[release.seeded],
        "dataset": str(release.dataset_id),
        "epsilon, delta": f"{release.epsilon:g}, {release.delta:g}",
        "rows n × dim r": f"{release.n} × {release.dim}",
        "goal": release.goal,
        "measures": measured_text(release),
        "projection": release.projection or "—",
        "features": ", ".join(release.feature_columns) or "—",
        "label columns (jobs)": ", ".join(release.label_columns) or "none approved by the curator",
        "public parameters": "—" if release.parameters is None else "\n".join(release.parameters.summary_lines()),
        "input noise std": "—" if release.noise_std is None else f"{release.noise_std:.6g}",
        "noise / spread": noise_text(ratio),
        "sensitivity": "—" if release.sensitivity is None else f"{release.sensitivity:.6g}",
        "omega, sigma_min, lifted": ", ".join(
            "—" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)
            for v in (release.omega, release.sigma_min, release.lifted)
        ),
        "neighbouring step": "—" if release.neighbouring_step is None else step_text(release.neighbouring_step),
        "measurements": release.measurements_note,
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


def key_table(policy: KeyPolicyOut) -> Table:
    """What this key may still do: queries left, its own ε/δ cap against what it has spent, jobs, expiry."""
    table = Table(title=f"this key ({policy.role} key {policy.key_id})", show_header=False)
    left = policy.max_queries - policy.used_queries
    rows = {
        "queries left": f"{left} of {policy.max_queries}",
        "epsilon spent / cap": f"{policy.spent_epsilon:.6g} / " + ("no cap of its own" if policy.epsilon_cap is None
                                                                  else f"{policy.epsilon_cap:.6g}"),
        "delta spent / cap": f"{policy.spent_delta:.3g} / " + ("no cap of its own" if policy.delta_cap is None
                                                              else f"{policy.delta_cap:.3g}"),
        "job kinds it may run": ", ".join(policy.jobs) or "none (ask the curator for --jobs)",
        "expires": "never" if policy.expires_at is None else policy.expires_at.isoformat(),
    }
    for key, value in rows.items():
        table.add_row(key, value)
    return table


@reports_api_errors
def info(
    url: OptionalUrl = None,
    token: OptionalToken = None,
    release: Annotated[int | None, typer.Option(help="Show one release (default: every release in scope).")] = None,
) -> None:
    """Client version, server health, this key's queries left and caps, and release metadata (certified flag and
    warnings up front)."""
    console.print(f"pobo-modeler {__version__}")
    if url is None:
        console.print("[dim]no --url (or POBO_URL) given: nothing more to show[/]")
        return
    client = connect(url, token)
    health = client.health()
    console.print(f"server {client.url}: {health.status}, version {health.version}")
    if token is None:
        return
    console.print(key_table(client.my_policy()))
    releases = [client.release(release)] if release is not None else client.releases()
    for item in releases:
        show_release_warnings(item)
        console.print(release_table(item, release_ratio(client, item)))


def register(app: typer.Typer) -> None:
    app.command()(info)
