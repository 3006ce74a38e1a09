"""The per-request cost of the admission checks (curator_service.admission) on a query-shaped request, beside the
bare ASGI app they wrap (the floor) and the service's other pure-ASGI layer, ``GuardMiddleware`` (a peer that also
wraps send). In process, no network, no database: only what the layer adds to every request.

    python benchmarks/admission_overhead.py [--blocks 15] [--per-block 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from curator_service.admission import AdmissionMiddleware, AuthThrottle
from curator_service.errors import GuardMiddleware
from curator_service.settings import Settings

BODY = b'{"indices": [1, 2, 3], "request_id": "r-1"}'
HEADERS = [(b"host", b"pobo"), (b"authorization", b"Bearer pobo_" + b"k" * 43), (b"content-type", b"application/json"),
           (b"content-length", str(len(BODY)).encode())]


async def endpoint(scope, receive, send) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def receive():
    return {"type": "http.request", "body": BODY, "more_body": False}


async def send(message) -> None:
    pass


async def per_request_us(app, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        scope = {"type": "http", "method": "POST", "path": "/v1/sessions/12/queries", "client": ("10.0.0.1", 5000),
                 "headers": HEADERS}
        await app(scope, receive, send)
    return (time.perf_counter() - started) / n * 1e6


async def main(blocks: int, per_block: int) -> None:
    settings = Settings.from_env({}, data_dir=tempfile.mkdtemp(), admin_token="A" * 40)
    apps = {"floor (the bare app)": endpoint,
            "GuardMiddleware (peer)": GuardMiddleware(endpoint),
            "AdmissionMiddleware": AdmissionMiddleware(endpoint, settings=settings, throttle=AuthThrottle(10))}
    times: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(blocks):  # alternating blocks, so load changes touch every layer alike
        for name, app in apps.items():
            times[name].append(await per_request_us(app, per_block))
    floor = statistics.median(times["floor (the bare app)"])
    guard = statistics.median(times["GuardMiddleware (peer)"]) - floor
    for name, values in times.items():
        added = statistics.median(values) - floor
        print(f"{name:24s} {statistics.median(values):7.2f} µs/request  adds {added:6.2f} µs"
              + (f"  ({added / guard:.2f}× the peer's)" if guard > 0 and name.startswith("Admission") else ""))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--per-block", type=int, default=2000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.blocks, arguments.per_block))
