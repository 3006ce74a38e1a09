"""GP-UCB's step on a GPU (the torch engine, shared/gp/torch_posterior.py): ms a step beside the card's read bound,
the picks beside the CPU engine's, and BoTorch's discrete UCB step on the same card as the peer. One process.

1. The card's read rate: a torch sum over a large float64 tensor (bytes read / s, best of 5).
2. GP-UCB with fixed SE hyperparameters (the paper's synthetic GP, benchmarks/gp_ucb_problem.py) at
   n = 10⁶ (r = 20, T = 100) and 10⁷ (r = 20, T = 100) in float64, and 10⁸ (T = 50) in float64 if it fits the
   card, else float32 (warned): ms a step (the mean of the T steps, V reserved for T) beside the bound, the
   bytes a step must move, b·n·(t + r + 5) with b bytes a number, at the read rate; their ratio.
3. The same runs by the CPU engine (Numba, ``--cpu-workers`` threads) at 10⁶ and 10⁷: its ms a step and how
   many of the T picks agree (float64 must agree on all of them).
4. BoTorch's ``optimize_acqf_discrete`` with ``UpperConfidenceBound`` (same β_t) on a ``SingleTaskGP`` with the
   same fixed hyperparameters and noise, on the same device, over the 10⁶ candidates, after the observations
   our run made: ms a step with its default ``max_batch_size`` (2048) and a tuned one (131,072), its picks
   beside ours, and the ratio of its step to ours.

``--smoke`` runs every part at a tiny size on whatever device is there (torch's CPU build too), to check the
script end to end. Prints a table and writes benchmarks/results/gpu_step.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
import warnings

import numpy as np
import torch

# isort: split
import harness  # after numpy and torch, as speed_gp_ucb imports it (its --threads sets the BLAS threads)
from gp_ucb_problem import COMPULSORY_VECTORS, DELTA, LENGTHSCALE, NOISE_VARIANCE, SIGNAL_VARIANCE, projected_problem

from shared.gp.ucb import GPUCB, gp_ucb_beta

TUNED_BATCH = 131_072


def synchronize(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def read_rate(device: str, megabytes: int) -> float:
    """Bytes read a second by ``torch.sum`` over a float64 tensor of ``megabytes`` (best of 5)."""
    x = torch.ones(megabytes * 2**20 // 8, dtype=torch.float64, device=device)
    best = np.inf
    for _ in range(6):  # the first one warms up
        synchronize(device)
        start = time.perf_counter()
        x.sum().item()
        best = min(best, time.perf_counter() - start)
    return x.numel() * 8 / best


def gp_ucb(Z: np.ndarray, f: np.ndarray, T: int, **options) -> tuple[list[int], float]:
    """T GP-UCB steps (suggest, observe): the picks and the mean seconds a step (the build not counted)."""
    engine = GPUCB(Z, lengthscale=LENGTHSCALE, signal_variance=SIGNAL_VARIANCE, noise_variance=NOISE_VARIANCE,
                   delta=DELTA, reserve=T, **options)
    picks, seconds = [], 0.0
    for _ in range(T):
        start = time.perf_counter()
        i = engine.suggest()
        engine.observe(i, f[i])  # the pick is a host integer: every step ends synchronised
        seconds += time.perf_counter() - start
        picks.append(i)
    return picks, seconds / T


def fits_in_float64(n: int, r: int, T: int, device: str) -> bool:
    """Whether V (T rows), the scaled candidates (r + 1), μ, σ² and a step's temporaries fit the device in float64."""
    if torch.device(device).type != "cuda":
        return True
    free, _ = torch.cuda.mem_get_info()
    chunk = min(n, 1 << 22)
    return 8 * (n * (T + r + 3) + chunk * (T / 2 + 30)) < 0.95 * free


def botorch_steps(Z: np.ndarray, f: np.ndarray, picks: list[int], steps: int, device: str,
                  max_batch_size: int) -> tuple[list[int], float]:
    """BoTorch's discrete UCB step after each of our first ``steps`` observations: its picks and mean seconds a
    step (model built, acquisition over all candidates; fixed hyperparameters, fixed noise, no transforms)."""
    from botorch.acquisition import UpperConfidenceBound
    from botorch.models import SingleTaskGP
    from botorch.optim import optimize_acqf_discrete
    from gpytorch.kernels import RBFKernel, ScaleKernel

    choices = torch.as_tensor(Z, dtype=torch.float64, device=device)
    theirs, seconds = [], 0.0
    for t in range(1, steps + 1):
        observed = picks[:t]
        synchronize(device)
        start = time.perf_counter()
        train_X = choices[observed]
        train_Y = torch.as_tensor(f[observed], dtype=torch.float64, device=device)[:, None]
        model = SingleTaskGP(train_X, train_Y, train_Yvar=torch.full_like(train_Y, NOISE_VARIANCE),
                             covar_module=ScaleKernel(RBFKernel()), outcome_transform=None)
        model.covar_module.base_kernel.lengthscale = LENGTHSCALE
        model.covar_module.outputscale = SIGNAL_VARIANCE
        model.mean_module.constant.data.fill_(0.0)
        model.eval()
        acquisition = UpperConfidenceBound(model, beta=gp_ucb_beta(t + 1, len(Z), DELTA))
        with torch.no_grad():
            best, _ = optimize_acqf_discrete(acquisition, q=1, choices=choices, max_batch_size=max_batch_size)
        synchronize(device)
        seconds += time.perf_counter() - start
        theirs.append(int(torch.nonzero((choices == best).all(dim=1))[0]))
    return theirs, seconds / steps


