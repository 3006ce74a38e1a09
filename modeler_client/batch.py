"""Batch and asynchronous GP-UCB over the wire: GP-BUCB (Desautels, Krause & Burdick 2014) driven through
the ask/tell layer (:class:`modeler_client.remote.RemoteSession`).

GP-BUCB picks a batch sequentially. After each pick x_j (and for every query still pending) it adds a
*hallucinated* observation equal to the posterior mean: μ is unchanged, σ shrinks around x_j, so the next
pick explores elsewhere. Pick t uses the batch confidence parameter of their Theorem 1,

    β_t^batch = exp(2C) · β_t,        β_t = 2 log(n t² π² / (6 δ'))   (PO-GP-UCB's Algorithm 2),

where C bounds the information the hallucinated (pending) observations carry, I(f; y_pending | y_done).
Their proof needs exp(C) ≥ σ_done(x) / σ_hallucinated(x) for every x; we use the exact conditional
information of the queries pending at that pick,

    C_t = ½ Σ_{pending j} log(1 + σ²_{j−1}(x_j) / σ_n²)     (the chain rule of Gaussian entropy),

which bounds that ratio and is what any fixed C of their Theorem 1 must exceed. ``batch_beta="plain"`` uses
β_t alone (the engine's :meth:`shared.gp.ucb.GPUCB.suggest_batch`, a common heuristic without the guarantee).

Two ways to run (:func:`run_batched`):

* synchronous (``--batch q``): q indices in one request; the next batch is chosen when all q are answered;
* asynchronous (``--batch q --asynchronous``): up to q queries pending at once; whenever any answer arrives
  the free places are refilled, treating the still-pending queries as hallucinated (GP-BUCB's delay case).

The run file records pending queries, so ``resume`` waits for them and continues the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from modeler_client.remote import RemoteSession
from modeler_client.runfile import RunRecord, RunSettings
from modeler_client.surrogate import Surrogate, release_options
from shared.api.schemas import ReleaseOut
from shared.gp.ucb import GPUCB


class Proposer(Protocol):
    """What :func:`run_batched` drives: ``tell`` each answer (oriented so that larger is better) in the order
    the answers arrived, ``ask`` for q new row indices given those still pending."""

    def tell(self, index: int, value: float) -> None: ...

    def ask(self, q: int, pending: Sequence[int]) -> list[int]: ...

    def exclude(self, index: int) -> None:
        """Never propose this row again (the curator could not measure it; asking again is charged again)."""


@dataclass(frozen=True)
class Trial:
    """A proposed row, as Optuna's ``study.ask()`` returns a trial: ``index`` is the row to query, ``number`` counts
    the study's trials from 0."""

    number: int
    index: int


class Study:
    """Optuna's ask/tell names over any :class:`Proposer`: ``trial = study.ask()``, query ``trial.index``, then
    ``study.tell(trial, value)`` (``None``: the curator could not measure the row; values oriented, larger is better).
    Trials asked and not yet told are pending, so several asks in a row give a batch (GP-BUCB hallucinates them).
    The proposer's own ``ask(q, pending)`` / ``tell(index, value)`` are the batch form :func:`run_batched` drives."""

    def __init__(self, proposer: Proposer) -> None:
        self.proposer = proposer
        self.trials: list[Trial] = []
        self._open: dict[int, Trial] = {}

    def ask(self) -> Trial:
        [index] = self.proposer.ask(1, [trial.index for trial in self._open.values()])
        trial = Trial(number=len(self.trials), index=int(index))
        self.trials.append(trial)
        self._open[trial.number] = trial
        return trial

    def tell(self, trial: Trial, value: float | None) -> None:
        if self._open.pop(trial.number, None) is None:
            raise ValueError(f"trial {trial.number} was not asked by this study or was told already")
        if value is None or not math.isfinite(value):
            self.proposer.exclude(trial.index)
        else:
            self.proposer.tell(trial.index, float(value))


def gp_bucb(ucb: GPUCB, q: int, pending: Sequence[int] = (), *, inflate: bool = True) -> list[int]:
    """q indices by GP-BUCB on ``ucb``'s posterior, with ``pending`` hallucinated first; with ``inflate`` the
    batch β exp(2 C_t) β_t (module docstring), else β_t. The real posterior is left untouched."""
    if q < 1:
        raise ValueError("q must be ≥ 1")
    picks: list[int] = []
    information = 0.0
    with ucb.posterior.hallucinating() as post:

        def hallucinate(index: int) -> None:
            nonlocal information
            information += 0.5 * math.log1p(post.variance_at(index) / post.noise_variance)
            post.observe(index, post.mean_at(index))

        for index in pending:
            hallucinate(int(index))
        for _ in range(q):
            t = post.n_observations + 1
            # exp(2C) overflows a float past C ≈ 354; the scores are then σ-ranked anyway.
            beta = ucb.beta(t) * (math.exp(min(2.0 * information, 700.0)) if inflate else 1.0)
            pick = post.best_upper_confidence_bound(beta, ucb.never_suggested(post))  # ties to the lowest index
            if pick < 0:
                raise ValueError("every row is measured, pending or unmeasurable and requery is off: nothing is left "
                                 "to ask")
            picks.append(pick)
            if len(picks) < q:
                hallucinate(picks[-1])
    return picks


