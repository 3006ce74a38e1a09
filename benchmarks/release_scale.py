"""A large certified release through the API: wall time with 1 and 2 local job workers, the CLI
following it to the end, and the API process's memory, which stays flat because the table never loads there.

A generated n × d table (default 10⁶ × 20, uniform in [0, 1]^d, bounds scaling) is registered once by server-side
path (``POBO_IMPORT_ROOT``); the server is then restarted (the registration parsed the CSV in the API process)
and, for each worker count, ``pobo-curator release create`` makes a certified ``gaussian`` release at r = d
(identity projection: n·d samples of OpenDP's exact sampler, drawn in row chunks across the workers) and follows
its job with a progress bar (a small ``dp-mean`` job first starts the cluster). Printed per worker count: the
release job's time (claimed → stored) and the CLI's wall time, µs per noise sample (job time, and × workers: CPU),
the speed-up over one worker, and the API process's resident memory (VmRSS, sampled every 0.1 s) before the
release and at its peak during it.

    .venv/bin/python benchmarks/release_scale.py                  # 10⁶ × 20 (minutes)
    .venv/bin/python benchmarks/release_scale.py --n 50000 --d 5  # a smaller run
    .venv/bin/python benchmarks/release_scale.py --workers 1 --data /tmp/pobo-release-scale/data_…  # add a count

Writes benchmarks/results/release_scale.json (``release_scale_<n>x<d>.json`` for other sizes). The CSV is
generated once under ``--work`` (default /tmp/pobo-release-scale) and never committed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import harness  # first: pins BLAS to one thread
import numpy as np

from curator_service.testing import LocalCurator, curator_command
from shared.api.schemas import API_PREFIX, DatasetFromPath, DatasetOut, JobOut

EPSILON, DELTA, BUDGET = 1.0, 1e-6, (10.0, 1e-3)
ROWS_PER_WRITE = 50_000


def write_table(path: Path, n: int, d: int) -> None:
    """x0…x{d−1} uniform in [0, 1] and y = their sum, six decimals, written in blocks (seed 0)."""
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".partial")
    with open(tmp, "w") as out:
        out.write(",".join([f"x{j}" for j in range(d)] + ["y"]) + "\n")
        for start in range(0, n, ROWS_PER_WRITE):
            X = rng.uniform(0.0, 1.0, size=(min(ROWS_PER_WRITE, n - start), d))
            np.savetxt(out, np.column_stack([X, X.sum(axis=1)]), fmt="%.6f", delimiter=",")
    tmp.rename(path)


def rss_mb(pid: int) -> float:
    """The process's resident memory now (VmRSS), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for process {pid}")


