"""The wire contract (HTTP API v1, docs/design.md §5): every request and response body both parties exchange.

The curator service validates requests against these models and declares them as its response
models; the modeler client parses responses with them. Nothing here may carry a raw row, the
projection matrix or the transformed-but-unprojected data.
"""

from __future__ import annotations

import math
import numbers
import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    WithJsonSchema,
    model_validator,
)

from shared.checks import open_unit, ordered_interval, positive

API_PREFIX = "/v1"

ErrorCode = Literal[
    "unauthorized",
    "forbidden",
    "not_found",
    "validation_error",
    "budget_exceeded",
    "query_budget_exhausted",
    "uncertified_mechanism_disabled",
    "conflict",
    "payload_too_large",
    "seed_refused",
    "too_many_requests",
    "unavailable",
    "internal_error",
]

Mechanism = Literal["gaussian", "po-gp-ucb"]
"""``gaussian`` is the certified (ε, δ)-DP release; ``po-gp-ucb`` is the published, uncertified Algorithm 1."""

CERTIFIED_MECHANISMS: frozenset[str] = frozenset({"gaussian"})

UNCERTIFIED_WARNING = (
    "po-gp-ucb (Kharkovskii et al. 2020, Algorithm 1) is NOT differentially private: its output is an "
    "affine image of the data, so anyone who knows d + 1 records and their row indices can reconstruct "
    "every record exactly. Use the certified 'gaussian' mechanism for real privacy."
)

SEEDED_WARNING = (
    "This release was made with a seed (research mode): its projection and noise, including the noise of private "
    "measurements, come from a reproducible generator, so whoever learns or guesses the seed can subtract the noise "
    "and recover every scaled row and every clipped measurement (the answers ỹ are reproducible too). It is NOT "
    "certified differentially private; make an unseeded release for real privacy."
)

UNKNOWN_SEED_WARNING = (
    "This release was made before pobo recorded whether a seed was used; it may be seeded (reproducible noise), "
    "so it is NOT certified differentially private. Make a new, unseeded release for real privacy."
)

FILE_ORDER_WARNING = (
    "Rows are in the file's order: row indices may reveal it; re-register the table. This dataset was registered "
    "before pobo stored rows in a secret random order, so release index i is the file's data row i + 1, and an "
    "order that follows the data (sorted by a value, grouped by site or date) tells the modeler about each row. "
    "Private measurements are refused on it."
)

SEEDED_JOB_WARNING = (
    "This job ran with a seed (research mode): its noise is reproducible, so whoever learns or guesses the seed "
    "can subtract it. Its result is NOT certified differentially private."
)

UNCHARGED_JOB_WARNING = (
    "This job was charged nothing on the ledger: its result is not a differentially private release and is "
    "for the curator only."
)

MEASUREMENTS_NOTE = (
    "Measurements y are returned to the modeler as computed, without noise (the PO-GP-UCB assumption: "
    "the outcome of a measurement does not reveal whose record was measured). They are not covered "
    "by the release's (epsilon, delta)."
)

PRIVATE_MEASUREMENTS_NOTE = (
    "Measurements are private: every row's answer is clip(y, a, b) + N(0, sigma_y^2), drawn once when the release "
    "was made (parameters.measurements states [a, b] and sigma_y) and returned identically on every query, by every "
    "key. They are covered by the release's (epsilon, delta), jointly with the inputs, only if no other release of "
    "this dataset returns y as computed (a key is never scoped to both kinds; a modeler holding two keys is not "
    "prevented): repeats, adaptive choices and rows never queried cost nothing more."
)


