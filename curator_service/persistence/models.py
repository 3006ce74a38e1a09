"""The service's tables (SQLAlchemy 2). The Alembic migrations in ``migrations/`` create them.

Raw tables and released inputs are stored as NumPy ``.npz`` / ``.npy`` blobs (:mod:`.blobs`); nothing here ever
holds a projection matrix or the transformed-but-unprojected data.

A key's policy and a dataset's identifier column are optional one-to-one companions of their rows: a key without
a policy row has its role's defaults (no cap, no expiry, no governance; a curator key runs every job kind, a modeler
key none), a dataset without an identifier row is answered by file row number.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column

from shared.api.governance import REASON_MAX_LENGTH


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC timestamps on every backend (SQLite drops the zone; this puts it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    pass


class Dataset(Base):
    __tablename__ = "datasets"
    noun = "dataset"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    n: Mapped[int] = mapped_column(Integer)
    d: Mapped[int] = mapped_column(Integer)
    columns: Mapped[list[str]] = mapped_column(JSON)
    # The columns a job may read as numbers, fixed at registration from the spec (services.datasets.numeric_columns);
    # set on every row (migration 0010 filled the older ones), nullable only because SQLite adds a column so.
    numeric_columns: Mapped[list[str]] = mapped_column(JSON, nullable=True)
    feature_columns: Mapped[list[str]] = mapped_column(JSON)
    evaluator: Mapped[dict[str, Any]] = mapped_column(JSON)
    scaling: Mapped[dict[str, Any]] = mapped_column(JSON)
    goal: Mapped[str] = mapped_column(String(16))
    # Public words for what is measured (MeasurementSpec), and the 0/1 columns a job may name as labels.
    measurement: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    label_columns: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    budget_epsilon: Mapped[float] = mapped_column(Float)
    budget_delta: Mapped[float] = mapped_column(Float)
    table: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    # Stored row i is the file's row source_rows[i] (int64 .npy; the secret permutation). NULL: file order.
    source_rows: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    # Registered before migration 0003: rows in the file's order. Computed by the database (the blob stays unread).
    in_file_order: Mapped[bool] = column_property(source_rows.is_(None))
    # Hex key of the column evaluator's simulated measurement noise (memoised per row; never returned).
    simulation_key: Mapped[str | None] = mapped_column(String(64), nullable=True, deferred=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Release(Base):
    __tablename__ = "releases"
    noun = "release"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    mechanism: Mapped[str] = mapped_column(String(32))
    certified: Mapped[bool] = mapped_column(Boolean)
    # None: made before seeds were recorded (migration 0002), so possibly seeded and never certified.
    seeded: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    epsilon: Mapped[float] = mapped_column(Float)
    delta: Mapped[float] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    dim: Mapped[int] = mapped_column(Integer)
    noise_std: Mapped[float | None] = mapped_column(Float, nullable=True)
    sensitivity: Mapped[float | None] = mapped_column(Float, nullable=True)
    omega: Mapped[float | None] = mapped_column(Float, nullable=True)
    sigma_min: Mapped[float | None] = mapped_column(Float, nullable=True)
    lifted: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # gaussian: the projection kind and every public parameter (NULL: made before migration 0005).
    projection: Mapped[str | None] = mapped_column(String(16), nullable=True)
    parameters: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    inputs: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    # Private measurements: ỹ for every row (float64 .npy), drawn once at release time. NULL: y as computed.
    measurements: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LedgerEntry(Base):
    __tablename__ = "ledger"
    noun = "ledger entry"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="charge", server_default="charge")  # or "raise"
    epsilon: Mapped[float] = mapped_column(Float)
    delta: Mapped[float] = mapped_column(Float)
    purpose: Mapped[str] = mapped_column(Text)
    release_id: Mapped[int | None] = mapped_column(ForeignKey("releases.id"), nullable=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"), nullable=True)
    # What was spent, as data (services/ledger_events.py): the mechanism and its DP event (σ or scale, sensitivity);
    # NULL where migration 0006 could not tell (and always for a raise, which spends nothing).
    mechanism: Mapped[str | None] = mapped_column(String(64), nullable=True)
    event: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Who caused it: "admin" or "key:<id>:<name>" (the audit log's actor); NULL where migration 0006 found none.
    actor: Mapped[str | None] = mapped_column(String(240), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"
    noun = "key"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    release_ids: Mapped[list[int]] = mapped_column(JSON)
    max_queries: Mapped[int] = mapped_column(Integer)
    used_queries: Mapped[int] = mapped_column(Integer, default=0)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelingSession(Base):
    """A modeler's session on one release (table ``sessions``)."""

    __tablename__ = "sessions"
    noun = "session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="open")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class QueryBatch(Base):
    """One ``POST /queries`` call; its ``request_id`` makes a repeat return the stored results."""

    __tablename__ = "query_batches"
    noun = "query batch"
    __table_args__ = (UniqueConstraint("session_id", "request_id", name="uq_query_batches_session_request"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), index=True)
    request_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Query(Base):
    __tablename__ = "queries"
    noun = "query"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), index=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("query_batches.id"), index=True)
    row_index: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class AuditEvent(Base):
    __tablename__ = "audit_events"
    noun = "audit event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    actor: Mapped[str] = mapped_column(String(240))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(240), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Job(Base):
    """A curator-side job. Its state lives here, not in any process: a Dask worker claims it (``claimed_by``, an
    UPDATE … WHERE status = 'queued' that only one claimant wins), shows it is alive (``heartbeat_at``) and stops by
    ``deadline_at``; ``request_id`` makes its creation idempotent per requester (a key, or the admin: key_id 0)."""

    __tablename__ = "jobs"
    noun = "job"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id"), nullable=True, index=True)
    key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"), nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), index=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    epsilon: Mapped[float] = mapped_column(Float, default=0.0)
    delta: Mapped[float] = mapped_column(Float, default=0.0)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    request_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(240), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    deadline_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


Index("uq_jobs_requester_request", func.coalesce(Job.key_id, 0), Job.request_id, unique=True)


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
