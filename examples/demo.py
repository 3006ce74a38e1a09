"""The local demo (``make demo``): a curator and a modeler on one machine, compared across releases.

1. Starts ``pobo-curator serve`` on a free loopback port with a temporary data directory (embedded
   SQLite, research mode, uncertified mechanisms enabled so the published PO-GP-UCB transform can be
   compared; never do that in production).
2. Registers two tables, as a curator would:
   * the paper's synthetic GP problem (f drawn from a GP on a grid; known optimum, regret in σ_y);
   * scikit-learn's bundled diabetes data (442 patients × 10 baseline measurements: age, sex, BMI, blood
     pressure, six blood serum values). Objective: find the patient with the highest disease-progression
     score one year after baseline (the dataset's target), e.g. to prioritise follow-up. Features get a
     public scaling from clinical bounds fixed in advance (not from the data), to a box of ℓ2 diameter 1,
     so one neighbouring step of the certified release is a whole patient record.
3. Makes releases (certified ``gaussian`` at two ε, and ``po-gp-ucb``), issues one key, runs the modeler's
   GP-UCB loop over HTTP on each release, prints a comparison table and writes one PNG per table.
4. Stops the server, also on error or Ctrl-C.

Run: ``.venv/bin/python examples/demo.py [--quick] [--out-dir build/demo]``. With ``--url`` it uses a
running curator instead (admin token from ``POBO_ADMIN_TOKEN``; no seeds, so production mode works; the
``po-gp-ucb`` releases are skipped when the operator has not enabled uncertified mechanisms); that is
what the docker-compose ``modeler-demo`` service does.
"""

from __future__ import annotations

import os

# The modeler's and the curator's matrices here are small; one BLAS thread per process avoids
# oversubscribing the cores (it is several times faster on a busy two-core machine).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import uuid  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

from modeler_client.client import ModelerClient  # noqa: E402
from curator_service.admin_client import CuratorAdmin  # noqa: E402
from curator_service.testing import LocalCurator  # noqa: E402
from modeler_client.loop import RemoteGPUCB  # noqa: E402
from modeler_client.plot import plot_runs  # noqa: E402
from modeler_client.runfile import RunRecord, RunSettings  # noqa: E402
from shared.api.http_client import ApiError  # noqa: E402
from shared.datasets.synthetic import synthetic_gp_problem  # noqa: E402

console = Console()

# Public clinical bounds for the diabetes features (age, sex, BMI, blood pressure, s1..s6), chosen from
# what the measurements can be, not from this table.
DIABETES_LOWER = [0, 1, 10, 40, 50, 20, 10, 1, 2, 40]
DIABETES_UPPER = [100, 2, 60, 200, 400, 300, 120, 10, 8, 200]
DELTA = 1e-5
RUN_TAG = uuid.uuid4().hex[:6]  # dataset names are unique per server; the demo may run twice on one


@dataclass
class DemoTable:
    """One registered table and what the demo knows about it (the curator's side)."""

    name: str
    dataset_id: int
    dim: int
    optimum: float
    signal_std: float | None
    iterations: int


def register_synthetic(curator: CuratorAdmin, size: int, iterations: int) -> DemoTable:
    problem = synthetic_gp_problem(seed=0, size=size)
    noise_std = math.sqrt(problem.noise_variance)
    dataset = curator.register_table(
        f"synthetic-gp-{RUN_TAG}",
        problem.X,
        ["x1", "x2"],
        evaluator={"kind": "column", "column": "f", "noise_std": noise_std},
        budget=(20.0, 1e-3),
        extra_columns={"f": problem.f},
        # The grid is a public design, so its box is public; diameter 1: one neighbouring step is a whole row.
        scaling={"kind": "bounds", "lower": problem.X.min(axis=0).tolist(), "upper": problem.X.max(axis=0).tolist(),
                 "diameter": 1.0},
    )
    return DemoTable("synthetic-gp", dataset.id, 2, problem.optimum, problem.signal_std, iterations)


def register_diabetes(curator: CuratorAdmin, iterations: int) -> DemoTable:
    from sklearn.datasets import load_diabetes

    data = load_diabetes(scaled=False)
    columns = list(data.feature_names)
    dataset = curator.register_table(
        f"diabetes-{RUN_TAG}",
        data.data,
        columns,
        evaluator={"kind": "column", "column": "progression"},
        budget=(20.0, 1e-3),
        extra_columns={"progression": data.target},
        scaling={"kind": "bounds", "lower": DIABETES_LOWER, "upper": DIABETES_UPPER, "diameter": 1.0},
    )
    return DemoTable("diabetes", dataset.id, len(columns), float(data.target.max()), None,
                  iterations)