UNCERTIFIED_MEASUREMENTS_NOTE = (
    "Measurements carry noise: every row's answer is clip(y, a, b) + N(0, sigma_y^2), drawn once when the release was "
    "made and returned identically on every query. This release is not certified (see its warnings: a seed makes "
    "the answers reproducible), so they are NOT covered by any (epsilon, delta)."
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- text on the wire ------------------------------------------------------------------------------

CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""A control character (Unicode category Cc) other than tab, line feed and carriage return. None belongs in a name,
a reason or an id, PostgreSQL cannot store U+0000 in text at all, and a NUL or an escape sequence in a stored name
would reach every log and terminal that shows it."""

CONTROL_CHARACTER_SENTENCE = ("holds a control character (such as a NUL byte or an escape; tab, line feed and "
                              "carriage return are allowed); remove it")


ESCAPED = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")


def escaped(text: str) -> str:
    """``text`` with every control character written ``\\xNN`` and a backslash written twice, so that caller text
    can be stored (PostgreSQL refuses U+0000), quoted in a sentence or shown in a terminal, and read back
    unambiguously."""
    return ESCAPED.sub(lambda m: "\\\\" if m.group() == "\\" else f"\\x{ord(m.group()):02x}", text)


def control_character_at(value: Any, where: str = "") -> str | None:
    """Where the first string in a JSON value (object keys included) holds a :data:`CONTROL_CHARACTER`, as a dotted
    path (``features.2``; the key itself, :func:`escaped`, for a bad key); None when there is none."""
    if isinstance(value, str):
        return where if CONTROL_CHARACTER.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{escaped(str(key))}" if where else escaped(str(key))
            if isinstance(key, str) and CONTROL_CHARACTER.search(key):
                return path
            if (found := control_character_at(item, path)) is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if (found := control_character_at(item, f"{where}.{i}" if where else str(i))) is not None:
                return found
    return None


def _plain_text(value: str | None) -> str | None:
    if value is not None and CONTROL_CHARACTER.search(value):
        raise ValueError(CONTROL_CHARACTER_SENTENCE)
    return value


PlainText = Annotated[str, AfterValidator(_plain_text)]
"""A string without a :data:`CONTROL_CHARACTER` (for query parameters; request bodies are :class:`_Request`)."""


class _Request(_Model):
    """A request body: no string in it, at any depth (free-form job parameters included), may hold a
    :data:`CONTROL_CHARACTER`. Only requests: a response may carry the curator's own text (a CSV cell)."""

    @model_validator(mode="before")
    @classmethod
    def _no_control_characters(cls, data: Any) -> Any:
        if (where := control_character_at(data)) is not None:
            raise ValueError(f"'{where}' {CONTROL_CHARACTER_SENTENCE}")
        return data


# --- numbers on the wire ---------------------------------------------------------------------------

DB_INT_MAX = 2**31 - 1
"""The largest id, count or index on the wire: PostgreSQL's INTEGER (SQLite's 2^63 − 1 is larger), so no value
a request carries can overflow a column or a query parameter of either backend."""
SEED_MAX = 2**63 - 1
MAX_RELEASE_DIM = 1024
"""The largest projection dimension r a release or a plan may ask for."""
MAX_BUDGET_EPSILON = 1e12
"""The largest total ε or raise: far beyond any meaningful ε, and it keeps every sum of the ledger finite (a raise
of 1.6e308 overflowed the budget's sum)."""


def _json_number(value: Any) -> Any:
    """A JSON number and nothing that merely converts to one: ``"0.01"`` and ``true`` are refused."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise ValueError("must be a JSON number, not a string or a boolean")
    return value


def _json_integer(value: Any) -> Any:
    """A JSON integer: ``true``, ``"3"`` and ``3.0`` are refused (lax parsing would read them as 1, 3 and 3)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError("must be a JSON integer, not a string, a boolean or a decimal")
    return value


_JSON_INTEGER = BeforeValidator(_json_integer)
"""The JSON-integer check of a bounded integer type. In ``Annotated[int, Field(ge=low, le=high), _JSON_INTEGER]``
the bounds come before the check so that the JSON schema shows them as ``minimum`` and ``maximum``."""

Number = Annotated[float, BeforeValidator(_json_number)]
"""A float field that accepts only JSON numbers (integers included)."""
Integer = Annotated[int, _JSON_INTEGER]
Id = Annotated[int, Field(ge=1, le=DB_INT_MAX), _JSON_INTEGER]
"""An object id: 1 to 2^31 − 1."""
Count = Annotated[int, Field(ge=1, le=DB_INT_MAX), _JSON_INTEGER]
RowIndex = Annotated[int, Field(ge=0, le=DB_INT_MAX), _JSON_INTEGER]


def _dim(value: Any) -> int | str:
    if value == "auto":
        return value
    if not 1 <= _json_integer(value) <= MAX_RELEASE_DIM:
        raise ValueError(f"must be 'auto' or an integer at least 1 and at most {MAX_RELEASE_DIM}")
    return value


Dim = Annotated[int | Literal["auto"], PlainValidator(_dim), WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 1, "maximum": MAX_RELEASE_DIM}, {"type": "string", "enum": ["auto"]}]})]
"""A projection dimension: an integer r from 1 to :data:`MAX_RELEASE_DIM`, or ``"auto"`` (one error, no union noise)."""
Seed = Annotated[int, Field(ge=0, le=SEED_MAX), _JSON_INTEGER]
"""A seed (research mode only; refused in production mode)."""


class ErrorBody(_Model):
    """Body of every 4xx/5xx response."""

    detail: str = Field(description="A sentence saying what went wrong and what to fix.")
    code: ErrorCode


class Health(_Model):
    status: Literal["ok"] = "ok"
    version: str


class Ready(_Model):
    """Readiness: whether the service can do its work now (the database answers, the job workers run)."""

    status: Literal["ready", "unavailable"]
    checks: dict[str, Literal["ok", "unavailable"]] = Field(description="Each dependency by name; never an error text.")


# --- datasets -------------------------------------------------------------------------------------


