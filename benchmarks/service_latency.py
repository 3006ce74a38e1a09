"""Latency of one-index queries against a real curator (``pobo-curator serve`` on loopback): this tree's query path
beside a baseline commit's, in the same run.

Each request is ``POST /v1/sessions/{id}/queries`` with one index and a fresh ``request_id`` (what
``pobo-modeler run`` sends), over one keep-alive connection pool. The baseline is a ``git worktree`` of
``--baseline-ref`` (default: the commit before the one-transaction query path) under ``build/``; both servers run
with this interpreter (``PYTHONPATH`` picks the tree), each set up by its own tree's admin client, and are measured
in alternating blocks so that the machine's load drifts over both alike. Printed: p50/p99/max of the wall time the
client sees, sequential and with 50 requests in flight (50 client threads), and the ratio of this tree's to the
baseline's (each server is named by its commit, ``+`` when its code differs from it); then sequential
queries on each server while a ``dpareto`` job runs (submitted with the admin token, cancelled afterwards) beside
as many on the same server right before the job starts. SQLite with durable commits (the server's defaults: WAL,
``synchronous=FULL``), and PostgreSQL when ``POBO_TEST_POSTGRES_URL`` is set (each server in a database of its own,
created and dropped here).

A durable commit waits for the disk: the run also prints the p50 of ``fdatasync`` of 4 KiB in the data directory,
a floor under any durable query's latency. The client's own Python time is inside every figure (with 50 threads it
competes with the server for the machine's cores), and httpx's own time is a large share of a fast request's
(``GET /health`` through httpx beside the standard library's ``http.client``: docs/performance.md, "The client"), so
the sequential queries are also measured with a lean client (``http.client``, one keep-alive connection, the JSON
body encoded inside the timing), as HTTP servers are benchmarked, and printed on their own line: the server's latency
with less of the client's. ``GET /health`` (no authentication, no database) is timed in the same blocks on the same
server and clients: the floor of any request there. The target is a sequential query's p50 at most twice that floor's.

Writes benchmarks/results/service_latency.json. ``--quick``: 100 sequential, 100 concurrent, 50 during the job.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness  # noqa: I001  (first: pins BLAS to one thread)
import httpx  # noqa: E402
import numpy as np  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from curator_service.testing import LocalCurator  # noqa: E402

ROWS, FEATURES, IN_FLIGHT, BLOCK = 500, 3, 50, 100
BASELINE_REF = "68ecd302f441523516c9f93f0defa151fca1e0f6"
"""main before the one-transaction query path: auth in its own read transaction, then the ORM write transaction."""
DPARETO = {"label_column": "label", "initial_points": 64, "iterations": 256, "max_epochs": 200}
"""A front big enough to keep the job running through the measurement (it is cancelled afterwards)."""

# Run by each tree's own interpreter path: the dataset, a gaussian release, a modeler key and its open session.
SETUP = """
import json, sys, uuid
import httpx
import numpy as np
from curator_service.admin_client import CuratorAdmin
url, token, rows, features, queries = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
curator = CuratorAdmin(url, token)
X = np.random.default_rng(0).uniform(0.0, 1.0, size=(rows, features))
dataset = curator.register_table(
    f"latency-{uuid.uuid4().hex[:8]}", X, [f"x{j}" for j in range(features)],
    evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
    extra_columns={"y": X.sum(axis=1), "label": (X.sum(axis=1) > features / 2).astype(float)},
    scaling={"kind": "bounds", "lower": [0.0] * features, "upper": [1.0] * features, "diameter": 1.0})
try:
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
except TypeError:  # a baseline commit whose admin client names this call ``release``
    release = curator.release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
key = curator.issue_key([release.id], max_queries=queries)
with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key.token}"}) as http:
    session = http.post(f"/v1/releases/{release.id}/sessions", json={}).raise_for_status().json()
