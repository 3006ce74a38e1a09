"""The privacy ledger: every DP release is an entry against its dataset's budget, recording what was spent as data.

An entry holds (ε, δ), its purpose and time, the mechanism and its DP event (σ or scale and sensitivity,
:mod:`.ledger_events`) and the actor (the admin or which key). Composition is basic: spent ε and δ are the sums
of the ``charge`` entries. The total is the budget set at registration plus the curator's ``raise`` entries: a
budget only grows by a recorded, audited entry. A charge happens inside the write transaction that stores what it
pays for, after locking the dataset row (``BEGIN IMMEDIATE`` on SQLite, ``SELECT … FOR UPDATE`` on PostgreSQL),
so concurrent requests cannot both pass the same budget check. A relative slack of 1e-9 absorbs floating-point
summation error only (five charges of 0.2 fit a budget of 1.0); it never admits a real overdraft.

A key's own cap is checked in the same charge (:func:`check_key_cap`): whoever records a charge (a service in the API
process, a job's commit on a Dask worker) goes through :func:`charge`, so the cap holds wherever the charge is made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.persistence.db import get_or_404
from curator_service.persistence.models import ApiKey, Dataset, KeyPolicy
from curator_service.persistence.models import LedgerEntry as LedgerRow
from curator_service.services.audit import record
from curator_service.services.ledger_events import Event
from curator_service.services.policy import KEY_ACTOR_PREFIX, Principal
from shared.api.errors import ApiError
from shared.api.schemas import BudgetRaise, BudgetStatus, LedgerEntry

RELATIVE_SLACK = 1e-9


@dataclass(frozen=True)
class Spend:
    """What a charge pays for: (ε, δ), why, by which mechanism (its DP event) and on whose request."""

    epsilon: float
    delta: float
    purpose: str
    mechanism: str
    event: Event
    actor: Principal


def budget_status(session: Session, dataset: Dataset) -> BudgetStatus:
    entries = session.execute(
        select(LedgerRow.kind, LedgerRow.epsilon, LedgerRow.delta).where(LedgerRow.dataset_id == dataset.id)
    ).all()
    charges = [(e, d) for kind, e, d in entries if kind == "charge"]
    raises = [(e, d) for kind, e, d in entries if kind == "raise"]
    total_epsilon = math.fsum([dataset.budget_epsilon, *(e for e, _ in raises)])
    total_delta = math.fsum([dataset.budget_delta, *(d for _, d in raises)])
    spent_epsilon = math.fsum(e for e, _ in charges)
    spent_delta = math.fsum(d for _, d in charges)
    return BudgetStatus(
        total_epsilon=total_epsilon,
        total_delta=total_delta,
        spent_epsilon=spent_epsilon,
        spent_delta=spent_delta,
        remaining_epsilon=max(0.0, total_epsilon - spent_epsilon),
        remaining_delta=max(0.0, total_delta - spent_delta),
    )


def _fits(spent: float, cost: float, total: float) -> bool:
    return spent + cost <= total * (1 + RELATIVE_SLACK)


def check_affordable(status: BudgetStatus, epsilon: float, delta: float, what: str) -> None:
    """Raises ``budget_exceeded`` (409) when (ε, δ) does not fit in what is left."""
    if not (_fits(status.spent_epsilon, epsilon, status.total_epsilon)
            and _fits(status.spent_delta, delta, status.total_delta)):
        raise ApiError(
            409,
            "budget_exceeded",
            f"{what} costs (epsilon={epsilon:g}, delta={delta:g}) but the dataset has only "
            f"(epsilon={status.remaining_epsilon:g}, delta={status.remaining_delta:g}) left; "
            "ask for less, or have the curator raise the budget (`pobo-curator budget raise`, recorded in the "
            "ledger)",
        )


def charge(session: Session, dataset_id: int, spend: Spend) -> LedgerRow:
    """Locks the dataset, checks its budget and the requesting key's cap (:func:`check_key_cap`) and adds the entry
    to the caller's transaction (the caller links it to the release or job it pays for)."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    check_affordable(budget_status(session, dataset), spend.epsilon, spend.delta, spend.purpose)
    check_key_cap(session, spend)
    entry = LedgerRow(dataset_id=dataset_id, epsilon=spend.epsilon, delta=spend.delta, purpose=spend.purpose,
                      mechanism=spend.mechanism, event=spend.event, actor=spend.actor.actor)
    session.add(entry)
    return entry


