"""Releases count in their key's running share (a job cannot starve other jobs). A curator key's large
releases must not hold every worker of the cluster while another key's job waits for one to end."""

from __future__ import annotations

from dataclasses import replace

from curator_service.services.job_kinds import KINDS
from tests.curator_service.conftest import assert_error, bearer, modeler_key, register
from tests.curator_service.test_jobs import run_until_cancelled
from tests.curator_service.test_release_jobs import BODY, finished, releases_url
from tests.jobs.test_engine import status_of, wait, wait_for_one_running

STARTS_SECONDS = 120.0  # generous on a loaded machine, and inside run_until_cancelled's 300 s


def test_a_keys_releases_beyond_its_share_wait_while_another_keys_release_runs(make_client, database_url,
                                                                                monkeypatch):
    """On the suite's two-worker cluster curator key A asks for two releases that run until cancelled: one runs, the
    other waits queued (A's share: every worker but one), so key B's release starts on the worker left free; when
    A's running release ends, A's next one starts. Before releases were limited, A's two held both workers and B's
    waited for one of them to end (hours for a 10⁶-row release); a third of A's was accepted. The kind keeps the real
    release's flags; only its run is held."""
    client = make_client(database_url=database_url, release_wait_seconds=0)
    dataset = register(client)
    made = finished(client, client.post(releases_url(dataset), json=BODY).json()["id"])
    key_a, key_b = (bearer(modeler_key(client, [made["result"]["release_id"]], role="curator")["token"])
                    for _ in range(2))
    monkeypatch.setitem(KINDS, "release", replace(KINDS["release"], run=run_until_cancelled))

    def held_release(headers):
        response = client.post(releases_url(dataset), json=BODY, headers=headers)
        assert response.status_code == 202, response.text
        return response.json()

    jobs = [held_release(key_a) for _ in range(2)]
    try:  # releases count in the key's POBO_JOB_LIMIT_PER_KEY (2 by default) as well
        assert_error(client.post(releases_url(dataset), json=BODY, headers=key_a), 409, "conflict",
                     "POBO_JOB_LIMIT_PER_KEY")
        running = wait_for_one_running(client, jobs, timeout=STARTS_SECONDS)
        jobs.append(held_release(key_b))
        wait(client, jobs[2]["id"], timeout=STARTS_SECONDS, until=("running",))
        assert sorted(status_of(client, jobs[:2])) == ["queued", "running"]
        client.post(f"/v1/jobs/{running['id']}/cancel")
        wait(client, running["id"], timeout=STARTS_SECONDS, until=("cancelled",))
        wait_for_one_running(client, [job for job in jobs[:2] if job is not running], timeout=STARTS_SECONDS)
        assert status_of(client, jobs[2:]) == ["running"]
    finally:  # free the shared cluster for the next tests
        for job in jobs:
            client.post(f"/v1/jobs/{job['id']}/cancel")