class PeakRss(threading.Thread):
    """Samples a process's VmRSS every ``period`` seconds until stopped; ``peak`` is the largest sample."""

    def __init__(self, pid: int, period: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.period, self.peak = pid, period, rss_mb(pid)
        self._finished = threading.Event()

    def run(self) -> None:
        while not self._finished.wait(self.period):
            self.peak = max(self.peak, rss_mb(self.pid))

    def stop(self) -> float:
        self._finished.set()
        self.join()
        return self.peak


def register(curator: LocalCurator, csv: Path, d: int) -> int:
    features = [f"x{j}" for j in range(d)]
    spec = DatasetFromPath.model_validate({
        "name": csv.stem, "path": str(csv), "feature_columns": features,
        "evaluator": {"kind": "column", "column": "y"}, "budget": {"epsilon": BUDGET[0], "delta": BUDGET[1]},
        "scaling": {"kind": "bounds", "lower": [0.0] * d, "upper": [1.0] * d, "diameter": 1.0},
    })
    with curator.admin(timeout=3600.0) as api:  # parsing 10⁶ rows takes longer than a request's default 30 s
        return api.post(f"{API_PREFIX}/datasets", spec, model=DatasetOut).id


def cli_release(curator: LocalCurator, dataset_id: int, log: Path) -> tuple[dict, float]:
    """``pobo-curator release create`` to the end (its progress bar goes to ``log``): the release and the wall time."""
    command = [*curator_command(), "release", "create", "--dataset", str(dataset_id), "--epsilon", str(EPSILON),
               "--delta", str(DELTA), "--json", "--url", curator.url]
    env = {**os.environ, "POBO_ADMIN_TOKEN": curator.admin_token, "COLUMNS": "100"}
    started = time.perf_counter()
    with open(log, "w") as progress:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=progress, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the CLI failed ({done.returncode}): {log.read_text()[-2000:]}")
    return json.loads(done.stdout), seconds


def warm_up(curator: LocalCurator, dataset_id: int) -> None:
    """A small ``dp-mean`` job (ε = 0.001) first: the embedded cluster starts with the first job, and its start-up
    (worker processes, imports) is not the release's cost."""
    with curator.admin() as api:
        job = api.post(f"{API_PREFIX}/jobs", {"kind": "dp-mean", "dataset_id": dataset_id,
                                              "params": {"column": "y", "lower": 0.0, "upper": 1.0, "epsilon": 1e-3}},
                       model=JobOut)
    curator.follow_job(job.id)


def measure(curator: LocalCurator, dataset_id: int, workers: int, n: int, d: int, log: Path) -> dict:
    """One certified release by the CLI with the API process's memory sampled before and during it."""
    pid = curator.process.pid
    warm_up(curator, dataset_id)
    time.sleep(2.0)  # the service settles
    idle = rss_mb(pid)
    sampler = PeakRss(pid)
    sampler.start()
    load_before = os.getloadavg()[0]
    release, seconds = cli_release(curator, dataset_id, log)
    peak = sampler.stop()
    assert release["certified"] and release["n"] == n and release["dim"] == d, release
    job = max((j for j in curator.jobs() if j.kind == "release"), key=lambda j: j.id)
    samples, job_seconds = n * d, (job.finished_at - job.started_at).total_seconds()
    return {"workers": workers, "cli_seconds": seconds, "job_seconds": job_seconds, "samples": samples,
            "us_per_sample": 1e6 * job_seconds / samples, "cpu_us_per_sample": 1e6 * job_seconds * workers / samples,
            "job_id": job.id, "release_id": release["id"], "api_rss_idle_mb": idle, "api_rss_peak_mb": peak,
            "table_mb": n * d * 8 / 2**20, "load_average_1min": [load_before, os.getloadavg()[0]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="rows (default 10⁶)")
    parser.add_argument("--d", type=int, default=20, help="features, released at r = d (default 20)")
    parser.add_argument("--workers", default="1,2", help="job worker counts, one server start each (default 1,2)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pobo-release-scale"),
                        help="the import root holding the generated CSV, and the servers' data")
    parser.add_argument("--data", type=Path, default=None,
                        help="a data directory of an earlier run whose table is registered already (skips the "
                             "registration); its worker counts' results are kept in the JSON, the new ones replace")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    os.environ.pop("POBO_DASK_SCHEDULER", None)  # each server starts its own local cluster of POBO_JOB_WORKERS
    root = args.work / "import"
    root.mkdir(parents=True, exist_ok=True)
    csv = root / f"uniform_{args.n}x{args.d}.csv"
    if not csv.exists():
        started = time.perf_counter()
        write_table(csv, args.n, args.d)
        print(f"wrote {csv} ({csv.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.0f} s")
    data = args.data or args.work / f"data_{args.n}x{args.d}_{time.strftime('%Y%m%dT%H%M%S')}"
    env = {"POBO_IMPORT_ROOT": str(root), "POBO_MODE": "production", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "false",
           "POBO_MAX_UPLOAD_BYTES": str(max(csv.stat().st_size + 1, 200 * 1024 * 1024))}
    with LocalCurator(data, env={**env, "POBO_JOB_WORKERS": str(counts[0])}, startup_timeout=600.0) as curator:
        started = time.perf_counter()
        known = [dataset.id for dataset in curator.datasets() if dataset.name == csv.stem]
        dataset_id = known[0] if known else register(curator, csv, args.d)
        print(f"dataset {dataset_id} registered by path ({time.perf_counter() - started:.0f} s)")
    name = "release_scale" if (args.n, args.d) == (1_000_000, 20) else f"release_scale_{args.n}x{args.d}"
    payload = {"n": args.n, "d": args.d, "epsilon": EPSILON, "delta": DELTA, "cores": os.cpu_count(), "runs": []}
    earlier = harness.result_path(name, "json")
    if args.data is not None and earlier.exists():
        payload["runs"] = [run for run in json.loads(earlier.read_text())["runs"] if run["workers"] not in counts]
    runs = payload["runs"]
    for workers in counts:
        curator = LocalCurator(data, env={**env, "POBO_JOB_WORKERS": str(workers)}, startup_timeout=600.0)
        with curator:
            runs.append(measure(curator, dataset_id, workers, args.n, args.d, data / f"cli_{workers}.log"))
        run = runs[-1]
        harness.write_json(name, payload)  # after each run: a long benchmark keeps what it measured
        print(f"{workers} worker(s): job {run['job_seconds']:.1f} s (CLI {run['cli_seconds']:.1f} s), "
              f"{run['us_per_sample']:.2f} µs/sample ({run['cpu_us_per_sample']:.2f} CPU µs), API RSS "
              f"{run['api_rss_idle_mb']:.0f} MB idle → {run['api_rss_peak_mb']:.0f} MB peak (the table: "
              f"{run['table_mb']:.0f} MB); load average {run['load_average_1min'][0]:.1f} → "
              f"{run['load_average_1min'][1]:.1f} on {os.cpu_count()} cores")
    runs.sort(key=lambda run: run["workers"])
    one = next((run["job_seconds"] for run in runs if run["workers"] == 1), None)
    for run in runs:
        run["speed_up"] = None if one is None else one / run["job_seconds"]
    print(f"\n{'workers':>7} {'job s':>8} {'CLI s':>8} {'µs/sample':>10} {'CPU µs':>8} {'speed-up':>8} "
          f"{'API RSS MB':>16}")
    for run in runs:
        speed_up = "-" if run["speed_up"] is None else f"{run['speed_up']:.2f}"
        print(f"{run['workers']:>7} {run['job_seconds']:>8.1f} {run['cli_seconds']:>8.1f} "
              f"{run['us_per_sample']:>10.2f} {run['cpu_us_per_sample']:>8.2f} {speed_up:>8} "
              f"{run['api_rss_idle_mb']:>7.0f} → {run['api_rss_peak_mb']:<6.0f}")
    print(f"wrote {harness.write_json(name, payload)}")


if __name__ == "__main__":
    main()
