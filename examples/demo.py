"""The local demo (``make demo``): a curator and a modeler on one machine, compared across releases.

1. Starts ``pobo-curator serve`` on a free loopback port with a temporary data directory (embedded SQLite,
   research mode, uncertified mechanisms enabled so the published PO-GP-UCB transform can be compared; never
   do that in production).
2. The curator's side (``examples/demo_curator.py``): registers the synthetic GP table and scikit-learn's
   diabetes table, makes releases (certified ``gaussian`` at two ε, and ``po-gp-ucb``), issues one modeler key
   scoped to them and hands over only the URL, the release ids, that key and the synthetic table's optimum.
3. The modeler's side (``examples/demo_modeler.py``): runs GP-UCB over HTTP on each release with that key,
   prints a comparison table and writes one PNG per table.
4. Stops the server, also on error or Ctrl-C.

Run: ``.venv/bin/python examples/demo.py [--quick] [--out-dir build/demo]``. Against a deployed curator the two
sides run apart, the modeler without the admin token (docker-compose's ``curator-setup`` and ``modeler-demo``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import demo_modeler  # before numpy is loaded: it limits the BLAS threads
import numpy as np
from demo_curator import set_up

from curator_service.testing import LocalCurator


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller grid and fewer iterations")
    parser.add_argument("--out-dir", type=Path, default=Path("build/demo"), help="where run files and PNGs go")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    # Up to 3 minutes to start: the service starts its Dask worker processes first, slow on a busy machine.
    with tempfile.TemporaryDirectory(prefix="pobo-demo-") as data_dir, \
            LocalCurator(data_dir, startup_timeout=180) as curator:
        demo_modeler.console.print(f"curator at {curator.url}")
        handoff = set_up(curator, quick=args.quick, seed=1)  # research mode: a reproducible po-gp-ucb comparison
        demo_modeler.run(handoff, args.out_dir)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
