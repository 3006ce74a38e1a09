"""benchmarks/dpareto_authors.py's summary pairs runs by seed; benchmarks/dpareto_report.py renders it beside the
paper's Table 2."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
authors = pytest.importorskip("dpareto_authors")
report = pytest.importorskip("dpareto_report")

SETTINGS = {"model": "SVM+SGD", "k0": 2, "k": 1, "train_rows": 8000, "runs_per_point": 1, "conversion": "classic",
            "noise_domain": "authors", "anti_ideal": [10.0, 1.0]}


def _run(method, seed, points):
    evaluations = [{"params": {"x": float(i)}, "epsilon": e, "error": r, "seconds": 0.1} for i, (e, r) in
                   enumerate(points)]
    return {"method": method, "seed": seed, "settings": SETTINGS, "result": {"problem": "svm_sgd",
                                                                            "evaluations": evaluations},
            "wall_seconds": 10.0, "cpu_seconds": 5.0}


# Hypervolumes against (10, 1): one point (e, r) dominates (10 − e)(1 − r).
RUNS = [_run("dpareto", 0, [(1.0, 0.5)]), _run("random", 0, [(2.0, 0.5)]),  # 4.5 vs 4.0
        _run("dpareto", 1, [(0.0, 0.5), (5.0, 0.0)]), _run("random", 1, [(0.0, 0.5)]),  # 5 + 2.5 = 7.5 vs 5.0
        _run("dpareto", 2, [(2.0, 0.5)]), _run("random", 2, [(1.0, 0.5)])]  # 4.0 vs 4.5


def test_summary_pairs_the_hypervolumes_by_seed_with_a_t_interval():
    summary = authors.summarise(RUNS)
    assert summary["dpareto"]["hypervolumes"] == pytest.approx([4.5, 7.5, 4.0])
    assert summary["random"]["hypervolumes"] == pytest.approx([4.0, 5.0, 4.5])
    d = summary["difference"]
    assert d["values"] == pytest.approx([0.5, 2.5, -0.5])
    values = np.array([0.5, 2.5, -0.5])
    half = stats.t.ppf(0.975, 2) * values.std(ddof=1) / np.sqrt(3)
    assert (d["mean"], d["ci_low"], d["ci_high"]) == pytest.approx((values.mean(), values.mean() - half,
                                                                    values.mean() + half))
    assert (d["dpareto_ahead"], d["random_ahead"]) == (2, 1)
    assert summary["paper"]["difference"] == 0.282


def test_summary_refuses_runs_of_two_settings():
    other = dict(_run("random", 3, [(1.0, 0.5)]), settings={**SETTINGS, "k": 5})
    with pytest.raises(ValueError, match="different settings"):
        authors.summarise([*RUNS, other])


def _write(tmp_path, name, summary):
    path = tmp_path / name
    path.write_text(json.dumps(summary))
    return path


def test_rendered_comparison_carries_the_numbers_and_the_paper_value(tmp_path):
    summary = {**authors.summarise(RUNS), "timing": {"wall_seconds": 4200.0, "note": "2 workers"}}
    path = _write(tmp_path, "dpareto_authors_2026-12-05_abc1234.json", summary)
    text = report.render_comparison(path)
    assert "**+0.833** (95% CI" in text
    assert f"{summary['difference']['ci_low']:+.3f} to {summary['difference']['ci_high']:+.3f}" in text
    assert "DPareto ahead on 2 of 3 seeds" in text
    assert "**+0.282** (0.161, 0.402)" in text
    assert "| DPareto hypervolume, mean (3 seeds) | 5.333 |" in text
    assert "70 min (2 workers)" in text
    differences = report.render_differences(path)
    assert "| BO iterations | 256 | 1 |" in differences
    assert "| trainings per point | 10 | 1 |" in differences
    assert "| training rows | 30,956 | 8,000 |" in differences


def test_sections_read_the_newest_summary(tmp_path, monkeypatch):
    older = _write(tmp_path, "dpareto_authors_2026-12-04_aaaaaaa.json", authors.summarise(RUNS[:4]))
    newer = _write(tmp_path, "dpareto_authors_2026-12-05_bbbbbbb.json", authors.summarise(RUNS))
    os.utime(older, (2e9, 2e9))  # a later mtime does not beat a later date
    _write(tmp_path, "dpareto_authors_2026-12-06_ccccccc_dpareto_random.jsonl", {})  # the runs, not a summary
    assert report.newest_summary(tmp_path) == newer
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    assert "of 3 seeds" in report.render_comparison()
