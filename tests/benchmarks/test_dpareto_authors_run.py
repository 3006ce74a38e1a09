"""benchmarks/dpareto_authors.py end to end on a small Adult problem (slow: real DP-SGD trainings)."""

import sys
from pathlib import Path

import pytest

from shared.datasets.paths import DatasetUnavailable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
authors = pytest.importorskip("dpareto_authors")


@pytest.mark.slow
def test_a_seed_runs_the_authors_dpareto_then_random_from_the_same_start():
    settings = {"model": "SVM+SGD", "k0": 4, "k": 2, "train_rows": 400, "runs_per_point": 2, "conversion": "classic",
                "noise_domain": "authors", "anti_ideal": [10.0, 1.0]}
    try:
        bo, rs = authors.run_seed(3, settings, ["dpareto", "random"], "authors")
    except DatasetUnavailable as missing:
        pytest.skip(f"Adult absent: {missing}")
    assert (bo["method"], rs["method"], bo["acquisition"]) == ("dpareto", "random", "authors")
    assert len(bo["result"]["evaluations"]) == len(rs["result"]["evaluations"]) == 6
    assert [e["params"] for e in rs["result"]["evaluations"][:4]] == [e["params"] for e in
                                                                     bo["result"]["evaluations"][:4]]
    # The shared start is trained once: random's first four evaluations are memoised lookups, with DPareto's answers.
    assert all(e["seconds"] < 0.05 for e in rs["result"]["evaluations"][:4])
    assert [(e["epsilon"], e["error"]) for e in rs["result"]["evaluations"][:4]] == [
        (e["epsilon"], e["error"]) for e in bo["result"]["evaluations"][:4]]
    for e in bo["result"]["evaluations"][4:]:
        assert 1 <= e["params"]["epochs"] <= 64 and e["params"]["epochs"] == round(e["params"]["epochs"])
        assert 0.1 <= e["params"]["noise_multiplier"] <= 16
    summary = authors.summarise([bo, rs, *authors.run_seed(4, settings, ["dpareto", "random"], "authors")])
    assert summary["difference"]["seeds"] == [3, 4]
