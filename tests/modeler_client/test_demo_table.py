"""``make demo``'s comparison table piped to a file or a log: one plain line per run, every column at least as wide
as its header (no "syn/the/tic" columns), on an 80-column console that is not a terminal."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from modeler_client.runfile import QueryRecord, RunRecord, RunSettings
from shared.api.schemas import ReleaseOut
from tests.conftest import aligned_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import demo_modeler
from demo_handoff import DemoTable


def run_of(release_id: int, mechanism: str, epsilon: float, best: float, optimum: float | None = 3.0) -> RunRecord:
    release = ReleaseOut(id=release_id, dataset_id=1, mechanism=mechanism, certified=mechanism == "gaussian",
                         seeded=mechanism != "gaussian", epsilon=epsilon, delta=1e-5, n=500, dim=4,
                         created_at=datetime.now(UTC))
    record = RunRecord(run_id="r", url="http://x", release_id=release_id, session_id=release_id, release=release,
                       settings=RunSettings(iterations=2, optimum=optimum, signal_std=1.5), elapsed_seconds=12.25)
    record.queries = [QueryRecord(iteration=1, index=5, query_id=1, status="done", value=best)]
    return record


def test_the_demo_table_piped_is_plain_aligned_and_no_column_is_narrower_than_its_header(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(demo_modeler, "console", Console(file=out, width=80))
    synthetic = DemoTable(name="synthetic-gp", optimum=3.0, signal_std=1.5, iterations=2)
    diabetes = DemoTable(name="diabetes", optimum=None, signal_std=None, iterations=2)
    demo_modeler.show_table([(synthetic, run_of(1, "gaussian", 1.0, 2.5)),
                             (synthetic, run_of(2, "po-gp-ucb", 2.0, 2.9)),
                             (diabetes, run_of(3, "gaussian", 4.0, 310.0, optimum=None))])
    text = out.getvalue()
    rows = aligned_table(text, ["dataset", "mechanism", "certified", "seeded", "ε", "r", "best", "optimum", "regret",
                                "time s"])
    assert rows == [["synthetic-gp", "gaussian", "yes", "no", "1", "4", "2.5", "3", "0.333", "12.2"],
                    ["synthetic-gp", "po-gp-ucb", "NO", "yes", "2", "4", "2.9", "3", "0.0667", "12.2"],
                    ["diabetes", "gaussian", "yes", "no", "4", "4", "310", "—", "—", "12.2"]]
    assert "[green]" not in text and "\x1b[" not in text  # no markup, no colour codes in a log
