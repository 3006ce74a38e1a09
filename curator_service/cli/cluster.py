"""``pobo-curator cluster certs``: the TLS files of a Dask job cluster of your own (docs/deployment.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from curator_service.cli.common import console

cluster_app = typer.Typer(help="The Dask job cluster outside the service (POBO_DASK_SCHEDULER).", no_args_is_help=True)


@cluster_app.command()
def certs(
    directory: Annotated[Path, typer.Argument(help="Where to write ca.pem and <role>.pem/.key (made 0700).")],
    days: Annotated[int, typer.Option(min=1, help="How long the certificates are valid.")] = 825,
    force: Annotated[bool, typer.Option(help="Replace files that are already there.")] = False,
) -> None:
    """A private CA and a certificate and key for the scheduler, the workers and the service (the client), for
    Dask's mutual TLS. The CA's key is not kept. Keeps a complete set already there unless --force."""
    from curator_service.jobs.certs import ROLES, write_cluster_certificates

    written = write_cluster_certificates(directory, days, force)
    files = ", ".join(f"{role}.pem/.key" for role in ROLES)
    console.print(f"{'wrote' if written else 'kept'} {directory}: ca.pem, {files}")
