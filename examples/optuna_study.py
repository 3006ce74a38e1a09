"""Bring your own optimiser: an Optuna study whose trials are rows of a release.

Each trial's parameters are a row's released coordinates z0 … z{r-1}: Optuna's sampler (TPE here) proposes a
point, the nearest row not yet asked is queried by index, and the study records the trial at that row with its
measured value, so Optuna models f over the released geometry. Needs the extra: ``pip install 'pobo[optuna]'``.

    export POBO_URL=http://127.0.0.1:8000 POBO_TOKEN=<your key>
    .venv/bin/python examples/optuna_study.py --release 3 -T 30 [--batch 5] [--out run.json]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import optuna

from modeler_client.adapters.optuna_study import OptunaProposer
from modeler_client.batch import run_batched
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import RunSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("POBO_URL"))
    parser.add_argument("--release", type=int, required=True)
    parser.add_argument("-T", "--iterations", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="the TPE sampler's seed (client side only)")
    parser.add_argument("--out", type=Path, default=Path("optuna_run.json"))
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with ModelerClient(args.url, os.environ["POBO_TOKEN"]) as client:
        release = RemoteRelease(client, args.release)
        settings = RunSettings(iterations=args.iterations, batch=args.batch, optimizer="optuna-tpe")
        session = RemoteSession.open(client, release.id, args.out, settings)  # resumes an existing run file
        proposer = OptunaProposer(release.Z, seed=args.seed)
        record = run_batched(session, proposer)
    best = proposer.study.best_trial
    print(f"{len(proposer.study.trials)} trials for {len(record.queries)} queries; best {record.best().value:.6g} at "
          f"row {best.user_attrs['row']} (z = {[round(v, 3) for v in best.params.values()]}); run file {args.out}")


if __name__ == "__main__":
    main()
