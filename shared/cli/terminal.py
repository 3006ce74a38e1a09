"""Tables that stay readable wherever they are printed: a boxed Rich table on a terminal wide enough for it, one
``column: value`` block per row on a narrower terminal, and plain aligned text (one line per row, no wrapping, no
colour) when the output goes to a file, a pipe or a log; or CSV for scripts. Both command lines and the demo print
through it, so a column is never squeezed narrower than its header."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

GAP = "  "


def plain(cell: str) -> str:
    """A cell's text without Rich markup (``[green]yes[/]`` → ``yes``)."""
    return Text.from_markup(cell).plain


def aligned(columns: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[str] = ()) -> list[str]:
    """The header and one line per row, each column as wide as its widest cell or header (markup removed);
    ``right``: the columns aligned right (numbers)."""
    cells = [list(columns)] + [[plain(cell) for cell in row] for row in rows]
    widths = [max(len(line[k]) for line in cells) for k in range(len(columns))]
    return [GAP.join(cell.rjust(width) if column in right else cell.ljust(width)
                     for cell, width, column in zip(line, widths, columns)).rstrip()
            for line in cells]


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The header and the rows as CSV (markup removed)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[plain(cell) for cell in row] for row in rows])
    return out.getvalue()


def print_table(console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None,
                caption: str | None = None, right: Collection[str] = ()) -> None:
    """Prints ``rows`` (cells as text, Rich markup allowed) under ``columns`` in the form that suits ``console``."""
    if console.is_terminal:
        table = Table(title=title, caption=caption)
        for column in columns:
            table.add_column(column, justify="right" if column in right else "left")
        for row in rows:
            table.add_row(*row)
        if console.measure(table).maximum <= console.width:
            console.print(table)
            return
        _records(console, columns, rows, title, caption)
        return
    lines = ([title] if title else []) + aligned(columns, rows, right) + ([caption] if caption else [])
    for line in lines:
        console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)


def _records(console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
             caption: str | None) -> None:
    """A narrow terminal: each row as a block of ``column: value`` lines, the names aligned."""
    width = max(len(column) for column in columns)
    if title:
        console.print(Text(title, style="bold"))
    for row in rows:
        console.print()
        for column, cell in zip(columns, row):
            console.print(f"{column.rjust(width)}: {cell}", highlight=False)
    if caption:
        console.print()
        console.print(caption, highlight=False)