class Budget(_Model):
    """A total privacy budget (ε, δ) for one dataset."""

    epsilon: Number = Field(gt=0, le=MAX_BUDGET_EPSILON, allow_inf_nan=False, description="Total ε, > 0.")
    delta: Number = Field(ge=0, lt=1, description="Total δ; must be in [0, 1).")


class BudgetStatus(_Model):
    total_epsilon: float
    total_delta: float
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    remaining_delta: float


class BudgetRaise(_Request):
    """The curator raises a dataset's total budget: a recorded, audited ledger entry, never a silent change."""

    epsilon: Number = Field(default=0.0, ge=0, le=MAX_BUDGET_EPSILON, allow_inf_nan=False,
                            description="ε added to the total.")
    delta: Number = Field(default=0.0, ge=0, lt=1, description="δ added to the total (the total must stay below 1).")
    reason: str = Field(min_length=1, max_length=500, description="Why: kept in the ledger entry's purpose.")

    @model_validator(mode="after")
    def _raises_something(self) -> BudgetRaise:
        if self.epsilon == 0 and self.delta == 0:
            raise ValueError("a budget raise needs 'epsilon' or 'delta' above 0")
        return self


class ColumnEvaluator(_Model):
    """The measurement is a column of the table, optionally with Gaussian measurement noise."""

    kind: Literal["column"] = "column"
    column: str
    noise_std: Number = Field(default=0.0, ge=0, allow_inf_nan=False)


class PythonEvaluator(_Model):
    """The measurement is ``module:function`` called with the raw row (a dict of column -> value)."""

    kind: Literal["python"] = "python"
    target: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class ManualEvaluator(_Model):
    """The measurement is made by a person; queries stay pending until the curator posts a value."""

    kind: Literal["manual"] = "manual"


EvaluatorSpec = Annotated[ColumnEvaluator | PythonEvaluator | ManualEvaluator, Field(discriminator="kind")]


class ScalingSpec(_Model):
    """The public scaling of the features, fixed without looking at the data.

    ``identity``: features used as given. ``affine``: x_s = (x − offset) / scale per feature.
    ``bounds``: x_s = (clip(x, lower, upper) − lower) / (upper − lower) · width per feature, so each
    feature lies in [0, width]; ``diameter`` D instead sets width = D/√d, so that the scaled public box
    has ℓ2 diameter D (D = 1: one neighbouring step is a whole record). Neighbouring datasets differ in
    one row by ℓ2 ≤ 1 *after* scaling.
    """

    kind: Literal["identity", "affine", "bounds"] = "identity"
    offset: list[Number] | None = None
    scale: list[Number] | None = None
    lower: list[Number] | None = None
    upper: list[Number] | None = None
    width: Number = Field(default=1.0, gt=0, allow_inf_nan=False)
    diameter: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="bounds only: the ℓ2 diameter of the scaled public box; sets width = diameter/√d.",
    )

    @model_validator(mode="after")
    def _fields_match_kind(self) -> ScalingSpec:
        if self.kind == "affine" and (self.offset is None or self.scale is None):
            raise ValueError("affine scaling needs both 'offset' and 'scale' (one number per feature column)")
        if self.kind == "affine" and any(s <= 0 for s in self.scale or []):
            raise ValueError("affine scaling needs every 'scale' entry > 0")
        if self.kind == "bounds":
            if self.lower is None or self.upper is None:
                raise ValueError("bounds scaling needs both 'lower' and 'upper' (one number per feature column)")
            if len(self.lower) != len(self.upper) or any(u <= lo for lo, u in zip(self.lower, self.upper)):
                raise ValueError("bounds scaling needs 'lower' and 'upper' of equal length with upper > lower")
        if self.diameter is not None:
            if self.kind != "bounds":
                raise ValueError("'diameter' applies to bounds scaling only; remove it or use kind 'bounds'")
            width = self.diameter / math.sqrt(len(self.lower or []))
            if "width" in self.model_fields_set and not math.isclose(self.width, width, rel_tol=1e-12):
                raise ValueError("give bounds scaling a 'width' or a 'diameter', not both")
            self.width = width
        return self


PUBLIC_CHOICE = (
    "Public, and fixed without looking at the data, like the scaling: a value read off the table (its largest y, "
    "its largest row norm) would itself reveal the table."
)

SCALING_REQUIRED = (
    "'scaling' is required: choose the public scaling that says what one neighbouring step hides, e.g. "
    '{"kind": "bounds", "lower": [...], "upper": [...], "diameter": 1} (features clipped to public bounds; '
    'one step is a whole record), or {"kind": "identity"} to use the raw units (no clipping; one step is one '
    "raw unit)"
)


