"""What every subcommand shares: the connection options, the console, and turning API errors into
one red sentence and exit code 1 instead of a traceback."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.panel import Panel

from modeler_client.client import ModelerClient, PendingTimeout
from shared.api.http_client import ApiError
from shared.api.schemas import ReleaseOut
from shared.cli.command_line import shared_options

console = Console()
err_console = Console(stderr=True)

Url = Annotated[str, typer.Option("--url", envvar="POBO_URL", help="The curator service's base URL.")]
Token = Annotated[
    str,
    typer.Option("--token", envvar="POBO_TOKEN", help="Your API key (never written to run files)."),
]
OptionalUrl = Annotated[str | None, typer.Option("--url", envvar="POBO_URL", help="The curator service's base URL.")]
OptionalToken = Annotated[str | None, typer.Option("--token", envvar="POBO_TOKEN", help="Your API key.")]
Timeout = Annotated[float, typer.Option(help="Seconds per HTTP attempt.")]
Retries = Annotated[int, typer.Option(help="Least number of retries of connection errors and 502/503/504 (idempotent "
                                           "requests and queries with a request_id; at least POBO_RETRY_FOR seconds, "
                                           "default 30, of backoff).")]

Command = TypeVar("Command", bound=Callable)


def reports_api_errors(command: Command) -> Command:
    """Print the server's sentence (and its code) and exit 1 on an API error or a pending timeout."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except ApiError as exc:
            err_console.print(f"[bold red]error[/] ({exc.code}, HTTP {exc.status}): {exc.detail}")
            raise typer.Exit(1) from None
        except PendingTimeout as exc:
            err_console.print(f"[yellow]{exc}[/]")
            raise typer.Exit(3) from None

    return wrapper  # type: ignore[return-value]


def connect(url: str, token: str | None, timeout: float = 30.0, retries: int = 3) -> ModelerClient:
    return ModelerClient(url, token, timeout=timeout, retries=retries)


connects = shared_options("client", {"url": (Url, inspect.Parameter.empty), "token": (Token, inspect.Parameter.empty),
                                     "timeout": (Timeout, 30.0), "retries": (Retries, 3)}, connect)
"""Gives a command ``--url``, ``--token``, ``--timeout`` and ``--retries`` (after its own options) and calls it with
``client``, a :class:`ModelerClient` made from them."""


def show_release_warnings(release: ReleaseOut) -> None:
    """Uncertified releases and server warnings in a red panel that cannot be missed."""
    lines = list(release.warnings)
    if not release.certified and not lines:
        lines.append(f"mechanism {release.mechanism!r} is not certified differentially private")
    if lines:
        console.print(
            Panel("\n\n".join(lines), title=f"[bold]release {release.id}: WARNING[/]", border_style="bold red")
        )
