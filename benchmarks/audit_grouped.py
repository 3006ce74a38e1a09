"""The console's grouped audit page (``audit.list_events(..., grouped=True)``: the total of runs and one page of 50,
newest first) on a temporary SQLite file of N events in runs of 1–49 identical ones, beside the floor: reading the
matching events' (id, actor, action, target) once through the bare sqlite3 cursor, which any exact total of runs
needs. Best of three per filter and page.

    python benchmarks/audit_grouped.py [--events 200000]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from curator_service.persistence.db import Database, migrate
from curator_service.persistence.models import AuditEvent as AuditRow
from curator_service.services import audit

ACTIONS = ("dataset.read", "query.create", "release.inputs", "key.create", "session.open", "ledger.read")
FILTERS = {"everything": audit.EventFilter(), "changes only": audit.EventFilter(changes_only=True),
           "one actor": audit.EventFilter(actor="key:3:k"), "action prefix": audit.EventFilter(action="query.")}


def fill(db: Database, events: int, rng: np.random.Generator) -> None:
    start, rows = datetime(2026, 1, 1, tzinfo=UTC), []
    while len(rows) < events:
        run, actor = int(rng.integers(1, 50)), f"key:{rng.integers(1, 20)}:k"
        action, target = ACTIONS[rng.integers(len(ACTIONS))], f"dataset:{rng.integers(1, 5)}"
        rows += [{"actor": actor, "action": action, "target": target,
                  "created_at": start + timedelta(seconds=len(rows) + i)} for i in range(run)]
    with db.engine.begin() as connection:
        connection.execute(AuditRow.__table__.insert(), rows[:events])


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def grouped_page(db: Database, which: audit.EventFilter, page: int) -> tuple[int, list]:
    with db.read() as session:
        return audit.list_events(session, which, order="newest", offset=(page - 1) * 50, limit=50, grouped=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    path = f"{tempfile.mkdtemp()}/audit.db"
    db = Database(f"sqlite:///{path}")
    migrate(db.engine)
    fill(db, args.events, np.random.default_rng(0))
    raw = sqlite3.connect(path)
    print(f"{args.events:,} audit events, SQLite {sqlite3.sqlite_version}; page = runs total + 50 runs, newest first")
    for name, which in FILTERS.items():
        floor_sql = str(which.select().with_only_columns(AuditRow.id, AuditRow.actor, AuditRow.action, AuditRow.target)
                        .order_by(AuditRow.id.desc()).compile(db.engine, compile_kwargs={"literal_binds": True}))
        floor = best_of(3, lambda sql=floor_sql: sum(1 for _ in raw.execute(sql)))
        for page in (1, 20):
            seconds = best_of(3, lambda which=which, page=page: grouped_page(db, which, page))
            total = grouped_page(db, which, page)[0]
            print(f"{name:13s} page {page:2d}: {seconds * 1000:6.0f} ms, floor {floor * 1000:5.0f} ms "
                  f"(×{seconds / floor:.2f}); {total:,} runs")


if __name__ == "__main__":
    main()