def agreement(ours: list[int], theirs: list[int]) -> str:
    same = sum(a == b for a, b in zip(ours, theirs))
    first = next((t for t, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    return f"{same}/{len(theirs)}" + ("" if first is None else f" (first differs at step {first + 1})")


def measure(device: str, sizes: list[tuple[int, int, int, bool]], bandwidth_mb: int, botorch_counts: tuple[int, int],
            cpu_workers: int, skip: set[str], smoke: bool = False) -> dict:
    """Parts 1–4 for each (n, r, T, beside the CPU engine) of ``sizes`` (BoTorch at the first size); ``smoke``
    runs the last size in float32, the path a 10⁸ run takes when float64 does not fit."""
    started = time.perf_counter()
    rate = read_rate(device, bandwidth_mb)
    engine = GPUCB(np.zeros((1, 1)), lengthscale=1.0, signal_variance=1.0, noise_variance=1.0, delta=0.5, device=device)
    results: dict = {"device": engine.engine.rsplit(",", 1)[0], "read_bytes_per_second": rate, "runs": [],
                     "host": platform.node(), "cpu_workers": cpu_workers,
                     "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                              text=True).stdout.strip()}
    print(f"device {results['device']}; read rate {rate / 1e9:.0f} GB/s (torch.sum over {bandwidth_mb} MiB of float64)")
    for n, r, T, compare in sizes:
        Z, f = projected_problem(n, r, seed=0)
        last_in_smoke = smoke and (n, r, T, compare) == sizes[-1]
        precision = "float64" if fits_in_float64(n, r, T, device) and not last_in_smoke else "float32"
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # float32's warning is printed, not swallowed
            picks, seconds = gp_ucb(Z, f, T, device=device, precision=precision)
        size = 8 if precision == "float64" else 4
        bound = float(np.mean([size * n * (t + r + COMPULSORY_VECTORS) for t in range(T)])) / rate
        run = {"n": n, "r": r, "T": T, "precision": precision, "ms_per_step": seconds * 1e3, "bound_ms": bound * 1e3,
               "ratio_to_bound": seconds / bound, "picks": picks}
        if compare and "cpu" not in skip:
            cpu_picks, cpu_seconds = gp_ucb(Z, f, T, workers=cpu_workers)
            run |= {"cpu_ms_per_step": cpu_seconds * 1e3, "picks_as_cpu": agreement(cpu_picks, picks),
                    "identical_picks": cpu_picks == picks}
        if n == sizes[0][0] and "botorch" not in skip:
            for label, batch, steps in [("default", 2048, botorch_counts[0]),
                                        ("tuned", TUNED_BATCH, botorch_counts[1])]:
                theirs, botorch_seconds = botorch_steps(Z, f, picks, steps, device, batch)
                run[f"botorch_{label}"] = {"max_batch_size": batch, "steps": steps,
                                           "ms_per_step": botorch_seconds * 1e3,
                                           "picks_as_ours": agreement(picks[1 : steps + 1], theirs),
                                           "ratio_to_ours": botorch_seconds / seconds}
        results["runs"].append(run)
        del Z, f
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()
    results["seconds"] = time.perf_counter() - started
    return results


def print_table(results: dict) -> None:
    print(f"\n{results['device']}, read rate {results['read_bytes_per_second'] / 1e9:.0f} GB/s; host "
          f"{results['host']}, commit {results['commit'][:7]}")
    print(f"| n | r | T | precision | ms a step | read bound ms | ratio | CPU engine ms ({results['cpu_workers']} "
          "threads) | picks = CPU engine's | BoTorch default ms (ratio) | BoTorch tuned ms (ratio), picks = ours |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in results["runs"]:
        botorch = [f"{b['ms_per_step']:.1f} ({b['ratio_to_ours']:.0f}×)" for b in
                   (run.get("botorch_default"), run.get("botorch_tuned")) if b]
        if len(botorch) == 2:
            botorch[1] += f", {run['botorch_tuned']['picks_as_ours']}"
        print(f"| {run['n']:,} | {run['r']} | {run['T']} | {run['precision']} | {run['ms_per_step']:.2f} | "
              f"{run['bound_ms']:.2f} | {run['ratio_to_bound']:.2f}× | {run.get('cpu_ms_per_step', float('nan')):.1f} "
              f"| {run.get('picks_as_cpu', '—')} | {' | '.join(botorch) if botorch else '— | —'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on any device: checks the script end to end")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cpu-workers", type=int, default=os.cpu_count(), help="threads of the CPU engine")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: 1e8, cpu, botorch")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if args.smoke:
        sizes = [(4_000, 5, 12, True), (20_000, 5, 8, True), (40_000, 5, 6, False)]
        bandwidth_mb, botorch_counts = 64, (2, 4)
    else:
        sizes = [(10**6, 20, 100, True), (10**7, 20, 100, True), (10**8, 20, 50, False)]
        bandwidth_mb, botorch_counts = 4096, (3, 10)
    if "1e8" in skip:
        sizes = sizes[:2]
    results = measure(args.device, sizes, bandwidth_mb, botorch_counts, args.cpu_workers, skip, smoke=args.smoke)
    print_table(results)
    print(f"\nwhole run {results['seconds']:.0f} s; wrote {harness.write_json('gpu_step', results, quick=args.smoke)}")


if __name__ == "__main__":
    main()
