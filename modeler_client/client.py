"""A typed client for the modeler's half of the HTTP API (docs/design.md §5), parsed with :mod:`shared.api.schemas`."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from shared.api.governance import KeyPolicyOut
from shared.api.http_client import ApiClient
from shared.api.schemas import (
    API_PREFIX,
    MAX_INDICES_PER_REQUEST,
    Health,
    InputsPage,
    JobCreate,
    JobOut,
    QueryList,
    QueryRequest,
    QueryResponse,
    QueryResult,
    ReleaseOut,
    SessionOut,
)

NPY_MEDIA_TYPE = "application/x-npy"
# The server's limit on a query's request_id, read from the wire model so the two cannot drift apart.
REQUEST_ID_MAX_LENGTH = next(rule.max_length for rule in QueryRequest.model_fields["request_id"].metadata
                             if hasattr(rule, "max_length"))


class PendingTimeout(TimeoutError):
    """Pending manual queries were still unanswered when the caller's wait ran out."""


class ModelerClient:
    """What a modeler can do with its API key: read releases and their inputs, open sessions, query rows.

    ``api`` may be passed to share one :class:`~shared.api.http_client.ApiClient`; otherwise one is made
    from ``url``/``token``/``timeout``/``retries``/``retry_for`` (seconds of backoff at least: default 30 s
    or ``POBO_RETRY_FOR``, enough to ride out a curator restart).
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        retry_for: float | None = None,
        api: ApiClient | None = None,
    ) -> None:
        self.api = api or ApiClient(url, token, timeout=timeout, retries=retries, retry_for=retry_for)
        self.url = self.api.base_url

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> ModelerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- service and releases ----------------------------------------------------------------------

    def health(self) -> Health:
        return self.api.get("/health", model=Health)

    def my_policy(self) -> KeyPolicyOut:
        """This key's caps, job kinds, expiry, queries left and ε spent (``GET /v1/keys/me/policy``)."""
        return self.api.get(f"{API_PREFIX}/keys/me/policy", model=KeyPolicyOut)

    def release(self, release_id: int) -> ReleaseOut:
        return self.api.get(f"{API_PREFIX}/releases/{release_id}", model=ReleaseOut)

    def releases(self) -> list[ReleaseOut]:
        body = self.api.get(f"{API_PREFIX}/releases")
        items = body["releases"] if isinstance(body, dict) else body
        return [ReleaseOut.model_validate(item) for item in items]

    def inputs(self, release_id: int, *, binary: bool = True, page_size: int = 5000) -> NDArray[np.float64]:
        """The released inputs Z (n × dim): one ``.npy`` body when ``binary`` and the server offers it,
        else JSON pages of ``page_size`` rows."""
        path = f"{API_PREFIX}/releases/{release_id}/inputs"
        if binary:
            response = self.api.get_bytes(path, accept=NPY_MEDIA_TYPE)
            if response.headers.get("content-type", "").split(";")[0].strip() == NPY_MEDIA_TYPE:
                return np.asarray(np.load(io.BytesIO(response.content), allow_pickle=False), dtype=float)
        rows: list[list[float]] = []
        while True:
            page = self.api.get(path, params={"offset": len(rows), "limit": page_size}, model=InputsPage)
            rows.extend(page.rows)
            if len(rows) >= page.n:
                return np.asarray(rows, dtype=float).reshape(page.n, page.dim)
            if not page.rows:
                raise RuntimeError(f"the server returned an empty page at offset {len(rows)} of {page.n} rows")

    # --- sessions and queries ----------------------------------------------------------------------

    def open_session(self, release_id: int) -> SessionOut:
        return self.api.post(f"{API_PREFIX}/releases/{release_id}/sessions", {}, model=SessionOut)

    def session(self, session_id: int) -> SessionOut:
        return self.api.get(f"{API_PREFIX}/sessions/{session_id}", model=SessionOut)

    def close_session(self, session_id: int) -> SessionOut:
        return self.api.post(f"{API_PREFIX}/sessions/{session_id}/close", {}, model=SessionOut, idempotent=True)

    def reopen_session(self, session_id: int) -> SessionOut:
        return self.api.post(f"{API_PREFIX}/sessions/{session_id}/reopen", {}, model=SessionOut, idempotent=True)

    def reopen_if_closed(self, session_id: int) -> None:
        """A run with queries left continues in its own session, which it closed when it last ended."""
        if self.session(session_id).status == "closed":
            self.reopen_session(session_id)

    def sessions(self) -> list[SessionOut]:
        """This key's sessions, oldest first."""
        return [SessionOut.model_validate(item) for item in self.api.get(f"{API_PREFIX}/sessions")]

    def query(self, session_id: int, indices: Iterable[int], *, request_id: str | None = None) -> list[QueryResult]:
        """Ask for the measurements of rows ``indices``, in order.

        Every call carries a ``request_id`` (a fresh UUID unless given), so the HTTP client may retry it
        after a timeout or a 5xx: the service returns the stored results of a repeated id, uncharged. More than
        :data:`~shared.api.schemas.MAX_INDICES_PER_REQUEST` indices go in several requests, the k-th (from 2 on)
        with ``<request_id>.k``, so repeating the call repeats every part under its own id. A ``request_id`` too long
        for its last part's suffix is a ValueError before anything is sent.

        A split ask is not atomic: each part is charged when it is answered, so if part k is refused (the query
        budget ran out, say) the call raises with parts 1…k−1 charged; repeat the call with the same
        ``request_id`` to get their results back uncharged.
        """
        indices, request_id = [int(i) for i in indices], request_id or uuid.uuid4().hex
        # no index: one request, which QueryRequest refuses
        parts = range(0, max(len(indices), 1), MAX_INDICES_PER_REQUEST)
        longest = request_id if len(parts) == 1 else f"{request_id}.{len(parts)}"
        if len(longest) > REQUEST_ID_MAX_LENGTH:
            raise ValueError(f"request_id is {len(request_id)} characters; with the suffix '.{len(parts)}' of this "
                             f"ask's last part it passes the limit of {REQUEST_ID_MAX_LENGTH}: use a shorter one")
        return [result for k, start in enumerate(parts, start=1) for result in self.api.post(
            f"{API_PREFIX}/sessions/{session_id}/queries",
            QueryRequest(indices=indices[start:start + MAX_INDICES_PER_REQUEST],
                         request_id=request_id if k == 1 else f"{request_id}.{k}"),
            model=QueryResponse).results]

    # --- curator-side jobs (Kusner, Ding, DPareto) ------------------------------------------------------

    def submit_job(self, kind: str, dataset_id: int | None, params: dict, *, request_id: str | None = None) -> JobOut:
        """Submit a curator-side job; its (ε, δ) is charged to the dataset's ledger at submission.

        It is sent under ``request_id`` (a fresh UUID unless given), so the HTTP client retries a dropped connection
        or a restart with the same id and the curator creates and charges the job once; submitting again with the
        same id and body returns that job, uncharged."""
        body = JobCreate(kind=kind, dataset_id=dataset_id, params=params, request_id=request_id or str(uuid.uuid4()))
        return self.api.post(f"{API_PREFIX}/jobs", body, model=JobOut)

    def job(self, job_id: int) -> JobOut:
        return self.api.get(f"{API_PREFIX}/jobs/{job_id}", model=JobOut)

    def queries(self, session_id: int) -> list[QueryResult]:
        """Every query of the session, in the order they were made (what a resumed run reconciles with)."""
        return self.api.get(f"{API_PREFIX}/sessions/{session_id}/queries", model=QueryList).queries

    def wait_for(
        self,
        session_id: int,
        query_ids: Iterable[int],
        *,
        until: Literal["all", "any"] = "all",
        poll: float = 0.5,
        max_poll: float = 30.0,
        timeout: float | None = None,
        on_wait: Callable[[list[QueryResult], float], None] | None = None,
    ) -> dict[int, QueryResult]:
        """Poll until every query in ``query_ids`` is answered: ``done``, or ``unmeasurable`` when the curator could
        not measure it (``until="any"``: at least one); returns them
        all by id, as last seen.

        The interval grows by 1.5× from ``poll`` up to ``max_poll`` seconds (a manual measurement can
        take hours; the server should not be hammered). ``on_wait(still_pending, waited_seconds)`` is
        called before each sleep. Raises :class:`PendingTimeout` after ``timeout`` seconds.
        """
        wanted = set(query_ids)
        start = time.monotonic()
        interval = poll
        while True:
            by_id = {q.query_id: q for q in self.queries(session_id) if q.query_id in wanted}
            missing = wanted - by_id.keys()
            if missing:
                raise RuntimeError(f"the session's query list does not contain queries {sorted(missing)}")
            pending = [q for q in by_id.values() if q.status == "pending"]
            if not pending or (until == "any" and len(pending) < len(by_id)):
                return by_id
            waited = time.monotonic() - start
            if timeout is not None and waited >= timeout:
                raise PendingTimeout(
                    f"{len(pending)} quer{'y is' if len(pending) == 1 else 'ies are'} still pending after "
                    f"{waited:.0f} s; resume later, the answers are kept on the server"
                )
            if on_wait is not None:
                on_wait(pending, waited)
            time.sleep(interval if timeout is None else min(interval, max(0.0, timeout - waited)))
            interval = min(max_poll, interval * 1.5)
