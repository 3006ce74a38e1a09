"""What every ``pobo-curator`` admin command shares: the connection options, the typed client, output (a table on
stdout, or ``--json``), and errors (one sentence on stderr naming the command-line flag to fix, non-zero exit)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, NamedTuple, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from curator_service.admin_client import CuratorAdmin
from curator_service.errors import validation_sentence
from curator_service.settings import ADMIN_TOKEN_FILE, default_data_dir
from shared.api.errors import ApiError
from shared.api.scaling import step_line
from shared.api.schemas import NeighbouringStep
from shared.cli.command_line import shared_options
from shared.cli.terminal import print_table, to_csv

Model = TypeVar("Model", bound=BaseModel)

console = Console()
errors = Console(stderr=True)

DEFAULT_URL = "http://127.0.0.1:8000"
USAGE_ERROR = 2  # the exit code of a bad option, as click uses; a refusal by the server exits with 1

Url = Annotated[str, typer.Option("--url", envvar="POBO_URL", help="The curator service's base URL.")]
Token = Annotated[str, typer.Option("--token", envvar="POBO_ADMIN_TOKEN", help="Admin token or a curator key.")]


class Server(NamedTuple):
    """Where an admin command sends its requests (``--url``, ``POBO_URL``) and the token it sends (``--token``,
    ``POBO_ADMIN_TOKEN``)."""

    url: str
    token: str


connects = shared_options("server", {"url": (Url, DEFAULT_URL), "token": (Token, "")}, Server)
"""Gives an admin command ``--url`` and ``--token`` (after its own options) and calls it with ``server``."""

Json = Annotated[bool, typer.Option("--json", help="Print JSON (a list for listings) instead of a table.")]
Csv = Annotated[bool, typer.Option("--csv", help="Print CSV (a header line, then one line per item) instead of a "
                                   "table.")]


def fail(sentence: str, exit_code: int = 1) -> NoReturn:
    errors.print(f"[red]error:[/red] {sentence}", highlight=False)
    raise typer.Exit(exit_code)


def with_flags(sentence: str, flags: Mapping[str, str]) -> str:
    """The sentence with each quoted request field (``'max_queries'``) named by its flag (``--max-queries``)."""
    for field, flag in sorted(flags.items(), key=lambda item: -len(item[0])):
        sentence = sentence.replace(f"'{field}'", flag)
    return sentence


def where_the_token_is() -> str:
    """Where the admin token comes from, for a command run without one or with a wrong one."""
    return (f"set POBO_ADMIN_TOKEN to the admin token (or pass --token): `pobo-curator serve` started without it wrote "
            f"one to {default_data_dir() / ADMIN_TOKEN_FILE} (<POBO_DATA_DIR>/{ADMIN_TOKEN_FILE} when that is set)")


@contextmanager
def curator(server: Server, flags: Mapping[str, str] | None = None) -> Iterator[CuratorAdmin]:
    """The typed client; the server's refusal ends the command on stderr with its code and sentence, exit 1."""
    if not server.token:
        fail(f"no admin token: {where_the_token_is()}", USAGE_ERROR)
    try:
        yield CuratorAdmin(server.url, server.token)
    except ApiError as exc:
        if exc.status == 401:
            fail(f"({exc.code}) the service refused this token: {where_the_token_is()}")
        fail(f"({exc.code}) {with_flags(exc.detail, flags or {})}")


def build(model: type[Model], values: dict[str, Any], flags: Mapping[str, str]) -> Model:
    """The request body, validated here so that a bad option is named by its flag before anything is sent."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        sentence = (validation_sentence(exc.errors(include_input=False)).replace("invalid request:", "invalid options:")
                    .replace("the request body ", "").replace("fix the field", "fix the option"))
        fail(with_flags(sentence, flags), USAGE_ERROR)


def split(text: str | None) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


def numbers(text: str | None, flag: str) -> list[float]:
    try:
        return [float(value) for value in split(text)]
    except ValueError:
        fail(f"{flag} takes numbers separated by commas, e.g. 0,10.5", USAGE_ERROR)


def print_json(items: BaseModel | Sequence[BaseModel]) -> None:
    """Plain JSON on stdout (no colours, no wrapping), for scripts."""
    data = (items.model_dump(mode="json") if isinstance(items, BaseModel)
            else [item.model_dump(mode="json") for item in items])
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def cell(_column: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return text == "-"
    return True


def show(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str,
         format_cell: Callable[[str, Any], str] = cell, *, as_csv: bool = False, caption: str | None = None) -> None:
    """A table on a wide terminal, ``column: value`` blocks on a narrow one, aligned lines in a pipe or a log, or CSV
    (:mod:`shared.cli.terminal`); columns of numbers align right."""
    cells = [[format_cell(column, row.get(column)) for column in columns] for row in rows]
    if as_csv:
        typer.echo(to_csv(columns, cells), nl=False)
        return
    right = {column for k, column in enumerate(columns) if cells and all(_numeric(line[k]) for line in cells)}
    print_table(console, columns, cells, title=title, caption=caption, right=right)


def listing(items: Sequence[Model], as_json: bool, columns: Sequence[str], title: str,
            format_cell: Callable[[str, Any], str] = cell, *, as_csv: bool = False,
            extra: Callable[[Model], Mapping[str, Any]] | None = None) -> bool:
    """Prints a listing as a JSON list, CSV or a table; returns whether it printed a table (callers then add notes).
    ``extra``: more cells per item, beside its fields."""
    if as_json:
        print_json(items)
        return False
    rows = [{**item.model_dump(mode="json"), **(extra(item) if extra else {})} for item in items]
    show(rows, columns, title, format_cell, as_csv=as_csv)
    return not as_csv


def single(item: BaseModel, as_json: bool, columns: Sequence[str], title: str,
           format_cell: Callable[[str, Any], str] = cell) -> bool:
    """Prints one object as a JSON object or as a one-row table; returns whether it printed a table."""
    if as_json:
        print_json(item)
        return False
    return listing([item], False, columns, title, format_cell)


def show_step(what: str, step: NeighbouringStep | None) -> None:
    """What one neighbouring step hides, in the table's own units: the summary, then one line per feature."""
    if step is None:
        return
    colour = "green" if step.whole_record else "yellow"
    console.print(f"[{colour}]{what}: {step.summary}[/{colour}]")
    for feature in step.features:
        console.print(f"  {step_line(feature)}", highlight=False)
