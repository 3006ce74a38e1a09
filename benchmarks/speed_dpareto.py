"""Speed of DPareto's proposals, beside the paper's 45 s / 272 and the previous code in the same run.

The paper (Avent et al. 2020, §4.3) reports ~45 s of DPareto overhead for a whole run: fitting the GPs to
16 seed points and proposing 256 more, i.e. 45 / 272 = 0.165 s a point. Three measurements, each made by
this code and by the previous code (``--baseline``, a git ref checked out as a worktree under build/
by :func:`harness.run_at` and imported in a subprocess, so no old code is kept here):

1. One proposal at t = 256 observed points of a synthetic 4-D problem (a fresh proposer, so the
   hyperparameters are searched from all starts; the current code also times a warm proposal, which in a
   run is 7 of every 8). The proposals of the two codes are compared.
2. A whole run on the paper's SVT problem (cheap oracle): 16 + 256 evaluations, the DPareto overhead per
   point (the paper's measure) and the final hypervolume.
3. Quality: the hypervolume after 16 + 64 evaluations on SVT over ``--seeds`` seeds, both codes, so speed
   is not bought with worse fronts.

Times are process CPU seconds (the machine is shared; wall time is printed too); a run's overhead is its
CPU time less the oracle's. Writes
benchmarks/results/speed_dpareto.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import harness  # first: pins BLAS to one thread
import numpy as np
from scipy.special import expit

PAPER_SECONDS_PER_POINT = 45.0 / 272


def observations(t: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """t points of the unit cube and their (ε, error) objectives: a smooth ε in [0.01, 10] and a
    classification error in (0, 1), like DP-SGD's over (epochs, lot size, learning rate, noise)."""
    rng = np.random.default_rng(seed)
    U = rng.random((t, d))
    epsilon = np.exp(np.log(0.01) + np.log(1000.0) * (0.6 * U[:, 0] + 0.4 * U[:, 3] ** 2))
    error = expit(1.5 - 2.0 * U[:, 0] + np.sin(3.0 * U[:, 1]) - U[:, 2] * U[:, 3] + 0.05 * rng.normal(size=t))
    return U, np.column_stack([epsilon, error])


class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> dict[str, float]:
        return {"wall": time.perf_counter() - self.wall, "cpu": time.process_time() - self.cpu}


def measure(spec: dict) -> dict:
    """The three measurements with whichever ``shared`` is first on sys.path (this tree or the baseline)."""
    from shared.algorithms.dpareto.optimizer import HVPoIProposer, dpareto
    from shared.algorithms.dpareto.problems import svt_problem

    U, points = observations(spec["points"] + 1, 4, seed=0)
    proposer = HVPoIProposer(4, (10.0, 1.0), np.random.default_rng(1))
    clock = Clock()
    first = proposer.propose(U[:-1], points[:-1])
    fresh = clock.read()
    clock = Clock()
    proposer.propose(U, points)  # one more point: the next proposal of a run
    following = clock.read()

    svt = svt_problem()
    oracle_cpu = []

    def timed_oracle(params: dict, oracle=svt.oracle) -> tuple[float, float]:
        start = time.process_time()
        try:
            return oracle(params)
        finally:
            oracle_cpu.append(time.process_time() - start)

    svt.oracle = timed_oracle
    clock = Clock()
    run = dpareto(svt, initial_points=16, iterations=spec["iterations"], rng=0)
    run_time = clock.read()
    quality = [dpareto(svt, initial_points=16, iterations=64, rng=seed).hypervolume() for seed in range(spec["seeds"])]
    return {
        "fresh_proposal": fresh, "following_proposal": following, "proposal": first.tolist(),
        "run_points": 16 + spec["iterations"],
        "run_overhead_cpu_seconds": run_time["cpu"] - sum(oracle_cpu[:16 + spec["iterations"]]),
        "run_overhead_wall_seconds": float(np.sum(run.overhead_seconds)), "run_hypervolume": run.hypervolume(),
        "run_overhead_wall_last_16": float(np.mean(run.overhead_seconds[-16:])),
        "quality_hypervolumes": quality,
    }


def baseline(ref: str, spec: dict) -> dict:
    """:func:`measure` on the code at ``ref``."""
    return harness.run_at(ref, __file__, "--measure", json.dumps(spec))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=256, help="t of the single proposal (default 256)")
    parser.add_argument("--iterations", type=int, default=256, help="proposals of the whole run (default 256)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the quality check (default 5)")
    parser.add_argument("--baseline", default="68ecd30", help="git ref of the previous code (default: 68ecd30)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the subprocess's own entry
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    harness.add_quick(parser, "t = 64, a run of 16 + 32, 2 seeds")
    args = parser.parse_args()
    if args.measure:
        sys.path.insert(0, args.tree)  # before the harness's repository root: the baseline's shared
        print(json.dumps(measure(json.loads(args.measure))))
        return
    spec = {"points": 64, "iterations": 32, "seeds": 2} if args.quick else \
        {"points": args.points, "iterations": args.iterations, "seeds": args.seeds}
    new = measure(spec)
    old = baseline(args.baseline, spec)

    def per_point(result: dict, clock: str = "cpu") -> float:
        return result[f"run_overhead_{clock}_seconds"] / result["run_points"]

    t = spec["points"]
    print(f"DPareto overhead (CPU seconds; one BLAS thread; previous code = {args.baseline}):")
    print(f"  one proposal at t = {t}, fresh (all starts): previous {old['fresh_proposal']['cpu']:.3f} s, "
          f"now {new['fresh_proposal']['cpu']:.3f} s; the following (warm) proposal: previous "
          f"{old['following_proposal']['cpu']:.3f} s, now {new['following_proposal']['cpu']:.3f} s")
    print(f"    the two codes' proposals differ by {np.abs(np.subtract(new['proposal'], old['proposal'])).max():.3g} "
          "(sup norm, unit cube)")
    print(f"  whole SVT run of {new['run_points']} points, overhead (all but the oracle) a point: previous "
          f"{per_point(old):.3f} s CPU ({per_point(old, 'wall'):.3f} s wall), now {per_point(new):.3f} s CPU "
          f"({per_point(new, 'wall'):.3f} s wall); paper {PAPER_SECONDS_PER_POINT:.3f} s (45 s / 272)")
    print(f"    the last 16 proposals, wall: previous {old['run_overhead_wall_last_16']:.3f} s each, now "
          f"{new['run_overhead_wall_last_16']:.3f} s")
    print(f"    final hypervolume: previous {old['run_hypervolume']:.4f}, now {new['run_hypervolume']:.4f}")
    q_old, q_new = np.array(old["quality_hypervolumes"]), np.array(new["quality_hypervolumes"])
    print(f"  quality, SVT 16 + 64 over {len(q_new)} seeds: previous {q_old.mean():.4f} ± {q_old.std(ddof=1):.4f}, "
          f"now {q_new.mean():.4f} ± {q_new.std(ddof=1):.4f} (mean ± sd; per seed now − previous: "
          f"{np.round(q_new - q_old, 4).tolist()})")
    path = harness.write_json("speed_dpareto", {
        "baseline": args.baseline, "spec": spec, "paper_seconds_per_point": PAPER_SECONDS_PER_POINT,
        "now": new, "previous": old, "now_cpu_seconds_per_point": per_point(new),
        "previous_cpu_seconds_per_point": per_point(old),
    }, quick=args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