print(json.dumps({"token": key.token, "session": session["id"], "dataset": dataset.id}))
"""


class Server:
    """One tree's ``pobo-curator serve`` with a ready modeler session."""

    def __init__(self, label: str, tree: Path, data_dir: str, env: dict[str, str], queries: int) -> None:
        self.label, self.tree = label, tree
        self.curator = LocalCurator(data_dir, env={**env, "PYTHONPATH": str(tree)}, startup_timeout=300).start()
        done = subprocess.run([sys.executable, "-c", SETUP, self.curator.url, self.curator.admin_token, str(ROWS),
                               str(FEATURES), str(queries)], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            self.curator.stop()
            raise RuntimeError(f"setting up the {label} server failed:\n{done.stderr[-3000:]}")
        ready = json.loads(done.stdout.strip().splitlines()[-1])
        self.token, self.session, self.dataset = ready["token"], ready["session"], ready["dataset"]

    def queries(self, count: int, in_flight: int, lean: bool = False, health: bool = False) -> np.ndarray:
        """Milliseconds of ``count`` one-index queries, ``in_flight`` at a time; ``lean``: through ``http.client``
        (a keep-alive connection per client thread) instead of httpx; ``health``: ``GET /health`` instead (no
        authentication, no database: the floor of any request through the same server and client)."""
        if lean:
            return self._lean_queries(count, in_flight, health)
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
        # a long read timeout: under 50 in flight a loaded server answered some requests after more than httpx's 5 s
        with httpx.Client(base_url=self.curator.url, headers={"Authorization": f"Bearer {self.token}"},
                          limits=limits, timeout=120.0) as http:

            def one(k: int) -> float:
                started = time.perf_counter()
                if health:
                    http.get("/health").raise_for_status()
                else:
                    http.post(f"/v1/sessions/{self.session}/queries",
                              json={"indices": [k % ROWS], "request_id": uuid.uuid4().hex}).raise_for_status()
                return 1000.0 * (time.perf_counter() - started)

            for k in range(min(5, count)):  # warm-up: connections, the server's table cache
                one(k)
            with ThreadPoolExecutor(in_flight) as pool:
                return np.array(list(pool.map(one, range(count))))

    def _lean_queries(self, count: int, in_flight: int, health: bool) -> np.ndarray:
        url, path = httpx.URL(self.curator.url), f"/v1/sessions/{self.session}/queries"
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        local = threading.local()

        def one(k: int) -> float:
            if not hasattr(local, "connection"):
                local.connection = http.client.HTTPConnection(url.host, url.port, timeout=120.0)
            started = time.perf_counter()
            if health:
                local.connection.request("GET", "/health")
            else:
                local.connection.request("POST", path, json.dumps({"indices": [k % ROWS],
                                                                   "request_id": uuid.uuid4().hex}), headers)
            response = local.connection.getresponse()
            body = response.read()
            elapsed = 1000.0 * (time.perf_counter() - started)
            if response.status != 200:
                raise RuntimeError(f"a request answered {response.status}: {body[:200]!r}")
            return elapsed

        for k in range(min(5, count)):  # warm-up: the connection, the server's table cache
            one(k)
        with ThreadPoolExecutor(in_flight) as pool:
            return np.array(list(pool.map(one, range(count))))

    @contextlib.contextmanager
    def dpareto_running(self) -> Iterator[int]:
        """A ``dpareto`` job on the server's dataset, running (yields its id); cancelled on exit."""
        with httpx.Client(base_url=self.curator.url, timeout=60.0,
                          headers={"Authorization": f"Bearer {self.curator.admin_token}"}) as admin:
            job = admin.post("/v1/jobs", json={"kind": "dpareto", "dataset_id": self.dataset, "params": DPARETO})
            job_id = job.raise_for_status().json()["id"]
            deadline = time.monotonic() + 120
            while (status := admin.get(f"/v1/jobs/{job_id}").json()["status"]) != "running":
                if status != "queued" or time.monotonic() > deadline:
                    raise RuntimeError(f"the dpareto job on the {self.label} server is {status}, not running")
                time.sleep(0.2)
            try:
                yield job_id
                if (status := admin.get(f"/v1/jobs/{job_id}").json()["status"]) != "running":
                    print(f"  (the {self.label} server's dpareto job ended ({status}) during the measurement)")
            finally:
                admin.post(f"/v1/jobs/{job_id}/cancel")

    def stop(self) -> None:
        self.curator.stop()


def commit_of(tree: Path) -> str:
    """``tree``'s commit, short, with ``+`` when its code (the packages the server runs) differs from it."""
    def git(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(tree), *arguments], capture_output=True, text=True, check=False)

    changed = git("diff", "--quiet", "HEAD", "--", "curator_service", "shared").returncode != 0
    return git("rev-parse", "--short=7", "HEAD").stdout.strip() + ("+" if changed else "")


