"""The demo's hand-off: what the curator's setup gives the modeler, and nothing else.

The curator's side (``examples/demo_curator.py``) registers the tables, makes the releases and issues one
modeler key scoped to them; it writes this file for the modeler's side (``examples/demo_modeler.py``), which
never holds the admin token. The file carries the service URL, the modeler key (a secret: the file is
created 0600), the release ids per table, and the facts the curator chooses to share for scoring the runs:
the synthetic table's known optimum and σ_y, the unit of its regret (None where the curator does not share
one, as for the diabetes table, whose best value is a patient's outcome). Nothing in it is a raw row.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

HANDOFF_FORMAT = "pobo-demo-handoff/1"


@dataclass
class DemoTable:
    """One table as the modeler sees it: its releases and how the curator lets runs on it be scored."""

    name: str
    optimum: float | None
    signal_std: float | None
    iterations: int
    release_ids: list[int] = field(default_factory=list)


@dataclass
class Handoff:
    url: str
    token: str
    tables: list[DemoTable]

    def write(self, path: Path) -> Path:
        """Writes the file readable by its owner only (it holds the modeler key), replacing an older one."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.unlink(missing_ok=True)  # O_EXCL below: the mode is the one we ask for, never an old file's
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            json.dump({"format": HANDOFF_FORMAT, **asdict(self)}, out, indent=2)
        partial.replace(path)
        return path

    @classmethod
    def read(cls, path: Path) -> Handoff:
        document = json.loads(Path(path).read_text())
        if document.pop("format", None) != HANDOFF_FORMAT:
            raise SystemExit(f"{path} is not a {HANDOFF_FORMAT} file: run examples/demo_curator.py to write one")
        tables = [DemoTable(**table) for table in document.pop("tables")]
        return cls(tables=tables, **document)
