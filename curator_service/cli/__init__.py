"""``pobo-curator``: run the service, and administer it through its own HTTP API with the typed admin client
(docs/design.md §6). Listings take ``--json``; errors go to stderr with a non-zero exit code (2: a bad option, named
by its flag; 1: the server refused, with its sentence)."""

from __future__ import annotations

from typing import Annotated

import typer

from curator_service import __version__
from curator_service.cli import cluster, datasets, jobs, keys, ledger, queries, releases, serve

app = typer.Typer(help="The pobo curator: serve the API, register data, make releases, issue keys, answer "
                       "measurements, read the ledger and the audit log.", no_args_is_help=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pobo-curator {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """The pobo curator."""


for command in (serve.serve, serve.upgrade, datasets.plan, ledger.ledger, queries.sessions):
    app.command()(command)
for group, name in ((datasets.dataset_app, "dataset"), (releases.release_app, "release"), (keys.key_app, "key"),
                    (queries.queries_app, "queries"), (ledger.audit_app, "audit"), (jobs.jobs_app, "jobs"),
                    (datasets.budget_app, "budget"), (cluster.cluster_app, "cluster")):
    app.add_typer(group, name=name)

if __name__ == "__main__":  # pragma: no cover
    app()
