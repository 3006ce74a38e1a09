"""``pobo-modeler sessions``: this key's sessions on the server, so a study can be found and reloaded
(``pobo-modeler resume --session ID``) without its run file."""

from __future__ import annotations

from typing import Annotated

import typer

from modeler_client.client import ModelerClient
from modeler_client.commands.common import connects, console, reports_api_errors
from shared.cli.terminal import print_table


@reports_api_errors
@connects
def sessions(
    client: ModelerClient,
    release: Annotated[int | None, typer.Option(help="Only this release's sessions.")] = None,
) -> None:
    """This key's sessions, oldest first: release, status, queries made and answered, when opened."""
    rows = []
    for session in client.sessions():
        if release is not None and session.release_id != release:
            continue
        queries = client.queries(session.id)
        done = sum(q.status == "done" for q in queries)
        pending = sum(q.status == "pending" for q in queries)
        rows.append([str(session.id), str(session.release_id), session.status, str(len(queries)), str(done),
                     str(pending), "-" if session.created_at is None else f"{session.created_at:%Y-%m-%d %H:%M}"])
    if not rows:
        console.print("this key has no sessions" + ("" if release is None else f" on release {release}"))
        return
    print_table(console, ["session", "release", "status", "queries", "measured", "pending", "opened (UTC)"], rows,
                title="your sessions", right={"session", "release", "queries", "measured", "pending"})
    console.print("reload one without its run file: pobo-modeler resume --session ID [PATH] (a closed session reopens "
                  "when its run continues)", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(sessions)