class MeasurementSpec(_Model):
    """What the measured value is, in public words: every worklist row shows it to the lab, and every release shows
    it to modelers (``pobo-modeler info``)."""

    quantity: str = Field(min_length=1, max_length=100, description="What is measured, e.g. 'HbA1c' or 'yield'.")
    unit: str | None = Field(default=None, max_length=40, description="Its unit, e.g. 'mmol/mol' or '%'.")
    expected_delay_hours: Number | None = Field(
        default=None, gt=0, le=24 * 365, allow_inf_nan=False,
        description="How long a measurement usually takes to come back, in hours (manual measurements: the lab's "
                    "turnaround); null: not stated.")
    plausible_range: tuple[Number, Number] | None = Field(
        default=None,
        description="[low, high]: the values a manual measurement plausibly takes, in its unit (public, like the "
                    "quantity). An answer or correction outside it is refused until it is sent again with "
                    "'confirm_outside_range': true (a typo such as 40.2 for 4.2 is caught before it is stored); "
                    "null: no range.")

    @model_validator(mode="after")
    def _ordered_range(self) -> MeasurementSpec:
        if self.plausible_range is not None:
            low, high = self.plausible_range
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ValueError("'plausible_range' must be two finite numbers [low, high] with low < high")
        return self

    def outside(self, value: float) -> bool:
        """Whether ``value`` lies outside the plausible range (never, without one)."""
        return self.plausible_range is not None and not (
            self.plausible_range[0] <= value <= self.plausible_range[1])

    def range_text(self) -> str:
        low, high = self.plausible_range or (math.nan, math.nan)
        return f"{low:g} to {high:g}" + (f" {self.unit}" if self.unit else "")


class DatasetSpec(_Request):
    """What the curator says about a table when registering it."""

    name: str = Field(min_length=1, max_length=200)
    feature_columns: list[str] = Field(min_length=1)
    evaluator: EvaluatorSpec
    scaling: ScalingSpec = Field(description="Required, with an explicit 'kind'. " + SCALING_REQUIRED)
    budget: Budget
    goal: Literal["maximize", "minimize"] = Field(
        default="maximize", description="Whether the modeler should look for the largest or smallest measurement."
    )
    measurement: MeasurementSpec | None = Field(default=None, description="What is measured and in which unit.")
    numeric_columns: list[str] = Field(
        default_factory=list, max_length=10_000,
        description="Other columns a job may read as numbers (dp-mean's column, a learner's label column): every "
                    "cell must be a finite number, checked at registration like the features. A column not declared "
                    "(nor a feature, nor the measured column) is never read as a number by a job, whatever it holds.")
    label_columns: list[str] = Field(
        default_factory=list, max_length=10_000,
        description="Columns of 0/1 labels for the learners (dp-bo, dp-tune, dpareto): every cell must be 0 or 1, "
                    "checked at registration. Their names are public with every release, and a job may name only "
                    "these as its label column when there are any.")

    @model_validator(mode="before")
    @classmethod
    def _scaling_is_chosen(cls, data: Any) -> Any:
        """No default: the scaling defines the privacy unit, so the curator must choose it."""
        if isinstance(data, dict):
            scaling = data.get("scaling")
            if not (isinstance(scaling, dict) and "kind" in scaling) and not isinstance(scaling, ScalingSpec):
                raise ValueError(SCALING_REQUIRED)
        return data


class FeatureStep(_Model):
    """What one neighbouring step (ℓ2 distance 1 after scaling) spans along one feature, in raw units."""

    feature: str
    raw_extent: float = Field(description="Raw units that ℓ2 distance 1 after scaling spans along this feature alone.")
    public_range: float | None = Field(default=None, description="upper − lower (bounds scaling), else null.")
    covers_range: bool | None = Field(
        default=None, description="Whether that extent covers the feature's whole public range (bounds only)."
    )


class NeighbouringStep(_Model):
    """What the release hides, in the table's own units: one row moving by ℓ2 ≤ 1 after the public scaling."""

    scaling_kind: Literal["identity", "affine", "bounds"]
    clipped: bool = Field(description="Features are clipped to public bounds before the release.")
    box_diameter: float | None = Field(default=None, description="ℓ2 diameter of the scaled public box (bounds).")
    whole_record: bool = Field(description="Replacing one row by any other row of the public box is one step.")
    features: list[FeatureStep]
    summary: str


FILE_ROW = "The row's number in the file the curator registered: 1 is the first data row (line 2, after the header)."


class RowOrder(_Model):
    """Curator only: the file row behind each row index of the dataset's releases (undoes the secret order)."""

    dataset_id: int
    rows: list[int] = Field(description="rows[i] is index i's row in the registered file. " + FILE_ROW)


class DatasetFromPath(DatasetSpec):
    """JSON registration of a CSV that already sits on the curator's server."""

    path: str = Field(min_length=1, max_length=4096, description="A CSV file inside the server's import root "
                      "(POBO_IMPORT_ROOT), relative to it or absolute; refused when the root is unset.")


class DatasetOut(_Model):
    id: int
    name: str
    n: int
    d: int
    feature_columns: list[str]
    evaluator_kind: Literal["column", "python", "manual"]
    goal: Literal["maximize", "minimize"]
    scaling_kind: Literal["identity", "affine", "bounds"]
    neighbouring_step: NeighbouringStep
    budget: BudgetStatus
    measurement: MeasurementSpec | None = None
    label_columns: list[str] = Field(default_factory=list)
    created_at: datetime


