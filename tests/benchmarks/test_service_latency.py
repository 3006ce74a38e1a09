"""benchmarks/service_latency.py: its proxy adds the round-trip time asked for, each way, without holding chunks
back behind each other; a result file is never overwritten."""

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.fixture(scope="module")
def service_latency():
    return pytest.importorskip("service_latency")


@pytest.fixture
def echo_port():
    """A TCP server on 127.0.0.1 that sends back whatever it receives."""
    server = socket.create_server(("127.0.0.1", 0))

    def echo(peer: socket.socket) -> None:
        for chunk in iter(lambda: peer.recv(4096), b""):
            peer.sendall(chunk)

    def serve() -> None:
        while True:
            try:
                peer, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(peer,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def round_trip_ms(port: int, payload: bytes = b"ping") -> float:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            connection.sendall(payload)
            received = b""
            while len(received) < len(payload):
                received += connection.recv(4096)
            best = min(best, 1000 * (time.perf_counter() - start))
            assert received == payload
        return best


def test_the_proxy_adds_the_round_trip_time_asked_for(service_latency, echo_port):
    proxy = service_latency.DelayProxy(echo_port, one_way_ms=15.0)
    try:
        through = round_trip_ms(proxy.port)
    finally:
        proxy.close()
    direct = round_trip_ms(echo_port)
    assert 30.0 <= through < 30.0 + direct + 20.0  # a loaded machine may wake the sender late, never early


def test_chunks_in_flight_are_each_delayed_once_not_one_after_another(service_latency, echo_port):
    proxy = service_latency.DelayProxy(echo_port, one_way_ms=20.0)
    try:
        with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
            start = time.perf_counter()
            for k in range(5):  # five chunks sent 1 ms apart come back about 40 ms after each was sent
                connection.sendall(bytes([k]) * 100)
                time.sleep(0.001)
            received = b""
            while len(received) < 500:
                received += connection.recv(4096)
            elapsed = 1000 * (time.perf_counter() - start)
    finally:
        proxy.close()
    assert received == b"".join(bytes([k]) * 100 for k in range(5))
    assert 40.0 <= elapsed < 5 * 40.0  # held back one after another would take 200 ms


def test_a_result_file_name_is_never_reused(service_latency, tmp_path, monkeypatch):
    monkeypatch.setattr(service_latency.harness, "RESULTS", tmp_path)
    monkeypatch.setattr(service_latency.harness, "dated_name", lambda name: f"{name}_2026-12-05_abc1234")
    first = service_latency.fresh_result_path(quick=False)
    assert first.name == "service_latency_2026-12-05_abc1234.json"
    first.write_text("{}")
    second = service_latency.fresh_result_path(quick=False)
    assert second.name == "service_latency_2026-12-05_abc1234_2.json"
