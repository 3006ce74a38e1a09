"""200 MB bodies without a valid token against a real server (``pobo-curator serve`` in its own process), while a
client polls ``/health``: each is refused in under a second, ``/health`` stays under 0.5 s at the 99th percentile,
and the server's resident memory grows by less than 50 MiB. The refusal comes before the body is read
(curator_service.admission), so the client may still be sending when it arrives.

Slow: the server's start with its Dask workers takes most of a minute on a loaded two-core machine.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest

from curator_service.testing import LocalCurator

BODY_BYTES = 200_000_000
CHUNK = b"7" * (1 << 20)


def rss_mib(pid: int) -> float:
    """The process's resident memory (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def flood(url: str, head: bytes, chunked: bool) -> tuple[bytes, float, int]:
    """Sends ``head`` and then a 200 MB body as fast as loopback takes it, while waiting for the answer; returns the
    status line, the seconds from the head to the answer, and the bytes of body sent by then."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=30)
    sent = 0
    answered = threading.Event()

    def send_body() -> None:
        nonlocal sent
        try:
            while sent < BODY_BYTES and not answered.is_set():
                connection.sendall(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK) if chunked else CHUNK)
                sent += len(CHUNK)
            if chunked:
                connection.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed the connection
            pass

    started = time.perf_counter()
    connection.sendall(head)
    sender = threading.Thread(target=send_body)
    sender.start()
    try:
        status = connection.recv(4096).split(b"\r\n", 1)[0]
    except TimeoutError:
        status = b"(no answer in 30 s)"
    seconds = time.perf_counter() - started
    answered.set()
    at_answer = sent
    connection.close()
    sender.join(timeout=30)
    return status, seconds, at_answer


def heads() -> list[tuple[str, bytes, bool]]:
    json_head = "POST /v1/keys HTTP/1.1\r\nHost: pobo\r\nContent-Type: application/json\r\n"
    upload_head = ("POST /v1/datasets HTTP/1.1\r\nHost: pobo\r\nAuthorization: Bearer pobo_not-a-key\r\n"
                   "Content-Type: multipart/form-data; boundary=b\r\n")
    return [("JSON, no token, declared length", f"{json_head}Content-Length: {BODY_BYTES}\r\n\r\n".encode(), False),
            ("JSON, no token, chunked", f"{json_head}Transfer-Encoding: chunked\r\n\r\n".encode(), True),
            ("upload, bad token, declared length", f"{upload_head}Content-Length: {BODY_BYTES}\r\n\r\n".encode(),
             False)]


@pytest.mark.slow
def test_200_mb_bodies_without_a_valid_token_are_refused_at_once_while_health_stays_quick(tmp_path, job_cluster):
    with LocalCurator(tmp_path / "curator", env={"POBO_JOB_WORKERS": "1"}) as server:
        pid = server.process.pid
        before = rss_mib(pid)
        peak, latencies, stop = [before], [], threading.Event()

        def poll_health() -> None:
            with httpx.Client(base_url=server.url, timeout=30) as client:
                while not stop.is_set():
                    started = time.perf_counter()
                    assert client.get("/health").status_code == 200
                    latencies.append(time.perf_counter() - started)
                    peak[0] = max(peak[0], rss_mib(pid))
                    time.sleep(0.005)

        poller = threading.Thread(target=poll_health)
        poller.start()
        time.sleep(0.3)
        results = [(name, *flood(server.url, head, chunked)) for _ in range(2) for name, head, chunked in heads()]
        time.sleep(0.3)
        stop.set()
        poller.join(timeout=60)
        peak[0] = max(peak[0], rss_mib(pid))
        p99 = statistics.quantiles(latencies, n=100, method="inclusive")[98]
        for name, status, seconds, sent in results:
            print(f"{name}: {status.decode()} after {seconds * 1000:.0f} ms, {sent / 1e6:.0f} MB of the body sent by "
                  "then")
        print(f"/health: {len(latencies)} requests, p50 {statistics.median(latencies) * 1000:.1f} ms, p99 "
              f"{p99 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms; server RSS {before:.0f} MiB before, "
              f"{peak[0]:.0f} MiB at most (+{peak[0] - before:.1f} MiB)")
        for name, status, seconds, _ in results:
            assert status == b"HTTP/1.1 401 Unauthorized" and seconds < 1.0, (name, status, seconds)
        assert p99 < 0.5, p99
        assert peak[0] - before < 50, (before, peak[0])
