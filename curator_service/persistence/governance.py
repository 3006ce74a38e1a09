"""Tables of governance, console sessions and the lab workflow, beside the core tables of :mod:`.models`.

A key's policy and a dataset's identifier column are optional one-to-one companions of their rows: a key without
a policy row has its role's defaults (no cap, no expiry, no governance; a curator key runs every job kind, a modeler
key none), a dataset without an identifier row is answered by file row number.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, false
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
    # May raise budgets, revoke keys and edit other keys' policies (the admin token always may).
    governance: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class ConsoleSession(Base):
    """A console login. The browser holds a random session id; this row holds only its SHA-256, the credential it
    was opened with (``key_id``, NULL for the admin token, and that credential's SHA-256, so revoking the key or
    changing the admin token ends it), and its idle and absolute expiry."""

    __tablename__ = "console_sessions"
    noun = "console session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    id_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"), nullable=True, index=True)
    credential_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


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
