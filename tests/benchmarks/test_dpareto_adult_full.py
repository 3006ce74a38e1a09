"""benchmarks/dpareto_adult_full.py: per seed, random search starts from DPareto's initial points, and the
difference is paired by seed."""

import sys
from pathlib import Path

import pytest

from shared.datasets.paths import DatasetUnavailable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
full = pytest.importorskip("dpareto_adult_full")


@pytest.mark.slow
def test_runs_share_their_initial_points_and_the_summary_pairs_them_by_seed():
    try:
        runs = {method: {str(seed): full.run(method, seed, "SVM+SGD", 3, 2, "objective", 400) for seed in (0, 1)}
                for method in ("dpareto", "random")}
    except DatasetUnavailable as missing:
        pytest.skip(f"Adult absent: {missing}")
    for seed in ("0", "1"):
        bo, rs = runs["dpareto"][seed], runs["random"][seed]
        assert len(bo["evaluations"]) == 5 and len(rs["evaluations"]) == 2
        assert [e["params"] for e in rs["evaluations"]] == [e["params"] for e in bo["evaluations"][:2]]
        assert bo["wall_seconds"] > 0 and bo["cpu_seconds"] > 0
    summary = full.summarise(runs)
    assert summary["difference"]["seeds"] == [0, 1]
    assert summary["difference"]["values"] == pytest.approx(
        [runs["dpareto"][s]["hypervolume"] - runs["random"][s]["hypervolume"] for s in ("0", "1")])
    assert summary["dpareto"]["ci_low"] <= summary["dpareto"]["mean"] <= summary["dpareto"]["ci_high"]
