"""The remote loop against a real curator: it optimises, follows the goal, resumes exactly, never pays twice."""

from __future__ import annotations

import numpy as np
import pytest

from modeler_client.client import ModelerClient
from modeler_client.loop import RemoteGPUCB
from modeler_client.runfile import InFlight, RunRecord, RunSettings
from shared.api.schemas import ReleaseOut


class Crash(Exception):
    """Stands for the modeler's process dying at a chosen moment."""


def crash_after(answers: int):
    def handler(event) -> None:
        if event.kind == "answer" and len(event.record.done()) == answers:
            raise Crash

    return handler


def charged(client, curator, bowl) -> int:
    """Queries charged to the fixture's key so far (the curator's view of the key)."""
    with curator.admin() as admin:
        return next(k["used_queries"] for k in admin.get("/v1/keys") if bowl["release"].id in k["release_ids"])


def test_json_pages_and_npy_give_the_same_inputs(bowl, curator):
    client = ModelerClient(curator.url, bowl["token"])
    Z = client.inputs(bowl["release"].id)
    assert Z.shape == (150, 2)
    np.testing.assert_array_equal(client.inputs(bowl["release"].id, binary=False, page_size=40), Z)


@pytest.mark.parametrize("goal", ["maximize", "minimize"])
def test_the_loop_finds_the_best_row_in_the_direction_of_the_goal(curator, tmp_path, goal):
    rng = np.random.default_rng(5)
    X = rng.uniform(-3, 3, size=(120, 2))
    bowl = 5.0 - np.sum((X - 1.0) ** 2, axis=1)
    y = bowl if goal == "maximize" else -bowl
    dataset = curator.register_table(f"bowl-{goal}", X, ["a", "b"], evaluator={"kind": "column", "column": "y"},
                                     budget=(5.0, 1e-3), scaling={"kind": "identity"}, extra_columns={"y": y},
                                     goal=goal)
    release = curator.create_release(dataset.id, "po-gp-ucb", 1.0, 1e-5, dim=2, seed=2)
    assert release.goal == goal
    client = ModelerClient(curator.url, curator.issue_key([release.id], 100).token)
    # 30 of 120 rows: under every row order tried (the curator permutes rows at registration) it finds the peak
    record = RemoteGPUCB.start(client, release.id, RunSettings(iterations=30), tmp_path / "run.json").run()
    sign = 1.0 if goal == "maximize" else -1.0
    queried = sign * np.array([q.value for q in record.done()])
    # Within 1.5% of the value range of the goal's best row; a loop going the wrong way would end ~29 (the range)
    # below it. Not asserted: the queries' median above the table's. The first pick is the argmax of a flat prior,
    # i.e. the first row of the curator's secret order, which no test can seed, and the path from it varies: over 20
    # fresh orders (2026-11-27) that margin ranged 0.16–4.17 (p10 0.49) and it failed in 2 of ~10 runs on 2026-11-24.
    assert np.max(queried) > np.max(sign * y) - 0.5
    curve = record.best_so_far()
    assert np.all(np.diff(curve) >= 0) if goal == "maximize" else np.all(np.diff(curve) <= 0)


# Crashing at 4 answers (between refits at 2 and 5) checks the refit schedule; at 5 (right after one) the warm start.
@pytest.mark.parametrize("crash_at", [4, 5])
def test_a_resumed_run_makes_exactly_the_choices_of_an_uninterrupted_one(bowl, curator, tmp_path, crash_at):
    client = ModelerClient(curator.url, bowl["token"])
    settings = RunSettings(iterations=10, refit_every=3)
    charged_before = charged(client, curator, bowl)
    whole = RemoteGPUCB.start(client, bowl["release"].id, settings, tmp_path / "whole.json").run()
    broken = RemoteGPUCB.start(client, bowl["release"].id, settings, tmp_path / "broken.json",
                               on_event=crash_after(crash_at))
    with pytest.raises(Crash):
        broken.run()
    assert len(RunRecord.load(tmp_path / "broken.json").done()) == crash_at
    resumed = RemoteGPUCB.resume(client, tmp_path / "broken.json").run()
    assert [q.index for q in resumed.queries] == [q.index for q in whole.queries]
    # The refits see the same observations at the same moments and warm-start from the same fit (the run file's
    # last; without it a CI run's resumed refit found another optimum, noise variance 6.7e-5 against 2.3e-4). The
    # optima agree to the optimizer's tolerance, not bit for bit: L-BFGS-B stops at a relative change of 1e-6, and
    # numpy's SIMD reductions may differ in the last bits with the arrays' memory alignment (7e-7 seen in CI).
    assert [h["observations"] for h in resumed.hyperparameter_history] == \
        [h["observations"] for h in whole.hyperparameter_history]
    for again, first in zip(resumed.hyperparameter_history, whole.hyperparameter_history, strict=True):
        assert again.keys() == first.keys()
        for name in first:  # the lengthscale is a list: one per dimension
            assert np.ravel(again[name]) == pytest.approx(np.ravel(first[name]), rel=1e-4)
    assert len(client.queries(resumed.session_id)) == 10
    assert charged(client, curator, bowl) - charged_before == 20  # two runs of 10, none paid twice


