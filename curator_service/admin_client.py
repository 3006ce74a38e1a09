"""The curator's typed admin client: every administrative endpoint as a method taking and returning the wire
models of :mod:`shared.api.schemas`, over :class:`shared.api.http_client.ApiClient` (its retries and error model).

The ``pobo-curator`` admin commands, the demo, the benchmarks and the tests' harness
(:mod:`curator_service.testing`) use it; it talks HTTP only, so it works against a deployed service too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel

from curator_service.settings import MAX_RELEASE_WAIT_SECONDS
from shared.api.errors import ApiError
from shared.api.governance import (
    AnswersOut,
    CannotMeasure,
    Correction,
    IdentifierColumnOut,
    KeyCreateWithPolicy,
    LabQuery,
    Worklist,
)
from shared.api.http_client import ApiClient
from shared.api.job_polling import follow_job
from shared.api.schemas import (
    API_PREFIX,
    AuditEvent,
    BudgetRaise,
    BudgetStatus,
    DatasetFromPath,
    DatasetOut,
    DatasetSpec,
    JobOut,
    JobStatus,
    KeyCreate,
    KeyCreated,
    KeyOut,
    LedgerEntry,
    MeasurementSpec,
    PendingQueryList,
    PlanOut,
    PlanRequest,
    QueryList,
    QueryResult,
    ReconstructionAuditOut,
    ReconstructionAuditRequest,
    ReleaseCreate,
    ReleaseOut,
    RowOrder,
    SessionOut,
)

Model = TypeVar("Model", bound=BaseModel)

POLL_SECONDS = 1.0
"""How often a followed job is polled: progress moves per chunk (seconds), and a poll is one cheap read."""


RELEASE_POST_TIMEOUT_SECONDS = MAX_RELEASE_WAIT_SECONDS + 30.0
"""The release POST's timeout: the longest wait a server may be set to, plus the client's usual 30 s for the request's
own work, so a release finished within the server's wait is heard rather than timed out on and sent again."""


class AuditPage(NamedTuple):
    """A page of audit events and the number of rows over all pages."""

    events: list[AuditEvent]
    total: int


class JobNotSucceeded(ApiError):
    """A followed job ended failed or cancelled (code ``job_failed`` / ``job_cancelled``); ``job`` says why."""

    def __init__(self, job: JobOut) -> None:
        super().__init__(409, f"job_{job.status}", f"job {job.id} ({job.kind}) {job.status}: {job.message}")
        self.job = job


def _list(api: ApiClient, path: str, model: type[Model], params: Mapping[str, Any] | None = None) -> list[Model]:
    """A JSON list of ``model`` (``None`` parameters are left out of the query string)."""
    query = {name: value for name, value in (params or {}).items() if value is not None}
    return [model.model_validate(item) for item in api.get(path, params=query or None)]