# --- releases -------------------------------------------------------------------------------------


ProjectionChoice = Literal["auto", "identity", "haar", "jl", "pca"]
ProjectionKind = Literal["identity", "haar", "jl", "pca"]


class PcaSpec(_Model):
    """DP-PCA (gaussian only): a differentially private top-k subspace (Analyze Gauss on the clipped rows' Gram
    matrix), then k = ``dim`` noisy coordinates; charged inside the release's one (ε, δ)."""

    share: Number = Field(description="The fraction of the release's μ² spent on the subspace, in (0, 1).")
    clip_norm: Number = Field(description="Bound C on the scaled rows' ℓ2 norm for the Gram matrix (> 0). "
                                         + PUBLIC_CHOICE)

    @model_validator(mode="after")
    def _valid(self) -> PcaSpec:
        open_unit(self.share, "pca 'share' (the fraction of the privacy budget for the subspace)")
        positive(self.clip_norm, "pca 'clip_norm' (a public bound on row norms)")
        return self


class MeasurementsSpec(_Model):
    """Private measurements (gaussian only): ỹ_i = clip(y_i, a, b) + N(0, σ_y²) drawn once per row at release
    time and returned on every query of row i; charged inside the release's one (ε, δ)."""

    clip: tuple[Number, Number] = Field(description="The interval [a, b] measurements are clipped to (a < b). "
                                                    + PUBLIC_CHOICE)
    share: Number = Field(description="ρ: the fraction of the release's μ² spent on the measurements, in (0, 1).")

    @model_validator(mode="after")
    def _valid(self) -> MeasurementsSpec:
        ordered_interval(self.clip, "measurements 'clip'")
        open_unit(self.share, "measurements 'share' (ρ, the fraction of the privacy budget)")
        return self


class ReleaseOptions(_Request):
    """How a release is shaped: its dimension, projection, DP-PCA and private measurements."""

    dim: Dim = Field(
        default="auto",
        description="Projection dimension r ≥ 1, or 'auto': gaussian, r = d (identity projection, sensitivity 1); "
                    "po-gp-ucb, the paper's guideline (largest r with σ_min ≥ ω).",
    )
    projection: ProjectionChoice = Field(
        default="auto",
        description="gaussian only. auto: identity at r = d, haar (orthonormal, sensitivity 1) at r > d, jl "
                    "(Gaussian M/√r) at r < d; haar at r < d is a uniformly random subspace; pca needs 'pca'.",
    )
    pca: PcaSpec | None = Field(default=None, description="With projection 'pca' (and only then).")
    measurements: MeasurementsSpec | None = Field(
        default=None, description="Private measurements (deterministic evaluators only: not 'manual')."
    )

    @model_validator(mode="after")
    def _pca_with_its_projection(self) -> ReleaseOptions:
        if (self.projection == "pca") != (self.pca is not None):
            raise ValueError("projection 'pca' and the 'pca' options ({\"share\", \"clip_norm\"}) go together: "
                             "give both or neither")
        return self

    @property
    def shaped(self) -> bool:
        """Whether any gaussian-only option is set."""
        return self.projection != "auto" or self.pca is not None or self.measurements is not None


class ReleaseCreate(ReleaseOptions):
    mechanism: Mechanism
    epsilon: Number = Field(gt=0, allow_inf_nan=False,
                            description="ε charged for this release; must be finite and > 0.")
    delta: Number = Field(gt=0, lt=1, description="δ charged for this release; must be in (0, 1).")
    seed: Seed | None = Field(default=None, description="Research mode only; refused in production mode.")
    request_id: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="Makes the release idempotent: a retry with the same request_id (and the same body) returns the "
                    "same job or release and is charged once; the same request_id with another body is a 409. A "
                    "client sends a fresh one (a UUID) per release it means, and repeats it only to retry.")

    @model_validator(mode="after")
    def _options_fit_mechanism(self) -> ReleaseCreate:
        if self.mechanism not in CERTIFIED_MECHANISMS and self.shaped:
            raise ValueError("'projection', 'pca' and 'measurements' apply to the 'gaussian' mechanism only; "
                             "remove them or use mechanism 'gaussian'")
        return self


class PcaParameters(_Model):
    share: float
    clip_norm: float
    noise_std: float = Field(description="σ of the Gram matrix's Gaussian noise.")
    sensitivity: float = Field(description="ℓ2 sensitivity of the released Gram vector.")


class MeasurementParameters(_Model):
    clip: tuple[float, float] = Field(description="[a, b]: every measurement is clipped to it before the noise.")
    share: float
    noise_std: float = Field(description="σ_y: the standard deviation of every answer's noise (observation noise).")
    sensitivity: float = Field(description="Δ_y = b − a plus the sampler's rounding step.")


