"""Parameter importance on a release that is mostly noise and on one that is not: how often the full ARD fit ranks
the feature the value depends on first, how often the half-sample intervals set it apart, and how often the
warnings of :func:`shared.gp.importance.importance_warnings` fire (docs/modeler_client.md, "Parameter importance").

300 rows uniform in [0, 1]³ scaled to the unit-diameter box, the value sin(5·dose) (dose only), an identity
``gaussian_release`` with seeded noise, and answers at rows drawn at random (not GP-UCB's picks: this measures the
importance, not the optimiser). Writes ``benchmarks/results/importance_noise_<date>_<commit>.json``.
"""

from __future__ import annotations

import argparse
import subprocess
from datetime import UTC, datetime

import harness
import numpy as np

from shared.dp.noise import SeededNoise
from shared.gp.importance import importance_intervals, importance_warnings
from shared.releases import gaussian_release
from shared.releases.noise_ratio import noise_to_spread

NAMES = ["dose", "age", "weight"]


def case(epsilon: float, answers: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(300, 3)) / np.sqrt(3.0)
    y = np.sin(5.0 * np.sqrt(3.0) * X[:, 0])
    release = gaussian_release(X, epsilon, 1e-5, 3, np.random.default_rng(seed + 10),
                               noise=SeededNoise(np.random.default_rng(seed + 20)), projection="identity")
    rows = rng.choice(300, answers, replace=False)
    found = importance_intervals(release.Z[rows], y[rows], np.ptp(release.Z, axis=0))  # the CLI's default seed
    ratio = noise_to_spread(release.noise_std, d=3, r=3, projection="identity", box_diameter=1.0)
    warnings = importance_warnings(NAMES, found, answers, ratio)
    return {"epsilon": epsilon, "answers": answers, "seed": seed, "noise_to_spread": ratio.value,
            "first": NAMES[int(np.argmax(found.relative))], "dose_first_share": float(found.first_share[0]),
            "dose_apart": bool(found.low[0] > max(found.high[1:])), "warnings": warnings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    harness.add_quick(parser, "2 seeds")
    args = parser.parse_args()
    seeds = 2 if args.quick else args.seeds
    cases = [case(epsilon, answers, seed) for epsilon, answers in ((1.0, 40), (1.0, 200), (2000.0, 80))
             for seed in range(seeds)]
    summary = []
    for epsilon, answers in ((1.0, 40), (1.0, 200), (2000.0, 80)):
        group = [c for c in cases if (c["epsilon"], c["answers"]) == (epsilon, answers)]
        line = {"epsilon": epsilon, "answers": answers, "runs": len(group),
                "noise_to_spread": group[0]["noise_to_spread"],
                "dose_ranked_first": sum(c["first"] == "dose" for c in group),
                "dose_interval_apart": sum(c["dose_apart"] for c in group),
                "warned": sum(bool(c["warnings"]) for c in group),
                "warned_mostly_noise": sum(any("mostly noise" in w for w in c["warnings"]) for c in group)}
        summary.append(line)
        print(line)
    commit = subprocess.run(["git", "-C", str(harness.REPOSITORY), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    name = f"importance_noise_{datetime.now(UTC):%Y-%m-%d}_{commit}"
    print(harness.write_json(name, {"summary": summary, "cases": cases}, quick=args.quick))


if __name__ == "__main__":
    main()
