"""``pobo-modeler run`` and ``pobo-modeler resume``: GP-UCB one query per request, or GP-BUCB batches (``--batch q``,
``--asynchronous``), with a progress display."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from modeler_client.batch import GPBUCBProposer, run_batched
from modeler_client.loop import LoopEvent, RemoteGPUCB
from modeler_client.remote import RemoteRelease, RemoteSession
from modeler_client.runfile import MAX_BATCH, RunRecord, RunSettings

from modeler_client.commands.common import (
    Retries,
    Timeout,
    Token,
    Url,
    connect,
    console,
    reports_api_errors,
    show_release_warnings,
)

class HyperparameterMode(StrEnum):
    fit = "fit"
    fixed = "fixed"


class KernelName(StrEnum):
    se = "se"
    matern52 = "matern52"


class BatchBeta(StrEnum):
    desautels = "desautels"
    plain = "plain"


class InputNoise(StrEnum):
    auto = "auto"
    ignore = "ignore"
    expected_kernel = "expected-kernel"


Poll = Annotated[float, typer.Option(help="First wait (s) between checks of a pending manual query; grows 1.5×.")]
MaxPoll = Annotated[float, typer.Option(help="Longest wait (s) between checks of a pending query.")]
PendingTimeoutOption = Annotated[
    float | None,
    typer.Option(help="Give up waiting on pending queries after this many seconds (resume later); default: wait."),
]


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
        description = event.message if event.kind == "waiting" else best_text
        self.progress.update(self.task, completed=len(record.done()), description=description)


def batched(record: RunRecord) -> bool:
    """Runs that need the batch driver: q > 1, asynchronous, or reusing earlier answers."""
    s = record.settings
    return s.batch > 1 or s.asynchronous or bool(s.reuse_sessions)


def drive(client, path: Path, **options) -> RunRecord:
    """Run (or resume) the run file at ``path`` with a progress display: Algorithm 2 one query per request,
    or GP-BUCB through the ask/tell layer (:mod:`modeler_client.batch`)."""
    record = RunRecord.load(path)
    show_release_warnings(record.release)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        display = ProgressDisplay(progress, record.settings.iterations)
        if batched(record):
            def waiting(still: list, waited: float) -> None:
                rows = ", ".join(f"#{q.query_id} (row {q.index})" for q in still)
                display(LoopEvent("waiting", session.record, f"waiting {waited:.0f} s for the curator to measure {rows}"))

            session = RemoteSession.resume(client, path, reuse_from=record.settings.reuse_sessions, on_wait=waiting,
                                           **options)
            release = RemoteRelease(client, record.release_id, metadata=record.release)
            proposer = GPBUCBProposer(release.Z, record.release, record.settings)
            record = run_batched(session, proposer, on_step=lambda kind, rec: display(LoopEvent(kind, rec)))
        else:
            record = RemoteGPUCB.resume(client, path, on_event=display, **options).run()
    best = record.best()
    console.print(
        f"[bold green]done[/]: {len(record.done())} measurements in {record.elapsed_seconds:.1f} s; "
        f"best {best.value:.6g} at row {best.index} ({record.goal}); run file {path}"
    )
    return record


def run(
    url: Url,
    token: Token,
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
    lengthscale: Annotated[float | None, typer.Option(help="Fixed lengthscale (default: median distance of Z).")] = None,
    signal_variance: Annotated[float | None, typer.Option(help="Fixed signal variance (default 1).")] = None,
    noise_variance: Annotated[float | None, typer.Option(help="Fixed noise variance (default 1e-6 × signal).")] = None,
    ucb_delta: Annotated[float, typer.Option(help="δ' of Algorithm 2's β_t.")] = 0.025,
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
    poll: Poll = 0.5,
    max_poll: MaxPoll = 30.0,
    pending_timeout: PendingTimeoutOption = None,
    timeout: Timeout = 30.0,
    retries: Retries = 3,
) -> None:
    """Run GP-UCB (Algorithm 2) on a release: index-only queries, saved after every iteration.

    If OUT already holds an unfinished run of the same release on the same server, it is resumed.
    """
    client = connect(url, token, timeout, retries)
    options = dict(poll=poll, max_poll=max_poll, pending_timeout=pending_timeout)
    if out.exists():
        existing = RunRecord.load(out)
        if existing.release_id != release or existing.url != client.url:
            raise typer.BadParameter(
                f"{out} holds a run of release {existing.release_id} on {existing.url}; choose another --out"
            )
        console.print(f"[yellow]{out} exists: resuming that run[/]")
        drive(client, out, **options)
        return
    reuse_sessions = [reused_session(path, release, client.url) for path in reuse_from or []]
    settings = RunSettings(
        iterations=iterations,
        ucb_delta=ucb_delta,
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
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A run file written by 'run'.")],
    token: Token,
    url: Annotated[str | None, typer.Option(help="Override the server URL stored in the run file.")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="Raise T to continue a finished run.")] = None,
    poll: Poll = 0.5,
    max_poll: MaxPoll = 30.0,
    pending_timeout: PendingTimeoutOption = None,
    timeout: Timeout = 30.0,
    retries: Retries = 3,
) -> None:
    """Resume a run after a crash or a wait: recovers answers the server stored, then continues."""
    record = RunRecord.load(path)
    if iterations is not None:
        record.settings.iterations = iterations
        record.finished = False
        record.save(path)
    client = connect(url or record.url, token, timeout, retries)
    drive(client, path, poll=poll, max_poll=max_poll, pending_timeout=pending_timeout)


def register(app: typer.Typer) -> None:
    app.command()(reports_api_errors(run))
    app.command()(reports_api_errors(resume))
