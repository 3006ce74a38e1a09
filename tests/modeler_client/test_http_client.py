"""ApiClient's error model and retry policy, against a tiny scripted HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import shared.api.http_client as http_client
from shared.api.http_client import ApiClient, ApiError, ServerUnreachable
from shared.api.job_polling import follow_job
from shared.api.schemas import JobStatus


class ScriptedServer:
    """Answers requests with the scripted (status, body, headers) in order; records what it received."""

    def __init__(self, script: list[tuple[int, object, dict]]) -> None:
        self.script = list(script)
        self.received: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.received.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers),
                     "body": self.rfile.read(length) if length else b""}
                )
                status, body, headers = outer.script.pop(0) if outer.script else (200, {"ok": True}, {})
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """The backoff delays the client asked for (recorded instead of slept)."""
    delays: list[float] = []
    monkeypatch.setattr(http_client.time, "sleep", delays.append)
    return delays


def serve(script):
    return ScriptedServer(script)


def test_get_is_retried_on_5xx_with_exponential_backoff_then_succeeds(sleeps):
    server = serve([(503, {"detail": "busy", "code": "internal_error"}, {})] * 3 + [(200, {"n": 1}, {})])
    try:
        api = ApiClient(server.url, "secret", retries=3, backoff=0.5, max_backoff=1.5)
        assert api.get("/thing") == {"n": 1}
        assert len(server.received) == 4
        assert sleeps == [0.5, 1.0, 1.5]  # 0.5·2^k capped at max_backoff
        assert server.received[0]["headers"]["Authorization"] == "Bearer secret"
    finally:
        server.close()


def test_post_without_request_id_is_not_retried_on_5xx(sleeps):
    server = serve([(500, {"detail": "boom", "code": "internal_error"}, {})])
    try:
        with pytest.raises(ApiError) as caught:
            ApiClient(server.url, "t", retries=3).post("/v1/sessions/1/queries", {"indices": [1]})
        assert caught.value.status == 500 and len(server.received) == 1 and sleeps == []
    finally:
        server.close()


def test_post_with_request_id_is_retried_and_sends_the_same_body(sleeps):
    server = serve([(502, b"bad gateway", {"Content-Type": "text/plain"}), (200, {"results": []}, {})])
    try:
        body = {"indices": [3], "request_id": "run-7"}
        assert ApiClient(server.url, "t", retries=2, backoff=0.1).post("/q", body) == {"results": []}
        assert [json.loads(r["body"]) for r in server.received] == [body, body]
        assert sleeps == [0.1]
    finally:
        server.close()


def test_retry_after_header_sets_the_delay(sleeps):
    server = serve([(503, {"detail": "later", "code": "internal_error"}, {"Retry-After": "2"}), (200, {}, {})])
    try:
        ApiClient(server.url, retries=1, backoff=0.1, max_backoff=5).get("/x")
        assert sleeps == [2.0]
    finally:
        server.close()


def test_error_body_becomes_api_error_with_the_servers_sentence(sleeps):
    sentence = "epsilon must be > 0; give a positive epsilon for the release"
    server = serve([(422, {"detail": sentence, "code": "validation_error"}, {}), (404, b"<html>nope</html>", {})])
    try:
        api = ApiClient(server.url, "t")
        with pytest.raises(ApiError) as caught:
            api.post("/v1/datasets/1/releases", {"epsilon": 0})
        assert (caught.value.status, caught.value.code, str(caught.value)) == (422, "validation_error", sentence)
        with pytest.raises(ApiError) as caught:
            api.get("/missing")  # 4xx is never retried, and a non-JSON body still gives a sentence
        assert caught.value.code == "not_found" and "404" in caught.value.detail and len(server.received) == 2
    finally:
        server.close()


def test_unreachable_server_retries_even_a_post_because_nothing_was_sent(sleeps):
    server = serve([])
    url = server.url
    server.close()  # nothing listens there any more: connection refused
    with pytest.raises(ServerUnreachable) as caught:
        ApiClient(url, retries=2, retry_for=0, backoff=0.01).post("/v1/keys", {"name": "k"})
    assert caught.value.status == 0 and "3 attempt(s)" in str(caught.value) and sleeps == [0.01, 0.02]


def test_by_default_an_unreachable_server_is_retried_for_at_least_30_seconds_of_backoff(sleeps, monkeypatch):
    monkeypatch.delenv("POBO_RETRY_FOR", raising=False)
    server = serve([])
    url = server.url
    server.close()
    with pytest.raises(ServerUnreachable):
        ApiClient(url, retries=3).get("/health")  # the commands' --retries default: a count alone gave 3.5 s
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0] and sum(sleeps[:-1]) < 30 <= sum(sleeps)


def test_the_retry_budget_comes_from_the_environment_when_not_given(sleeps, monkeypatch):
    monkeypatch.setenv("POBO_RETRY_FOR", "3")
    server = serve([(503, {}, {})] * 10)
    try:
        with pytest.raises(ApiError):
            ApiClient(server.url, retries=0, backoff=1, max_backoff=8).get("/x")
        assert sleeps == [1, 2]
        monkeypatch.setenv("POBO_RETRY_FOR", "soon")
        with pytest.raises(ValueError, match="POBO_RETRY_FOR must be a number of seconds"):
            ApiClient(server.url)
    finally:
        server.close()


def test_only_outage_statuses_are_retried_a_500_is_a_bug(sleeps):
    server = serve([(500, {"detail": "boom", "code": "internal_error"}, {}), (200, {}, {})])
    try:
        with pytest.raises(ApiError) as caught:
            ApiClient(server.url, retries=3).get("/x")
        assert caught.value.status == 500 and len(server.received) == 1 and sleeps == []
    finally:
        server.close()


def test_a_post_without_request_id_is_not_repeated_during_an_outage_but_one_with_it_is(sleeps):
    server = serve([(503, {}, {})] * 2 + [(200, {"results": []}, {})])
    try:
        api = ApiClient(server.url, "t", retries=0, retry_for=30)
        with pytest.raises(ApiError):
            api.post("/v1/sessions/1/queries", {"indices": [1]})  # could charge twice: one attempt only
        assert len(server.received) == 1
        assert api.post("/v1/sessions/1/queries", {"indices": [1], "request_id": "r"}) == {"results": []}
        assert len(server.received) == 3 and sleeps == [0.5]
    finally:
        server.close()


def test_a_short_retry_after_never_shortens_the_backoff(sleeps):
    server = serve([(503, {}, {"Retry-After": "0"})] * 3 + [(200, {}, {})])
    try:
        ApiClient(server.url, retries=0, retry_for=1, backoff=0.25, max_backoff=1).get("/x")
        assert sleeps == [0.25, 0.5, 1.0]  # a server answering "Retry-After: 0" cannot make the client spin
    finally:
        server.close()


def _job(status: str, progress: float = 0.0) -> tuple[int, dict, dict]:
    return 200, {"id": 7, "kind": "dp-bo", "dataset_id": 1, "status": status, "progress": progress,
                 "created_at": "2026-01-01T00:00:00Z"}, {}


def test_the_job_poller_reads_until_the_job_finished_and_reports_every_read():
    server = ScriptedServer([_job("queued"), _job("running", 0.5), _job("failed", 0.5)])
    seen = []
    try:
        with ApiClient(server.url, "t") as api:
            job = follow_job(api, 7, poll=0.01, on_progress=seen.append)
    finally:
        server.close()
    assert job.status == JobStatus.FAILED and job.status.finished
    assert [j.status for j in seen] == ["queued", "running", "failed"]
    assert [r["path"] for r in server.received] == ["/v1/jobs/7"] * 3


def test_the_job_poller_gives_the_job_back_unfinished_once_its_timeout_passed():
    server = ScriptedServer([_job("running", 0.1)] * 1000)
    try:
        with ApiClient(server.url, "t") as api:
            job = follow_job(api, 7, poll=0.02, timeout=0.1)
    finally:
        server.close()
    assert job.status == "running" and not job.status.finished
    assert 2 <= len(server.received) < 100  # read again until the timeout, not once and not without pause