def key_spent(session: Session, key_id: int) -> tuple[float, float]:
    """(ε, δ) of every ledger charge this key triggered, on every dataset."""
    rows = session.execute(select(LedgerRow.epsilon, LedgerRow.delta)
                           .where(LedgerRow.actor.startswith(f"{KEY_ACTOR_PREFIX}{key_id}:", autoescape=True),
                                  LedgerRow.kind == "charge")).all()
    return math.fsum(e for e, _ in rows), math.fsum(d for _, d in rows)


def check_key_cap(session: Session, spend: Spend) -> None:
    """409 ``budget_exceeded`` when ``spend`` would take the requesting key past its own (ε, δ) cap (its policy's
    ``epsilon_cap``/``delta_cap``: the sum of every charge the key triggered, on every dataset, basic composition).
    The key's row is locked first, so concurrent charges of one key on different datasets cannot both pass. The
    admin token has no cap."""
    key_id = spend.actor.key_id
    if key_id is None:
        return
    get_or_404(session, ApiKey, key_id, lock=True)
    policy = session.get(KeyPolicy, key_id)
    if policy is None or (policy.epsilon_cap is None and policy.delta_cap is None):
        return
    spent_epsilon, spent_delta = key_spent(session, key_id)
    cap_epsilon = math.inf if policy.epsilon_cap is None else policy.epsilon_cap
    cap_delta = math.inf if policy.delta_cap is None else policy.delta_cap
    if not (_fits(spent_epsilon, spend.epsilon, cap_epsilon) and _fits(spent_delta, spend.delta, cap_delta)):
        raise ApiError(409, "budget_exceeded",
                       f"{spend.purpose} costs (epsilon={spend.epsilon:g}, delta={spend.delta:g}) but this key's own "
                       f"cap (epsilon={cap_epsilon:g}, delta={cap_delta:g}) leaves only "
                       f"(epsilon={max(0.0, cap_epsilon - spent_epsilon):g}, "
                       f"delta={max(0.0, cap_delta - spent_delta):g}); ask for less, or ask the curator for a key "
                       "with a larger cap (pobo-curator key create --epsilon-cap/--delta-cap)")


def raise_budget(session: Session, principal: Principal, dataset_id: int, body: BudgetRaise) -> BudgetStatus:
    """Adds a ``raise`` entry (audited with its amounts and reason) and returns the new budget. The admin token or a
    governance key only (the router checks it: :func:`~.key_policy.check_governs`)."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    if budget_status(session, dataset).total_delta + body.delta >= 1:
        raise ApiError(422, "validation_error", "the raise would make the total 'delta' 1 or more; a "
                       "delta of 1 protects nothing: raise it by less")
    session.add(LedgerRow(dataset_id=dataset_id, kind="raise", epsilon=body.epsilon, delta=body.delta,
                          purpose=f"budget raised by the curator: {body.reason}", actor=principal.actor))
    record(session, principal, "dataset.budget_raise",
           f"dataset:{dataset_id} (+epsilon {body.epsilon:g}, +delta {body.delta:g}: {body.reason})")
    session.flush()
    return budget_status(session, dataset)


def list_entries(session: Session, dataset_id: int | None = None) -> list[LedgerEntry]:
    """Entries oldest first, optionally of one dataset."""
    statement = select(LedgerRow).order_by(LedgerRow.id)
    if dataset_id is not None:
        statement = statement.where(LedgerRow.dataset_id == dataset_id)
    return [LedgerEntry.model_validate(row, from_attributes=True) for row in session.scalars(statement)]
