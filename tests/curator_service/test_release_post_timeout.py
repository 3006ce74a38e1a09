"""A release POST waits up to ``POBO_RELEASE_WAIT_SECONDS`` for its job; the admin client (and so the CLI) must wait
longer than that for the answer (the client never times out on a release). The setting is bounded by
``MAX_RELEASE_WAIT_SECONDS`` and the client's release POST outwaits the bound: before, the client gave up after its
usual 30 s whatever the server's wait, and sent the POST again."""

from __future__ import annotations

import time
from dataclasses import replace

import pydantic
import pytest

from curator_service import admin_client
from curator_service.admin_client import CuratorAdmin
from curator_service.services.job_kinds import KINDS
from curator_service.services.job_kinds import release as release_kind
from curator_service.settings import MAX_RELEASE_WAIT_SECONDS, Settings
from shared.api.http_client import ApiClient
from shared.api.schemas import DatasetSpec, ReleaseCreate, ReleaseOut
from tests.curator_service.conftest import ADMIN, dataset_spec, synthetic_table, table_csv

BODY = ReleaseCreate(mechanism="gaussian", epsilon=1.0, delta=1e-5, dim=3)
HELD_SECONDS = 40.0  # past ApiClient's usual 30 s timeout, well inside the server's wait


def test_the_wait_is_bounded_with_the_setting_named(tmp_path):
    at_bound = Settings.from_env({"POBO_RELEASE_WAIT_SECONDS": str(MAX_RELEASE_WAIT_SECONDS)}, data_dir=tmp_path)
    assert at_bound.release_wait_seconds == MAX_RELEASE_WAIT_SECONDS
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings.from_env({"POBO_RELEASE_WAIT_SECONDS": str(MAX_RELEASE_WAIT_SECONDS + 1)}, data_dir=tmp_path)
    assert "release_wait_seconds" in str(caught.value)


class RecordingAdmin(CuratorAdmin):
    """The admin client, noting each request it sends and the timeout of each connection it opens."""

    def __init__(self, url: str) -> None:
        super().__init__(url, ADMIN)
        self.sent: list[tuple[str, str]] = []
        self.timeouts: list[float] = []

    def admin(self, **options) -> ApiClient:
        self.timeouts.append(options.get("timeout", 30.0))
        hooks = {"request": [lambda request: self.sent.append((request.method, request.url.path))]}
        return super().admin(event_hooks=hooks, **options)


def register(admin: CuratorAdmin) -> int:
    X, y = synthetic_table()
    return admin.register_csv(table_csv(X, y).encode(), DatasetSpec.model_validate(dataset_spec())).id


def release_posts(admin: RecordingAdmin) -> list[tuple[str, str]]:
    return [(method, path) for method, path in admin.sent if path.endswith("/releases")]


def test_the_admin_clients_release_post_outwaits_the_longest_wait_a_server_may_have(live_server):
    admin = RecordingAdmin(live_server(release_wait_seconds=MAX_RELEASE_WAIT_SECONDS))
    dataset_id = register(admin)
    admin.timeouts.clear()
    assert isinstance(admin.submit_release(dataset_id, BODY), ReleaseOut)
    [timeout] = admin.timeouts
    assert timeout > MAX_RELEASE_WAIT_SECONDS and timeout == admin_client.RELEASE_POST_TIMEOUT_SECONDS
    assert len(release_posts(admin)) == 1


def release_after_a_while(ctx):
    """The real release, after HELD_SECONDS (module level: the kind travels to a worker process by reference)."""
    deadline = time.monotonic() + HELD_SECONDS
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.1)
    return release_kind.run(ctx)


@pytest.mark.slow  # a release held for 40 s
def test_a_release_longer_than_the_usual_timeout_is_answered_to_its_first_post(live_server, monkeypatch):
    """The server waits for a release that takes 40 s and answers 201 with it; the client hears that answer to its one
    POST (before: it timed out at 30 s and sent the POST again, which waited for the same job)."""
    monkeypatch.setitem(KINDS, "release", replace(KINDS["release"], run=release_after_a_while))
    admin = RecordingAdmin(live_server(release_wait_seconds=MAX_RELEASE_WAIT_SECONDS))
    made = admin.submit_release(register(admin), BODY)
    assert isinstance(made, ReleaseOut)
    assert len(release_posts(admin)) == 1, admin.sent