class CuratorAdmin:
    """The curator's API, typed. Each call opens its own connection (``admin()``), so an instance is cheap to keep.

    ``url``: the service's root; ``admin_token``: the admin token or a curator key.
    """

    def __init__(self, url: str, admin_token: str) -> None:
        self.url = url.rstrip("/")
        self.admin_token = admin_token

    def admin(self, **options: Any) -> ApiClient:
        """An API client with the admin token (``options`` go to :class:`ApiClient`, e.g. ``timeout``)."""
        return ApiClient(self.url, self.admin_token, **options)

    # --- datasets -------------------------------------------------------------------------------------------

    def register_csv(self, csv: bytes, spec: DatasetSpec, filename: str = "data.csv") -> DatasetOut:
        """Uploads a CSV (with a header row) and registers it under ``spec``."""
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/datasets", files={"file": (filename, csv, "text/csv")},
                            data={"spec": spec.model_dump_json(exclude_none=True)}, model=DatasetOut)

    def register_path(self, spec: DatasetFromPath) -> DatasetOut:
        """Registers a CSV that is already on the curator's server, by its path there."""
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/datasets", spec, model=DatasetOut)

    def register_table(
        self,
        name: str,
        features: ArrayLike,
        feature_columns: list[str],
        *,
        evaluator: dict,
        budget: tuple[float, float],
        scaling: dict,
        extra_columns: Mapping[str, ArrayLike] | None = None,
        goal: str = "maximize",
    ) -> DatasetOut:
        """Uploads an array as CSV (features plus e.g. the measured column) and registers it; ``extra_columns`` are
        declared ``numeric_columns`` (jobs may read them).

        ``scaling`` is required, as by the service: it fixes what one neighbouring step hides, e.g.
        ``{"kind": "bounds", "lower": [...], "upper": [...], "diameter": 1}`` (a whole record)."""
        X = np.asarray(features, dtype=float)
        columns = {c: X[:, j] for j, c in enumerate(feature_columns)}
        columns.update({c: np.asarray(v, dtype=float) for c, v in (extra_columns or {}).items()})
        header = ",".join(columns)
        body = "\n".join(",".join(repr(float(v)) for v in row) for row in zip(*columns.values()))
        spec = DatasetSpec.model_validate({"name": name, "feature_columns": feature_columns, "evaluator": evaluator,
                                           "budget": {"epsilon": budget[0], "delta": budget[1]}, "scaling": scaling,
                                           "goal": goal, "numeric_columns": list(extra_columns or {})})
        return self.register_csv(f"{header}\n{body}\n".encode(), spec, filename=f"{name}.csv")

    def datasets(self) -> list[DatasetOut]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/datasets", DatasetOut)

    def dataset(self, dataset_id: int) -> DatasetOut:
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/datasets/{dataset_id}", model=DatasetOut)

    def row_order(self, dataset_id: int) -> RowOrder:
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/datasets/{dataset_id}/row-order", model=RowOrder)

    def plan(self, dataset_id: int, body: PlanRequest) -> PlanOut:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/datasets/{dataset_id}/plan", body, model=PlanOut)

    # --- budget and ledger ----------------------------------------------------------------------------------

    def raise_budget(self, dataset_id: int, body: BudgetRaise) -> BudgetStatus:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/datasets/{dataset_id}/budget", body, model=BudgetStatus)

    def ledger(self, dataset_id: int | None = None) -> list[LedgerEntry]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/ledger", LedgerEntry, {"dataset_id": dataset_id})

    def audit_events(self, *, actor: str | None = None, action: str | None = None, target: str | None = None,
                     changes_only: bool = False, order: str = "oldest", grouped: bool = False, offset: int = 0,
                     limit: int = 1000) -> AuditPage:
        """One page of the audit log (the filters and order of ``GET /v1/audit``) and how many rows all pages hold."""
        query = {"actor": actor, "action": action, "target": target, "changes_only": changes_only, "order": order,
                 "grouped": grouped, "offset": offset, "limit": limit}
        with self.admin() as api:
            response = api.request("GET", f"{API_PREFIX}/audit",
                                   params={name: value for name, value in query.items() if value is not None})
        return AuditPage([AuditEvent.model_validate(item) for item in response.json()],
                         int(response.headers["X-Total-Count"]))

    # --- releases -------------------------------------------------------------------------------------------

    def submit_release(self, dataset_id: int, body: ReleaseCreate) -> ReleaseOut | JobOut:
        """POSTs the release under ``body.request_id`` (a fresh UUID when unset): the release when the server
        finished it within its wait (201), else its job (202); the POST waits out any wait the server may be set to
        (:data:`RELEASE_POST_TIMEOUT_SECONDS`). A dropped connection or a timeout is retried with
        the same request_id, so the release is made and charged once however often the POST is sent."""
        if body.request_id is None:
            body = body.model_copy(update={"request_id": str(uuid.uuid4())})
        with self.admin(timeout=RELEASE_POST_TIMEOUT_SECONDS) as api:
            response = api.request("POST", f"{API_PREFIX}/datasets/{dataset_id}/releases",
                                   json=body.model_dump(mode="json", exclude_none=True))
        return (JobOut if response.status_code == 202 else ReleaseOut).model_validate(response.json())

    def create_release(self, dataset_id: int, mechanism: str | ReleaseCreate, epsilon: float | None = None,
                       delta: float | None = None, dim: int | str = "auto", seed: int | None = None, *,
                       on_progress: Callable[[JobOut], None] | None = None) -> ReleaseOut:
        """Makes a release and returns it: ``mechanism`` with the common options (seeds are for research mode only;
        production refuses them), or a whole :class:`ReleaseCreate` body in its place. Follows the release's job
        to the end when the server answered 202 (no overall timeout: a large release takes minutes),
        ``on_progress(job)`` at every poll. Raises :class:`JobNotSucceeded` when the job failed or was cancelled
        (nothing charged then)."""
        body = mechanism if isinstance(mechanism, ReleaseCreate) else ReleaseCreate(
            mechanism=mechanism, epsilon=epsilon, delta=delta, dim=dim, seed=seed)
        made = self.submit_release(dataset_id, body)
        return made if isinstance(made, ReleaseOut) else self.release_of(self.follow_job(made.id, on_progress))

    def release_of(self, job: JobOut) -> ReleaseOut:
        """The release a succeeded ``release`` job stored."""
        if job.result is None:
            raise ValueError(f"job {job.id} ({job.kind}, {job.status}) stored no release")
        return self.release_info(job.result["release_id"])

    def releases(self, dataset_id: int | None = None) -> list[ReleaseOut]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/releases", ReleaseOut, {"dataset_id": dataset_id})

    def release_info(self, release_id: int) -> ReleaseOut:
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/releases/{release_id}", model=ReleaseOut)

    def reconstruction_audit(self, release_id: int, body: ReconstructionAuditRequest) -> ReconstructionAuditOut:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/releases/{release_id}/audits/reconstruction", body,
                            model=ReconstructionAuditOut)

    # --- keys -----------------------------------------------------------------------------------------------

    def create_key(self, body: KeyCreate) -> KeyCreated:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/keys", body, model=KeyCreated)

    def issue_key(self, release_ids: list[int], max_queries: int, name: str = "modeler",
                  jobs: list[str] | None = None) -> KeyCreated:
        """A modeler key scoped to ``release_ids``; ``jobs``: the job kinds it may run (default none)."""
        return self.create_key(KeyCreateWithPolicy(name=name, release_ids=release_ids, max_queries=max_queries,
                                                   jobs=jobs))

    def keys(self) -> list[KeyOut]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/keys", KeyOut)

    def revoke_key(self, key_id: int) -> KeyOut:
        with self.admin() as api:
            return api.delete(f"{API_PREFIX}/keys/{key_id}", model=KeyOut)

    # --- sessions and manual measurements -------------------------------------------------------------------

    def sessions(self, release_id: int | None = None) -> list[SessionOut]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/sessions", SessionOut, {"release_id": release_id})

    def session_queries(self, session_id: int) -> QueryList:
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/sessions/{session_id}/queries", model=QueryList)

    def session_lab_queries(self, session_id: int) -> list[LabQuery]:
        """The session's queries with each row's identifier (the MRN, or the file row) and file row."""
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/sessions/{session_id}/lab-queries", LabQuery)

    def pending_queries(self, dataset_id: int | None = None) -> PendingQueryList:
        with self.admin() as api:
            params = None if dataset_id is None else {"dataset_id": dataset_id}
            return api.get(f"{API_PREFIX}/queries", params=params, model=PendingQueryList)

    def answer_query(self, query_id: int, value: float, confirm_outside_range: bool = False) -> QueryResult:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/queries/{query_id}/answer",
                            {"value": value, "confirm_outside_range": confirm_outside_range}, model=QueryResult)

    def answer_by_identifier(self, dataset_id: int, identifier: str, value: float,
                             confirm_outside_range: bool = False) -> AnswersOut:
        """Answers every pending query of the row with this identifier (e.g. the MRN)."""
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/datasets/{dataset_id}/answers",
                            {"answers": [{"identifier": identifier, "value": value}],
                             "confirm_outside_range": confirm_outside_range}, model=AnswersOut)

    def worklist(self, dataset_id: int) -> Worklist:
        """The dataset's pending queries by identifier, its identifier column and what is measured."""
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/datasets/{dataset_id}/worklist", model=Worklist)

    def set_identifier_column(self, dataset_id: int, column: str) -> IdentifierColumnOut:
        with self.admin() as api:
            return api.put(f"{API_PREFIX}/datasets/{dataset_id}/identifier-column", {"column": column},
                           model=IdentifierColumnOut)

    def set_plausible_range(self, dataset_id: int, low: float | None, high: float | None) -> MeasurementSpec:
        with self.admin() as api:
            return api.put(f"{API_PREFIX}/datasets/{dataset_id}/plausible-range", {"low": low, "high": high},
                           model=MeasurementSpec)

    def correct_query(self, query_id: int, body: Correction) -> QueryResult:
        """Replaces a manual answer (or a "cannot measure"); the session's lab notes keep the old value and reason."""
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/queries/{query_id}/correct", body, model=QueryResult)

    def cannot_measure(self, query_id: int, body: CannotMeasure) -> QueryResult:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/queries/{query_id}/cannot-measure", body, model=QueryResult)

    # --- jobs -----------------------------------------------------------------------------------------------

    def jobs(self, status: str | None = None) -> list[JobOut]:
        with self.admin() as api:
            return _list(api, f"{API_PREFIX}/jobs", JobOut, {"status": status})

    def job(self, job_id: int) -> JobOut:
        with self.admin() as api:
            return api.get(f"{API_PREFIX}/jobs/{job_id}", model=JobOut)

    def cancel_job(self, job_id: int) -> JobOut:
        with self.admin() as api:
            return api.post(f"{API_PREFIX}/jobs/{job_id}/cancel", model=JobOut)

    def follow_job(self, job_id: int, on_progress: Callable[[JobOut], None] | None = None,
                   poll_seconds: float = POLL_SECONDS) -> JobOut:
        """Polls a job until it ends (:func:`shared.api.job_polling.follow_job`, no overall timeout) and returns it
        succeeded; ``on_progress(job)`` at every poll. :class:`JobNotSucceeded` if it failed or was cancelled."""
        with self.admin() as api:
            job = follow_job(api, job_id, poll=poll_seconds, on_progress=on_progress)
        if job.status != JobStatus.SUCCEEDED:
            raise JobNotSucceeded(job)
        return job
