"""The run file: everything a modeler run needs to be resumed, saved atomically after every iteration.

The API token is deliberately not stored (a run file gets copied around and attached to reports);
``resume`` takes it from ``--token`` or ``POBO_TOKEN`` again.

Crash safety: before a query is sent, its ``request_id`` and indices are saved as ``in_flight``;
after the answer arrives they move to ``queries``. A run killed in between re-sends the same
``request_id`` on resume, and the service returns the stored answer without charging again.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from shared.api.schemas import QueryResult, ReleaseOut
from shared.regret import Goal, best_so_far, simple_regret

RUN_FORMAT: Final = "pobo-run/1"
MAX_BATCH = 100


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSettings(_Model):
    """How the modeler's GP-UCB runs (Algorithm 2 plus the choices the paper leaves to the user)."""

    iterations: int = Field(ge=1, description="T, the number of queries to make.")
    ucb_delta: float = Field(
        default=0.025, gt=0, lt=1, description="δ' of Algorithm 2 (the paper's δ_ucb = 0.05 halved)."
    )
    kernel: Literal["se", "matern52"] = "se"
    acquisition: Literal["logei", "paper-ucb"] = Field(
        default="logei",
        description=("'logei' (the default): log expected improvement over the best answer so far (Ament et al. "
                     "2023), chosen on a broad suite (docs/modeler_quality.md); 'paper-ucb': Algorithm 2's "
                     "μ + √β_t σ, what the paper's reproductions use."),
    )
    hyperparameters: Literal["fit", "fixed"] = Field(
        default="fit",
        description="'fit': maximum a posteriori under BoTorch's priors on the observations (docs/gp_engine.md).",
    )
    ard: bool | None = Field(
        default=None,
        description=("Fitted lengthscales: one per released coordinate (True), one shared (False), or None: one per "
                     "coordinate while r ≤ 16, one shared beyond (shared.gp.ucb.ARD_MAX_DIM)."),
    )
    refit_every: int = Field(
        default=1, ge=1,
        description="Refit the hyperparameters every this many observations (beyond 100, at most about every t/100).",
    )
    lengthscale: float | None = Field(default=None, gt=0, description="Fixed lengthscale, or the start before fitting.")
    signal_variance: float | None = Field(default=None, gt=0)
    noise_variance: float | None = Field(default=None, gt=0)
    input_noise: Literal["auto", "ignore", "expected-kernel"] = Field(
        default="auto",
        description=(
            "How a gaussian release's public noise_std enters the kernel: 'expected-kernel' averages the "
            "kernel over the input noise; 'auto' does so with fixed hyperparameters and leaves it to the "
            "fitted lengthscale and noise otherwise."
        ),
    )
    seed: int = Field(default=0, description="Seeds the restarts of hyperparameter fitting (client side only).")
    batch: int = Field(
        default=1, ge=1, le=MAX_BATCH, description="q: indices per request (GP-BUCB), or pending at once."
    )
    asynchronous: bool = Field(
        default=False, description="Keep up to q queries pending and propose a new one whenever an answer arrives."
    )
    batch_beta: Literal["desautels", "plain"] = Field(
        default="desautels",
        description="'desautels': GP-BUCB's exp(2C)·β_t with C the pending picks' information; 'plain': β_t.",
    )
    optimizer: str = Field(default="gp-ucb", description="What chose the rows (gp-ucb, botorch-ucb, optuna-tpe, ...).")
    reuse_sessions: list[int] = Field(
        default_factory=list, description="Earlier sessions of the same key whose answers are reused, not paid again."
    )
    optimum: float | None = Field(default=None, description="The known best value, for simple-regret plots.")
    signal_std: float | None = Field(default=None, gt=0, description="σ_y to express regret in units of it.")

    @field_validator("acquisition", mode="before")
    @classmethod
    def _paper_ucb_by_its_short_name(cls, value: object) -> object:
        """Run files that name Algorithm 2's acquisition "ucb" resume with it."""
        return "paper-ucb" if value == "ucb" else value


class QueryRecord(_Model):
    """One query of the run as the server answered it (``value`` is None while pending)."""

    iteration: int
    index: int
    query_id: int
    status: Literal["done", "pending", "unmeasurable"]
    value: float | None = None
    request_id: str | None = None
    reused_from_session: int | None = Field(
        default=None, description="The earlier session whose answer this is (not charged again); None: asked here."
    )


class InFlight(_Model):
    """A query sent but not yet recorded: re-sent with the same ``request_id`` on resume."""

    iteration: int
    request_id: str
    indices: list[int]


