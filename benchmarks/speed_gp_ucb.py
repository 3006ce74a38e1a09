"""Speed of the GP-UCB engine: our rank-one candidate posterior vs scikit-learn, in one process.

1. The same GP-UCB run (SE kernel, fixed hyperparameters, Algorithm 2's β_t) by ``shared.gp.ucb.GPUCB``
   and by scikit-learn's GaussianProcessRegressor (ConstantKernel(σ², fixed) · RBF(l, fixed),
   alpha = σ_n², optimizer=None) refitted and predicted with return_std=True every iteration, at
   n = 10,000 / r = 10 / T = 100 and n = 36,000 / r = 15 / T = 50: both times, the ratio, identical picks?
2. Our engine alone at n = 10⁶ / r = 20 / T = 100 and n = 10⁷ / r = 20 / T = 16, with 1 and 2 threads: time
   per iteration and peak memory, beside the memory-bandwidth bound of a step: the bytes it must move,
   8n(t + r + 5) — read the t × n posterior factor V, the r × n candidates, μ and σ²; write μ, σ² and V's new
   row — all at the bandwidth of a read-only stream (a dot product) measured here with as many threads on
   arrays far larger than the caches (STREAM's copy and triad are printed beside it), and the ratio of the
   two. Counting the three writes at the read rate keeps it a lower bound on the time: a write moves no
   faster than a read here (copy ≈ read, triad below it). The bound of commit 2f79f3e, V and the candidates only
   (8n(t + r)), is printed beside it. A step is one compiled pass (``CandidatePosterior.observe``);
   the engine is built with ``reserve=T``, so fresh memory is paid for in the build, not in the steps, and a
   small engine runs first (the process's one-time loading of the compiled pass and start of its threads). The
   previous engine (``--baseline``, from a git worktree) runs the same steps in a subprocess with as many
   threads.
3. The PO-GP-UCB transform (``shared.releases.po_gp_ucb_release``) at n = 10⁶ and 10⁷ × d = 10.
4. When torch sees a GPU: the torch engine on it at the large runs' sizes (float64), beside the card's read bound,
   with BoTorch's ``optimize_acqf_discrete`` UCB step on the same card as the peer (benchmarks/gpu_step.py's
   ``measure``), and whether its picks are the CPU engine's of part 2.

Data: benchmarks/gp_ucb_problem.py's ``projected_problem``. Writes
benchmarks/results/speed_gp_ucb.json and .png. ``--quick`` shrinks every size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

# isort: split
import harness  # after numpy on purpose: --threads sets BLAS threads, harness must not pin them
from gp_ucb_problem import COMPULSORY_VECTORS, DELTA, LENGTHSCALE, NOISE_VARIANCE, SIGNAL_VARIANCE, projected_problem
from rich.console import Console
from rich.progress import track
from rich.table import Table

ISSUE_SKLEARN_SECONDS, ISSUE_NUMPY_SECONDS = 1.7, 0.12  # the issue's reference numbers at n=36,000
console = Console(width=None if sys.stdout.isatty() else 150)


class Clock:
    """Wall-clock and process CPU seconds since creation (CPU time is less disturbed by other load)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def run_ours(Z: np.ndarray, f: np.ndarray, T: int, workers: int = 1,
             reserve: bool = False) -> tuple[list[int], tuple[float, float], list[tuple[float, float]]]:
    """GP-UCB for T steps: picks, (wall, CPU) seconds with building the engine, and each step's. With
    ``reserve`` the engine allocates (and touches) its factor for T observations when it is built."""
    clock = Clock()
    from shared.gp.ucb import GPUCB  # here: the previous code's subprocess puts its own tree first

    options = {"workers": workers} if workers > 1 else {}  # the previous code has neither option
    if reserve:
        options["reserve"] = T
    engine = GPUCB(
        Z, lengthscale=LENGTHSCALE, signal_variance=SIGNAL_VARIANCE, noise_variance=NOISE_VARIANCE, delta=DELTA,
        **options,
    )
    picks, step_times = [], []
    for _ in range(T):
        step = Clock()
        i = engine.suggest()
        engine.observe(i, f[i])
        picks.append(i)
        step_times.append(step.read())
    return picks, clock.read(), step_times


