"""The ask/tell layer against a real curator: the release as data, journaled queries, resume, reuse."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import InFlight, RunRecord, RunSettings

runner = CliRunner()


def used(client: ModelerClient, record: RunRecord) -> int:
    return client.session(record.session_id).used


def test_remote_release_gives_the_inputs_as_array_and_dataframe_with_public_metadata(bowl, curator):
    pd = pytest.importorskip("pandas")
    with ModelerClient(curator.url, bowl["token"]) as client:
        release = RemoteRelease(client, bowl["release"].id)
        Z = release.Z
        np.testing.assert_array_equal(Z, client.inputs(release.id))
        assert not Z.flags.writeable  # one shared download; an optimiser cannot corrupt it by accident
        frame = release.to_dataframe()
        assert isinstance(frame, pd.DataFrame) and frame.shape == (release.n, release.dim)
        assert list(frame.columns) == ["z0", "z1"] and frame.index.name == "index"
        facts = release.describe()
        assert facts["certified"] is False and facts["mechanism"] == "po-gp-ucb"
        assert facts["dim"] == 2 and facts["n"] == len(bowl["X"])
        assert {"noise_std", "measurement_noise_std", "goal", "epsilon"} <= facts.keys()


def test_evaluate_returns_the_measurements_in_the_order_asked(bowl, curator, tmp_path):
    with ModelerClient(curator.url, bowl["token"]) as client:
        session = RemoteSession.start(client, bowl["release"].id, tmp_path / "r.json", RunSettings(iterations=3))
        values = session.evaluate([7, 3, 7])
        indices, observed = session.observations()
    assert values[0] == values[2] and indices.tolist() == [7, 3, 7]
    np.testing.assert_array_equal(values, observed)


def test_a_request_lost_in_a_crash_is_recovered_on_resume_and_not_charged_again(bowl, curator, tmp_path):
    path = tmp_path / "crash.json"
    with ModelerClient(curator.url, bowl["token"]) as client:
        session = RemoteSession.start(client, bowl["release"].id, path, RunSettings(iterations=4))
        record = session.record
        # The journal says a request is in flight; the server got it, the process died before recording the answer.
        record.in_flight = InFlight(iteration=1, request_id=f"{record.run_id}-1", indices=[11, 12])
        session.save()
        client.query(record.session_id, [11, 12], request_id=f"{record.run_id}-1")
        charged = used(client, record)
        resumed = RemoteSession.resume(client, path)
        assert [q.index for q in resumed.record.done()] == [11, 12] and resumed.record.in_flight is None
        assert used(client, record) == charged  # re-sent with the same request_id: stored answers, no charge
        assert RunRecord.load(path).done() == resumed.record.done()


def test_open_starts_a_run_then_resumes_it_and_refuses_another_release(bowl, curator, tmp_path):
    path = tmp_path / "open.json"
    with ModelerClient(curator.url, bowl["token"]) as client:
        first = RemoteSession.open(client, bowl["release"].id, path, RunSettings(iterations=2))
        first.evaluate([4])
        again = RemoteSession.open(client, bowl["release"].id, path, RunSettings(iterations=2))
        assert again.record.session_id == first.record.session_id and [q.index for q in again.record.done()] == [4]
        with pytest.raises(ValueError, match="release"):
            RemoteSession.open(client, bowl["release"].id + 1000, path, RunSettings(iterations=2))


def test_answers_of_an_earlier_session_are_reused_once_each_instead_of_paid_again(bowl, curator, tmp_path):
    with ModelerClient(curator.url, bowl["token"]) as client:
        first = RemoteSession.start(client, bowl["release"].id, tmp_path / "a.json", RunSettings(iterations=3))
        earlier = first.evaluate([1, 2, 3])
        paid = used(client, first.record)  # the key's count, over all its sessions
        second = RemoteSession.start(client, bowl["release"].id, tmp_path / "b.json", RunSettings(iterations=4),
                                     reuse_from=[first.record.session_id])
        values = second.evaluate([2, 3, 4, 2])
        record = second.record
        assert used(client, record) - paid == 2  # rows 4 and the second 2 are new requests; 2 and 3 were paid before
        assert values[0] == earlier[1] and values[1] == earlier[2] and values[3] == earlier[1]
        reused = [q.reused_from_session for q in record.queries]
        assert reused == [first.record.session_id, first.record.session_id, None, None]
        # A resumed run does not reuse an earlier answer a second time.
        again = RemoteSession.resume(client, tmp_path / "b.json", reuse_from=[first.record.session_id])
        again.evaluate([3])
        assert again.record.queries[-1].reused_from_session is None and used(client, record) - paid == 3


def test_cli_rerun_with_reuse_from_pays_nothing_for_the_same_rows(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    release = str(bowl["release"].id)
    common = ["run", "--release", release, "-T", "5", "--hyperparameters", "fixed"]
    assert runner.invoke(app, [*common, "--out", str(tmp_path / "one.json")], env=env).exit_code == 0
    with ModelerClient(curator.url, bowl["token"]) as client:
        before = client.session(RunRecord.load(tmp_path / "one.json").session_id).used
        result = runner.invoke(app, [*common, "--out", str(tmp_path / "two.json"), "--reuse-from",
                                     str(tmp_path / "one.json")], env=env)
        assert result.exit_code == 0, result.output
        two = RunRecord.load(tmp_path / "two.json")
        assert client.session(two.session_id).used == before  # same seed, same rows: all five reused
    one = RunRecord.load(tmp_path / "one.json")
    assert [q.index for q in two.queries] == [q.index for q in one.queries]
    assert all(q.reused_from_session == one.session_id for q in two.queries)
