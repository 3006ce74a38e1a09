"""``pobo-modeler``: the modeler's command line (docs/design.md §6).

Each command group lives in :mod:`modeler_client.commands` and registers itself with one line below;
job commands (``dp-bo``, ``dp-tune``, ``dpareto``) are added the same way.
"""

from __future__ import annotations

import typer

from modeler_client.commands import dp_bo, dp_tune, dpareto, info, plot, run, sessions

app = typer.Typer(
    name="pobo-modeler",
    help="Run Bayesian optimisation against a pobo curator without seeing its data.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

run.register(app)
plot.register(app)
info.register(app)
sessions.register(app)
dp_bo.register(app)
dp_tune.register(app)
dpareto.register(app)

if __name__ == "__main__":
    app()