def fsync_p50_ms(directory: str, count: int = 200) -> float:
    """p50 of writing 4 KiB and ``fdatasync`` in ``directory`` (what a durable commit waits for at least)."""
    path = Path(directory) / "fsync-probe"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        times = []
        for _ in range(count):
            os.write(fd, b"\0" * 4096)
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append(1000.0 * (time.perf_counter() - started))
        return float(np.median(times))
    finally:
        os.close(fd)
        path.unlink()


def summary(ms: np.ndarray) -> dict:
    p50, p99 = np.percentile(ms, [50, 99])
    return {"requests": len(ms), "p50_ms": float(p50), "p99_ms": float(p99), "max_ms": float(ms.max())}


def alternating(servers: list[Server], count: int, in_flight: int,
                modes: dict[str, tuple[bool, bool]]) -> dict[str, dict[str, np.ndarray]]:
    """``count`` requests of each mode (name: (lean, health), see :meth:`Server.queries`) on every server, in
    alternating blocks (the machine's load drifts over all alike): milliseconds by mode, then server."""
    times: dict[str, dict[str, list[np.ndarray]]] = {mode: {s.label: [] for s in servers} for mode in modes}
    block = BLOCK if in_flight == 1 else max(BLOCK, 2 * in_flight)
    for start in range(0, count, block):
        for server in servers:
            for mode, (lean, health) in modes.items():
                times[mode][server.label].append(server.queries(min(block, count - start), in_flight, lean, health))
    return {mode: {label: np.concatenate(parts) for label, parts in by_server.items()}
            for mode, by_server in times.items()}


SEQUENTIAL_MODES = {"sequential": (False, False), "sequential, lean": (True, False),
                    "/health": (False, True), "/health, lean": (True, True)}
"""The sequential phase: queries and ``GET /health`` through httpx and the lean client, in the same blocks."""


def print_pair(backend: str, mode: str, results: dict[str, dict]) -> None:
    for label, r in results.items():
        print(f"  {backend:10s} {mode:20s} {label:9s} n={r['requests']:5d}  p50 {r['p50_ms']:6.2f} ms  "
              f"p99 {r['p99_ms']:7.2f} ms  max {r['max_ms']:7.2f} ms")
    if len(results) == 2:
        (base_label, old), (label, new) = results.items()
        print(f"  {backend:10s} {mode:20s} {label}/{base_label}  p50 ×{new['p50_ms'] / old['p50_ms']:.2f}  "
              f"p99 ×{new['p99_ms'] / old['p99_ms']:.2f}")


