"""``pobo-modeler run`` and ``pobo-modeler resume``: GP-UCB one query per request, or GP-BUCB batches (``--batch q``,
``--asynchronous``), with a progress display."""

from __future__ import annotations

import signal
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Column

from modeler_client.client import ModelerClient
from modeler_client.commands.common import (
    Retries,
    Timeout,
    Token,
    connect,
    connects,
    console,
    reports_api_errors,
    show_release_warnings,
)
from modeler_client.loop import LoopEvent, RemoteGPUCB
from modeler_client.remote import RemoteSession
from modeler_client.runfile import MAX_BATCH, RunRecord, RunSettings
from shared.api.http_client import ApiError
from shared.gp.ucb import describe_engine, engine_device


class HyperparameterMode(StrEnum):
    fit = "fit"
    fixed = "fixed"


class KernelName(StrEnum):
    se = "se"
    matern52 = "matern52"


class Acquisition(StrEnum):
    logei = "logei"
    paper_ucb = "paper-ucb"


class BatchBeta(StrEnum):
    desautels = "desautels"
    plain = "plain"


class InputNoise(StrEnum):
    auto = "auto"
    ignore = "ignore"
    expected_kernel = "expected-kernel"


Poll = Annotated[float, typer.Option(help="First wait (s) between checks of a pending manual query; grows 1.5×.")]
MaxPoll = Annotated[float, typer.Option(help="Longest wait (s) between checks of a pending query.")]
DeviceOption = Annotated[
    str,
    typer.Option(help="Where GP-UCB's candidate posterior runs: 'numba' (this CPU), 'cuda' / 'cuda:N' (a GPU: pip "
                      "install 'pobo[gpu]'), 'auto' (a GPU torch sees, else numba) or 'cpu' (torch's CPU build). "
                      "The picks are the same on each."),
]
PendingTimeoutOption = Annotated[
    float | None,
    typer.Option(help="Give up waiting on pending queries after this many seconds (resume later); default: wait."),
]


DESCRIPTION_WIDTH = 44
"""The progress line's text column at most: with the bar (20), the count and the time it fits 80 columns."""


