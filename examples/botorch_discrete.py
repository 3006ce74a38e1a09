"""Bring your own optimiser: BoTorch chooses the rows, pobo carries the index-only queries.

BoTorch's q-batch UCB (or EI) is maximised over the released rows only (``optimize_acqf_discrete``), q rows per
request to the curator; the run file makes it resumable and never charged twice, as ``pobo-modeler run``.
Needs the extra: ``pip install 'pobo[botorch]'``.

    export POBO_URL=http://127.0.0.1:8000 POBO_TOKEN=<your key>
    .venv/bin/python examples/botorch_discrete.py --release 3 -T 20 --batch 5 [--acquisition nei] [--out run.json]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from modeler_client.adapters.botorch_discrete import BoTorchProposer
from modeler_client.batch import run_batched
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import RunSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("POBO_URL"))
    parser.add_argument("--release", type=int, required=True)
    parser.add_argument("-T", "--iterations", type=int, default=20)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--acquisition", choices=("ucb", "ei", "nei"), default="ucb")
    parser.add_argument("--out", type=Path, default=Path("botorch_run.json"))
    args = parser.parse_args()
    with ModelerClient(args.url, os.environ["POBO_TOKEN"]) as client:
        release = RemoteRelease(client, args.release)
        print(release.describe())
        settings = RunSettings(iterations=args.iterations, batch=args.batch, optimizer=f"botorch-{args.acquisition}")
        session = RemoteSession.open(client, release.id, args.out, settings)  # resumes an existing run file
        record = run_batched(session, BoTorchProposer(release.Z, acquisition=args.acquisition))
    best = record.best()
    print(f"best {best.value:.6g} at row {best.index} after {len(record.done())} measurements; run file {args.out}")


if __name__ == "__main__":
    main()