class RunRecord(_Model):
    format: Literal["pobo-run/1"] = RUN_FORMAT
    run_id: str
    url: str
    release_id: int
    session_id: int
    release: ReleaseOut
    settings: RunSettings
    queries: list[QueryRecord] = Field(default_factory=list)
    in_flight: InFlight | None = None
    hyperparameter_history: list[dict[str, float | int | list[float]]] = Field(default_factory=list)
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    elapsed_seconds: float = 0.0
    finished: bool = False
    _changes: list[str] = PrivateAttr(default_factory=list)

    # --- derived ------------------------------------------------------------------------------------

    @property
    def goal(self) -> Goal:
        return self.release.goal

    def done(self) -> list[QueryRecord]:
        return [q for q in self.queries if q.status == "done"]

    def pending(self) -> list[QueryRecord]:
        return [q for q in self.queries if q.status == "pending"]

    def unmeasurable(self) -> list[QueryRecord]:
        """Queries the curator could not measure (charged once, never answered)."""
        return [q for q in self.queries if q.status == "unmeasurable"]

    def complete(self) -> bool:
        """All T queries made and none pending: ``run`` has nothing left to do."""
        return len(self.queries) >= self.settings.iterations and not self.pending() and self.in_flight is None

    def summary(self) -> str:
        """One sentence: queries made of T, how many measured, any the curator could not measure, the best."""
        unmeasurable = self.unmeasurable()
        text = f"{len(self.queries)} of T = {self.settings.iterations} queries made, {len(self.done())} measured"
        if unmeasurable:
            rows = ", ".join(str(q.index) for q in unmeasurable)
            text += (f", {len(unmeasurable)} the curator could not measure (row{'s' if len(unmeasurable) > 1 else ''} "
                     f"{rows}: charged, no value)")
        if self.pending():
            text += f", {len(self.pending())} still pending"
        best = self.best()
        if best is not None:
            text += f"; best {best.value:.6g} at row {best.index} ({self.goal})"
        return text

    def take_changes(self) -> list[str]:
        """Sentences for every answer the curator changed after this run recorded it (a corrected value, a row
        measured after all), since the last call; :meth:`merge` collects them."""
        changes, self._changes = self._changes, []
        return changes

    def best_so_far(self) -> np.ndarray:
        """Best measured value after each answered query (max, or min for a ``minimize`` goal)."""
        return best_so_far([q.value for q in self.done()], self.goal)

    def best(self) -> QueryRecord | None:
        answered = [(q.value, q) for q in self.done() if q.value is not None]
        if not answered:
            return None
        pick = min if self.goal == "minimize" else max
        return pick(answered, key=lambda pair: pair[0])[1]

    def simple_regret(self) -> np.ndarray | None:
        """|optimum − best so far| after each answer (in units of σ_y when ``signal_std`` is set), if known."""
        if self.settings.optimum is None:
            return None
        return simple_regret(self.best_so_far(), self.settings.optimum, self.settings.signal_std or 1.0)

    def to_dataframe(self):
        """One row per query: iteration, request (a batch's queries share it), row index, query id, status,
        value, best so far (over answers up to this one, in run order) and simple regret when the optimum is
        known. Needs pandas (``pip install 'pobo[pandas]'``)."""
        try:
            import pandas as pd
        except ImportError as exc:  # optional extra
            raise ImportError("to_dataframe needs pandas: pip install 'pobo[pandas]'") from exc
        requests = {rid: k for k, rid in enumerate(dict.fromkeys(q.request_id for q in self.queries), start=1)}
        frame = pd.DataFrame({
            "iteration": [q.iteration for q in self.queries],
            "request": [requests[q.request_id] if q.request_id else None for q in self.queries],
            "index": [q.index for q in self.queries],
            "query_id": [q.query_id for q in self.queries],
            "status": [q.status for q in self.queries],
            "value": [q.value for q in self.queries],
            "reused": [q.reused_from_session is not None for q in self.queries],
        })
        frame["best_so_far"] = best_so_far(frame["value"].to_numpy(dtype=float), self.goal)
        if self.settings.optimum is not None:
            frame["simple_regret"] = simple_regret(frame["best_so_far"].to_numpy(), self.settings.optimum,
                                                   self.settings.signal_std or 1.0)
        return frame

    # --- merging server answers ----------------------------------------------------------------------

    def merge(self, results: list[QueryResult], *, iteration: int | None = None, request_id: str | None = None) -> int:
        """Record server answers: new query ids are appended (numbered from ``iteration`` or the next free
        one), known ones updated. Returns how many were new."""
        known = {q.query_id: q for q in self.queries}
        added = 0
        for result in results:
            record = known.get(result.query_id)
            if record is not None:
                if record.status != "pending" and (record.status, record.value) != (result.status, result.value):
                    self._changes.append(_change(record, result))
                record.status, record.value = result.status, result.value
                continue
            number = iteration if iteration is not None else len(self.queries) + 1
            record = QueryRecord(
                iteration=number,
                index=result.index,
                query_id=result.query_id,
                status=result.status,
                value=result.value,
                request_id=request_id,
            )
            self.queries.append(record)
            known[result.query_id] = record
            added += 1
        return added

    # --- persistence --------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically: a temporary file in the same directory, fsync, then rename over ``path``."""
        self.updated_at = datetime.now(UTC)
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = self.model_dump_json(indent=1)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunRecord:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("format") != RUN_FORMAT:
            raise ValueError(f"{path} is not a pobo run file (format {raw.get('format')!r}, expected {RUN_FORMAT!r})")
        return cls.model_validate(raw)


def _change(before: QueryRecord, after: QueryResult) -> str:
    """What the curator changed in an answer this run had recorded, in a sentence."""
    where = f"query {before.query_id} (row {before.index})"
    if before.status == "done" and after.status == "done":
        return (f"{where}: its value was corrected from {before.value:.6g} to {after.value:.6g} by the curator; the "
                f"run uses {after.value:.6g} from now on")
    if before.status == "unmeasurable" and after.status == "done":
        return f"{where}, once 'cannot measure', was measured by the curator after all: {after.value:.6g}"
    old = before.status if before.value is None else f"{before.status} {before.value:.6g}"
    new = after.status if after.value is None else f"{after.status} {after.value:.6g}"
    return f"{where} changed from {old} to {new} by the curator"