class ReleaseParameters(_Model):
    """Every public parameter of a gaussian release (what ``GaussianRelease.public_parameters()`` states)."""

    projection: ProjectionKind
    dim: int
    epsilon: float
    delta: float
    mu: float = Field(description="The release's Gaussian-DP μ (all parts composed), the largest that is (ε, δ)-DP.")
    unit: Literal["bounded-change", "replace-one"]
    clip_norm: float | None = None
    input_share: float = Field(description="The inputs' fraction of μ² (1 without DP-PCA or private measurements).")
    noise_std: float = Field(description="σ of the inputs' Gaussian noise, per released coordinate.")
    sensitivity: float = Field(description="ℓ2 sensitivity of one released row, with the sampler's rounding slack.")
    projection_sensitivity: float
    floating_point_safe: bool
    pca: PcaParameters | None = None
    measurements: MeasurementParameters | None = None

    def summary_lines(self) -> list[str]:
        """Every parameter, one line per part (inputs, DP-PCA, private measurements), for the command lines."""
        lines = [f"projection {self.projection}, r = {self.dim}, μ = {self.mu:.4g} (GDP), unit {self.unit}, "
                 f"input share {self.input_share:.4g}, input noise σ = {self.noise_std:.6g}, sensitivity "
                 f"{self.sensitivity:.6g} (projection {self.projection_sensitivity:.6g}), floating-point-safe "
                 f"{self.floating_point_safe}"]
        if self.pca:
            lines.append(f"DP-PCA: share {self.pca.share:.4g}, clip norm {self.pca.clip_norm:.4g}, Gram noise σ = "
                         f"{self.pca.noise_std:.6g}, sensitivity {self.pca.sensitivity:.6g}")
        if self.measurements:
            m = self.measurements
            low, high = m.clip
            lines.append(f"private measurements: clip [{low:g}, {high:g}], share {m.share:.4g}, noise σ_y = "
                         f"{m.noise_std:.6g}, sensitivity {m.sensitivity:.6g}")
        return lines


class ReleaseMetadata(_Model):
    """A release's public numbers of how it was made, as the curator computes, stores and shows them: the
    dimension r, gaussian's noise σ and sensitivity Δ, po-gp-ucb's ω, σ_min and whether it lifted the inputs."""

    dim: int
    noise_std: float | None = None
    sensitivity: float | None = None
    omega: float | None = None
    sigma_min: float | None = None
    lifted: bool | None = None


class ReleaseOut(ReleaseMetadata):
    id: int
    dataset_id: int
    mechanism: Mechanism
    certified: bool = Field(description="(ε, δ)-DP as charged: a certified mechanism, made without a seed.")
    seeded: bool | None = Field(
        default=None,
        description="Made with a seed (reproducible noise, research mode): then never certified. "
                    "null: made before pobo recorded seeds (treated as possibly seeded).",
    )
    epsilon: float
    delta: float
    n: int
    projection: ProjectionKind | None = Field(
        default=None, description="gaussian: the projection used; null for po-gp-ucb and releases made before pobo "
                                  "recorded it."
    )
    parameters: ReleaseParameters | None = Field(
        default=None, description="gaussian: every public parameter of the release (null: made before pobo kept them)."
    )
    neighbouring_step: NeighbouringStep | None = Field(
        default=None, description="What the release hides in the table's own units (gaussian; po-gp-ucb hides nothing)."
    )
    goal: Literal["maximize", "minimize"] = "maximize"
    feature_columns: list[str] = Field(
        default_factory=list, description="The dataset's feature names, in order: under the identity projection the "
                                          "released coordinates are these features (scaled and noised).")
    evaluator_kind: Literal["column", "python", "manual"] | None = Field(
        default=None, description="How a query is measured: 'manual' is a person in a lab (answers may take hours or "
                                  "days), 'column' and 'python' answer at once.")
    measurement: MeasurementSpec | None = Field(default=None, description="What is measured and in which unit.")
    label_columns: list[str] = Field(
        default_factory=list, description="The curator-approved 0/1 label columns a job may name (e.g. dp-bo "
                                          "--label-column).")
    answers_repeat: bool | None = Field(
        default=None,
        description="Every query of a row returns the same answer: private measurements or a column evaluator (its "
                    "simulated noise too is drawn once per row), so asking a row again teaches nothing. null: not "
                    "stated (releases listed by an older server).",
    )
    warnings: list[str] = Field(default_factory=list)
    measurements_note: str = MEASUREMENTS_NOTE
    created_at: datetime

    @property
    def measurement_noise_std(self) -> float | None:
        """σ_y of private measurements (the observation noise to assume), None when measurements are as computed."""
        measurements = self.parameters.measurements if self.parameters else None
        return None if measurements is None else measurements.noise_std


class InputsPage(_Model):
    """A page of the released inputs Z (n × dim)."""

    n: int
    dim: int
    offset: int
    rows: list[list[float]]


