"""Running the real-data experiments: register the tables with a live curator, make releases, drive the
modeler's loop over HTTP (and in-process on the same Z for timing), and the side studies --diagnose and
--sensitivity."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from real_data_experiments import (
    BUDGET,
    CURATOR_ENV,
    EXPERIMENTS,
    LOANS_N,
    N_INIT,
    REFIT_EVERY,
    DatasetContext,
    Experiment,
    Method,
    Plan,
    Setting,
    initial_rows,
    seed_of,
)
from rich.console import Console
from rich.progress import Progress

from curator_service.admin_client import CuratorAdmin
from curator_service.testing import LocalCurator
from modeler_client.client import ModelerClient
from modeler_client.loop import LoopEvent, RemoteGPUCB
from modeler_client.runfile import RunSettings
from modeler_client.surrogate import Surrogate, release_options
from shared.api.scaling import apply_scaling, unit_diameter_bounds
from shared.api.schemas import API_PREFIX, DatasetOut, DatasetSpec, ReleaseOut, RowOrder, ScalingSpec
from shared.datasets.lendingclub import load_lendingclub
from shared.datasets.paper_preprocessing import fit_paper_preprocessing
from shared.datasets.sg_property import load_sg_property
from shared.datasets.tables import RealTable
from shared.releases import largest_r, omega, po_gp_ucb_release
from shared.releases.po_gp_ucb import centred_gram


def benchmark_curator(data_dir: Path) -> LocalCurator:
    """A throwaway curator on loopback in research mode with uncertified mechanisms enabled."""
    return LocalCurator(data_dir, env=CURATOR_ENV)


def public_scaling(table: RealTable) -> ScalingSpec:
    """The table's registration scaling: its public bounds with a box of diameter 1 (one step = one record)."""
    return unit_diameter_bounds(table.public_lower, table.public_upper)


def register(curator: CuratorAdmin, table: RealTable, workdir: Path, name: str, scaling: ScalingSpec) -> DatasetOut:
    """Writes the table as CSV in ``workdir`` and uploads it, with its scaling explicit (identity included: the
    service requires one). Uploads work on any curator; registration by server-side path needs POBO_IMPORT_ROOT."""
    path = table.write_csv(workdir / f"{name}.csv")
    spec = DatasetSpec(name=name, feature_columns=list(table.feature_names), scaling=scaling, goal=table.goal,
                       evaluator={"kind": "column", "column": table.objective_name, "noise_std": 0.0},
                       budget={"epsilon": BUDGET[0], "delta": BUDGET[1]})
    return curator.register_csv(path.read_bytes(), spec, filename=path.name)


def row_order(curator: CuratorAdmin, dataset: DatasetOut) -> np.ndarray:
    """The 0-based file row behind each release index: the service stores rows in a secret order."""
    with curator.admin() as api:
        order = api.get(f"{API_PREFIX}/datasets/{dataset.id}/row-order", model=RowOrder)
    return np.asarray(order.rows) - 1


def prepare_dataset(
    experiment: Experiment, table: RealTable, curator: CuratorAdmin, workdir: Path, plan: Plan, console: Console
) -> DatasetContext:
    start = time.perf_counter()
    preprocessing = fit_paper_preprocessing(table.features, table.objective, fit_rows=plan.fit_rows, seed=0)
    console.log(
        f"{experiment.key}: paper preprocessing fitted on {preprocessing.fit_rows} rows in "
        f"{time.perf_counter() - start:.0f} s; ARD lengthscales "
        f"{np.array2string(preprocessing.lengthscales, precision=4)}"
    )
    paper_inputs = preprocessing.transform(table.features)
    # The modeler's fixed hyperparameters have prior mean 0 (RunSettings has no prior mean), so the curator
    # reports the objective minus the fit's mean. Simple regret is unchanged (a difference); fitted runs too
    # (their prior mean is the sample mean).
    table = dataclasses.replace(table, objective=table.objective - preprocessing.prior_mean)
    paper_table = dataclasses.replace(table, features=paper_inputs)
    paper_dataset = register(curator, paper_table, workdir, f"{table.name}-paper-inputs", ScalingSpec())
    public_dataset = register(curator, table, workdir, table.name, public_scaling(table))
    return DatasetContext(
        experiment=experiment,
        table=table,
        preprocessing=preprocessing,
        paper_inputs=paper_inputs,
        paper_dataset=paper_dataset,
        public_dataset=public_dataset,
        file_rows={d.id: row_order(curator, d) for d in (paper_dataset, public_dataset)},
        curator=curator,
        workdir=workdir,
        iterations=plan.iterations or experiment.iterations,
        hyperparameters=plan.hyperparameters,
        ard=plan.ard,
    )


