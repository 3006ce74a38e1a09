"""The demo's modeler side: Bayesian optimization (the modeler's default, log expected improvement) over HTTP on
every release in the hand-off, a comparison table and PNGs.

It holds only what the curator's setup handed over (``examples/demo_curator.py`` writes the file): the URL,
the release ids, a modeler key scoped to them and the optima the curator shares for scoring. No admin token:
it cannot register, release or read a raw row. ``POBO_URL`` / ``POBO_TOKEN`` (or ``--url``) override the
hand-off's URL and key, e.g. when the modeler reaches the curator by another name.

Run: ``python examples/demo_modeler.py --handoff FILE [--url URL] [--out-dir build/demo]``.
"""

from __future__ import annotations

import os

# The modeler's matrices here are small; one BLAS thread per process avoids oversubscribing the cores (it is
# several times faster on a busy two-core machine).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
from pathlib import Path

import numpy as np
from demo_handoff import DemoTable, Handoff
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.plot import plot_runs
from modeler_client.runfile import RunRecord, RunSettings
from shared.cli.terminal import print_table

console = Console()


def run_release(client: ModelerClient, release_id: int, table: DemoTable, out_dir: Path,
                progress: Progress) -> RunRecord:
    settings = RunSettings(iterations=table.iterations, optimum=table.optimum, signal_std=table.signal_std)
    path = out_dir / f"run-release-{release_id}.json"
    path.unlink(missing_ok=True)
    loop = RemoteGPUCB.start(client, release_id, settings, path)
    task = progress.add_task(f"{table.name}: {loop.record.release.mechanism} ε={loop.record.release.epsilon:g}",
                             total=table.iterations)
    loop.on_event = lambda event: progress.update(task, completed=len(event.record.done()))
    return loop.run()


def run(handoff: Handoff, out_dir: Path) -> list[tuple[DemoTable, RunRecord]]:
    """One GP-UCB run per release, then the table and one PNG per table; returns the runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    console.print(f"modeler: curator at {handoff.url}, {sum(len(t.release_ids) for t in handoff.tables)} releases")
    results: list[tuple[DemoTable, RunRecord]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with ModelerClient(handoff.url, handoff.token) as client, Progress(*columns, console=console) as progress:
        for table in handoff.tables:
            results.extend((table, run_release(client, release_id, table, out_dir, progress))
                           for release_id in table.release_ids)
    show_table(results)
    for table in handoff.tables:
        records = [record for t, record in results if t is table]
        console.print(f"plot: {plot_runs(records, out_dir / f'demo-{table.name}.png')}")
    console.print(f"run files: {out_dir}/run-release-*.json (try `pobo-modeler plot` on them)")
    return results


def show_table(results: list[tuple[DemoTable, RunRecord]]) -> None:
    """The comparison: a boxed table on a wide terminal, plain aligned lines when piped or logged."""
    columns = ["dataset", "mechanism", "certified", "seeded", "ε", "r", "best", "optimum", "regret", "time s"]
    rows = []
    for info, record in results:
        release = record.release
        regret = record.simple_regret()
        rows.append([
            info.name,
            release.mechanism,
            "[green]yes[/]" if release.certified else "[bold red]NO[/]",
            "[bold red]yes[/]" if release.seeded else "no",
            f"{release.epsilon:g}",
            str(release.dim),
            f"{record.best().value:.4g}",
            f"{info.optimum:.4g}" if info.optimum is not None else "—",
            f"{regret[-1]:.3g}" if regret is not None else "—",
            f"{record.elapsed_seconds:.1f}",
        ])
    print_table(console, columns, rows,
                title="pobo demo: Bayesian optimization (log expected improvement), the rows never seen",
                caption="diabetes: find the patient with the highest one-year disease progression; "
                        "synthetic-gp: regret in units of σ_y",
                right={"ε", "r", "best", "optimum", "regret", "time s"})
    deltas = ", ".join(sorted({f"{record.release.delta:g}" for _, record in results}))
    console.print(
        "[bold red]po-gp-ucb is NOT differentially private[/]: its release is an affine image of the data "
        "(d + 1 known rows reconstruct every row). 'gaussian' is (ε, δ)-DP for one row moving by ℓ2 ≤ 1 "
        f"after the public scaling, δ = {deltas}. Measurements y are returned as computed."
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handoff", type=Path, required=True, help="the file examples/demo_curator.py wrote")
    parser.add_argument("--url", default=os.environ.get("POBO_URL"),
                        help="the curator's URL (default: POBO_URL, else the hand-off's)")
    parser.add_argument("--out-dir", type=Path, default=Path("build/demo"), help="where run files and PNGs go")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    handoff = Handoff.read(args.handoff)
    handoff.url = args.url or handoff.url
    handoff.token = os.environ.get("POBO_TOKEN") or handoff.token
    run(handoff, args.out_dir)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
