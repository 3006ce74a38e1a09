"""The BoTorch and Optuna examples against a real curator.

Skipped when the optional extra is absent, except on CI (``CI=true``), whose `.ci/run` installs both extras
(torch's CPU build): there a missing extra is a failure, so the examples cannot silently go untested.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from modeler_client.batch import run_batched
from modeler_client.client import ModelerClient
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import RunRecord, RunSettings
from tests.conftest import missing_on_ci

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def require(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        missing_on_ci(f"{module} is not installed: pip install '.[{module}]'"
                      + (" (or make install-botorch: torch's CPU build)" if module == "botorch" else ""))


def run_example(name: str, bowl, curator, tmp_path, *args: str) -> tuple[RunRecord, str]:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "POBO_URL": curator.url, "POBO_TOKEN": bowl["token"], "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(EXAMPLES / f"{name}.py"), "--release", str(bowl["release"].id), "--out", str(out),
               *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "best" in result.stdout and bowl["token"] not in out.read_text()
    return RunRecord.load(out), result.stdout


def assert_charged_once_per_row(record: RunRecord, curator, bowl, T: int) -> None:
    assert record.finished and len(record.done()) == T
    assert len({q.index for q in record.queries}) == T  # the adapters never ask a row twice
    with ModelerClient(curator.url, bowl["token"]) as client:
        server = client.queries(record.session_id)
    assert sorted(q.query_id for q in server) == sorted(q.query_id for q in record.queries)


def test_botorch_example_runs_q_batch_ucb_over_the_released_rows(bowl, curator, tmp_path):  # 25-50 s: torch's import
    require("botorch")
    record, _ = run_example("botorch_discrete", bowl, curator, tmp_path, "-T", "8", "--batch", "4")
    assert_charged_once_per_row(record, curator, bowl, 8)
    assert record.settings.optimizer == "botorch-ucb"
    assert len({q.request_id for q in record.queries}) == 2  # two requests of four rows


def test_optuna_example_runs_a_study_over_the_released_rows(bowl, curator, tmp_path):
    require("optuna")
    record, printed = run_example("optuna_study", bowl, curator, tmp_path, "-T", "12", "--batch", "3")
    assert_charged_once_per_row(record, curator, bowl, 12)
    assert printed.startswith("12 trials for 12 queries; best")  # one trial per query, no proposal trials
    best = record.best()
    assert best.value > np.median(bowl["y"])  # better than a typical row after 12 of 150


def test_optuna_trials_sit_at_the_measured_rows_released_coordinates(bowl, curator, tmp_path):
    require("optuna")
    from optuna.trial import TrialState

    from modeler_client.adapters.optuna_study import OptunaProposer

    with ModelerClient(curator.url, bowl["token"]) as client:
        release = RemoteRelease(client, bowl["release"].id)
        session = RemoteSession.start(client, release.id, tmp_path / "o.json", RunSettings(iterations=6, batch=2))
        proposer = OptunaProposer(release.Z, seed=3)
        record = run_batched(session, proposer)
    complete = [t for t in proposer.study.trials if t.state == TrialState.COMPLETE]
    assert len(proposer.study.trials) == len(complete) == len(record.queries) == 6
    assert sorted(t.user_attrs["row"] for t in complete) == sorted(q.index for q in record.done())
    for trial in complete:  # the sampler learns f over Z itself, not over row numbers
        np.testing.assert_array_equal(list(trial.params.values()), release.Z[trial.user_attrs["row"]])
        value = next(q.value for q in record.done() if q.index == trial.user_attrs["row"])
        assert trial.value == value
