"""The curator's share of a modeler's run: how much of one ``pobo-modeler run`` iteration is the query's round trip,
at 0, 10 and 50 ms of network round-trip time (RTT).

A real curator (``pobo-curator serve``, this tree, SQLite with durable commits) serves a release; the modeler's own
loop (:class:`modeler_client.loop.RemoteGPUCB`, what ``pobo-modeler run`` drives, with its default settings unless
``--hyperparameters fixed``) runs T iterations against it. Each iteration is the GP step (the surrogate's update and
refit, the next pick), the run file saved, and one ``POST /v1/sessions/{id}/queries`` of one index. Timed: every
query's round trip as the modeler client sees it (``ModelerClient.query``) and every iteration (between consecutive
answers). The curator's share is the round trip's part of the iteration, p50 over the run's iterations and in total.

The RTT is made by a TCP proxy run here (no root, no netem): every chunk it forwards, in either direction, leaves
RTT/2 after it arrived, so a request and its answer take one RTT more than without it, and chunks in flight are not
held back by each other. At 0 ms the modeler talks to the curator directly. ``GET /health`` (no authentication, no
database) is timed through the same path: the network's and HTTP stack's floor, so the round trip splits into the
network (the RTT), the HTTP floor beyond it, and the curator's own work (the query's round trip less the floor).

Writes ``benchmarks/results/service_latency_<date>_<commit>.json`` (``_2``, ``_3``, … when that name exists; never
overwritten). ``--quick``: T = 8, n = 300, RTT 0 and 10 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import queue
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import harness
import httpx
import numpy as np

from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from modeler_client.loop import LoopEvent, RemoteGPUCB
from modeler_client.remote import RemoteSession
from modeler_client.runfile import RunSettings

TARGET_SHARE = 0.10
"""The curator's share of an iteration aimed at, at 10 ms RTT."""
TARGET_RTT_MS = 10.0
HEALTH_PROBES = 30


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that forwards every chunk, each way, ``one_way_ms`` after it arrived."""

    def __init__(self, upstream_port: int, one_way_ms: float) -> None:
        self.upstream_port, self.delay = upstream_port, one_way_ms / 1000.0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            for end in (client, upstream):
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, upstream]
            self._pipe(client, upstream)
            self._pipe(upstream, client)

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        """Two threads: one reads chunks and stamps their arrival, one sends each when its delay is over."""
        chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

        def read() -> None:
            while True:
                try:
                    chunk = source.recv(65536)
                except OSError:
                    chunk = b""
                chunks.put((time.perf_counter() + self.delay, chunk))
                if not chunk:
                    return

        def send() -> None:
            while True:
                due, chunk = chunks.get()
                if (wait := due - time.perf_counter()) > 0:
                    time.sleep(wait)
                try:
                    if not chunk:
                        target.shutdown(socket.SHUT_WR)
                        return
                    target.sendall(chunk)
                except OSError:
                    return

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=send, daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for end in self.sockets:
            with contextlib.suppress(OSError):
                end.close()


@contextlib.contextmanager
def reached_through(curator: LocalCurator, rtt_ms: float) -> Iterator[str]:
    """The URL at which the curator is ``rtt_ms`` away (its own at 0)."""
    if rtt_ms == 0:
        yield curator.url
        return
    proxy = DelayProxy(curator.port, rtt_ms / 2)
    try:
        yield f"http://127.0.0.1:{proxy.port}"
    finally:
        proxy.close()


def setup(curator: LocalCurator, rows: int, features: int, queries: int) -> tuple[int, str]:
    """A dataset of ``rows`` rows (a smooth y with one peak), its gaussian release and a modeler key."""
    X = np.random.default_rng(0).uniform(0.0, 1.0, size=(rows, features))
    y = -np.sum((X - 0.3) ** 2, axis=1)
    dataset = curator.register_table(
        "latency", X, [f"x{j}" for j in range(features)], evaluator={"kind": "column", "column": "y"},
        budget=(10.0, 1e-3), extra_columns={"y": y},
        scaling={"kind": "bounds", "lower": [0.0] * features, "upper": [1.0] * features, "diameter": 1.0})
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
    return release.id, curator.issue_key([release.id], max_queries=queries).token


def health_ms(url: str, count: int = HEALTH_PROBES) -> np.ndarray:
    """``GET /health`` round trips on one keep-alive connection, as the modeler client makes them."""
    with httpx.Client(base_url=url) as http:
        http.get("/health").raise_for_status()
        times = []
        for _ in range(count):
            start = time.perf_counter()
            http.get("/health").raise_for_status()
            times.append(time.perf_counter() - start)
    return 1000 * np.array(times)


def one_run(url: str, token: str, release_id: int, settings: RunSettings, work: Path) -> dict:
    """A modeler's run of ``settings.iterations`` queries at ``url``: per iteration, its wall time and its query's
    round trip (ms)."""
    client = ModelerClient(url, token)
    round_trips: list[float] = []
    query = client.query

    def timed_query(*args, **kwargs):
        start = time.perf_counter()
        try:
            return query(*args, **kwargs)
        finally:
            round_trips.append(1000 * (time.perf_counter() - start))

    client.query = timed_query  # type: ignore[method-assign]
    answered: list[float] = []

    def on_event(event: LoopEvent) -> None:
        if event.kind in ("started", "answer"):
            answered.append(time.perf_counter())

    path = work / f"run-{time.monotonic_ns()}.json"
    RemoteSession.start(client, release_id, path, settings)
    runner = RemoteGPUCB.resume(client, path, on_event=on_event)
    runner.run()
    iterations = 1000 * np.diff(answered)
    # "started" comes before the loop builds its surrogate (and fetches the release's inputs): the first interval is
    # that set-up plus the first iteration, so it is left out.
    return {"iteration_ms": iterations[1:], "round_trip_ms": np.array(round_trips[1:settings.iterations])}


def summary(run: dict, health: np.ndarray, rtt_ms: float) -> dict:
    iteration, round_trip = run["iteration_ms"], run["round_trip_ms"]
    share = round_trip / iteration
    floor = float(np.median(health))
    p50_round_trip = float(np.median(round_trip))
    return {
        "rtt_ms": rtt_ms,
        "iterations_timed": len(iteration),
        "iteration_p50_ms": float(np.median(iteration)),
        "query_round_trip_p50_ms": p50_round_trip,
        "query_round_trip_p90_ms": float(np.percentile(round_trip, 90)),
        "health_round_trip_p50_ms": floor,
        "modeler_step_p50_ms": float(np.median(iteration - round_trip)),
        "curator_share_p50": float(np.median(share)),
        "curator_share_total": float(round_trip.sum() / iteration.sum()),
        "network_share_total": float(rtt_ms * len(round_trip) / iteration.sum()),
        "http_floor_beyond_rtt_ms": max(floor - rtt_ms, 0.0),
        "curator_own_p50_ms": p50_round_trip - floor,
    }


def fresh_result_path(quick: bool) -> Path:
    """``service_latency_<date>_<commit>[_quick][_k].json`` (:func:`harness.dated_name`): the first not taken."""
    harness.RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"{harness.dated_name('service_latency')}{'_quick' if quick else ''}"
    path, k = harness.RESULTS / f"{stem}.json", 1
    while path.exists():
        k += 1
        path = harness.RESULTS / f"{stem}_{k}.json"
    return path


def print_row(mode: str, row: dict) -> None:
    print(f"  {mode:6s} RTT {row['rtt_ms']:4.0f} ms  iteration p50 {row['iteration_p50_ms']:8.1f} ms  "
          f"query {row['query_round_trip_p50_ms']:6.1f} ms (p90 {row['query_round_trip_p90_ms']:6.1f})  "
          f"/health {row['health_round_trip_p50_ms']:5.1f} ms  modeler {row['modeler_step_p50_ms']:8.1f} ms  "
          f"curator share p50 {100 * row['curator_share_p50']:5.1f}% (total {100 * row['curator_share_total']:5.1f}%"
          f", network alone {100 * row['network_share_total']:5.1f}%)  "
          f"curator's own {row['curator_own_p50_ms']:4.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", "-T", type=int, default=40, help="T of each run (default 40)")
    parser.add_argument("--rows", type=int, default=1000, help="n, the release's rows (default 1000)")
    parser.add_argument("--features", type=int, default=3)
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 10.0, 50.0])
    parser.add_argument("--hyperparameters", nargs="+", choices=["fit", "fixed"], default=["fit", "fixed"],
                        help="the modeler's settings: 'fit' (pobo-modeler run's default, a refit each answer) and/or "
                             "'fixed' (no refit: the cheapest GP step, so the largest curator share)")
    harness.add_quick(parser, "T = 8, n = 300, RTT 0 and 10 ms")
    args = parser.parse_args()
    if args.quick:
        args.iterations, args.rows, args.rtt_ms = 8, 300, [0.0, 10.0]
    short, dirty = harness.commit_stamp()
    started = datetime.datetime.now(datetime.UTC)
    path = fresh_result_path(args.quick)
    runs = len(args.rtt_ms) * len(args.hyperparameters) + 1
    results: dict[str, list[dict]] = {mode: [] for mode in args.hyperparameters}

    def write(complete: bool) -> None:
        """The results so far (rewritten after each run, ``complete`` at the end), so a cut-short run keeps them."""
        path.write_text(json.dumps({
            "command": harness.command_line(), "commit": short, "tree_differs_from_commit": dirty,
            "started_utc": started.isoformat(timespec="seconds"), "load_average": list(os.getloadavg()),
            "rows": args.rows, "features": args.features, "iterations": args.iterations, "database": "sqlite",
            "target": {"rtt_ms": TARGET_RTT_MS, "curator_share_at_most": TARGET_SHARE}, "complete": complete,
            "runs": results,
        }, indent=1) + "\n")

    with tempfile.TemporaryDirectory() as scratch, LocalCurator(
            Path(scratch) / "curator", env={"PYTHONPATH": str(harness.REPOSITORY), "POBO_JOB_WORKERS": "1"},
            startup_timeout=2400) as curator:
        release_id, token = setup(curator, args.rows, args.features, queries=(args.iterations + 1) * runs)
        work = Path(scratch)
        # compiles the engine's kernels and warms the curator's caches; not timed
        one_run(curator.url, token, release_id, RunSettings(iterations=3), work)
        print(f"n = {args.rows}, d = {args.features}, T = {args.iterations}, SQLite (durable commits), "
              f"commit {short}{'+' if dirty else ''}", flush=True)
        for rtt in args.rtt_ms:
            with reached_through(curator, rtt) as url:
                health = health_ms(url)
                for mode in args.hyperparameters:
                    settings = RunSettings(iterations=args.iterations, hyperparameters=mode)
                    row = summary(one_run(url, token, release_id, settings, work), health, rtt)
                    results[mode].append(row)
                    print_row(mode, row)
                    write(complete=False)
    write(complete=True)
    at_target = [row for row in results.get("fit", []) if row["rtt_ms"] == TARGET_RTT_MS]
    if at_target:
        share = at_target[0]["curator_share_p50"]
        print(f"curator share at {TARGET_RTT_MS:.0f} ms RTT (pobo-modeler run's defaults): {100 * share:.1f}% "
              f"(target ≤ {100 * TARGET_SHARE:.0f}%: {'met' if share <= TARGET_SHARE else 'not met'}); "
              f"ratio of the query round trip to the modeler's step "
              f"{at_target[0]['query_round_trip_p50_ms'] / at_target[0]['modeler_step_p50_ms']:.3f}")
    print(f"wrote {path.relative_to(harness.REPOSITORY)}")


if __name__ == "__main__":
    main()
