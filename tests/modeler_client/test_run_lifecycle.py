"""A modeler's run as people use it, against a real curator: every answer the curator changes is reported on
resume, a finished run says so and how to extend it (and extends in the same file and session), "cannot measure"
is in the summary, sessions are listed and a run is rebuilt from the server without its file, a session closes
when its run ends, row indices are checked with a sentence, and Z's columns are the feature names under the
identity projection."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import RunRecord, RunSettings
from shared.api.governance import CannotMeasure, Correction

runner = CliRunner()


def said(output: str) -> str:
    """Console output as one line: Rich's wrapping and box characters undone."""
    return " ".join(re.sub(r"[│┃╭╮╰╯─┏┓┗┛━┌┐└┘┬┴┼├┤]", " ", output).split())


@pytest.fixture(scope="module")
def lab(curator):
    """A manual-measurement release (what a lab measures by hand) and a key on it."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(30, 2))
    dataset = curator.register_table("lab rows", X, ["dose", "age"], evaluator={"kind": "manual"}, budget=(4.0, 1e-3),
                                     scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1], "diameter": 1})
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
    return {"release": release, "token": curator.issue_key([release.id], max_queries=100).token}


def test_resume_reports_the_curators_correction_and_cannot_measure_is_in_the_summary(curator, lab, tmp_path):
    path = tmp_path / "lab.json"
    client = ModelerClient(curator.url, lab["token"])
    session = RemoteSession.start(client, lab["release"].id, path, RunSettings(iterations=2))
    first, second = session.submit([3, 8])
    curator.answer_query(first.query_id, 59.0)
    curator.cannot_measure(second.query_id, CannotMeasure(reason="sample lost"))
    session.wait()
    curator.correct_query(first.query_id, Correction(value=95.0, reason="digits swapped"))

    env = {"POBO_URL": curator.url, "POBO_TOKEN": lab["token"]}
    result = runner.invoke(app, ["resume", str(path)], env=env)
    assert result.exit_code == 0, result.output
    text = said(result.output)
    assert (f"query {first.query_id} (row 3): its value was corrected from 59 to 95 by the curator; the run uses 95 "
            "from now on") in text
    assert "2 of T = 2 queries made, 1 measured, 1 the curator could not measure (row 8: charged, no value)" in text
    assert RunRecord.load(path).queries[0].value == 95.0
    again = runner.invoke(app, ["resume", str(path)], env=env)
    assert "corrected" not in again.output  # reported once: the run file now holds 95


def test_a_finished_run_says_so_extends_in_the_same_file_and_closes_its_session(curator, bowl, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    release = str(bowl["release"].id)
    first = runner.invoke(app, ["run", "--release", release, "-T", "3", "--out", str(out)], env=env)
    assert first.exit_code == 0, first.output
    record = RunRecord.load(out)
    client = ModelerClient(curator.url, bowl["token"])
    assert client.session(record.session_id).status == "closed"  # the run ended: its session is closed
    assert f"session {record.session_id} closed" in said(first.output)

    same = runner.invoke(app, ["run", "--release", release, "-T", "3", "--out", str(out)], env=env)
    assert same.exit_code == 0, same.output
    assert (f"the run in {out} is finished: 3 of T = 3 queries made, 3 measured" in said(same.output)
            and f"give a larger -T: pobo-modeler run --release {release} -T 13 --out {out}" in said(same.output))
    assert len(RunRecord.load(out).queries) == 3  # nothing was asked

    more = runner.invoke(app, ["run", "--release", release, "-T", "5", "--out", str(out)], env=env)
    assert more.exit_code == 0, more.output
    assert "finished run of 3 queries: continuing it to T = 5" in said(more.output)
    extended = RunRecord.load(out)
    assert len(extended.done()) == 5 and extended.session_id == record.session_id
    assert [q.query_id for q in extended.queries[:3]] == [q.query_id for q in record.queries]
    assert client.session(record.session_id).status == "closed"


def test_sessions_are_listed_and_a_run_is_rebuilt_from_the_server_without_its_file(curator, bowl, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "lost.json"
    assert runner.invoke(app, ["run", "--release", str(bowl["release"].id), "-T", "2", "--out", str(out)],
                         env=env).exit_code == 0
    lost = RunRecord.load(out)
    out.unlink()
    listed = runner.invoke(app, ["sessions", "--release", str(bowl["release"].id)], env=env)
    assert listed.exit_code == 0, listed.output
    [line] = [line for line in listed.output.splitlines() if line.split()[:1] == [str(lost.session_id)]]
    assert line.split()[1:5] == [str(bowl["release"].id), "closed", "2", "2"]

    rebuilt = tmp_path / "rebuilt.json"
    result = runner.invoke(app, ["resume", str(rebuilt), "--session", str(lost.session_id), "--iterations", "4"],
                           env=env)
    assert result.exit_code == 0, result.output
    assert f"rebuilt session {lost.session_id} from the server into {rebuilt}: 2 of T = 2 queries made" in \
        said(result.output)
    record = RunRecord.load(rebuilt)
    assert record.session_id == lost.session_id and len(record.done()) == 4
    assert [(q.query_id, q.value) for q in record.queries[:2]] == [(q.query_id, q.value) for q in lost.queries]


def test_row_indices_are_whole_numbers_in_range_or_refused_with_a_sentence(curator, bowl, tmp_path):
    client = ModelerClient(curator.url, bowl["token"])
    session = RemoteSession.start(client, bowl["release"].id, tmp_path / "r.json", RunSettings(iterations=3))
    n = bowl["release"].n
    with pytest.raises(ValueError, match=rf"^index 1.5 is not a whole number; a row index is one of 0, 1, …, {n - 1}"):
        session.evaluate([1.5])
    with pytest.raises(ValueError, match=rf"^index -1 is out of range: the release has {n} rows, numbered 0 to "
                                         rf"{n - 1} \(negative indices do not count from the end\)"):
        session.evaluate([-1])
    assert session.record.queries == [] and client.queries(session.record.session_id) == []  # nothing was sent
    assert session.evaluate([np.int64(4), 7.0]).shape == (2,)


def test_z_is_named_by_the_features_under_the_identity_projection(curator, lab):
    pytest.importorskip("pandas")
    client = ModelerClient(curator.url, lab["token"])
    release = RemoteRelease(client, lab["release"].id)
    assert release.metadata.projection == "identity"
    frame = release.to_dataframe()
    assert list(frame.columns) == ["dose", "age"] and frame.shape == (30, 2)
    assert release.describe()["evaluator_kind"] == "manual"
    shown = runner.invoke(app, ["info", "--release", str(release.id)], env={"POBO_URL": curator.url,
                                                                            "POBO_TOKEN": lab["token"]})
    text = said(shown.output)
    assert "measured by hand in a lab: a query stays pending until someone measures the row" in text
    assert "features dose, age" in text


def test_optunas_ask_and_tell_names_drive_pobos_gp_ucb(curator, bowl, tmp_path):
    from modeler_client.batch import GPBUCBProposer, Study

    client = ModelerClient(curator.url, bowl["token"])
    release = RemoteRelease(client, bowl["release"].id)
    session = RemoteSession.start(client, release.id, tmp_path / "s.json", RunSettings(iterations=4))
    study = Study(GPBUCBProposer(release.Z, release.metadata, session.record.settings))
    first, second = study.ask(), study.ask()  # both pending: the second is chosen with the first hallucinated
    assert (first.number, second.number) == (0, 1) and first.index != second.index
    for trial, value in zip((first, second), session.evaluate([first.index, second.index])):
        study.tell(trial, value)
    third = study.ask()
    study.tell(third, session.evaluate([third.index])[0])
    assert third.index not in (first.index, second.index) and len(session.record.done()) == 3
    with pytest.raises(ValueError, match="was not asked by this study or was told already"):
        study.tell(third, 1.0)


def test_plot_importance_ranks_the_feature_the_answers_depend_on(curator, tmp_path):
    rng = np.random.default_rng(11)
    X = rng.uniform(0, 1, size=(120, 3))
    y = np.sin(5 * X[:, 1])  # only "pressure" matters
    dataset = curator.register_table("importance", X, ["temperature", "pressure", "time"],
                                     evaluator={"kind": "column", "column": "y"}, budget=(2000.0, 1e-3),
                                     extra_columns={"y": y},
                                     scaling={"kind": "bounds", "lower": [0, 0, 0], "upper": [1, 1, 1], "diameter": 1})
    # ε large enough that the released inputs are nearly exact: the ranking then tests the fit, not the input noise
    release = curator.create_release(dataset.id, "gaussian", 1000.0, 1e-5, dim=3, seed=4)  # research mode: one draw
    token = curator.issue_key([release.id], max_queries=100).token
    env = {"POBO_URL": curator.url, "POBO_TOKEN": token}
    out = tmp_path / "run.json"
    assert runner.invoke(app, ["run", "--release", str(release.id), "-T", "40", "--out", str(out)],
                         env=env).exit_code == 0
    result = runner.invoke(app, ["plot", str(out), "--importance"], env=env)
    assert result.exit_code == 0, result.output
    ranked = [line.split() for line in result.output.splitlines() if line.split()[:1] in (["temperature"],
                                                                                           ["pressure"], ["time"])]
    assert [row[0] for row in ranked][0] == "pressure" and ranked[0][1] == "1.00", result.output
    assert all(float(row[1]) < 0.5 for row in ranked[1:]), result.output
    assert (tmp_path / "run-importance.png").read_bytes()[:4] == b"\x89PNG"
    from modeler_client.notebook import importance_figure

    figure = importance_figure(RemoteRelease(ModelerClient(curator.url, token), release.id), RunRecord.load(out))
    [axes] = figure.axes
    assert [label.get_text() for label in axes.get_yticklabels()][-1] == "pressure"  # the longest bar on top