@contextlib.contextmanager
def postgres_databases(url: str, names: list[str]) -> Iterator[list[str]]:
    """A fresh database per server on ``url``'s PostgreSQL server (each tree migrates its own), dropped on exit."""
    import psycopg

    base = make_url(url)
    admin_dsn = base.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    databases = [f"pobo_latency_{name}_{uuid.uuid4().hex[:6]}" for name in names]
    with psycopg.connect(admin_dsn, autocommit=True) as connection:
        for database in databases:
            connection.execute(f'CREATE DATABASE "{database}"')
        try:
            yield [base.set(database=d).render_as_string(hide_password=False) for d in databases]
        finally:
            for database in databases:
                connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def measure(backend: str, trees: dict[str, Path], envs: list[dict[str, str]], args: argparse.Namespace) -> dict:
    with contextlib.ExitStack() as stack:
        data_dirs = [stack.enter_context(tempfile.TemporaryDirectory()) for _ in trees]
        # the key's query budget: the sequential queries through httpx and the lean client, the warm-up of each block
        queries = (2 * args.sequential + args.concurrent + 2 * args.during_job + 10 * (args.sequential // BLOCK + 1)
                   + 100)
        servers = []
        for (label, tree), data_dir, env in zip(trees.items(), data_dirs, envs, strict=True):
            servers.append(Server(label, tree, data_dir, env, queries))
            stack.callback(servers[-1].stop)
        result: dict = {}
        phases = ((args.sequential, 1, SEQUENTIAL_MODES), (args.concurrent, IN_FLIGHT, {f"{IN_FLIGHT} in flight":
                                                                                       (False, False)}))
        for count, in_flight, modes in phases:
            if not count:
                continue
            for mode, by_server in alternating(servers, count, in_flight, modes).items():
                result[mode] = {label: summary(ms) for label, ms in by_server.items()}
                print_pair(backend, mode, result[mode])
        if args.sequential:
            # The target: a query's p50 at most twice the floor of any request on the same server and client.
            result["query/health p50"] = {}
            for server in servers:
                ratios = result["query/health p50"][server.label] = {
                    client: result[f"sequential{suffix}"][server.label]["p50_ms"]
                    / result[f"/health{suffix}"][server.label]["p50_ms"]
                    for client, suffix in (("httpx", ""), ("lean", ", lean"))}
                print(f"  {backend:10s} {'query/health p50':20s} {server.label:9s} httpx ×{ratios['httpx']:.2f}  "
                      f"lean ×{ratios['lean']:.2f}  (target ≤ ×2)")
        if args.during_job:
            # The idle figure the job's is set against is taken on the same server right before the job starts: the
            # machine's load drifts between the sequential phase and this one (a run at load 1-2 gave ×0.67 against
            # the sequential phase's p50 for a path that no job can speed up).
            result["sequential before dpareto"], result["sequential during dpareto"] = {}, {}
            for server in servers:
                idle = result["sequential before dpareto"][server.label] = summary(server.queries(args.during_job, 1))
                with server.dpareto_running():
                    busy = result["sequential during dpareto"][server.label] = summary(server.queries(args.during_job,
                                                                                                     1))
                print(f"  {backend:10s} {'during dpareto':20s} {server.label:9s} n={busy['requests']:5d}  "
                      f"p50 {busy['p50_ms']:6.2f} ms  p99 {busy['p99_ms']:7.2f} ms  (just before it p50 "
                      f"{idle['p50_ms']:.2f} ms; busy/idle ×{busy['p50_ms'] / idle['p50_ms']:.2f})")
        if backend == "SQLite":
            result["fdatasync_p50_ms"] = fsync_p50_ms(data_dirs[-1])
            print(f"  {backend:10s} fdatasync of 4 KiB in the data directory: p50 {result['fdatasync_p50_ms']:.2f} ms "
                  "(the floor under a durable commit)")
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--during-job", type=int, default=300,
                        help="sequential queries on each server while a dpareto job runs (0: skip)")
    parser.add_argument("--baseline-ref", default=BASELINE_REF,
                        help="the commit whose query path is measured beside this tree's ('' : this tree only)")
    harness.add_quick(parser, "100 sequential, 100 concurrent, 50 during the job")
    args = parser.parse_args()
    if args.quick:
        args.sequential, args.concurrent, args.during_job = 100, 100, min(args.during_job, 50)
    trees = {commit_of(tree): tree for tree in ([harness.worktree(args.baseline_ref)] if args.baseline_ref else [])
             + [harness.REPOSITORY]}
    if args.baseline_ref and len(trees) == 1:
        parser.error(f"--baseline-ref {args.baseline_ref} is this tree's own commit; name another, or '' for none")
    print(f"one-index queries against pobo-curator serve on loopback (load average {os.getloadavg()[0]:.1f}; "
          f"the servers named by their commits: {', '.join(trees)}):")
    results = {"load_average_1min": os.getloadavg()[0], "baseline_ref": args.baseline_ref,
               "sqlite": measure("SQLite", trees, [{} for _ in trees], args)}
    postgres = os.environ.get("POBO_TEST_POSTGRES_URL")
    if postgres:
        with postgres_databases(postgres, list(trees)) as urls:
            results["postgresql"] = measure("PostgreSQL", trees, [{"POBO_DATABASE_URL": u} for u in urls], args)
    results["load_average_1min_after"] = os.getloadavg()[0]
    print(f"wrote {harness.write_json('service_latency', results, quick=args.quick)}")


if __name__ == "__main__":
    main()