class ProgressDisplay:
    """A Rich progress bar over iterations; the description shows the best value and any waiting."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.task = progress.add_task("starting", total=total)

    def __call__(self, event: LoopEvent) -> None:
        record = event.record
        best = record.best()
        best_text = f"best {best.value:.6g} (row {best.index})" if best else "no answers yet"
        if event.kind in {"recovered", "refit"}:
            self.progress.console.print(f"[dim]{event.kind}: {event.message}[/]")
        if event.kind == "corrected":
            self.progress.console.print(f"[yellow]{event.message}[/]", highlight=False)
        description = event.message if event.kind == "waiting" else best_text
        self.progress.update(self.task, completed=len(record.done()), description=description)


def chosen_device(device: str) -> str | None:
    """``--device`` as :class:`shared.gp.ucb.GPUCB` takes it (None: the Numba engine), checked before the run starts."""
    if device == "numba":
        return None
    try:
        return engine_device(device)
    except (ValueError, ImportError) as error:
        raise typer.BadParameter(str(error), param_hint="--device") from None


class Stopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run: ``signal_name`` says which."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


EXIT_INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}
EXIT_QUERIES_USED_UP = 4


@contextmanager
def stops_on_signals():
    """SIGTERM raises :class:`Stopped` like Ctrl-C does (the handler before is put back after)."""
    def stop(signum, frame):
        raise Stopped(signal.Signals(signum).name)

    try:
        before = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def with_the_lab(record: RunRecord) -> str:
    """What the curator still holds of this run: the pending queries and a request whose answer was not seen."""
    parts = []
    pending = record.pending()
    if pending:
        rows = ", ".join(str(q.index) for q in pending[:10]) + (" …" if len(pending) > 10 else "")
        parts.append(f"{len(pending)} quer{'y' if len(pending) == 1 else 'ies'} pending with the lab (row"
                     f"{'s' if len(pending) > 1 else ''} {rows}): they are charged and their answers are kept for "
                     "this run")
    if record.in_flight is not None:
        parts.append(f"a request for row(s) {', '.join(map(str, record.in_flight.indices))} was sent and its answer "
                     "not seen: resuming re-sends it and the server returns the stored answer, not charged again")
    return "; ".join(parts) if parts else "nothing is pending with the lab"


ACQUISITION_WORDS = {
    "logei": "log expected improvement (the default)",
    "paper-ucb": "GP-UCB at Algorithm 2's β_t (the paper's)",
}


def drive(client, path: Path, device: str | None = None, **options) -> RunRecord:
    """Run (or resume) the run file at ``path`` with a progress display (:class:`modeler_client.loop.RemoteGPUCB`:
    Algorithm 2 one query per request, or GP-BUCB batches); GP-UCB's posterior on ``device``.

    Ctrl-C or SIGTERM ends it with the run file saved, a sentence on what the lab holds and the resume command (exit
    130 or 143); a key whose queries run out ends it with the usual summary (exit 4)."""
    record = RunRecord.load(path)
    show_release_warnings(record.release)
    engine = describe_engine(device)
    console.print(f"acquisition: {ACQUISITION_WORDS[record.settings.acquisition]}; candidate posterior: {engine}",
                  highlight=False)
    # The description is cut to fit, never the bar: a long "waiting for …" line must not squeeze it out.
    description = TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis",
                                                                       max_width=DESCRIPTION_WIDTH))
    columns = (SpinnerColumn(), description, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    loop = None
    try:
        with stops_on_signals(), Progress(*columns, console=console, transient=False) as progress:
            display = ProgressDisplay(progress, record.settings.iterations)
            loop = RemoteGPUCB.resume(client, path, on_event=display, device=device, **options)
            record = loop.run()
    except KeyboardInterrupt as stop:
        name = stop.signal_name if isinstance(stop, Stopped) else "SIGINT"
        if loop is not None:
            record = loop.record
            loop.session.save()
        console.print(f"[bold yellow]stopped ({'Ctrl-C' if name == 'SIGINT' else name})[/]: {record.summary()}; "
                      f"{with_the_lab(record)}. The run file {path} is saved; continue with: pobo-modeler resume "
                      f"{path}", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED.get(name, 130)) from None
    except ApiError as error:
        if error.code != "query_budget_exhausted" or loop is None:
            raise
        record = loop.record
        record.in_flight = None  # refused, so neither stored nor charged: nothing to re-send
        loop.session.save()
        console.print(f"[bold yellow]this key's queries are used up[/]: {record.summary()}; {with_the_lab(record)}; "
                      f"{record.elapsed_seconds:.1f} s; run file {path}. The server said: {error.detail}",
                      highlight=False)
        raise typer.Exit(EXIT_QUERIES_USED_UP) from None
    console.print(f"[bold green]done[/]: {record.summary()}; {record.elapsed_seconds:.1f} s; run file {path}; "
                  f"posterior on {engine}; session {record.session_id} closed", highlight=False)
    return record


def queries_left_warning(client: ModelerClient, wanted: int) -> None:
    """A warning up front when the run wants more queries than the key has left."""
    policy = client.my_policy()
    left = policy.max_queries - policy.used_queries
    if wanted > left:
        console.print(f"[bold yellow]warning[/]: this run wants {wanted} more quer{'y' if wanted == 1 else 'ies'} "
                      f"and this key has {left} of {policy.max_queries} left: it will stop after {left} with the "
                      "usual summary (ask the curator for a key with more queries to go on)", highlight=False)


def report_finished(client, path: Path) -> None:
    """A finished run file brought up to date with the server: every answer the curator changed since, then what
    the run holds and how to extend it."""
    session = RemoteSession.resume(client, path)
    for change in session.changes:
        console.print(f"[yellow]{change}[/]", highlight=False)
    console.print(finished_note(session.record, path), highlight=False)


def finished_note(record: RunRecord, path: Path) -> str:
    """What a finished run file holds, and how to make more queries in it."""
    return (f"the run in {path} is finished: {record.summary()}. To make more queries in the same file, give a "
            f"larger -T: pobo-modeler run --release {record.release_id} -T "
            f"{record.settings.iterations + 10} --out {path} (or pobo-modeler resume {path} --iterations "
            f"{record.settings.iterations + 10})")


@connects
def run(
    client: ModelerClient,
    release: Annotated[int, typer.Option("--release", help="The release to optimise over.")],
    iterations: Annotated[int, typer.Option("--iterations", "-T", min=1, help="T: how many queries to make.")],
    out: Annotated[Path, typer.Option(help="The run file, saved after every iteration.")] = Path("run.json"),
    hyperparameters: Annotated[
        HyperparameterMode,
        typer.Option(help="Fit (maximum a posteriori under BoTorch's priors, docs/gp_engine.md) or fix."),
    ] = HyperparameterMode.fit,
    refit_every: Annotated[
        int, typer.Option(min=1, help="Refit hyperparameters every this many answers (beyond 100, about every t/100).")
    ] = 1,
    kernel: Annotated[KernelName, typer.Option()] = KernelName.se,
    lengthscale: Annotated[float | None, typer.Option(help="Fixed lengthscale (default: median distance of "
                                                      "Z).")] = None,
    signal_variance: Annotated[float | None, typer.Option(help="Fixed signal variance (default 1).")] = None,
    noise_variance: Annotated[float | None, typer.Option(help="Fixed noise variance (default 1e-6 × signal).")] = None,
    ucb_delta: Annotated[float, typer.Option(help="δ' of Algorithm 2's β_t.")] = 0.025,
    acquisition: Annotated[
        Acquisition,
        typer.Option(help="'logei': log expected improvement, chosen on a broad suite (docs/modeler_quality.md); "
                          "'paper-ucb': Algorithm 2's GP-UCB at its β_t."),
    ] = Acquisition.logei,
    input_noise: Annotated[
        InputNoise,
        typer.Option(help="How a gaussian release's public noise_std enters the kernel (docs/modeler_client.md)."),
    ] = InputNoise.auto,
    optimum: Annotated[float | None, typer.Option(help="Known best value, for simple regret in plots.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the client's hyperparameter restarts.")] = 0,
    batch: Annotated[
        int, typer.Option("--batch", "-q", min=1, max=MAX_BATCH, help="q indices per request (GP-BUCB), for slow labs.")
    ] = 1,
    asynchronous: Annotated[
        bool, typer.Option(help="Keep up to q queries pending; propose a new one whenever an answer arrives.")
    ] = False,
    batch_beta: Annotated[
        BatchBeta, typer.Option(help="GP-BUCB's β: 'desautels' exp(2C)·β_t (their Theorem 1) or 'plain' β_t.")
    ] = BatchBeta.desautels,
    reuse_from: Annotated[
        list[Path] | None,
        typer.Option(exists=True, dir_okay=False,
                     help="An earlier run file of this key and release: its answers are reused, not paid again "
                          "(only when a row's answer cannot change). Repeatable."),
    ] = None,
    device: DeviceOption = "numba",
    poll: Poll = 0.5,
    max_poll: MaxPoll = 30.0,
    pending_timeout: PendingTimeoutOption = None,
) -> None:
    """Run GP-UCB (Algorithm 2) on a release: index-only queries, saved after every iteration.

    If OUT already holds an unfinished run of the same release on the same server, it is resumed.
    """
    options: dict[str, Any] = dict(device=chosen_device(device), poll=poll, max_poll=max_poll,
                                   pending_timeout=pending_timeout)
    if out.exists():
        existing = RunRecord.load(out)
        if existing.release_id != release or existing.url != client.url:
            raise typer.BadParameter(
                f"{out} holds a run of release {existing.release_id} on {existing.url}; choose another --out"
            )
        if existing.complete():
            if iterations <= existing.settings.iterations:
                report_finished(client, out)
                return
            console.print(f"[yellow]{out} holds a finished run of {existing.settings.iterations} queries: continuing "
                          f"it to T = {iterations}[/]")
            existing.settings.iterations, existing.finished = iterations, False
            existing.save(out)
        else:
            console.print(f"[yellow]{out} exists: resuming that run[/]")
        queries_left_warning(client, existing.settings.iterations - len(existing.queries))
        drive(client, out, **options)
        return
    reuse_sessions = [reused_session(path, release, client.url) for path in reuse_from or []]
    settings = RunSettings(
        iterations=iterations,
        ucb_delta=ucb_delta,
        acquisition=acquisition.value,
        kernel=kernel.value,
        hyperparameters=hyperparameters.value,
        refit_every=refit_every,
        lengthscale=lengthscale,
        signal_variance=signal_variance,
        noise_variance=noise_variance,
        input_noise=input_noise.value,
        seed=seed,
        optimum=optimum,
        batch=batch,
        asynchronous=asynchronous,
        batch_beta=batch_beta.value,
        reuse_sessions=reuse_sessions,
    )
    queries_left_warning(client, iterations)
    RemoteSession.start(client, release, out, settings)
    drive(client, out, **options)


def reused_session(path: Path, release: int, url: str) -> int:
    """The session of an earlier run file, checked to be of the same release on the same server."""
    earlier = RunRecord.load(path)
    if earlier.release_id != release or earlier.url != url:
        raise typer.BadParameter(f"{path} is a run of release {earlier.release_id} on {earlier.url}, not of release "
                                 f"{release} on {url}; its answers cannot be reused here")
    return earlier.session_id


def resume(
    token: Token,
    path: Annotated[Path | None, typer.Argument(dir_okay=False, help="A run file written by 'run' (or, with "
                                                "--session, where to write the one rebuilt from the server).")] = None,
    session: Annotated[int | None, typer.Option(help="Rebuild the run of this session from the server, without its "
                                                "run file (see pobo-modeler sessions).")] = None,
    url: Annotated[str | None, typer.Option(help="Override the server URL stored in the run file (with --session: "
                                            "the server; default POBO_URL).", envvar="POBO_URL")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="Raise T to continue a finished run.")] = None,
    device: DeviceOption = "numba",
    poll: Poll = 0.5,
    max_poll: MaxPoll = 30.0,
    pending_timeout: PendingTimeoutOption = None,
    timeout: Timeout = 30.0,
    retries: Retries = 3,
) -> None:
    """Resume a run after a crash or a wait: recovers answers the server stored (and reports every answer the
    curator corrected since), then continues. With --session, the run is rebuilt from the server first."""
    resolved = chosen_device(device)
    if session is not None:
        if url is None:
            raise typer.BadParameter("give the server's --url (or POBO_URL) to rebuild a session's run",
                                     param_hint="--url")
        path = path or Path(f"run-session-{session}.json")
        if path.exists():
            raise typer.BadParameter(f"{path} exists; give another PATH for the run of session {session}")
        client = connect(url, token, timeout, retries)
        record = RemoteSession.rebuild(client, session, path).record
        console.print(f"rebuilt session {session} from the server into {path}: {record.summary()} (the server keeps "
                      "no GP settings: the defaults apply)", highlight=False)
    elif path is None or not path.is_file():
        raise typer.BadParameter("give the run file to resume, or --session ID to rebuild one from the server")
    record = RunRecord.load(path)
    if iterations is not None:
        record.settings.iterations = iterations
        record.finished = False
        record.save(path)
    client = connect(url or record.url, token, timeout, retries)
    if record.complete():
        report_finished(client, path)
        return
    queries_left_warning(client, record.settings.iterations - len(record.queries))
    drive(client, path, device=resolved, poll=poll, max_poll=max_poll, pending_timeout=pending_timeout)


def register(app: typer.Typer) -> None:
    app.command()(reports_api_errors(run))
    app.command()(reports_api_errors(resume))
