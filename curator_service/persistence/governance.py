"""Tables of issue 14's governance and lab workflow (migration 0007), beside the core tables of :mod:`.models`.

A key's policy and a dataset's identifier column are optional one-to-one companions of their rows: a key without
a policy row has its role's defaults (no cap, no expiry; a curator key runs every job kind, a modeler key none),
a dataset without an identifier row is answered by file row number.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Float, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from curator_service.persistence.models import Base, UTCDateTime


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
