"""The demo's curator side: register two tables, make releases, issue ONE modeler key, write the hand-off.

Tables, as a curator would register them:

* the paper's synthetic GP problem (f drawn from a GP on a grid; known optimum, regret in σ_y);
* scikit-learn's bundled diabetes data (442 patients × 10 baseline measurements: age, sex, BMI, blood
  pressure, six blood serum values). Objective: find the patient with the highest disease-progression score
  one year after baseline (the dataset's target), e.g. to prioritise follow-up. Features get a public scaling
  from clinical bounds fixed in advance (not from the data), to a box of ℓ2 diameter 1, so one neighbouring
  step of the certified release is a whole patient record.

Releases: certified ``gaussian`` at ε = 1 and 8, and the uncertified ``po-gp-ucb`` at ε = 4 where the operator
enabled it (skipped otherwise). The modeler key is scoped to exactly these releases. The hand-off
(:mod:`demo_handoff`, mode 0600) carries the URL, the release ids, the key and the synthetic table's known
optimum (the diabetes table's would be a patient's outcome: not shared): everything ``examples/demo_modeler.py``
needs, and no admin token.

Run against a deployed curator (what compose's ``curator-setup`` does):
``POBO_ADMIN_TOKEN_FILE=/run/secrets/admin_token python examples/demo_curator.py --url URL --handoff FILE``
(or the token itself in ``POBO_ADMIN_TOKEN``). ``make demo`` (``examples/demo.py``) calls :func:`set_up` on a
local curator instead.
"""

from __future__ import annotations

import argparse
import math
import os
import uuid
from pathlib import Path

from demo_handoff import DemoTable, Handoff
from rich.console import Console

from curator_service.admin_client import CuratorAdmin
from curator_service.settings import read_secret
from shared.api.http_client import ApiError
from shared.datasets.diabetes import load_diabetes
from shared.datasets.synthetic import synthetic_gp_problem

console = Console()

DELTA = 1e-5
RELEASES = (("gaussian", 1.0), ("gaussian", 8.0), ("po-gp-ucb", 4.0))  # (mechanism, ε) per table
MAX_QUERIES = 10_000
RUN_TAG = uuid.uuid4().hex[:6]  # dataset names are unique per server; the demo may run twice on one


def register_synthetic(curator: CuratorAdmin, size: int, iterations: int) -> tuple[int, DemoTable]:
    problem = synthetic_gp_problem(seed=0, size=size)
    dataset = curator.register_table(
        f"synthetic-gp-{RUN_TAG}",
        problem.X,
        ["x1", "x2"],
        evaluator={"kind": "column", "column": "f", "noise_std": math.sqrt(problem.noise_variance)},
        budget=(20.0, 1e-3),
        extra_columns={"f": problem.f},
        # The grid is a public design, so its box is public; diameter 1: one neighbouring step is a whole row.
        scaling={"kind": "bounds", "lower": problem.X.min(axis=0).tolist(), "upper": problem.X.max(axis=0).tolist(),
                 "diameter": 1.0},
    )
    return dataset.id, DemoTable("synthetic-gp", problem.optimum, problem.signal_std, iterations)


def register_diabetes(curator: CuratorAdmin, iterations: int) -> tuple[int, DemoTable]:
    table = load_diabetes()
    dataset = curator.register_table(
        f"diabetes-{RUN_TAG}",
        table.features,
        list(table.feature_names),
        evaluator={"kind": "column", "column": table.objective_name},
        budget=(20.0, 1e-3),
        extra_columns={table.objective_name: table.objective},
        scaling={"kind": "bounds", "lower": list(table.public_lower), "upper": list(table.public_upper),
                 "diameter": 1.0},
    )
    # Its best value is one patient's outcome: not handed over. The modeler learns only the values it queries.
    return dataset.id, DemoTable("diabetes", None, None, iterations)


def make_releases(curator: CuratorAdmin, dataset_id: int, table: DemoTable, seed: int | None) -> None:
    """Appends each release's id to ``table``; the uncertified mechanism is skipped where it is disabled.

    The certified releases are never seeded (a seed would make their noise reproducible and void the
    certificate); ``seed`` only makes the uncertified comparison reproducible."""
    d = curator.dataset(dataset_id).d
    for mechanism, epsilon in RELEASES:
        # Certified: r = d, an orthonormal projection (sensitivity exactly 1).
        dim, release_seed = (d, None) if mechanism == "gaussian" else ("auto", seed)
        try:
            release = curator.create_release(dataset_id, mechanism, epsilon, DELTA, dim, release_seed)
            table.release_ids.append(release.id)
        except ApiError as exc:
            if exc.code != "uncertified_mechanism_disabled":
                raise
            console.print(f"[yellow]skipping {mechanism} on {table.name}: {exc.detail}[/]")


def set_up(curator: CuratorAdmin, *, quick: bool, seed: int | None) -> Handoff:
    """Everything the curator does for the demo; returns the hand-off for the modeler."""
    size, iterations = (30, 12) if quick else (60, 30)
    registered = [register_synthetic(curator, size, iterations), register_diabetes(curator, iterations)]
    for dataset_id, table in registered:
        make_releases(curator, dataset_id, table, seed)
    tables = [table for _, table in registered]
    release_ids = [release_id for table in tables for release_id in table.release_ids]
    key = curator.issue_key(release_ids, max_queries=MAX_QUERIES, name="demo modeler")
    return Handoff(curator.url, key.token, tables)


def admin_token() -> str:
    """POBO_ADMIN_TOKEN, or the content of the file POBO_ADMIN_TOKEN_FILE names (compose's secret)."""
    if token := os.environ.get("POBO_ADMIN_TOKEN"):
        return token
    if path := os.environ.get("POBO_ADMIN_TOKEN_FILE"):
        return read_secret(Path(path), "POBO_ADMIN_TOKEN_FILE")
    raise SystemExit("set POBO_ADMIN_TOKEN_FILE (a file holding the curator's admin token) or POBO_ADMIN_TOKEN")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("POBO_URL"), help="the curator's URL (default: POBO_URL)")
    parser.add_argument("--handoff", type=Path, required=True, help="where to write the hand-off for the modeler")
    parser.add_argument("--quick", action="store_true", help="smaller grid and fewer iterations")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if not args.url:
        raise SystemExit("give --url or POBO_URL: the curator service to set the demo up on")
    # No seed: a deployed curator runs in production mode, which refuses seeds.
    handoff = set_up(CuratorAdmin(args.url, admin_token()), quick=args.quick, seed=None)
    handoff.write(args.handoff)
    releases = sum(len(table.release_ids) for table in handoff.tables)
    console.print(f"{releases} releases and one modeler key scoped to them; hand-off written to {args.handoff}")


if __name__ == "__main__":
    main()
