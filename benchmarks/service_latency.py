"""Latency of one-index queries against a real curator (``pobo-curator serve`` on loopback), measure only.

Each request is ``POST /v1/sessions/{id}/queries`` with one index and a fresh ``request_id`` (what
``pobo-modeler run`` sends), over one keep-alive connection pool. Printed: p50/p99/max of the wall time the
client sees, sequential (one request at a time) and with 50 requests in flight (50 client threads), on
SQLite (durable commits, the server's defaults), and on PostgreSQL when ``POBO_TEST_POSTGRES_URL`` is set.
The client's own Python time is inside these figures (with 50 threads it competes with the server for the
two cores); the issue's target is p50 ≤ 3 ms sequential on SQLite.

Writes benchmarks/results/service_latency.json. ``--quick``: 50 sequential and 100 concurrent requests.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import harness  # noqa: I001  (first: pins BLAS to one thread)
import httpx  # noqa: E402
import numpy as np  # noqa: E402

from curator_service.testing import LocalCurator  # noqa: E402

ROWS, FEATURES, IN_FLIGHT = 500, 3, 50


def ready_session(curator: LocalCurator, queries: int) -> tuple[str, int]:
    """A dataset, a gaussian release, a key allowed ``queries`` queries and its open session."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(ROWS, FEATURES))
    dataset = curator.register_table(
        f"latency-{uuid.uuid4().hex[:8]}", X, [f"x{j}" for j in range(FEATURES)],
        evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3), extra_columns={"y": X.sum(axis=1)},
        scaling={"kind": "bounds", "lower": [0.0] * FEATURES, "upper": [1.0] * FEATURES, "diameter": 1.0},
    )
    release = curator.release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
    key = curator.issue_key([release.id], max_queries=queries)
    with httpx.Client(base_url=curator.url, headers={"Authorization": f"Bearer {key.token}"}) as http:
        session = http.post(f"/v1/releases/{release.id}/sessions", json={}).raise_for_status().json()
    return key.token, session["id"]


def timed_queries(url: str, token: str, session_id: int, count: int, in_flight: int) -> np.ndarray:
    """Milliseconds of ``count`` one-index queries, ``in_flight`` at a time."""
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    # a long read timeout: under 50 in flight a loaded server answered some requests after more than httpx's 5 s
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, limits=limits,
                      timeout=120.0) as http:

        def one(k: int) -> float:
            body = {"indices": [k % ROWS], "request_id": uuid.uuid4().hex}
            started = time.perf_counter()
            http.post(f"/v1/sessions/{session_id}/queries", json=body).raise_for_status()
            return 1000.0 * (time.perf_counter() - started)

        for k in range(5):  # warm-up: connections, the server's table cache
            one(k)
        with ThreadPoolExecutor(in_flight) as pool:
            return np.array(list(pool.map(one, range(count))))


def measure(label: str, env: dict[str, str], sequential: int, concurrent: int) -> dict:
    with tempfile.TemporaryDirectory() as data_dir, LocalCurator(data_dir, env=env) as curator:
        token, session_id = ready_session(curator, sequential + concurrent + 20)
        result = {}
        for mode, count, in_flight in (("sequential", sequential, 1), (f"{IN_FLIGHT} in flight", concurrent, IN_FLIGHT)):
            ms = timed_queries(curator.url, token, session_id, count, in_flight)
            p50, p99 = np.percentile(ms, [50, 99])
            print(f"  {label:10s} {mode:13s} n={count:5d}  p50 {p50:6.2f} ms  p99 {p99:7.2f} ms  max {ms.max():7.2f} ms")
            result[mode] = {"requests": count, "p50_ms": p50, "p99_ms": p99, "max_ms": float(ms.max())}
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=1000)
    harness.add_quick(parser, "50 sequential and 100 concurrent requests")
    args = parser.parse_args()
    sequential, concurrent = (50, 100) if args.quick else (args.sequential, args.concurrent)
    print(f"one-index queries against pobo-curator serve on loopback (load average {os.getloadavg()[0]:.1f}):")
    results = {"load_average_1min": os.getloadavg()[0], "sqlite": measure("SQLite", {}, sequential, concurrent)}
    postgres = os.environ.get("POBO_TEST_POSTGRES_URL")
    if postgres:
        results["postgresql"] = measure("PostgreSQL", {"POBO_DATABASE_URL": postgres}, sequential, concurrent)
    print(f"wrote {harness.write_json('service_latency', results, quick=args.quick)}")


if __name__ == "__main__":
    main()