def run_sklearn(Z: np.ndarray, f: np.ndarray, T: int) -> tuple[list[int], tuple[float, float]]:
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from shared.gp.ucb import gp_ucb_beta

    kernel = ConstantKernel(SIGNAL_VARIANCE, "fixed") * RBF(LENGTHSCALE, "fixed")
    clock = Clock()
    picks: list[int] = []
    gp = GaussianProcessRegressor(kernel, alpha=NOISE_VARIANCE, optimizer=None)
    for t in range(1, T + 1):
        if picks:  # before any observation scikit-learn predicts from the prior
            gp = GaussianProcessRegressor(kernel, alpha=NOISE_VARIANCE, optimizer=None)
            gp.fit(Z[picks], f[picks])
        mean, std = gp.predict(Z, return_std=True)
        picks.append(int(np.argmax(mean + np.sqrt(gp_ucb_beta(t, len(Z), DELTA)) * std)))
    return picks, clock.read()


def step_bytes(n: int, r: int, t: np.ndarray, vectors: int = COMPULSORY_VECTORS) -> np.ndarray:
    """Bytes step t must move: t rows of V and r of the candidates read, plus ``vectors`` length-n vectors."""
    return 8.0 * n * (t + r + vectors)


def measure_bandwidth(megabytes: int, threads: int = 1) -> dict[str, tuple[float, float]]:
    """Bytes per second (wall, CPU of all threads), best of 5 on arrays far larger than the caches, each of
    ``threads`` threads on its own slice: ``read`` (b·c, a dot product: 16 bytes read an element, nothing
    written), STREAM's ``copy`` (a = b: 16 bytes an element) and ``triad`` (a = b + s·c: 24 bytes an
    element, in cache-sized chunks as numpy needs two passes), and the ``first touch`` of a fresh array.

    The bound uses ``read``, for writes too: a step mostly reads (t + r + 2 rows read, 3 written), a core's
    reads are limited by the cache misses it can keep in flight, which a copy's non-temporal stores do not
    use, so the copy moves more bytes a second (up to 1.3× here) than any read-only stream can; the
    triad, which writes a third of its bytes, moves fewer."""
    elements = megabytes * 2**20 // 8
    a, b, c = np.empty(elements), np.ones(elements), np.full(elements, 2.0)
    slices = [slice(k * elements // threads, (k + 1) * elements // threads) for k in range(threads)]
    chunk = 16384

    def copy(part: slice) -> None:
        np.copyto(a[part], b[part])

    def read(part: slice) -> None:
        np.dot(b[part], c[part])

    def triad(part: slice) -> None:
        for lo in range(part.start, part.stop, chunk):
            hi = min(lo + chunk, part.stop)
            out = np.multiply(c[lo:hi], 3.0, out=a[lo:hi])
            out += b[lo:hi]

    rates = {}
    with ThreadPoolExecutor(threads) as pool:
        fresh = Clock()  # the first write to fresh pages, which the OS zeroes and maps: what reserve= avoids
        np.empty(elements).fill(1.0)
        rates["first touch"] = tuple(8 * elements / np.array(fresh.read()))
        for name, kernel, moved in [("read", read, 16), ("copy", copy, 16), ("triad", triad, 24)]:
            best = np.array([np.inf, np.inf])
            for _ in range(5):
                clock = Clock()
                list(pool.map(kernel, slices))
                best = np.minimum(best, clock.read())
            rates[name] = (moved * elements / best[0], moved * elements / best[1])
    return rates


def compare_with_sklearn(n: int, r: int, T: int, seed: int, repeats: int) -> dict:
    """Both engines ``repeats`` times, alternating; the minimum time of each is the least disturbed by
    other load on the machine (as timeit does)."""
    Z, f = projected_problem(n, r, seed)
    ours_times, sklearn_times = [], []
    for _ in range(repeats):
        ours, ours_time, _ = run_ours(Z, f, T)
        theirs, sklearn_time = run_sklearn(Z, f, T)
        ours_times.append(ours_time)
        sklearn_times.append(sklearn_time)
    (ours_seconds, ours_cpu), (sklearn_seconds, sklearn_cpu) = np.min(ours_times, 0), np.min(sklearn_times, 0)
    first_difference = next((t for t, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    return {
        "n": n,
        "r": r,
        "T": T,
        "repeats": repeats,
        "ours_seconds": ours_seconds,
        "sklearn_seconds": sklearn_seconds,
        "speedup": sklearn_seconds / ours_seconds,
        "ours_cpu_seconds": ours_cpu,
        "sklearn_cpu_seconds": sklearn_cpu,
        "cpu_speedup": sklearn_cpu / ours_cpu,
        "all_wall_seconds": {"ours": [w for w, _ in ours_times], "sklearn": [w for w, _ in sklearn_times]},
        "identical_picks": ours == theirs,
        "first_differing_iteration": first_difference,
    }


def large_run(n: int, r: int, T: int, seed: int, bandwidth_megabytes: int, workers: int) -> dict:
    """Our engine alone (``workers`` threads; V reserved, so fresh memory is paid for when the engine is
    built, not in the steps): per-step time against the memory bound of the bytes a step must move (8 bytes
    a number: reads of the t × n factor V, the r × n candidates, μ and σ²; writes of μ, σ² and V's new row),
    at the read-only bandwidth of as many threads, measured right before and right after the steps, the faster
    of the two (under other load one measurement alone once set a bound the steps beat: 0.95×); and against
    commit 2f79f3e's bound, the reads of V and the candidates alone."""
    rates = measure_bandwidth(bandwidth_megabytes, workers)  # before the problem is built: the arrays are large
    # Once a process, not a step's cost: loading the compiled pass from numba's cache and starting the worker
    # threads (their stacks and allocator arenas), which cost the first step ~0.3 s (with --skip-comparison).
    run_ours(*projected_problem(8192 * workers, r, seed), 3, workers, reserve=True)
    Z, f = projected_problem(n, r, seed)
    tracemalloc.start()
    picks, (seconds, cpu_seconds), step_times = run_ours(Z, f, T, workers, reserve=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = measure_bandwidth(bandwidth_megabytes, workers)
    rates = {name: tuple(np.maximum(rates[name], after[name])) for name in rates}
    bandwidth = dict(zip(("wall", "cpu"), rates["read"]))
    bound, reads_bound = (
        {clock: float(np.mean(step_bytes(n, r, np.arange(T), extra)) / bandwidth[clock]) for clock in ("wall", "cpu")}
        for extra in (COMPULSORY_VECTORS, 0)
    )
    return {
        "n": n,
        "r": r,
        "T": T,
        "workers": workers,
        "picks": picks,
        "seconds": seconds,  # with building the engine (scaling the candidates, touching V), unlike the steps
        "build_seconds": seconds - sum(w for w, _ in step_times),
        "seconds_per_iteration": float(np.mean([w for w, _ in step_times])),
        "cpu_seconds": cpu_seconds,
        "cpu_seconds_per_iteration": float(np.mean([c for _, c in step_times])),
        "stream_bytes_per_second": {name: {"wall": w, "cpu": c} for name, (w, c) in rates.items()},
        "bandwidth_bytes_per_second": bandwidth,
        "step_wall_seconds": [w for w, _ in step_times],
        "step_cpu_seconds": [c for _, c in step_times],
        "bound_seconds_per_iteration": bound,
        "ratio_to_bound": {clock: float(np.mean(big_steps)) / bound[clock]
                           for clock, big_steps in zip(("wall", "cpu"), zip(*step_times))},
        "reads_only_bound_seconds_per_iteration": reads_bound,  # commit 2f79f3e's: V and the candidates read
        "ratio_to_reads_only_bound": {clock: float(np.mean(big_steps)) / reads_bound[clock]
                                      for clock, big_steps in zip(("wall", "cpu"), zip(*step_times))},
        "peak_engine_bytes": peak,
        "factor_bytes_at_T": 8 * n * T,
        "candidate_bytes": Z.nbytes,
        "best_value_found": float(f[picks].max()),
        "optimum": float(f.max()),
    }


def steps_only(n: int, r: int, T: int, seed: int, workers: int = 1) -> dict:
    """The large run's GP-UCB steps alone (what the previous code is measured on): like the large run's, with
    ``reserve`` and a warm-up engine first when the previous code has ``reserve`` (from commit 2f79f3e on), so an A/B
    against it compares the steps alone."""
    import inspect

    from shared.gp.ucb import GPUCB

    reserve = "reserve" in inspect.signature(GPUCB).parameters
    if reserve:
        run_ours(*projected_problem(8192 * workers, r, seed), 3, workers, reserve=True)
    Z, f = projected_problem(n, r, seed)
    picks, _, step_times = run_ours(Z, f, T, workers, reserve=reserve)
    return {"picks": picks, "seconds_per_iteration": float(np.mean([w for w, _ in step_times])),
            "cpu_seconds_per_iteration": float(np.mean([c for _, c in step_times]))}


def transform_run(n: int, d: int, r: int, seed: int) -> dict:
    from shared.releases import po_gp_ucb_release

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    epsilon, delta = float(np.exp(1.3)), 0.1 / n
    tracemalloc.start()
    clock = Clock()
    release = po_gp_ucb_release(X, epsilon, delta, r, rng)
    seconds, cpu_seconds = clock.read()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = {
        "n": n,
        "d": d,
        "r": r,
        "epsilon": epsilon,
        "delta": delta,
        "lifted": bool(release.lifted),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "peak_bytes": peak,
        "input_bytes": X.nbytes,
        "output_bytes": release.Z.nbytes,
    }
    del release, X
    return result


def gpu_rows(larges: list[tuple[int, int, int, int]], quick: bool, cpu_runs: list[dict]) -> dict | None:
    """Part 4 when torch sees a GPU (None otherwise), printed as gpu_step.py prints it."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    import gpu_step

    sizes = list(dict.fromkeys((n, r, T, False) for n, r, T, _ in larges))
    gpu = gpu_step.measure("cuda", sizes, 64 if quick else 4096, (2, 4) if quick else (3, 10), 1, {"cpu"})
    for run in gpu["runs"]:
        cpu = [big["picks"] for big in cpu_runs if (big["n"], big["T"]) == (run["n"], run["T"])]
        run["identical_picks"] = bool(cpu) and all(picks == run["picks"] for picks in cpu)
    gpu_step.print_table(gpu)
    console.print("GPU picks = the CPU engine's above: " + ", ".join(f"n = {run['n']:,}: {run['identical_picks']}"
                                                                   for run in gpu["runs"]))
    return gpu


def plot(results: dict, quick: bool) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    cmp = results["comparisons"]
    labels = [f"n={c['n']:,}\nr={c['r']}, T={c['T']}" for c in cmp]
    x = np.arange(len(cmp))
    ax1.bar(x - 0.2, [c["sklearn_seconds"] for c in cmp], 0.4, label="scikit-learn GPR (refit + predict)")
    ax1.bar(x + 0.2, [c["ours_seconds"] for c in cmp], 0.4, label="pobo GPUCB (rank-one)")
    for xi, c in zip(x, cmp):
        ax1.text(xi + 0.2, c["ours_seconds"], f"{c['speedup']:.0f}×", ha="center", va="bottom")
    ax1.set_xticks(x, labels)
    ax1.set_yscale("log")
    ax1.set_ylabel("seconds for the whole GP-UCB run")
    ax1.legend(fontsize=8, loc="center")
    big = results["large"][0]
    t = np.arange(big["T"])
    for clock, style in [("wall", dict(lw=0.8, alpha=0.6)), ("cpu", {})]:
        bw = big["bandwidth_bytes_per_second"][clock]
        line = ax2.plot(t + 1, np.array(big[f"step_{clock}_seconds"]) * 1e3, label=f"pobo step, {clock} time", **style)
        ax2.plot(t + 1, step_bytes(big["n"], big["r"], t) / bw * 1e3, "--", color=line[0].get_color(),
                 label=f"bound: the step's compulsory bytes at read-only bandwidth ({clock})")
    ax2.set_xlabel("iteration t")
    ax2.set_ylabel("milliseconds per iteration (log)")
    ax2.set_yscale("log")
    ax2.set_title(f"n = {big['n']:,}, r = {big['r']}")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return str(harness.save_figure(fig, "speed_gp_ucb", quick=quick, dpi=120))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_quick(parser, "small sizes for trying the script out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-transform", action="store_true", help="leave out the transform timings")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each engine in the comparison (min is reported)")
    parser.add_argument(
        "--threads", type=int, default=1, help="BLAS threads for both engines (1: stable timings on a shared machine)"
    )
    parser.add_argument("--large", default="1000000:1,1000000:2,10000000:1,10000000:2",
                        help="the large runs, n:threads separated by commas (a subset when time is short)")
    parser.add_argument("--skip-comparison", action="store_true", help="leave out the runs beside scikit-learn")
    parser.add_argument("--baseline", default="0f0d059",  # commit 0f0d059: the step in numpy calls, chunk by chunk
                        help="git ref of the previous engine, timed on the large runs ('' to skip: needs git and the "
                             "ref)")
    parser.add_argument("--steps-only", help=argparse.SUPPRESS)  # the previous code's subprocess: "n r T seed workers"
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps_only:
        sys.path.insert(0, args.tree)  # before the harness's repository root: the previous code's shared
        with threadpool_limits(1):
            print(json.dumps(steps_only(*map(int, args.steps_only.split()))))
        return
    with threadpool_limits(args.threads):
        run(args)


def run(args: argparse.Namespace) -> None:

    if args.quick:
        comparisons, transforms, bw_mb = [(2_000, 10, 30), (5_000, 15, 20)], [10**5], 128
        larges = [(50_000, 20, 30, workers) for workers in (1, 2)]
    else:
        comparisons, transforms, bw_mb = [(10_000, 10, 100), (36_000, 15, 50)], [10**6, 10**7], 256
        # 10⁷ × 16 rows of V is 1.3 GB, the candidates 1.6 GB
        larges = [(n, 20, 100 if n <= 10**6 else 16, workers)
                  for n, workers in (map(int, run.split(":")) for run in args.large.split(","))]
    results: dict = {"quick": args.quick, "blas_threads": args.threads, "load_average_at_start": os.getloadavg()}
    results["comparisons"] = [] if args.skip_comparison else [
        compare_with_sklearn(n, r, T, args.seed, args.repeats)
        for n, r, T in track(comparisons, description="vs scikit-learn")
    ]
    console.print("[dim]large runs …[/dim]")
    results["large"], results["previous_large"] = [], []
    for n, r, T, workers in larges:  # each beside the previous engine, one after the other: the same load
        results["large"].append(large_run(n, r, T, args.seed, bw_mb, workers))
        if args.baseline:
            results["previous_large"].append(harness.run_at(
                args.baseline, __file__, "--steps-only", f"{n} {r} {T} {args.seed} {workers}"))
    results["gpu"] = gpu_rows(larges, args.quick, results["large"])
    results["transform"] = []
    if not args.skip_transform:
        results["transform"] = [transform_run(n, 10, 15, args.seed) for n in track(transforms, description="transform")]

    table = Table(title="GP-UCB speed: same run, same process (fixed SE hyperparameters)")
    columns = ["n", "r", "T", "sklearn s", "pobo s", "ratio", "CPU ratio", "same picks", "issue: sklearn s / numpy s"]
    table.caption = f"best of {args.repeats} alternating runs each; BLAS threads: {args.threads}"
    for col in columns:
        table.add_column(col)
    for c in results["comparisons"]:
        issue = (c["n"], c["r"], c["T"]) == (36_000, 15, 50)
        table.add_row(
            f"{c['n']:,}", str(c["r"]), str(c["T"]), f"{c['sklearn_seconds']:.3f}", f"{c['ours_seconds']:.3f}",
            f"{c['speedup']:.1f}×", f"{c['cpu_speedup']:.1f}×", str(c["identical_picks"]),
            f"{ISSUE_SKLEARN_SECONDS} / {ISSUE_NUMPY_SECONDS} (need ≥ 15×)" if issue else "",
        )  # fmt: skip
    console.print(table)
    large_table = Table(title="pobo alone, fixed SE hyperparameters (ms per iteration; bound: a step's compulsory "
                              "bytes, 8n(t + r + 5): V, the candidates, μ, σ² read, μ, σ², V's new row written, all "
                              "at the read-only bandwidth, a lower bound as writes are no faster here; reads-only: "
                              "commit 2f79f3e's bound, V and the candidates)")
    for col in ["n", "r", "T", "threads", "clock", "measured", "bound", "ratio", "ratio reads-only", "read", "copy",
                "triad", "first touch", "build s", "peak MiB"]:
        large_table.add_column(col)
    for big in results["large"]:
        streams = big["stream_bytes_per_second"]
        for clock, measured in [("wall", big["seconds_per_iteration"]), ("cpu", big["cpu_seconds_per_iteration"])]:
            large_table.add_row(
                f"{big['n']:,}", str(big["r"]), str(big["T"]), str(big["workers"]), clock, f"{measured * 1e3:.1f}",
                f"{big['bound_seconds_per_iteration'][clock] * 1e3:.1f}", f"{big['ratio_to_bound'][clock]:.2f}×",
                f"{big['ratio_to_reads_only_bound'][clock]:.2f}×",
                *(f"{streams[name][clock] / 1e9:.1f} GB/s" for name in ("read", "copy", "triad", "first touch")),
                f"{big['build_seconds']:.1f}" if clock == "wall" else "",
                f"{big['peak_engine_bytes'] / 2**20:.0f}",
            )  # fmt: skip
    for big, previous in zip(results["large"], results["previous_large"]):
        for clock, key in [("wall", "seconds_per_iteration"), ("cpu", "cpu_seconds_per_iteration")]:
            bound = big["bound_seconds_per_iteration"][clock]
            large_table.add_row(f"{big['n']:,}", str(big["r"]), str(big["T"]), f"{big['workers']}, {args.baseline}",
                                clock, f"{previous[key] * 1e3:.1f}", f"{bound * 1e3:.1f}",
                                f"{previous[key] / bound:.2f}×",
                                f"{previous[key] / big['reads_only_bound_seconds_per_iteration'][clock]:.2f}×",
                                "", "", "", "", "", "")
        big["previous_same_picks"] = previous["picks"] == big["picks"]
    picks_by_size: dict[int, list] = {}
    for big in results["large"]:
        picks_by_size.setdefault(big["n"], []).append(big["picks"])
    same = all(all(p == picks[0] for p in picks) for picks in picks_by_size.values())
    previous_same = all(big.get("previous_same_picks", True) for big in results["large"])
    large_table.caption = ("peak: the engine's own allocations (the factor and the scaled candidates), not the "
                           f"caller's Z; CPU time sums the threads; 1 and 2 threads made the same picks: {same}"
                           + (f"; the previous code ({args.baseline}, its bound is this run's) made the same picks: "
                              f"{previous_same}" if args.baseline else ""))
    console.print(large_table)
    for tr in results["transform"]:
        console.print(
            f"PO-GP-UCB transform n={tr['n']:,} × d={tr['d']} → r={tr['r']} (lifted={tr['lifted']}): "
            f"{tr['seconds']:.2f} s, peak {tr['peak_bytes'] / 2**20:.0f} MiB "
            f"(input {tr['input_bytes'] / 2**20:.0f} MiB not counted, output {tr['output_bytes'] / 2**20:.0f} MiB)"
        )
    results["load_average_at_end"] = os.getloadavg()
    console.print(f"wrote {harness.write_json('speed_gp_ucb', results, quick=args.quick)} and "
                  f"{plot(results, args.quick)}")


if __name__ == "__main__":
    main()
