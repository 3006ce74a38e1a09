"""A throwaway curator on loopback, for the demo, examples and end-to-end tests (a curator test harness).

:class:`LocalCurator` runs the real ``pobo-curator serve`` command in a subprocess (so a test talks to the service
exactly as a deployment does), on a free port, with its own data directory and admin token, and can be killed with
SIGKILL and restarted on the same port and data to show durability. It is a
:class:`~curator_service.admin_client.CuratorAdmin`, so the curator's setup steps are its methods.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from curator_service.admin_client import CuratorAdmin


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def curator_command() -> list[str]:
    """``pobo-curator``: the console script beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).with_name("pobo-curator")
    found = str(beside) if beside.exists() else shutil.which("pobo-curator")
    if found is None:
        raise FileNotFoundError("the 'pobo-curator' command is not installed; run `pip install -e .` first")
    return [found]


class LocalCurator(CuratorAdmin):
    """``pobo-curator serve`` on ``127.0.0.1:<free port>`` with data in ``data_dir``.

    ``env`` adds to (and overrides) the inherited environment; by default uncertified mechanisms are
    enabled and the mode is ``research`` (seeds allowed), as the local demo needs.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        # a poll, so it costs nothing when the server is up: a start took 34 s at load 18
        startup_timeout: float = 300.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        super().__init__(f"http://127.0.0.1:{self.port}", secrets.token_urlsafe(24))
        inherited = {k: v for k, v in os.environ.items() if k != "POBO_DATABASE_URL"}  # SQLite unless asked
        self.env = {
            **inherited,
            "POBO_ADMIN_TOKEN": self.admin_token,
            "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "true",
            "POBO_MODE": "research",
            **(env or {}),
        }
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir / "curator.log"

    # --- the process ----------------------------------------------------------------------------------

    def start(self) -> LocalCurator:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [*curator_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--data-dir", str(self.data_dir)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pobo-curator serve exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                # /ready, not /health: the database answers and the job workers accept work (a release is a job)
                if httpx.get(f"{self.url}/ready", timeout=5.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"pobo-curator was not ready within {self.startup_timeout} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flushing; what was committed is all that survives."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Graceful stop (SIGTERM), SIGKILL after 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def restart(self) -> LocalCurator:
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def __enter__(self) -> LocalCurator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
