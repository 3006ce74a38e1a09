"""A cancelled dp-bo job stops between its grid fits (up to 200 learner fits of seconds each), not after all of
them (audit G2): the kind's ``run`` with a real context whose cancel flag is already set."""

from __future__ import annotations

import numpy as np
import pytest

from curator_service.jobs import DatasetInfo, JobContext
from curator_service.jobs.outcomes import JobCancelled
from curator_service.persistence.blobs import RawTable
from curator_service.services.job_kinds import KINDS, dp_bo
from shared.api.schemas import ScalingSpec
from shared.dp.noise import SeededNoise

N, FEATURES = 200, ("a", "b")


def test_a_cancelled_dp_bo_job_fits_nothing_more(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(N, 2))
    raw = RawTable({"a": X[:, 0], "b": X[:, 1], "label": (X.sum(axis=1) > 1.0).astype(float)}, FEATURES)
    info = DatasetInfo(id=1, n=N, d=2, columns=tuple(raw.columns), numeric_columns=tuple(raw.columns),
                       feature_columns=FEATURES, evaluator={"kind": "manual"},
                       scaling=ScalingSpec(kind="bounds", lower=[0.0, 0.0], upper=[1.0, 1.0]))
    params = {"label_column": "label", "log10_lambda": np.linspace(-4, 1, 9).tolist(), "iterations": 6,
              "epsilon": 0.5, "delta": 1e-5}
    kind = KINDS["dp-bo"]
    epsilon, delta = kind.cost(kind.parse(params), info)
    fits = []
    real_split = dp_bo.split_task

    def counted_split(*args, **kwargs):  # counts the learner's fits; the task itself is the real one
        task = real_split(*args, **kwargs)
        fit = task.at_log10
        monkeypatch.setattr(task, "at_log10", lambda value: fits.append(value) or fit(value))
        return task

    monkeypatch.setattr(dp_bo, "split_task", counted_split)
    ctx = JobContext(job_id=1, params=kind.parse(params), dataset=info, table=raw, epsilon=epsilon, delta=delta,
                     noise=SeededNoise(np.random.default_rng(1)), rng=np.random.default_rng(2),
                     progress=lambda fraction, message=None: None, cancelled=lambda: True)
    with pytest.raises(JobCancelled):
        kind.run(ctx)
    assert fits == []  # a kind that looked at the flag only between grid points would fit all 9 first
