"""A cancel stops a DP-SGD training that is already running (last session's audit: the job was marked
cancelled at once, but dp-tune's final training and every piece on the cluster ran to their last epoch), in the
job's own thread and in pieces on the cluster's workers; without a cancel the trainings run to their end.

The kinds here are module-level functions (a kind travels to the worker process by reference to this module); they
write what the worker saw into files, the only channel from a worker process back to the test.
"""

from __future__ import annotations

import math
import time
import traceback
from functools import partial
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from curator_service.jobs import JobContext
from curator_service.jobs.outcomes import JobCancelled
from curator_service.services.job_kinds import dp_tune
from shared.api.jobs import DpTuneParams
from shared.dp.noise import SeededNoise
from shared.learners import DPLogisticRegression
from shared.learners.dpsgd import STOP_CHECK_ROWS
from tests.curator_service.conftest import dataset_spec, synthetic_table, table_csv, upload
from tests.jobs.test_engine import submit, use, wait

DEADLINE = 300.0  # generous: a loaded machine is slow, and only a failing test waits this long


def appeared(*paths: Path) -> list[str]:
    deadline = time.monotonic() + DEADLINE
    while not all(path.exists() for path in paths):
        assert time.monotonic() < deadline, [path.name for path in paths if not path.exists()]
        time.sleep(0.05)
    time.sleep(0.1)  # each file is written in one call; let it land
    return [path.read_text() for path in paths]


# --- dp-tune's final training, in the job's thread ----------------------------------------------------------------


class RecordedTuneParams(DpTuneParams):
    record: str  # where the kind below writes what it saw


class TrainingsParams(BaseModel):
    record: str
    epochs: int


def tune_saying_where_it_stopped(ctx: JobContext):
    """The real dp-tune kind; it marks the end of the candidates × parts (``<record>.parts``) and writes the frames
    of the JobCancelled that ends it (``<record>``)."""
    record = Path(ctx.params.record)
    parts_map = ctx.map

    def map_then_mark(fn, items, progress=None):
        results = parts_map(fn, items, progress)
        record.with_suffix(".parts").touch()
        return results

    ctx.map = map_then_mark
    try:
        return dp_tune.run(ctx)
    except JobCancelled as exc:
        record.write_text("\n".join(f"{Path(frame.filename).name}:{frame.name}"
                                    for frame in traceback.extract_tb(exc.__traceback__)))
        raise


def test_a_cancel_stops_dp_tunes_final_training_where_it_is(client, monkeypatch, tmp_path):
    """The selected candidate's final training on all rows (the noise calibration, then 100 epochs of 1,350 steps:
    some 40 s on the loaded test machine) is under way when the cancel comes: it stops inside it, not after the
    last epoch."""
    use(monkeypatch, "tune-recorded", tune_saying_where_it_stopped, cost=dp_tune.cost, params=RecordedTuneParams)
    X, y = synthetic_table(1500, seed=4)
    dataset = upload(client, table_csv(X, (y > np.median(y)).astype(float)),
                     dataset_spec(budget={"epsilon": 1000.0, "delta": 1e-3})).json()
    record = tmp_path / "stopped"
    params = {
        "record": str(record), "label_column": "y", "k": 2, "test_fraction": 0.1, "seed": 7,
        # One iteration at ϵ = 100 accepts the candidate whatever the secret row order (its noise scale is 0.02 and
        # any part's accuracy is far above the threshold u0 + g = 0.1), so the final training runs.
        "epsilon": 100.0, "max_iterations": 1, "u0": 0.0, "g": 0.1,
        "final_epsilon": 10.0, "final_delta": 1e-5, "evaluation_epsilon": 0.1,
        "candidates": [{"learning_rate": 0.05, "batch_size": 1, "epochs": 100, "clip_norm": 1.0}],
    }
    job = submit(client, "tune-recorded", dataset["id"], params).json()
    appeared(record.with_suffix(".parts"))  # the parts are done: selection, calibration, then the final training
    asked = time.monotonic()
    assert client.post(f"/v1/jobs/{job['id']}/cancel").status_code == 200
    assert wait(client, job["id"], timeout=DEADLINE)["status"] == "cancelled"
    frames = appeared(record)[0].splitlines()
    print(f"the final training stopped {time.monotonic() - asked:.2f} s after the cancel")
    # Stopped by a stop check inside the final training (the calibration's or DP-SGD's), not after it.
    assert frames[-2:] == ["stopping.py:check_stop", "__init__.py:check_cancelled"], frames
    assert frames[frames.index("dptune.py:tune_and_train") + 1] in ("dptune.py:private_learner", "dpsgd.py:fit"), frames