def run_release(client: ModelerClient, release_id: int, table: DemoTable, out_dir: Path, progress: Progress) -> RunRecord:
    settings = RunSettings(iterations=table.iterations, optimum=table.optimum, signal_std=table.signal_std)
    path = out_dir / f"run-release-{release_id}.json"
    path.unlink(missing_ok=True)
    loop = RemoteGPUCB.start(client, release_id, settings, path)
    task = progress.add_task(f"{table.name}: {loop.record.release.mechanism} ε={loop.record.release.epsilon:g}",
                             total=table.iterations)
    loop.on_event = lambda event: progress.update(task, completed=len(event.record.done()))
    return loop.run()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller grid and fewer iterations")
    parser.add_argument("--out-dir", type=Path, default=Path("build/demo"), help="where run files and PNGs go")
    parser.add_argument("--url", help="use this running curator (admin token from POBO_ADMIN_TOKEN)")
    return parser


def make_releases(curator: CuratorAdmin, tables: list[DemoTable], seed: int | None) -> list:
    """(table, release) pairs; the uncertified mechanism is skipped where the operator disabled it.

    The certified releases are never seeded (a seed would make their noise reproducible and void the
    certificate); ``seed`` only makes the uncertified comparison reproducible."""
    releases = []
    for table in tables:
        for mechanism, epsilon in (("gaussian", 1.0), ("gaussian", 8.0), ("po-gp-ucb", 4.0)):
            dim, release_seed = (table.dim, None) if mechanism == "gaussian" else ("auto", seed)
            try:
                releases.append((table, curator.release(table.dataset_id, mechanism, epsilon, DELTA, dim,
                                                        release_seed)))
            except ApiError as exc:
                if exc.code != "uncertified_mechanism_disabled":
                    raise
                console.print(f"[yellow]skipping {mechanism} on {table.name}: {exc.detail}[/]")
    return releases


def main() -> None:
    args = build_parser().parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    size, iterations = (30, 12) if args.quick else (60, 30)

    with ExitStack() as stack:
        if args.url:
            curator = CuratorAdmin(args.url, os.environ["POBO_ADMIN_TOKEN"])
            seed = None
        else:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="pobo-demo-"))
            curator = stack.enter_context(LocalCurator(data_dir))
            seed = 1  # research mode: a reproducible po-gp-ucb comparison
        console.print(f"curator at {curator.url}")
        tables = [register_synthetic(curator, size, iterations), register_diabetes(curator, iterations)]
        releases = make_releases(curator, tables, seed)
        key = curator.issue_key([release.id for _, release in releases], max_queries=10_000, name="demo modeler")
        client = ModelerClient(curator.url, key.token)

        results: list[tuple[DemoTable, RunRecord]] = []
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            for table, release in releases:
                results.append((table, run_release(client, release.id, table, args.out_dir, progress)))

    show_table(results)
    for table in tables:
        records = [record for t, record in results if t is table]
        written = plot_runs(records, args.out_dir / f"demo-{table.name}.png")
        console.print(f"plot: {written}")
    console.print(f"run files: {args.out_dir}/run-release-*.json (try `pobo-modeler plot` on them)")


def show_table(results: list[tuple[DemoTable, RunRecord]]) -> None:
    table = Table(
        title="pobo demo: GP-UCB by a modeler who never sees the rows",
        caption="diabetes: find the patient with the highest one-year disease progression; "
        "synthetic-gp: regret in units of σ_y",
    )
    for column in ("dataset", "mechanism", "certified", "seeded", "ε", "r", "best", "optimum", "regret", "time s"):
        text = column in ("dataset", "mechanism")  # these may wrap in a narrow terminal; the numbers may not
        table.add_column(column, justify="left" if text else "right", no_wrap=not text,
                         overflow="fold" if text else "ellipsis")
    for info, record in results:
        release = record.release
        regret = record.simple_regret()
        table.add_row(
            info.name,
            release.mechanism,
            "[green]yes[/]" if release.certified else "[bold red]NO[/]",
            "[bold red]yes[/]" if release.seeded else "no",
            f"{release.epsilon:g}",
            str(release.dim),
            f"{record.best().value:.4g}",
            f"{info.optimum:.4g}",
            f"{regret[-1]:.3g}" if regret is not None else "—",
            f"{record.elapsed_seconds:.1f}",
        )
    console.print(table)
    console.print(
        "[bold red]po-gp-ucb is NOT differentially private[/]: its release is an affine image of the data "
        "(d + 1 known rows reconstruct every row). 'gaussian' is (ε, δ)-DP for one row moving by ℓ2 ≤ 1 "
        f"after the public scaling, δ = {DELTA:g}. Measurements y are returned as computed."
    )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
