"""Speed of one DPareto proposal at t = 256 observed points: the ARD gradient with and without the fusion.

A proposal fits the two Matérn-5/2 ARD surrogates by marginal likelihood (L-BFGS-B, one restart plus the
previous optimum) and maximises HVPoI. Each likelihood gradient used to contract W = ααᵀ − K⁻¹ with the
d n × n matrices ∂K/∂log l_j built from an n × n × d tensor; ``FusedGradient`` contracts without them
(2 (x²)ᵀ M 1 − 2 xᵀ M x per dimension). Both paths run here on the same data and seeds: the old one by
hiding the fusion from the fitter (``regression.FusedGradient`` set to a class no kernel is), which makes
it contract the kernel's ∂K exactly as before. The paper reports 45 s for 272 proposals (0.17 s each).

Data: U uniform in [0, 1]^d (d = 4: DP-SGD's epochs, lot size, learning rate, noise), objectives a smooth
ε in [0.01, 10] and a classification error in (0, 1). Writes benchmarks/results/speed_dpareto.json.
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import harness  # noqa: I001  (first: pins BLAS to one thread)
import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

from shared.algorithms.dpareto.optimizer import HVPoIProposer  # noqa: E402
from shared.gp import regression  # noqa: E402

PAPER_SECONDS_PER_PROPOSAL = 45.0 / 272


def observations(t: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """t points of the unit cube and their (ε, error) objectives."""
    rng = np.random.default_rng(seed)
    U = rng.random((t, d))
    epsilon = np.exp(np.log(0.01) + np.log(1000.0) * (0.6 * U[:, 0] + 0.4 * U[:, 3] ** 2))
    error = expit(1.5 - 2.0 * U[:, 0] + np.sin(3.0 * U[:, 1]) - U[:, 2] * U[:, 3] + 0.05 * rng.normal(size=t))
    return U, np.column_stack([epsilon, error])


def seconds_per_proposal(U: np.ndarray, points: np.ndarray, proposals: int, seed: int) -> tuple[float, np.ndarray]:
    """Mean seconds of ``proposals`` proposals by a fresh proposer (so every one fits from the same start)."""
    picks, started = [], time.perf_counter()
    for k in range(proposals):
        proposer = HVPoIProposer(U.shape[1], (10.0, 1.0), np.random.default_rng(seed + k))
        picks.append(proposer.propose(U, points))
    return (time.perf_counter() - started) / proposals, np.array(picks)


class _NoKernel:
    """A class no kernel is an instance of: the fitter falls back to contracting ∂K."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=256, help="t, the observed points (default 256)")
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--proposals", type=int, default=3, help="proposals timed per path")
    harness.add_quick(parser, "t = 64, one proposal per path")
    args = parser.parse_args()
    t, proposals = (64, 1) if args.quick else (args.points, args.proposals)
    U, points = observations(t, args.dim, seed=0)

    fused, fused_picks = seconds_per_proposal(U, points, proposals, seed=1)
    with mock.patch.object(regression, "FusedGradient", _NoKernel):
        tensor, tensor_picks = seconds_per_proposal(U, points, proposals, seed=1)
    largest_pick_difference = float(np.abs(fused_picks - tensor_picks).max())

    print(f"DPareto proposal at t = {t}, d = {args.dim} ({proposals} proposals per path, one BLAS thread):")
    print(f"  n x n x d tensor (old): {tensor:.3f} s per proposal")
    print(f"  fused gradient (new):   {fused:.3f} s per proposal  ({tensor / fused:.1f}x faster)")
    print(f"  paper: {PAPER_SECONDS_PER_PROPOSAL:.3f} s per proposal (45 s / 272); "
          f"largest difference between the two paths' proposals: {largest_pick_difference:.2g}")
    path = harness.write_json("speed_dpareto", {
        "points": t, "dim": args.dim, "proposals": proposals, "tensor_seconds_per_proposal": tensor,
        "fused_seconds_per_proposal": fused, "speedup": tensor / fused,
        "paper_seconds_per_proposal": PAPER_SECONDS_PER_PROPOSAL,
        "largest_pick_difference": largest_pick_difference,
    }, quick=args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
