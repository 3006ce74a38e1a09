"""A CSV the curator chose, kept for a few minutes when its registration form comes back with a problem: a browser
never fills a file input again, so without this the curator would have to find and choose the file once more.

Kept in the server's memory only (never written, logged or shown), for the console session that uploaded it, at
most :data:`MAX_KEPT` files for :data:`KEEP_SECONDS`; a successful registration forgets it.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

KEEP_SECONDS = 900.0
MAX_KEPT = 8


@dataclass(frozen=True)
class KeptFile:
    session: str
    filename: str
    content: bytes
    until: float


class KeptUploads:
    def __init__(self) -> None:
        self._files: dict[str, KeptFile] = {}
        self._lock = threading.Lock()

    def keep(self, session: str, filename: str, content: bytes) -> str:
        """A ticket for the file (the form carries it in a hidden field); the oldest goes past :data:`MAX_KEPT`."""
        ticket = secrets.token_urlsafe(16)
        with self._lock:
            self._expire()
            while len(self._files) >= MAX_KEPT:
                del self._files[min(self._files, key=lambda t: self._files[t].until)]
            self._files[ticket] = KeptFile(session, filename, content, time.monotonic() + KEEP_SECONDS)
        return ticket

    def get(self, ticket: str, session: str) -> KeptFile | None:
        """The file under ``ticket`` if this session kept it and it has not expired."""
        with self._lock:
            self._expire()
            kept = self._files.get(ticket)
        return kept if kept is not None and secrets.compare_digest(kept.session, session) else None

    def forget(self, ticket: str) -> None:
        with self._lock:
            self._files.pop(ticket, None)

    def _expire(self) -> None:
        now = time.monotonic()
        for ticket in [t for t, kept in self._files.items() if kept.until < now]:
            del self._files[ticket]
