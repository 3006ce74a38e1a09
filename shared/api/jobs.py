"""The job kinds' wire contract: each kind's parameters, validated by the curator at submission and built by
the modeler's commands, and its result, built by the kind and read by the modeler. The kinds themselves
(``curator_service.services.job_kinds``) hold the cost and the run; their docstrings say what each parameter does to
the privacy guarantee.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.api.schemas import Integer, Number, Seed


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Result(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


# --- dp-mean ------------------------------------------------------------------------------------------

DP_MEAN_BOUND_LIMIT = 1e15  # |lower|, |upper| ≤ 1e15 keeps every sum of clipped values finite


class DpMeanParams(_Params):
    column: str
    lower: Number = Field(ge=-DP_MEAN_BOUND_LIMIT, le=DP_MEAN_BOUND_LIMIT)
    upper: Number = Field(ge=-DP_MEAN_BOUND_LIMIT, le=DP_MEAN_BOUND_LIMIT)
    epsilon: Number = Field(gt=0)
    seed: Seed | None = None

    @model_validator(mode="after")
    def _bounds_ordered(self) -> DpMeanParams:
        if not self.upper > self.lower:
            raise ValueError("'upper' must be greater than 'lower'")
        return self


class DpMeanResult(_Result):
    column: str
    mean: float
    n: int
    lower: float
    upper: float
    epsilon: float
    sensitivity: float


# --- dp-bo (Kusner et al.) ----------------------------------------------------------------------------

DP_BO_MAX_GRID = 200


class DpBoParams(_Params):
    label_column: str = Field(description="Column of 0/1 labels; the features are the dataset's feature columns.")
    log10_lambda: list[Number] = Field(min_length=2, max_length=DP_BO_MAX_GRID,
                                      description="The public grid Λ, as log10 λ; every point is fitted.")
    iterations: Integer = Field(ge=1, le=1000, description="T, the number of GP-UCB steps.")
    epsilon: Number = Field(gt=0, description="ε of each of the two releases; the job costs 2ε.")
    delta: Number = Field(gt=0, lt=1, description="δ of each of the two releases; the job costs 2δ.")
    validation_fraction: Number = Field(default=0.5, gt=0, lt=1)
    lengthscale: Number = Field(default=1.0, ge=1e-3, le=1e3, description="GP lengthscale, in decades of λ.")
    signal_std: Number = Field(default=0.25, ge=1e-9, le=1e3,
                              description="GP prior standard deviation of the accuracy.")
    prior_mean: Number = Field(default=0.5, ge=-1e3, le=1e3, description="GP prior mean of the accuracy.")
    noise_std: Number = Field(default=0.01, ge=1e-9, le=1e3, description="Observation-noise σ the GP model assumes.")
    dataset_kernel: float | None = Field(
        default=None, ge=-1, le=1,
        description="k1(V, V') for neighbouring validation sets; default 1 − 1/(2 m² s²), so that the model's "
                    "neighbour standard deviation is 1/m, the most one record can move an accuracy.")
    seed: Seed | None = None

    @field_validator("log10_lambda")
    @classmethod
    def _finite_distinct(cls, grid: list[float]) -> list[float]:
        if not all(abs(g) <= 10 for g in grid) or len(set(grid)) != len(grid):
            raise ValueError("log10_lambda must hold distinct values between -10 and 10")
        return grid


class DpBoResult(_Result):
    """λ̃ and ṽ, each ε-DP, with the public numbers of how they were made."""

    log10_lambda: float
    lambda_: float = Field(alias="lambda")
    index: int
    validation_accuracy: float
    epsilon: float
    delta: float
    selection_sensitivity: float
    value_sensitivity: float
    value_noise_scale: float
    iterations: int
    validation_size: int
    dataset_kernel: float
    info_gain_bound: float
    grid_size: int | None = Field(default=None, description="|Λ|, the grid λ̃ is chosen from.")
    guarantee: str


# --- dp-tune (Ding et al.) ----------------------------------------------------------------------------

class Candidate(_Params):
    """One DP-SGD logistic-regression setting among which dp-tune privately selects."""

    learning_rate: Number = Field(gt=0, le=1000)
    batch_size: Integer = Field(ge=1, le=65_536)
    epochs: Integer = Field(ge=1, le=100)
    clip_norm: Number = Field(gt=0, le=1000)
    optimizer: str = Field(default="sgd", pattern="^(sgd|adam)$")


class DpTuneParams(_Params):
    label_column: str
    candidates: list[Candidate] = Field(min_length=1, max_length=100)
    k: Integer = Field(ge=2, le=1000, description="number of parts of the training rows (sensitivity 1/k); "
                                                 "candidates × parts models are trained")
    epsilon: Number = Field(gt=0, description="ϵ of one iteration of the sparse vector")
    u0: Number = Field(default=0.5, ge=0, lt=1)
    g: Number = Field(default=0.01, gt=0, lt=1)
    max_iterations: Integer = Field(ge=1, le=10_000, description="hard cap: the selection costs max_iterations·ϵ")
    final_epsilon: Number = Field(gt=0)
    final_delta: Number = Field(gt=0, lt=1)
    evaluation_epsilon: Number = Field(default=0.1, gt=0, description="ε of the two held-out releases together")
    test_fraction: Number = Field(default=0.2, ge=0.05, le=0.5, description="share of rows held out for scoring")
    private_parts: bool = False
    seed: Seed | None = None


class HeldOutScores(_Result):
    """The selected model's accuracy (None when nothing was selected) and the majority-class baseline on the
    held-out rows, each a Laplace release at ε/2 with the noise scale shown."""

    rows: int
    accuracy: float | None
    majority_baseline: float
    epsilon: float
    noise_scale: float


class DpTuneModel(_Result):
    """The DP-SGD model trained on the selected candidate (a charged (ε, δ) release)."""

    coef: list[float]
    intercept: float
    noise_multiplier: float
    feature_columns: list[str]
    features: str
    scaling: dict


class DpTuneResult(_Result):
    """The private selection (capped elastic-step sparse vector), the model and its held-out scores."""

    selected: int | None
    iterations: int
    max_iterations: int
    truncated: bool
    selection_epsilon: float
    final_epsilon: float
    final_delta: float
    hyperparameters: Candidate | None = None
    model: DpTuneModel | None
    held_out: HeldOutScores


# --- dpareto (Avent et al.) ---------------------------------------------------------------------------

DPARETO_RANGE_LIMITS = {"batch_size": 65_536, "learning_rate": 10.0, "noise_variance": 1e4, "clip_norm": 1000.0}
DPARETO_MAX_BASELINE_POINTS = 768  # as many as DPareto's most: 256 initial points and 512 iterations


class DparetoParams(_Params):
    """The defaults are Table 1's ADULT domain (:func:`shared.algorithms.dpareto.problems.dpsgd_space`)."""

    label_column: str
    loss: str = Field(default="logistic", pattern="^(logistic|hinge)$")
    optimizer: str = Field(default="sgd", pattern="^(sgd|adam)$")
    initial_points: Integer = Field(default=8, ge=2, le=256)
    iterations: Integer = Field(default=16, ge=0, le=512)
    delta: Number = Field(default=1e-5, gt=0, lt=1)
    test_fraction: Number = Field(default=0.3, ge=0.05, le=0.5)
    max_epochs: Integer = Field(default=64, ge=2, le=1000)
    batch_size: tuple[Integer, Integer] = (8, 512)
    learning_rate: tuple[Number, Number] | None = Field(
        default=None,
        description="Default: Table 1's range [5e-4, 5e-2] scaled by 32,561 / training rows (never below it, at "
                    "most 10): an epoch has one step per lot, so a smaller table needs larger steps to learn as far "
                    "(shared.algorithms.dpareto.problems.learning_rates_for). ε does not depend on it.")
    noise_variance: tuple[Number, Number] = (0.1, 16.0)
    clip_norm: tuple[Number, Number] = (0.1, 4.0)
    baseline: str = Field(default="none", pattern="^(none|random|grid)$",
                          description="Also evaluate random search or a regular grid over the same domain, to "
                                      "compare DPareto's front with.")
    baseline_points: Integer | None = Field(
        default=None, ge=1, le=DPARETO_MAX_BASELINE_POINTS,
        description="The baseline's evaluations (random) or the most its grid may have (grid: the finest grid "
                    "within it); default: as many as DPareto's, initial_points + iterations.")
    seed: Seed | None = None

    @model_validator(mode="after")
    def _ranges(self) -> DparetoParams:
        # A range of one value would be a division by zero in the search.
        for name, limit in DPARETO_RANGE_LIMITS.items():
            if getattr(self, name) is None:  # the default that depends on the table's size
                continue
            low, high = getattr(self, name)
            if not 0 < low < high <= limit:
                raise ValueError(f"{name} must be a range [low, high] with 0 < low < high ≤ {limit:g}")
        if self.baseline == "none" and self.baseline_points is not None:
            raise ValueError("baseline_points needs a baseline: set baseline to 'random' or 'grid'")
        return self


class DparetoPoint(_Result):
    params: dict[str, float]
    epsilon: float
    error: float


class DparetoResult(_Result):
    """Every evaluated point and the front: NOT differentially private (trusted analysts only)."""

    not_differentially_private: bool = True
    warning: str
    anti_ideal: list[float]
    hypervolume: float
    delta: float
    n_train: int
    n_test: int
    majority_baseline: float
    best_accuracy: float
    learning_rate: list[float] | None = None  # the range searched (the default depends on n_train)
    diagnosis: str | None = Field(default=None, description="Why no learner beat the majority class, when none did.")
    points: list[DparetoPoint]
    front: list[DparetoPoint]
    overhead_seconds: float
    baseline: str = "none"
    baseline_points: list[DparetoPoint] = []  # every point the baseline evaluated, in its order
    baseline_front: list[DparetoPoint] = []
    baseline_hypervolume: float | None = None  # same anti-ideal as ``hypervolume``