@dataclass(frozen=True)
class RunResult:
    regret: np.ndarray  # simple regret after each query
    seconds_per_iteration: float | None = None  # GP-UCB iterations only (the initial rows excluded)


def in_process_loop(
    Z: np.ndarray, release: ReleaseOut, settings: RunSettings, values: np.ndarray, initial: Sequence[int]
) -> tuple[list[int], float, tuple[str, ...]]:
    """``RemoteGPUCB.run`` without HTTP: the same surrogate with the options the release's metadata decides
    (:func:`release_options`: no row asked twice when answers repeat), updated the same way, measuring ``values``
    directly. Returns the rows queried, the wall time per GP-UCB iteration and which fitted parameters the last
    refit left at a bound of its search box (empty with fixed hyperparameters or a fit inside the box)."""
    orientation = -1.0 if release.goal == "minimize" else 1.0
    indices = list(initial)
    start = time.perf_counter()
    surrogate = Surrogate(Z, release, settings, **release_options(release, settings))
    while len(indices) < settings.iterations:
        surrogate.update(indices, orientation * values[indices])
        indices.append(surrogate.suggest())
    last_fit = surrogate.ucb.last_fit if surrogate.ucb is not None else None
    at_bound = last_fit.at_bound if last_fit is not None else ()
    return indices, (time.perf_counter() - start) / (settings.iterations - len(initial)), at_bound


def in_process_metadata(n: int, dim: int, goal: str, dataset_id: int = 0) -> ReleaseOut:
    """Metadata describing n × dim inputs computed on the curator's side (non-private GP-UCB, diagnoses, controls) to
    the surrogate; nothing is released. The surrogate reads ``goal``, ``dim``, ``noise_std`` and ``answers_repeat``:
    the tables' column evaluator answers a row the same every time, as the releases' metadata states."""
    return ReleaseOut(id=0, dataset_id=dataset_id, mechanism="po-gp-ucb", certified=False, epsilon=math.inf, delta=0.0,
                      n=n, dim=dim, goal=goal, answers_repeat=True, created_at=datetime.now(UTC))


def local_metadata(ctx: DatasetContext, X: np.ndarray) -> ReleaseOut:
    """:func:`in_process_metadata` for inputs X of this dataset."""
    return in_process_metadata(X.shape[0], X.shape[1], ctx.table.goal, ctx.paper_dataset.id)


def http_loop(
    ctx: DatasetContext, release: ReleaseOut, initial: Sequence[int], path: Path
) -> tuple[list[int], float, np.ndarray]:
    """The modeler's run over HTTP: a key for this release, a session, the initial rows, then GP-UCB.
    Returns the rows queried, the wall time per GP-UCB iteration (from the loop's start, after Z is
    downloaded, to its end — the span ``in_process_loop`` times) and Z as the modeler received it."""
    settings = ctx.run_settings(release.mechanism)
    key = ctx.curator.issue_key([release.id], max_queries=settings.iterations, name=path.stem)
    marks: dict[str, float] = {}

    def on_event(event: LoopEvent) -> None:
        if event.kind in ("started", "finished"):
            marks[event.kind] = time.perf_counter()

    with ModelerClient(ctx.curator.url, key.token) as client:
        loop = RemoteGPUCB.start(client, release.id, settings, path, on_event=on_event)
        for row in initial:
            client.query(loop.record.session_id, [row])
        record = loop.run()
        Z = client.inputs(release.id)
    indices = [q.index for q in sorted(record.queries, key=lambda q: q.iteration)]
    return indices, (marks["finished"] - marks["started"]) / (settings.iterations - len(initial)), Z


def make_release(ctx: DatasetContext, setting: Setting, run: int) -> ReleaseOut:
    """po-gp-ucb releases the paper's inputs at the setting's r; gaussian the public-scaling table at dim "auto"."""
    experiment = ctx.experiment
    dataset, dim = (ctx.paper_dataset, setting.r) if setting.method == "po-gp-ucb" else (ctx.public_dataset, "auto")
    seed = seed_of(experiment.key, setting.method, setting.log_epsilon, setting.epsilon, setting.r, run)
    return ctx.curator.create_release(dataset.id, setting.method, setting.privacy_epsilon, experiment.delta, dim, seed)


