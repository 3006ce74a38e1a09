"""``pobo-modeler plot``: PNG of best-so-far value (and simple regret when the optimum is known)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from modeler_client.plot import plot_runs
from modeler_client.runfile import RunRecord

from modeler_client.commands.common import console


def plot(
    paths: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="One or more run files.")],
    out: Annotated[Path | None, typer.Option(help="The PNG to write (default: the first run file's name .png).")] = None,
    optimum: Annotated[
        float | None, typer.Option(help="Known best value (overrides the run files') to plot simple regret.")
    ] = None,
) -> None:
    """Plot one or more runs against iteration."""
    records = [RunRecord.load(path) for path in paths]
    if optimum is not None:
        for record in records:
            record.settings.optimum = optimum
    written = plot_runs(records, out or paths[0].with_suffix(".png"))
    console.print(f"wrote {written}")


def register(app: typer.Typer) -> None:
    app.command()(plot)