# --- the privacy-utility planner -----------------------------------------------------------------

MAX_PLAN_EPSILONS = 16
MAX_PLAN_RUNS = 20
MAX_PLAN_QUERIES = 200


class PlanRequest(ReleaseOptions):
    """A release setting to plan at several ε before anything is charged (docs/planner.md)."""

    epsilons: list[Annotated[Number, Field(gt=0, allow_inf_nan=False)]] = Field(
        min_length=1, max_length=MAX_PLAN_EPSILONS, description="The ε to plan for, each finite and > 0."
    )
    delta: Number = Field(default=1e-6, gt=0, lt=1, description="δ of the planned release, in (0, 1).")
    width: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Each scaled feature's range [0, width]; default: the dataset's bounds scaling (required for "
                    "identity and affine scalings, which have no public box). " + PUBLIC_CHOICE,
    )
    simulate_runs: Integer = Field(default=0, ge=0, le=MAX_PLAN_RUNS,
                               description="Stand-in tables to simulate GP-UCB on (0: noise and bound only).")
    queries: Integer = Field(default=50, ge=1, le=MAX_PLAN_QUERIES, description="Queries per simulated run.")
    lengthscale: Number | None = Field(default=None, gt=0, allow_inf_nan=False,
                                      description="The stand-in objective's lengthscale in scaled units "
                                                  "(default width/8).")


class PlanRow(_Model):
    epsilon: float
    mu: float = Field(description="The release's Gaussian-DP μ at this ε.")
    noise_to_spread: float = Field(description="Input noise σ over the spread of rows uniform in the public box.")
    random_search_multiple: float = Field(
        description="A privacy risk, not a utility (lower is safer): any modeler's chance of first hitting a target "
                    "set on a query is at most this many times random search's (n·Φ(Φ⁻¹(1/n) + μ); n means the "
                    "bound says nothing)."
    )
    parameters: ReleaseParameters = Field(description="What the release would state (computed on a stand-in).")
    regret: float | None = Field(default=None, description="Mean simulated simple regret (in std of f).")
    regret_stderr: float | None = None


class PlanOut(_Model):
    dataset_id: int
    n: int
    d: int
    width: float
    delta: float
    queries: int
    simulate_runs: int
    bound_covers: str = Field(description="Which queries the bound covers.")
    assumptions: str = Field(description="The bound's premise: the modeler it holds for and the choices it covers.")
    rows: list[PlanRow]
    random_search_regret: float | None = None
    non_private_regret: float | None = None
    half_gap_epsilon: float | None = Field(
        default=None, description="The smallest planned ε whose simulated regret is at most halfway from random "
                                  "search to non-private GP-UCB (null: none, or not simulated)."
    )
    unit_noise_epsilon: float | None = Field(
        default=None, description="The ε at which noise / spread ≈ 1: below it the released inputs are mostly noise "
                                  "(null: outside 1e-4 to 1e8).")
    charged: bool = Field(default=False, description="Always false: planning spends no budget and reads no row.")


# --- keys -----------------------------------------------------------------------------------------


class KeyCreate(_Request):
    name: str = Field(min_length=1, max_length=200)
    release_ids: list[Id] = Field(min_length=1, max_length=10_000)
    max_queries: Count
    role: Literal["modeler", "curator"] = "modeler"


class KeyOut(_Model):
    id: int
    name: str
    role: Literal["modeler", "curator"]
    release_ids: list[int]
    max_queries: int
    used_queries: int
    revoked: bool
    created_at: datetime


class KeyCreated(KeyOut):
    token: str = Field(description="Shown once; only its hash is stored.")


# --- sessions and queries -------------------------------------------------------------------------

SessionStatus = Literal["open", "closed"]
QueryStatus = Literal["done", "pending", "unmeasurable"]
"""``unmeasurable``: the curator could not measure the row ("cannot measure"); the query keeps its one charge."""


class SessionOut(_Model):
    id: int
    release_id: int
    max_queries: int = Field(description="The key's query budget, over all its sessions.")
    used: int = Field(description="Queries charged to the key, over all its sessions.")
    status: SessionStatus
    created_at: datetime | None = None


MAX_INDICES_PER_REQUEST = 1000
"""Indices in one ``POST /queries``: a request holds the database's write lock while it measures and stores its
rows (100,000 indices held SQLite's lock for 8.8 s), so larger asks are split into several requests."""


class QueryRequest(_Request):
    indices: list[RowIndex] = Field(
        min_length=1, max_length=MAX_INDICES_PER_REQUEST,
        description=f"Row indices into the released inputs Z (0 to n − 1), at most {MAX_INDICES_PER_REQUEST} per "
                    "request (split a larger ask into several requests).",
    )
    request_id: str | None = Field(
        default=None, max_length=200, description="Idempotency key: a repeat returns the stored results, uncharged."
    )


