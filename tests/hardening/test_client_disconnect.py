"""A client that closes its connection while its body is still coming is logged as one line, never a traceback."""

from __future__ import annotations

import logging
import socket
import time

from tests.curator_service.conftest import ADMIN


def test_a_closed_slow_body_is_one_log_line(live_server, caplog):
    caplog.set_level(logging.INFO, logger="curator_service")
    url = live_server()
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(f"POST /v1/datasets HTTP/1.1\r\nHost: pobo\r\nAuthorization: Bearer {ADMIN}\r\n"
                           "Content-Type: multipart/form-data; boundary=xx\r\nContent-Length: 500000\r\n\r\n"
                           "--xx\r\n".encode() + b"a" * 1000)
        time.sleep(0.5)  # the route is reading the body
    deadline = time.monotonic() + 10
    while not [r for r in caplog.records if "closed the connection" in r.getMessage()]:
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.05)
    time.sleep(0.2)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("curator_service")]
    assert lines == ["client closed the connection before its request body arrived: POST /v1/datasets"], lines
    assert not any(r.exc_info for r in caplog.records)
