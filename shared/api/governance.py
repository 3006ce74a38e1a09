"""Wire models of governance per key and the lab workflow.

A key's **policy**: an (ε, δ) cap of its own, summed over every ledger charge it triggers (releases it creates,
jobs it submits) on every dataset; the job kinds it may run; an expiry. The **lab workflow**: the curator's own
row-identifier column (an MRN; never sent to a modeler), answers by identifier (one by one or from a CSV),
"cannot measure" and corrections with a reason. Of these, a modeler only ever sees its own key's policy.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from shared.api.schemas import (
    FILE_ROW,
    KeyCreate,
    MeasurementSpec,
    Number,
    QueryResult,
    _Model,
    _Request,
    confirm_outside_range_field,
)

REASON_MAX_LENGTH = 150
"""A reason is kept in the query's lab notes (query_notes), never in the audit log."""


class KeyPolicy(_Request):
    """What a key may spend and run, and until when. Every field is optional: null leaves the role's default."""

    epsilon_cap: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="The most ε this key may spend, summed over every ledger charge it triggers (releases it "
                    "creates, jobs it submits) on every dataset; null: no cap of its own (the datasets' budgets "
                    "still hold).")
    delta_cap: Number | None = Field(default=None, ge=0, lt=1, description="The same for δ; null: no cap.")
    jobs: list[str] | None = Field(
        default=None, max_length=100,
        description="The job kinds this key may run; null: the role's default (a curator key every kind, a "
                    "modeler key none: it cannot spend a dataset's budget).")
    expires_at: datetime | None = Field(
        default=None, description="From this moment the key authenticates nothing (401); ISO 8601, UTC when it "
                                  "names no zone.")
    governance: bool | None = Field(
        default=None, description="Whether this curator key may raise budgets, revoke keys and change other keys' "
                                  "policies (the admin token always may); only for a key with no cap and no job "
                                  "list; null: no.")


class KeyCreateWithPolicy(KeyCreate, KeyPolicy):
    """``POST /v1/keys``: the key and, optionally, its policy."""


class KeyPolicyOut(_Model):
    """A key's policy as it applies, and what the key has spent against its caps."""

    key_id: int
    role: Literal["modeler", "curator"]
    epsilon_cap: float | None
    delta_cap: float | None
    jobs: list[str] = Field(description="The job kinds this key may run (the role's default filled in).")
    expires_at: datetime | None
    governance: bool = Field(description="Whether the key may raise budgets, revoke keys and change other keys' "
                                         "policies.")
    spent_epsilon: float = Field(description="ε of every ledger charge this key triggered, on every dataset.")
    spent_delta: float
    max_queries: int = Field(description="Index queries this key may make in all (every session, every release).")
    used_queries: int


class IdentifierColumn(_Request):
    """``PUT /v1/datasets/{id}/identifier-column``: the column of the registered table that identifies a row for
    the curator (e.g. the MRN). Stored on the curator only; never a feature, never sent to a modeler."""

    column: str = Field(min_length=1, max_length=200)


def identifier_name(column: str | None) -> str:
    """What the lab calls a row's identifier, in the console and on the command line alike: the identifier column's
    name, upper-cased when it is a short abbreviation (``mrn`` → ``MRN``), or ``row`` (its file row) without one."""
    if column is None:
        return "row"
    return column.upper() if len(column) <= 4 and column.isalpha() else column


class IdentifierColumnOut(_Model):
    dataset_id: int
    column: str


class WorkItem(_Model):
    """A pending manual query as the lab sees it: the row by the curator's own identifier (and file row)."""

    query_id: int
    identifier: str = Field(description="The row's value in the identifier column (its file row number when the "
                                        "dataset has none).")
    row: int = Field(description=FILE_ROW)
    session_id: int
    created_at: datetime


class LabQuery(_Model):
    """One query of a session as the lab sees it: the row by the curator's identifier, its status and value."""

    query_id: int
    index: int = Field(description="The modeler's index into the released inputs (what its reports name).")
    identifier: str = Field(description="The row's value in the identifier column (its file row number when the "
                                        "dataset has none).")
    row: int = Field(description=FILE_ROW)
    status: Literal["done", "pending", "unmeasurable"]
    value: float | None = None


class Worklist(_Model):
    """``GET /v1/datasets/{id}/worklist``: the dataset's pending manual queries, oldest first."""

    dataset_id: int
    identifier_column: str | None = Field(description="null: rows are identified by their file row number.")
    measurement: MeasurementSpec | None = Field(default=None, description="What to measure, and in which unit.")
    queries: list[WorkItem]


class IdentifiedAnswer(_Model):
    """A measurement for the pending queries of the row with this identifier (every pending query of that row)."""

    identifier: str = Field(min_length=1, max_length=200, description="The row's value in the identifier "
                            "column, or its file row number when the dataset has no identifier column.")
    value: Number


class IdentifiedAnswers(_Request):
    """``POST /v1/datasets/{id}/answers`` (``POST /v1/datasets/{id}/answers/csv`` takes the same as a CSV)."""

    answers: list[IdentifiedAnswer] = Field(min_length=1, max_length=100_000)
    confirm_outside_range: bool = confirm_outside_range_field()


class AnswersOut(_Model):
    answered: list[QueryResult] = Field(description="Every query answered, in the order of the answers given.")


class CannotMeasure(_Request):
    """``POST /v1/queries/{id}/cannot-measure``: the lab cannot measure this row; the query keeps its one charge."""

    reason: str = Field(min_length=1, max_length=REASON_MAX_LENGTH,
                        description="Kept in the session's lab notes (GET /v1/sessions/{id}/notes).")


class Correction(_Request):
    """``POST /v1/queries/{id}/correct``: replace a wrong answer; the session's lab notes keep the old value and the
    reason; the audit log records only the query id."""

    value: Number
    reason: str = Field(min_length=1, max_length=REASON_MAX_LENGTH)
    confirm_outside_range: bool = confirm_outside_range_field()


class PlausibleRange(_Request):
    """``PUT /v1/datasets/{id}/plausible-range``: the values a manual measurement plausibly takes (public, shown
    with the quantity); null bounds remove the range."""

    low: Number | None = Field(default=None, allow_inf_nan=False)
    high: Number | None = Field(default=None, allow_inf_nan=False)