def one_run(ctx: DatasetContext, setting: Setting, run: int, timed: bool) -> tuple[RunResult, dict]:
    """One run of ``setting``; ``timed`` runs the same loop in-process too and compares. Rows are file rows
    (the table's order, ``initial_rows`` included); a release's indices are mapped through its row order."""
    values = ctx.table.objective
    initial = initial_rows(ctx.table.n, run)
    if setting.method == "random":
        rest = np.setdiff1d(np.arange(ctx.table.n), initial)
        picks = np.random.default_rng([20_201, run]).choice(rest, size=ctx.iterations - N_INIT, replace=False)
        indices = [*initial, *map(int, picks)]
        return RunResult(ctx.regret(values[indices])), {}
    if setting.method.startswith("non-private"):
        X = (ctx.paper_inputs if setting.method == "non-private"
             else apply_scaling(ctx.table.features, public_scaling(ctx.table)))
        indices, seconds, _ = in_process_loop(X, local_metadata(ctx, X), ctx.run_settings(setting.method), values,
                                              initial)
        return RunResult(ctx.regret(values[indices]), seconds), {}
    release = make_release(ctx, setting, run)
    info = {k: getattr(release, k) for k in ("id", "dim", "omega", "sigma_min", "lifted", "noise_std")}
    file_rows = ctx.file_rows[release.dataset_id]
    initial_indices = [int(i) for i in np.argsort(file_rows)[initial]]
    path = ctx.workdir / "runs" / f"{ctx.experiment.key}-{release.id}.json"
    indices, seconds, Z = http_loop(ctx, release, initial_indices, path)
    if timed:
        settings = ctx.run_settings(setting.method)
        local_indices, local_seconds, _ = in_process_loop(Z, release, settings, values[file_rows], initial_indices)
        info |= dict(http_seconds_per_iteration=seconds, in_process_seconds_per_iteration=local_seconds,
                     same_rows=local_indices == indices)
    return RunResult(ctx.regret(values[file_rows[indices]]), seconds), info


def run_setting(ctx: DatasetContext, setting: Setting, plan: Plan, progress: Progress, task) -> dict:
    """``setting.runs`` runs. The first ``plan.timing_runs`` runs of the figure and gaussian settings are
    also timed in-process, one at a time; the other runs go ``plan.workers`` at a time (threads: one run
    computes while another waits on the server), which changes no result, only the wall time."""
    timed = set(range(plan.timing_runs)) if setting.group in ("figure", "gaussian") else set()
    outcomes: dict[int, tuple[RunResult, dict]] = {}
    for run in sorted(timed):
        outcomes[run] = one_run(ctx, setting, run, timed=True)
        progress.advance(task)
    with ThreadPoolExecutor(plan.workers) as pool:
        futures = {pool.submit(one_run, ctx, setting, run, False): run
                   for run in range(setting.runs) if run not in timed}
        for future in as_completed(futures):
            outcomes[futures[future]] = future.result()
            progress.advance(task)
    ordered = [outcomes[run] for run in range(setting.runs)]
    curves = np.array([result.regret for result, _ in ordered])
    releases = [info for _, info in ordered if info]
    # Per-iteration wall time only from runs that ran alone (the concurrent ones share the CPU).
    seconds = [ordered[run][0].seconds_per_iteration for run in sorted(timed)]
    summary = dict(
        method=setting.method,
        group=setting.group,
        label=setting.label,
        log_epsilon=setting.log_epsilon,
        epsilon=setting.privacy_epsilon,
        r=setting.r,
        runs=setting.runs,
        mean=curves.mean(0).tolist(),
        stderr=(curves.std(0, ddof=1) / math.sqrt(len(curves))).tolist() if len(curves) > 1 else None,
        final=curves[:, -1].tolist(),
        seconds_per_iteration=float(np.mean(seconds)) if seconds else None,
        releases=releases,
    )
    if setting.method == "po-gp-ucb":
        summary |= dict(omega=releases[0]["omega"], sigma_min=releases[0]["sigma_min"], lifted=releases[0]["lifted"])
    if setting.method == "gaussian":
        summary |= dict(noise_std=float(np.mean([r["noise_std"] for r in releases])), dim=releases[0]["dim"])
    return summary