class QueryResult(_Model):
    query_id: int
    index: int
    status: QueryStatus
    value: float | None = None


class QueryResponse(_Model):
    results: list[QueryResult]


class QueryList(_Model):
    queries: list[QueryResult]


def confirm_outside_range_field() -> Any:
    return Field(default=False, description="True: store the value even though it lies outside the dataset's "
                                            "plausible range (the person checked it).")


class AnswerRequest(_Request):
    value: Number
    confirm_outside_range: bool = confirm_outside_range_field()


class PendingQuery(_Model):
    """A manual-evaluator query waiting for the curator's measurement of file row ``row``."""

    query_id: int
    session_id: int
    release_id: int
    dataset_id: int
    index: int = Field(description="The modeler's index into the released inputs (a secret random order).")
    row: int = Field(description=FILE_ROW)
    identifier: str | None = Field(
        default=None, description="The row's value in the dataset's identifier column (e.g. the MRN), or its file row "
                                  "number when the dataset has none: what the lab answers by (--from-csv).")
    measurement: MeasurementSpec | None = Field(default=None, description="What to measure, and in which unit.")
    created_at: datetime


class PendingQueryList(_Model):
    queries: list[PendingQuery]


# --- reconstruction audit -------------------------------------------------------------------------


class ReconstructionAuditRequest(_Request):
    """Simulate an attacker who knows ``known`` records and their row indices (chosen at random)."""

    known: Count = Field(
        description="How many records the attacker knows (d + 1 suffice against po-gp-ucb).")
    seed: Seed | None = Field(default=None, description="Picks the known rows reproducibly; research mode only.")


class ReconstructionAuditOut(_Model):
    """Aggregate reconstruction error over the rows the attacker did not know; never a row."""

    release_id: int
    mechanism: Mechanism
    known: int
    reconstructed: int = Field(description="Rows the attacker did not know, over which the errors are taken.")
    identifiable: bool = Field(description="Whether the known rows determine the affine map (enough, independent).")
    max_relative_error: float
    median_relative_error: float
    rms_error: float
    baseline_rms_error: float = Field(description="RMS error of guessing the mean of the known rows for every row.")
    noise_std: float | None = None
    noise_floor_rms: float | None = None
    warnings: list[str] = Field(default_factory=list)


# --- ledger, audit, jobs --------------------------------------------------------------------------


class LedgerEntry(_Model):
    id: int
    dataset_id: int
    kind: Literal["charge", "raise"] = Field(
        default="charge", description="charge: spent by a release or job; raise: the curator raised the total."
    )
    epsilon: float
    delta: float
    purpose: str
    release_id: int | None = None
    job_id: int | None = None
    mechanism: str | None = Field(default=None, description="The mechanism that spent it (null: not recorded).")
    event: dict[str, Any] | None = Field(
        default=None, description="What was spent, as data: the DP event (noise σ or scale, sensitivity, composition)."
    )
    actor: str | None = Field(default=None, description="Who caused it: 'admin' or 'key:<id>:<name>' (null: unknown).")
    created_at: datetime


class AuditEvent(_Model):
    """Who did what, when. Never data values. Listed grouped, one row stands for ``count`` identical events in a row
    (same actor, action and target): ``id`` and ``created_at`` are the first's, ``last_id`` and ``last_at`` the
    last's."""

    id: int
    actor: str
    action: str
    target: str | None = None
    created_at: datetime
    count: int = Field(1, ge=1, description="How many identical events in a row this row stands for (1 ungrouped).")
    last_id: int | None = Field(None, description="The last of them's id (the same as id when count is 1).")
    last_at: datetime | None = Field(None, description="The last of them's time.")


class JobStatus(StrEnum):
    """Where a job stands: ``queued`` and ``running`` until it ends ``succeeded``, ``failed`` or ``cancelled``
    (:attr:`finished`). Members compare equal to their strings, as stored and sent."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED_JOB_STATUSES


FINISHED_JOB_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
UNFINISHED_JOB_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class JobCreate(_Request):
    kind: str = Field(max_length=100, description="One of the registered job kinds (dp-bo, dp-tune, dpareto).")
    dataset_id: Id | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    request_id: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="Makes the creation idempotent: a retry with the same request_id (and the same body) returns "
                    "the job it created (200) and is never charged again; the same request_id with another body "
                    "is a 409. Unique per key (or for the admin).")


class JobOut(_Model):
    id: int
    kind: str
    dataset_id: int | None
    status: JobStatus
    progress: float = Field(ge=0, le=1)
    message: str | None = None
    epsilon: float = 0.0
    delta: float = 0.0
    seeded: bool = Field(default=False, description="Run with a seed (reproducible noise, research mode).")
    certified: bool = Field(
        default=False, description="Its result is a DP release as charged: charged on the ledger and not seeded."
    )
    warnings: list[str] = Field(default_factory=list)
    result: dict[str, Any] | None = None
    request_id: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