class GPBUCBProposer:
    """GP-BUCB over released inputs, with the GP-UCB loop's surrogate (same kernels, hyperparameter fitting,
    input-noise handling and release-driven defaults, :mod:`modeler_client.surrogate`). ``on_refit(surrogate)`` is
    called whenever an answer changed the hyperparameters."""

    def __init__(
        self,
        Z: NDArray,
        release: ReleaseOut,
        settings: RunSettings,
        *,
        requery: bool | None = None,
        measurement_noise_std: float | None = None,
        on_refit: Callable[[Surrogate], None] | None = None,
        **surrogate_options,
    ) -> None:
        # What the release's metadata decides unless given (σ_y, no repeats): release_options.
        options = release_options(release, settings, requery=requery, measurement_noise_std=measurement_noise_std)
        self.surrogate = Surrogate(Z, release, settings, **options, **surrogate_options)
        self.inflate = settings.batch_beta == "desautels"
        self.on_refit = on_refit
        self.indices: list[int] = []
        self.values: list[float] = []

    def tell(self, index: int, value: float) -> None:
        self.indices.append(int(index))
        self.values.append(float(value))

    def exclude(self, index: int) -> None:
        self.surrogate.exclude([index])

    def ask(self, q: int, pending: Sequence[int]) -> list[int]:
        if self.surrogate.update(self.indices, np.array(self.values)) and self.on_refit is not None:
            self.on_refit(self.surrogate)
        if q == 1 and not pending:  # C_t = 0: GP-UCB's own pick (Algorithm 2, its initial design included)
            return [self.surrogate.suggest()]
        engine = self.surrogate.ucb
        assert engine is not None, "update() above builds the engine"
        if self.surrogate.settings.acquisition == "logei":  # the batch by hallucinated means, each pick by LogEI
            return engine.suggest_batch(q, pending)
        return gp_bucb(engine, q, pending, inflate=self.inflate)


class RandomProposer:
    """Uniform random search without repeats: the baseline every batch method must beat."""

    def __init__(self, n: int, seed: int | np.random.Generator | None = None) -> None:
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.asked: set[int] = set()

    def tell(self, index: int, value: float) -> None:
        self.asked.add(int(index))

    def exclude(self, index: int) -> None:
        self.asked.add(int(index))

    def ask(self, q: int, pending: Sequence[int]) -> list[int]:
        free = np.setdiff1d(np.arange(self.n), [*self.asked, *pending])
        picks = self.rng.choice(free, size=min(q, len(free)), replace=False) if len(free) else free
        self.asked.update(int(i) for i in picks)
        return [int(i) for i in picks]


def run_batched(
    session: RemoteSession,
    proposer: Proposer,
    *,
    on_step: Callable[[str, RunRecord], None] | None = None,
) -> RunRecord:
    """Drive ``proposer`` through ``session`` until the run's T queries are made and answered.

    q = ``settings.batch``; ``settings.asynchronous`` refills free places as soon as any answer arrives,
    otherwise the next batch waits for the whole previous one. Answers are told in the order they arrived
    (oriented: −y for a ``minimize`` release). ``on_step(kind, record)`` reports ``asked``/``answered``.
    """
    record = session.record
    settings = record.settings
    report = on_step or (lambda kind, record: None)
    orientation = -1.0 if record.goal == "minimize" else 1.0
    told: set[int] = set()

    def tell(queries) -> None:
        for query in queries:
            if query.query_id in told or query.status == "pending":
                continue
            if query.status == "done":
                proposer.tell(query.index, orientation * query.value)
            else:  # unmeasurable: charged once, no value, never asked again
                proposer.exclude(query.index)
            told.add(query.query_id)

    tell(record.queries)
    while True:
        pending = record.pending()
        room = min(settings.batch - len(pending), settings.iterations - len(record.queries))
        if room > 0 and (settings.asynchronous or not pending):
            picks = proposer.ask(room, [q.index for q in pending])
            if not picks:
                raise RuntimeError("the optimiser proposed no row; every row may have been asked already")
            tell(session.submit(picks))
            report("asked", record)
            continue
        if not pending:
            break
        tell(session.wait(until="any" if settings.asynchronous else "all"))
        report("answered", record)
    session.close()
    return record
