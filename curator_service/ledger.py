"""The privacy ledger: every DP release is an entry (ε, δ, purpose, time) against its dataset's budget.

Composition is basic: spent ε and δ are the sums of the entries. A charge happens inside the write
transaction that stores what it pays for, after locking the dataset row (``BEGIN IMMEDIATE`` on SQLite,
``SELECT … FOR UPDATE`` on PostgreSQL), so concurrent requests cannot both pass the same budget check.
A relative slack of 1e-9 absorbs floating-point summation error only (five charges of 0.2 fit a budget
of 1.0); it never admits a real overdraft.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Query, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from curator_service.auth import Curator
from curator_service.db import get_or_404
from curator_service.errors import ApiError
from curator_service.models import Dataset, LedgerEntry as LedgerRow
from shared.schemas import BudgetStatus, LedgerEntry

router = APIRouter(tags=["ledger and audit"])

RELATIVE_SLACK = 1e-9


def budget_status(session: Session, dataset: Dataset) -> BudgetStatus:
    entries = session.execute(
        select(LedgerRow.epsilon, LedgerRow.delta).where(LedgerRow.dataset_id == dataset.id)
    ).all()
    spent_epsilon = math.fsum(e for e, _ in entries)
    spent_delta = math.fsum(d for _, d in entries)
    return BudgetStatus(
        total_epsilon=dataset.budget_epsilon,
        total_delta=dataset.budget_delta,
        spent_epsilon=spent_epsilon,
        spent_delta=spent_delta,
        remaining_epsilon=max(0.0, dataset.budget_epsilon - spent_epsilon),
        remaining_delta=max(0.0, dataset.budget_delta - spent_delta),
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
            "ask for less or register the data under a new budget decision",
        )


def charge(
    session: Session,
    dataset_id: int,
    epsilon: float,
    delta: float,
    purpose: str,
    *,
    release_id: int | None = None,
    job_id: int | None = None,
) -> LedgerRow:
    """Locks the dataset, checks the budget and adds the entry to the caller's transaction."""
    dataset = get_or_404(session, Dataset, dataset_id, lock=True)
    check_affordable(budget_status(session, dataset), epsilon, delta, purpose)
    entry = LedgerRow(
        dataset_id=dataset_id, epsilon=epsilon, delta=delta, purpose=purpose, release_id=release_id, job_id=job_id
    )
    session.add(entry)
    return entry


@router.get("/v1/ledger", response_model=list[LedgerEntry], summary="Privacy-budget entries, oldest first")
def list_ledger(
    request: Request,
    principal: Curator,
    dataset_id: Annotated[int | None, Query(description="Only this dataset's entries.")] = None,
) -> list[LedgerEntry]:
    with request.app.state.db.read() as session:
        statement = select(LedgerRow).order_by(LedgerRow.id)
        if dataset_id is not None:
            statement = statement.where(LedgerRow.dataset_id == dataset_id)
        return [LedgerEntry.model_validate(row, from_attributes=True) for row in session.scalars(statement)]
