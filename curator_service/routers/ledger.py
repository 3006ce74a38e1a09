"""The privacy ledger: its entries, and the curator's recorded budget raises."""

from __future__ import annotations

from fastapi import APIRouter, Request

from curator_service.routers.auth import Curator, governance_write
from curator_service.routers.params import DatasetFilter, DatasetId
from curator_service.services import audit, ledger
from curator_service.services.key_policy import check_governs
from shared.api.schemas import BudgetRaise, BudgetStatus, LedgerEntry

router = APIRouter(tags=["ledger and audit"])


@router.post("/v1/datasets/{dataset_id}/budget", status_code=201, response_model=BudgetStatus,
             summary="Raise a dataset's total budget (a recorded, audited ledger entry)")
def raise_budget(request: Request, principal: Curator, dataset_id: DatasetId, body: BudgetRaise) -> BudgetStatus:
    """Raises a dataset's total (ε, δ) by a recorded ledger entry with the curator's reason; a budget never changes
    silently, and the total δ must stay below 1. The admin token or a governance key only (a refusal is a 403,
    audited)."""
    with governance_write(request, principal) as session:
        check_governs(session, principal, "dataset.budget_raise", f"dataset:{dataset_id}")
        return ledger.raise_budget(session, principal, dataset_id, body)


@router.get("/v1/ledger", response_model=list[LedgerEntry], summary="Privacy-budget entries, oldest first")
def list_ledger(
    request: Request,
    principal: Curator,
    dataset_id: DatasetFilter = None,
) -> list[LedgerEntry]:
    """Every privacy-budget entry, oldest first: what was spent (ε, δ, mechanism, noise, sensitivity), for what and by
    whom, and the curator's raises. The read is audited."""
    with request.app.state.db.write() as session:
        audit.record(session, principal, "ledger.read", None if dataset_id is None else f"dataset:{dataset_id}")
        return ledger.list_entries(session, dataset_id)
