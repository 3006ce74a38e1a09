"""Tables of issue 14's governance and lab workflow (migrations 0007, 0008), beside the core tables of :mod:`.models`.

A key's policy and a dataset's identifier column are optional one-to-one companions of their rows: a key without
a policy row has its role's defaults (no cap, no expiry; a curator key runs every job kind, a modeler key none),
a dataset without an identifier row is answered by file row number.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from curator_service.persistence.models import Base, UTCDateTime, utcnow
from shared.api.governance import REASON_MAX_LENGTH


class KeyPolicy(Base):
    __tablename__ = "key_policies"
    noun = "key policy"

    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id"), primary_key=True)
    epsilon_cap: Mapped[float | None] = mapped_column(Float, nullable=True)
    delta_cap: Mapped[float | None] = mapped_column(Float, nullable=True)
    # The job kinds the key may run; NULL: the role's default.
    jobs: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class DatasetIdentifier(Base):
    """The column of a dataset's raw table that names a row for the curator (e.g. the MRN)."""

    __tablename__ = "dataset_identifiers"
    noun = "identifier column"

    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), primary_key=True)
    column: Mapped[str] = mapped_column(String(200))


class QueryNote(Base):
    """What the lab did to an answered query and why: a "cannot measure" or a correction, with the old and the new
    value and the lab's free text. Measured values and the reason live here, curator-only, never in the audit log
    (which records only ``query:<id>`` and the action)."""

    __tablename__ = "query_notes"
    noun = "query note"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"), index=True)
    action: Mapped[str] = mapped_column(String(32))  # "cannot_measure" or "correct"
    old_status: Mapped[str] = mapped_column(String(16))
    old_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    new_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str] = mapped_column(String(REASON_MAX_LENGTH))
    actor: Mapped[str] = mapped_column(String(240))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