def run_dataset(
    ctx: DatasetContext, plan: Plan, progress: Progress, console: Console, settings: Sequence[Setting] | None = None
) -> dict:
    """Every setting of the plan (or ``settings``) on one registered dataset, plus σ_min, ω and largest_r per ε."""
    experiment = ctx.experiment
    results = []
    for setting in plan.settings(experiment) if settings is None else settings:
        task = progress.add_task(f"{experiment.key}: {setting.label}", total=setting.runs)
        summary = run_setting(ctx, setting, plan, progress, task)
        results.append(summary)
        console.log(f"{experiment.key}: {setting.label}: S_T = {summary['mean'][-1]:.3f} ({setting.runs} runs)")
    return dict(
        dataset=ctx.table.name,
        description=ctx.table.description,
        n=ctx.table.n,
        paper_n=experiment.paper_n,
        d=ctx.table.features.shape[1],
        delta=experiment.delta,
        iterations=ctx.iterations,
        signal_std=ctx.signal_std,
        best_value=ctx.best_value,
        preprocessing=dict(
            lengthscales=ctx.preprocessing.lengthscales.tolist(),
            scale=ctx.preprocessing.scale,
            fit_rows=ctx.preprocessing.fit_rows,
        ),
        guideline=guideline(ctx),
        settings=results,
    )


def guideline(ctx: DatasetContext) -> dict:
    """σ_min of the preprocessed inputs against ω at the experiment's ε (``crossing_summary``)."""
    return crossing_summary(ctx.paper_inputs, ctx.experiment)


def largest_table_r(sigma_min: float, log_epsilon: float, rs: Sequence[int], delta: float) -> int:
    """The largest r of ``rs`` with σ_min ≥ ω(e^log_epsilon, δ, r), 0 when none: what the paper's tables state."""
    return max((r for r in rs if sigma_min >= omega(math.exp(log_epsilon), delta, r)), default=0)


def paper_sigma_min_window(experiment: Experiment) -> tuple[float, float]:
    """The σ_min range [low, high) in which every r table's stated r is the largest admissible of the r it tries."""
    low, high = 0.0, math.inf
    for a, (rs, _) in experiment.paper_tables.items():
        stated = experiment.paper_largest_r[a]
        low = max(low, omega(math.exp(a), experiment.delta, stated))
        high = min(high, omega(math.exp(a), experiment.delta, min(r for r in rs if r > stated)))
    return low, high


def crossing_summary(X: np.ndarray, experiment: Experiment) -> dict:
    """σ_min of X and, per ε of the experiment, ω at the figure's r, the largest r with σ_min ≥ ω (any r ≤ 100,
    and of the r the paper's table tries) beside the paper's; the ε where σ_min = ω at the figure's r (ω ∝ 1/ε);
    the paper's σ_min window."""
    sigma_min = centred_gram(X).sigma_min
    rows = []
    for a in sorted({*experiment.figure_log_epsilons, *experiment.paper_tables}):
        rs = experiment.paper_tables.get(a, ((),))[0]
        rows.append(dict(
            log_epsilon=a,
            omega_at_figure_r=omega(math.exp(a), experiment.delta, experiment.figure_r),
            largest_r=largest_r(X, math.exp(a), experiment.delta, 100),
            largest_table_r=largest_table_r(sigma_min, a, rs, experiment.delta) if rs else None,
            paper_largest_r=experiment.paper_largest_r.get(a),
        ))
    crossing = omega(1.0, experiment.delta, experiment.figure_r) / sigma_min
    low, high = paper_sigma_min_window(experiment)
    return dict(sigma_min=sigma_min, per_epsilon=rows, epsilon_needed_at_figure_r=crossing,
                log_epsilon_needed_at_figure_r=math.log(crossing), paper_window=[low, high],
                in_paper_window=bool(low <= sigma_min < high))


# Fixed lengthscales to try, as multiples of the candidates' bounding-box diagonal; 0.01 is the lower
# bound of a maximum-likelihood fit (``shared.gp.regression.default_bounds``).
LENGTHSCALE_MULTIPLES = (0.01, 0.03, 0.1, 0.3)


