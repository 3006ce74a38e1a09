"""``pobo-modeler plot``: PNG of best-so-far value (and simple regret when the optimum is known)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from modeler_client.commands.common import OptionalToken, OptionalUrl, connect, console, reports_api_errors
from modeler_client.importance import parameter_importance
from modeler_client.plot import figure_importance, plot_runs, run_title
from modeler_client.runfile import RunRecord


@reports_api_errors
def plot(
    paths: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="One or more run files.")],
    out: Annotated[Path | None, typer.Option(help="The PNG to write (default: the first run file's name "
                                             ".png).")] = None,
    optimum: Annotated[
        float | None, typer.Option(help="Known best value (overrides the run files') to plot simple regret.")
    ] = None,
    importance: Annotated[bool, typer.Option("--importance", help="Instead: a bar chart of each feature's importance "
                                             "(ARD lengthscales fitted on the first run's answers, with intervals "
                                             "from refits on half-samples and a warning when the release is mostly "
                                             "noise or the answers are few; fetches the released inputs, so it "
                                             "needs --token).")] = False,
    url: OptionalUrl = None,
    token: OptionalToken = None,
) -> None:
    """Plot one or more runs against iteration, or (--importance) which features the answers depend on most."""
    records = [RunRecord.load(path) for path in paths]
    if importance:
        record = records[0]
        client = connect(url or record.url, token)
        try:
            found = parameter_importance(client.inputs(record.release_id), record, warn=False)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="PATHS") from None
        target = out or paths[0].with_name(paths[0].stem + "-importance.png")
        target.parent.mkdir(parents=True, exist_ok=True)
        figure_importance(found, run_title([record])).savefig(target, dpi=110)
        for sentence in found.warnings:
            console.print(f"[bold red]warning:[/] {sentence}", highlight=False)
        console.print("relative importance, its half-samples' middle-80% interval, how often it came first:",
                      highlight=False)
        for line in found.lines():
            console.print(line, highlight=False)
        console.print(f"wrote {target}")
        return
    if optimum is not None:
        for record in records:
            record.settings.optimum = optimum
    written = plot_runs(records, out or paths[0].with_suffix(".png"))
    console.print(f"wrote {written}")


def register(app: typer.Typer) -> None:
    app.command()(plot)
