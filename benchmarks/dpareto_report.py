"""Markdown for docs/dpareto.md from the results of ``benchmarks/dpareto_authors.py``: the DPareto − random
hypervolume difference (authors' acquisition) beside the paper's Table 2, and what the run differs from the paper in.

``benchmarks/report.py`` renders both into docs/dpareto.md from the newest summary
``benchmarks/results/dpareto_authors_<date>_<commit>.json`` (or the one passed as ``path``) and cites it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SUMMARY = re.compile(r"^dpareto_authors_(\d{4}-\d{2}-\d{2})_([0-9a-f]+)\.json$")


def newest_summary(results: Path | None = None) -> Path:
    """The newest summary in ``results`` (default :data:`RESULTS`) by the date in its name, then by modification
    time."""
    results = results if results is not None else RESULTS
    found = [p for p in results.glob("dpareto_authors_*.json") if SUMMARY.match(p.name)]
    if not found:
        raise FileNotFoundError(f"no dpareto_authors_<date>_<commit>.json in {results}: run "
                                "benchmarks/dpareto_authors.py summarise first")
    return max(found, key=lambda p: (SUMMARY.match(p.name).group(1), p.stat().st_mtime))


def _load(path: Path | None) -> tuple[dict, Path]:
    path = Path(path) if path is not None else newest_summary()
    return json.loads(path.read_text()), path


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def render_comparison(path: Path | None = None) -> str:
    """DPareto (authors' acquisition) − random, paired by seed, beside the paper's Table 2 value."""
    summary, path = _load(path)
    s, paper = summary["settings"], summary["paper"]
    rows = ["| | this run | paper (Table 2, SVM+SGD) |", "|---|---|---|"]
    rows.append(f"| points per run | {s['k0']} + {s['k']} (random: {s['k0'] + s['k']}, its first {s['k0']} shared) | "
                f"{paper['k0']} + {paper['k']} (random: {paper['random_repetitions']} × {paper['k']}) |")
    rows.append(f"| training rows / trainings per point | {s['train_rows']:,} / {s['runs_per_point']} | "
                f"{paper['authors_train_rows']:,} / {paper['runs_per_point']} |")
    for method, label in (("dpareto", "DPareto hypervolume, mean"), ("random", "random hypervolume, mean")):
        if method in summary:
            values = summary[method]["hypervolumes"]
            rows.append(f"| {label} ({len(values)} seeds) | {sum(values) / len(values):.3f} | – |")
    low, high = paper["difference_ci"]
    if "difference" in summary:
        d = summary["difference"]
        ours = (f"**{d['mean']:+.3f}** (95% CI {d['ci_low']:+.3f} to {d['ci_high']:+.3f}; DPareto ahead on "
                f"{d['dpareto_ahead']} of {len(d['seeds'])} seeds)")
    else:
        ours = "fewer than two paired seeds"
    rows.append(f"| DPareto − random, paired by seed | {ours} | **{paper['difference']:+.3f}** "
                f"({low:.3f}, {high:.3f}) |")
    timing = summary.get("timing", {})
    if "wall_seconds" in timing:
        rows.append(f"| wall time of the run | {_minutes(timing['wall_seconds'])} ({timing.get('note', '')}) | – |")
    return "\n".join(rows)


def render_differences(path: Path | None = None) -> str:
    """What the run differs from the paper in, from the settings the results file records."""
    summary, _ = _load(path)
    s, paper = summary["settings"], summary["paper"]
    rows = ["| | paper / authors' code | this run |", "|---|---|---|",
            "| acquisition | GPflowOpt HVPoI on the GP-mean front, transformed and scaled space | the same "
            "(`acquisition=\"authors\"`) |",
            f"| BO iterations | {paper['k']} | {s['k']} |",
            f"| initial points | {paper['k0']} | {s['k0']} |",
            f"| trainings per point | {paper['runs_per_point']} | {s['runs_per_point']} |",
            f"| training rows | {paper['authors_train_rows']:,} | {s['train_rows']:,} |",
            "| data | LIBSVM a1a.t (30,956 rows) to train, a1a (1,605) to test | the first rows of adult.data to train "
            "(ε accounted for that many), adult.test (16,281) to test |",
            f"| random arm | {paper['random_repetitions']} repetitions of {paper['k']} against one DPareto run | "
            f"one run of {s['k0'] + s['k']} per seed, paired with that seed's DPareto run |",
            f"| anti-ideal point for the reported hypervolume | (10, 1) (code: (10, 0.999)) | "
            f"({s['anti_ideal'][0]:g}, {s['anti_ideal'][1]:g}) |"]
    return "\n".join(rows)