@pytest.mark.parametrize("in_flight", [True, False])
def test_resume_recovers_answers_the_server_stored_but_the_run_file_lost(bowl, curator, tmp_path, in_flight):
    client = ModelerClient(curator.url, bowl["token"])
    path = tmp_path / "run.json"
    charged_before = charged(client, curator, bowl)
    record = RemoteGPUCB.start(client, bowl["release"].id, RunSettings(iterations=4), path).run()
    # The process died after the server answered query 4 but before the run file recorded it.
    lost = record.queries.pop()
    record.finished = False
    record.settings.iterations = 6
    if in_flight:
        record.in_flight = InFlight(iteration=lost.iteration, request_id=lost.request_id, indices=[lost.index])
    record.save(path)
    events = []
    resumed = RemoteGPUCB.resume(client, path, on_event=events.append).run()
    assert resumed.queries[3].query_id == lost.query_id and resumed.queries[3].value == lost.value
    assert [q.iteration for q in resumed.queries] == [1, 2, 3, 4, 5, 6]
    assert any(e.kind == "recovered" for e in events)
    assert len(client.queries(resumed.session_id)) == 6
    assert charged(client, curator, bowl) - charged_before == 6  # the lost answer was not paid for again


def test_without_requery_the_loop_never_pays_for_a_row_twice(bowl, curator, tmp_path):
    """A noisy model re-queries the best row when allowed to (Algorithm 2 as published); the release says its
    answers repeat (a noise-free column), so by default every query goes to a new row, also across a resume."""
    client = ModelerClient(curator.url, bowl["token"])
    assert bowl["release"].answers_repeat
    settings = RunSettings(iterations=24, hyperparameters="fixed", lengthscale=1.0, noise_variance=4.0)
    repeats = RemoteGPUCB.start(client, bowl["release"].id, settings, tmp_path / "repeats.json", requery=True).run()
    assert len({q.index for q in repeats.queries}) < 24
    broken = RemoteGPUCB.start(client, bowl["release"].id, settings, tmp_path / "fresh.json", on_event=crash_after(10))
    with pytest.raises(Crash):
        broken.run()
    fresh = RemoteGPUCB.resume(client, tmp_path / "fresh.json").run()
    assert len({q.index for q in fresh.queries}) == 24


def test_a_private_measurement_release_sets_the_loops_noise_floor_and_no_repeats_by_itself(curator, tmp_path):
    """With no options the loop takes σ_y from the release's metadata and never pays twice for a row (its
    memoised ỹ cannot change), where a model this noisy would keep re-querying its best row."""
    rng = np.random.default_rng(9)
    X = rng.uniform(0, 4, size=(60, 2))
    y = -np.sum((X - 2.0) ** 2, axis=1)
    dataset = curator.register_table("private-y", X, ["a", "b"], evaluator={"kind": "column", "column": "y"},
                                     budget=(10.0, 1e-3), extra_columns={"y": y},
                                     scaling={"kind": "bounds", "lower": [0, 0], "upper": [4, 4], "diameter": 1})
    # Seeded (research mode), so the ỹ the loops see is one draw.
    body = {"mechanism": "gaussian", "epsilon": 4.0, "delta": 1e-5, "measurements": {"clip": [-8, 0], "share": 0.5},
            "seed": 0}
    with curator.admin() as admin:
        release = admin.post(f"/v1/datasets/{dataset.id}/releases", body, model=ReleaseOut)
    client = ModelerClient(curator.url, curator.issue_key([release.id], max_queries=40).token)
    settings = RunSettings(iterations=20, hyperparameters="fixed", lengthscale=1.0, noise_variance=4.0)
    loop = RemoteGPUCB.start(client, release.id, settings, tmp_path / "run.json")
    assert loop.surrogate_options["measurement_noise_std"] == release.measurement_noise_std > 0
    record = loop.run()
    assert len({q.index for q in record.queries}) == 20
    repeats = RemoteGPUCB.start(client, release.id, settings, tmp_path / "repeats.json", requery=True).run()
    # What the default saves: this model pays again for rows it has measured (how many depends on the secret row
    # order, drawn anew at each registration)
    assert len({q.index for q in repeats.queries}) < 20
