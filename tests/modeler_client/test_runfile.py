"""Run files: atomic saves that survive a crash mid-write, merging of server answers, derived curves."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import numpy as np
import pytest

from modeler_client.runfile import InFlight, RunRecord, RunSettings
from shared.api.schemas import QueryResult, ReleaseOut


def make_record(goal: str = "maximize", optimum: float | None = None, signal_std: float | None = None) -> RunRecord:
    release = ReleaseOut(id=3, dataset_id=1, mechanism="gaussian", certified=True, epsilon=1.0, delta=1e-5, n=10,
                         dim=2, noise_std=0.5, goal=goal, created_at=datetime.now(UTC))
    return RunRecord(run_id="r", url="http://x", release_id=3, session_id=9, release=release,
                     settings=RunSettings(iterations=5, optimum=optimum, signal_std=signal_std))


def answers(*pairs, start: int = 1) -> list[QueryResult]:
    return [QueryResult(query_id=start + k, index=i, status="done" if v is not None else "pending", value=v)
            for k, (i, v) in enumerate(pairs)]


def test_save_then_load_round_trips(tmp_path):
    record = make_record()
    record.merge(answers((4, 1.5), (2, None)))
    record.in_flight = InFlight(iteration=3, request_id="r-3", indices=[7])
    record.save(tmp_path / "run.json")
    loaded = RunRecord.load(tmp_path / "run.json")
    assert loaded.queries == record.queries and loaded.in_flight == record.in_flight
    assert loaded.release == record.release


def test_a_crash_during_save_leaves_the_previous_file_intact_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    record = make_record()
    record.merge(answers((1, 2.0)))
    record.save(path)
    before = path.read_bytes()
    record.merge(answers((5, 9.0), start=2))

    def crash(src, dst):
        raise OSError("disk pulled out")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        record.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_merge_appends_new_query_ids_and_updates_known_ones():
    record = make_record()
    assert record.merge(answers((4, 1.0), (6, None))) == 2
    assert [q.iteration for q in record.queries] == [1, 2] and len(record.pending()) == 1
    assert record.merge(answers((4, 1.0), (6, 3.5))) == 0  # pending answered: updated, not duplicated
    assert [q.value for q in record.queries] == [1.0, 3.5] and record.pending() == []


def test_best_so_far_and_regret_follow_the_goal():
    maximise = make_record(optimum=10.0, signal_std=2.0)
    maximise.merge(answers((0, 3.0), (1, 1.0), (2, 8.0)))
    np.testing.assert_array_equal(maximise.best_so_far(), [3.0, 3.0, 8.0])
    np.testing.assert_array_equal(maximise.simple_regret(), [3.5, 3.5, 1.0])
    minimise = make_record(goal="minimize", optimum=0.5)
    minimise.merge(answers((0, 3.0), (1, 1.0), (2, 8.0)))
    np.testing.assert_array_equal(minimise.best_so_far(), [3.0, 1.0, 1.0])
    assert minimise.best().index == 1
    np.testing.assert_array_equal(minimise.simple_regret(), [2.5, 0.5, 0.5])
    assert make_record().simple_regret() is None


def test_load_refuses_files_that_are_not_run_files(tmp_path):
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not a pobo run file"):
        RunRecord.load(tmp_path / "other.json")
