"""benchmarks/bo_quality.py's statistics: paired contrasts over the seeds both methods ran, the suite's regret
normalised by random search's, and parts combined with a later run replacing an earlier one."""

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bo_quality


def line(problem, method, seed, final, T=50):
    regret = np.linspace(2.0, final, T).tolist()
    return dict(problem=problem, n=100, d=2, method=method, seed=seed, regret=regret, indices=list(range(T)),
                seconds=[0.01], fits=1, at_bound=0, lengthscale_at_bound=0, noise_at_bound=0)


def test_a_paired_contrast_uses_only_the_seeds_both_methods_ran():
    lines = [line("p", "pobo default", s, 0.1 * s) for s in range(5)]
    lines += [line("p", "BoTorch default", s, 0.1 * s + 0.2) for s in range(3)]  # two seeds fewer
    summary = bo_quality.summarise(lines, 50)
    contrast = bo_quality.paired(summary, "pobo default", "BoTorch default", "50")
    assert contrast["seeds"] == 3
    assert contrast["difference"] == pytest.approx(-0.2) and contrast["se"] == pytest.approx(0.0, abs=1e-12)
    assert contrast["holds"]
    worse = bo_quality.paired(summary, "BoTorch default", "pobo default", "50")
    assert worse["difference"] == pytest.approx(0.2) and not worse["holds"]


def test_the_suite_divides_by_random_search_on_the_same_problem():
    lines = []
    for problem, random_final, pobo_final in (("a", 1.0, 0.5), ("b", 4.0, 1.0)):
        for seed in range(3):
            lines += [line(problem, "random", seed, random_final), line(problem, "pobo default", seed, pobo_final),
                      line(problem, "BoTorch default", seed, random_final)]
    results = bo_quality.results_of(lines, 50)
    suite = bo_quality.normalised(results, ("pobo default", "BoTorch default"), "50")
    assert suite["per_problem"]["a"]["pobo default"] == pytest.approx(0.5)
    assert suite["per_problem"]["b"]["pobo default"] == pytest.approx(0.25)
    assert suite["mean"] == pytest.approx({"pobo default": 0.375, "BoTorch default": 1.0})


def test_a_later_part_replaces_an_earlier_run_of_the_same_problem_method_and_seed(tmp_path):
    older, newer = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    older.write_text("\n".join(json.dumps(x) for x in [{"commit": "a"}, line("p", "pobo default", 0, 0.9),
                                                          line("p", "random", 0, 1.0)]))
    newer = tmp_path / "new.jsonl.gz"  # a finished part kept gzipped
    newer.write_bytes(gzip.compress("\n".join(json.dumps(x) for x in [{"commit": "b"},
                                                                       line("p", "pobo default", 0, 0.1)]).encode()))
    runs, parts = bo_quality.read_runs([older, newer])
    assert [p["commit"] for p in parts] == ["a", "b"]
    finals = {r["method"]: r["regret"][-1] for r in runs}
    assert finals == {"pobo default": pytest.approx(0.1), "random": pytest.approx(1.0)}