# --- pieces on the cluster ---------------------------------------------------------------------------------------


def training_data(n=1000):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, 3)) / 2
    return X, (X.sum(axis=1) > 0.75).astype(int)


def train(epochs, seed):
    """A DP-SGD training at batch 1 (1,000 steps an epoch), its lots and noise seeded by ``seed``."""
    X, y = training_data()
    model = DPLogisticRegression(learning_rate=0.1, batch_size=1, epochs=epochs, noise_multiplier=1.0, clip_norm=1.0)
    model.fit(X, y, SeededNoise(seed), rng=np.random.default_rng(seed))
    return [*model.coef_.tolist(), model.intercept_]


def recorded_training(record, epochs, seed):
    """A piece: :func:`train`, writing ``<record>-<seed>.started`` first and how it ended to ``<record>-<seed>``."""
    ended = Path(f"{record}-{seed}")
    ended.with_suffix(".started").touch()
    try:
        model = train(epochs, seed)
    except JobCancelled:
        ended.write_text("stopped")
        raise
    ended.write_text("finished")
    return model


def trainings_on_the_cluster(ctx: JobContext):
    """Two trainings as pieces on the cluster, then one in the job's thread, whose stop checks it counts (each
    reads the job's cancel flag, ``ctx.cancelled``)."""
    pieces = ctx.map(partial(recorded_training, ctx.params.record, ctx.params.epochs), [1, 2])
    checks = []
    flag = ctx.cancelled
    ctx.cancelled = lambda: checks.append(1) or flag()
    return {"pieces": pieces, "own": train(ctx.params.epochs, 3), "checks": len(checks)}


def test_a_cancel_stops_the_trainings_running_as_pieces_on_the_cluster(client, monkeypatch, tmp_path):
    """Two pieces of 600 epochs (~55 s each on a quiet core) run on the two workers when the job is cancelled: both
    stop inside their training instead of running to their last epoch in the background."""
    use(monkeypatch, "trainings", trainings_on_the_cluster, params=TrainingsParams)
    record = tmp_path / "piece"
    job = submit(client, "trainings", params={"record": str(record), "epochs": 600}).json()
    appeared(*(Path(f"{record}-{seed}.started") for seed in (1, 2)))
    asked = time.monotonic()
    assert client.post(f"/v1/jobs/{job['id']}/cancel").status_code == 200
    assert wait(client, job["id"], timeout=DEADLINE)["status"] == "cancelled"
    assert appeared(*(Path(f"{record}-{seed}") for seed in (1, 2))) == ["stopped", "stopped"]
    print(f"both pieces stopped {time.monotonic() - asked:.2f} s after the cancel")


def test_without_a_cancel_the_trainings_run_to_their_end(client, monkeypatch, tmp_path):
    """The positive control: 5 epochs in each piece and in the job's thread end as they would alone (the same
    weights), and the job's own training consulted its cancel flag every 256 steps."""
    use(monkeypatch, "trainings", trainings_on_the_cluster, params=TrainingsParams)
    record = tmp_path / "piece"
    job = submit(client, "trainings", params={"record": str(record), "epochs": 5}).json()
    done = wait(client, job["id"], timeout=DEADLINE)
    assert done["status"] == "succeeded", done
    assert appeared(*(Path(f"{record}-{seed}") for seed in (1, 2))) == ["finished", "finished"]
    assert done["result"]["pieces"] == [train(5, 1), train(5, 2)]
    assert done["result"]["own"] == train(5, 3)
    assert done["result"]["checks"] == math.ceil(5 * 1000 / STOP_CHECK_ROWS)
