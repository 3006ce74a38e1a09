"""``dp-tune``: Ding et al.'s constant-overhead private hyperparameter selection, then a DP-SGD model.

The curator's table is split into k parts; every candidate (DP-SGD logistic-regression hyperparameters)
is trained on each part and scored on that part's held-out rows, so each part's utility depends on that
part alone and the mean over parts moves by at most 1/k when one row is replaced. The capped
elastic-step sparse vector (``shared.dptune``) picks a candidate, which is trained by DP-SGD on all rows
at (final_epsilon, final_delta). Charged: max_iterations · epsilon + final_epsilon, final_delta — from the
parameters alone. Released: the selected hyperparameters, the iteration count and the model weights.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from curator_service.jobs import DatasetInfo, JobContext, JobKind, binary_labels, check_label_column
from shared.dptune import PrivateLogisticRegression, tune_and_train


class Candidate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(gt=0)
    batch_size: int = Field(ge=1)
    epochs: int = Field(ge=1, le=100)
    clip_norm: float = Field(gt=0)
    optimizer: str = Field(default="sgd", pattern="^(sgd|adam)$")


class DpTuneParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label_column: str
    candidates: list[Candidate] = Field(min_length=1, max_length=1000)
    k: int = Field(ge=2, description="number of parts of the table (sensitivity 1/k)")
    epsilon: float = Field(gt=0, description="ϵ of one iteration of the sparse vector")
    u0: float = Field(default=0.5, ge=0, lt=1)
    g: float = Field(default=0.01, gt=0, lt=1)
    max_iterations: int = Field(ge=1, le=10_000, description="hard cap: the selection costs max_iterations·ϵ")
    final_epsilon: float = Field(gt=0)
    final_delta: float = Field(gt=0, lt=1)
    private_parts: bool = False
    seed: int | None = None


def cost(params: dict[str, Any], dataset: DatasetInfo | None) -> tuple[float, float]:
    parsed = DpTuneParams.model_validate(params)
    if dataset is not None:
        check_label_column(dataset, parsed.label_column)
        if dataset.n < 4 * parsed.k:
            raise ValueError(f"k = {parsed.k} parts need at least {4 * parsed.k} rows; the dataset has {dataset.n}")
    return parsed.max_iterations * parsed.epsilon + parsed.final_epsilon, parsed.final_delta


def run(ctx: JobContext) -> dict[str, Any]:
    params = DpTuneParams.model_validate(ctx.params)
    labels = binary_labels(ctx.table, params.label_column)
    candidates = [PrivateLogisticRegression(**c.model_dump()) for c in params.candidates]
    ctx.progress(0.05, f"training {len(candidates)} candidates on {params.k} parts")
    tuned = tune_and_train(
        ctx.table.features, labels, candidates, k=params.k, epsilon=params.epsilon, u0=params.u0,
        g=params.g, max_iterations=params.max_iterations, final_epsilon=params.final_epsilon,
        final_delta=params.final_delta, noise=ctx.noise, rng=ctx.rng, private_parts=params.private_parts,
    )
    ctx.check_cancelled()
    selection = tuned.selection
    result: dict[str, Any] = {
        "selected": selection.index,
        "iterations": selection.iterations,
        "max_iterations": selection.max_iterations,
        "truncated": selection.truncated,
        "selection_epsilon": selection.epsilon_spent,
        "final_epsilon": params.final_epsilon if tuned.model is not None else 0.0,
        "final_delta": params.final_delta if tuned.model is not None else 0.0,
        "model": None,
    }
    if tuned.model is not None:
        result["hyperparameters"] = params.candidates[selection.index].model_dump()
        result["model"] = {"coef": tuned.model.coef_.tolist(), "intercept": tuned.model.intercept_,
                           "noise_multiplier": tuned.model.noise_multiplier,
                           "feature_columns": list(ctx.table.feature_columns)}
    return result


KIND = JobKind(
    name="dp-tune",
    description="Ding et al.: private hyperparameter selection (capped elastic-step sparse vector) and a DP-SGD "
                "logistic regression; costs max_iterations·epsilon + final_epsilon.",
    cost=cost,
    run=run,
    # Everything it returns is a charged DP release, so a modeler in scope may ask for it, as for dp-bo.
    roles=frozenset({"curator", "modeler"}),
)