def diagnose(ctx: DatasetContext, runs: int, console: Console) -> dict:
    """S_T of the non-private baselines and of po-gp-ucb (largest figure ε, figure r) under three kernels:
    the modeler's loop with its default fit (and whether its last fit left a lengthscale at a bound), the
    preprocessing's ML fit held fixed, and fixed lengthscales at ``LENGTHSCALE_MULTIPLES`` of the bounding-box diagonal
    (signal variance var(y), noise 1e-6 of it: the state the fit ends in). In-process: the loop picks the same rows as
    over HTTP (the timed runs check that)."""
    experiment, y = ctx.experiment, ctx.table.objective
    log_epsilon = experiment.figure_log_epsilons[-1]

    def po_gp_ucb_inputs(run: int) -> np.ndarray:
        seed = seed_of(experiment.key, "diagnose", log_epsilon, run)
        return po_gp_ucb_release(ctx.paper_inputs, math.exp(log_epsilon), experiment.delta, experiment.figure_r, seed).Z

    public = apply_scaling(ctx.table.features, public_scaling(ctx.table))
    inputs: dict[Method, Callable[[int], np.ndarray]] = {
        "non-private": lambda run: ctx.paper_inputs,
        "non-private-public-scaling": lambda run: public,
        "po-gp-ucb": po_gp_ucb_inputs,
    }
    out = dict(log_epsilon=log_epsilon, r=experiment.figure_r, runs=runs, methods={})
    for method, make_inputs in inputs.items():
        kernels = {"fitted": dict(hyperparameters="fit", refit_every=REFIT_EVERY)}
        if method != "non-private-public-scaling":
            fit = ctx.preprocessing
            kernels["ML fit held fixed"] = dict(hyperparameters="fixed", lengthscale=fit.isotropic_lengthscale,
                                                signal_variance=fit.signal_variance, noise_variance=fit.noise_variance)
        for c in LENGTHSCALE_MULTIPLES:
            kernels[f"lengthscale {c:g} x diagonal"] = dict(hyperparameters="fixed", multiple=c,
                                                            signal_variance=float(np.var(y)))
        results = {}
        for name, options in kernels.items():
            finals, at_bound = [], []
            for run in range(runs):
                Z = make_inputs(run)
                diagonal = float(np.linalg.norm(np.ptp(Z, axis=0)))
                options_run = {k: v for k, v in options.items() if k != "multiple"}
                if "multiple" in options:
                    options_run["lengthscale"] = options["multiple"] * diagonal
                settings = RunSettings(iterations=ctx.iterations, acquisition="paper-ucb", **options_run)
                indices, _, ended_at = in_process_loop(Z, local_metadata(ctx, Z), settings, y,
                                                       initial_rows(ctx.table.n, run))
                finals.append(float(ctx.regret(y[indices])[-1]))
                at_bound.append("lengthscale" in ended_at)
            entry = dict(mean=float(np.mean(finals)), stderr=float(np.std(finals, ddof=1) / math.sqrt(runs)),
                         final=finals)
            if name == "fitted":
                entry |= dict(lengthscale_at_bound=at_bound, runs_with_lengthscale_at_bound=int(np.sum(at_bound)))
            results[name] = entry
            console.log(f"{experiment.key}: diagnose {method}, {name}: S_T = {entry['mean']:.3f} ± "
                        f"{entry['stderr']:.3f}")
        out["methods"][method] = results
    return out


SENSITIVITY_FITS = ((0, 500), (1, 500), (2, 500), (0, 1000))  # (seed, rows) of the ARD fit; (0, 500) is the default


def sigma_min_sensitivity(console: Console) -> dict:
    """σ_min of the paper-preprocessed inputs and the crossing points under the choices the paper leaves open:
    for the loans, incomes above the public bound kept, clipped or dropped; for both tables, the subsample
    (seed, size) the ARD lengthscales are fitted on. Curator-side only: no server, no GP-UCB."""
    variants = [("loans", o, lambda o=o: load_lendingclub(n=LOANS_N, seed=0, income_outliers=o))
                for o in ("keep", "clip", "drop")]
    variants.append(("property", None, load_sg_property))
    rows = []
    for key, outliers, load in variants:
        table = load()
        for seed, fit_rows in SENSITIVITY_FITS:
            fit = fit_paper_preprocessing(table.features, table.objective, fit_rows=fit_rows, seed=seed)
            X = fit.transform(table.features)
            summary = crossing_summary(X, EXPERIMENTS[key])
            row = dict(dataset=key, income_outliers=outliers, seed=seed, fit_rows=fit_rows,
                       lengthscales=fit.lengthscales.tolist(), at_bound=list(fit.at_bound),
                       singular_values=centred_gram(X).singular_values.tolist()) | summary
            rows.append(row)
            console.log(f"{key} {outliers or ''} seed {seed} rows {fit_rows}: σ_min = {summary['sigma_min']:.1f}")
    return dict(fits=list(SENSITIVITY_FITS), rows=rows)


def crossing_epsilon(ctx: DatasetContext) -> float:
    """log ε (rounded up to 0.01) at which σ_min ≥ ω first holds at the figure's r on our inputs (ω ∝ 1/ε)."""
    sigma_min = centred_gram(ctx.paper_inputs).sigma_min
    return math.ceil(100 * math.log(omega(1.0, ctx.experiment.delta, ctx.experiment.figure_r) / sigma_min)) / 100
