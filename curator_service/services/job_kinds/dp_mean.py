"""``dp-mean``: the ε-DP mean of one numeric column, clipped to public bounds (the Laplace mechanism).

With n public and every value clipped to [lower, upper], replacing one row moves the mean by at most
(upper − lower) / n, so mean + Laplace(Δ/ε) is ε-DP (Dwork & Roth 2014, Thm 3.6). Small on purpose:
it is the framework's worked example and a genuinely useful summary for the curator.

Parameters and privacy (the requester may be a modeler):

* ``column``: any numeric column of the table (declared at registration), features or not; the guarantee does not
  depend on it.
* ``lower``, ``upper``: the clipping bounds. They set Δ, but every value is clipped to them first, so Δ
  is the true sensitivity of the computed mean for any bounds. Bounds far from zero (1e12, 1e12 + 1e-3)
  would let floating-point rounding of the mean move it by more than (upper − lower)/n, so Δ carries the
  rounding (:func:`shared.dp.mechanisms.bounded_mean_sensitivity`). |lower|, |upper| ≤ 1e15 keeps every
  sum finite.
* ``epsilon``: the charge; the noise scale is Δ/ε, so a larger ε is paid for on the ledger.
* ``seed``: research mode only (the API refuses it in production); it picks the noise stream, never
  its scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from curator_service.jobs import DatasetInfo, JobContext, JobKind
from curator_service.services.job_kinds.inputs import check_numeric_column
from curator_service.services.ledger_events import Event, laplace_event
from shared.api.jobs import DpMeanParams, DpMeanResult
from shared.dp.mechanisms import bounded_mean_sensitivity, laplace_mechanism


def cost(params: DpMeanParams, dataset: DatasetInfo | None) -> tuple[float, float]:
    check_numeric_column(dataset, "column", params.column)
    return params.epsilon, 0.0


def event(params: DpMeanParams, dataset: DatasetInfo) -> Event:
    """The Laplace mechanism on the clipped mean: scale Δ/ε for Δ = :func:`bounded_mean_sensitivity` (n public)."""
    sensitivity = bounded_mean_sensitivity(params.lower, params.upper, dataset.n)
    return laplace_event(sensitivity / params.epsilon, sensitivity, f"mean of {params.column}")


def run(ctx: JobContext[DpMeanParams]) -> dict[str, Any]:
    params = ctx.params
    # a numeric column: every cell a finite number (check_numeric_column)
    values = ctx.require_table().columns[params.column]
    n = values.shape[0]
    clipped_mean = float(np.clip(values, params.lower, params.upper).mean())
    delta_mean = bounded_mean_sensitivity(params.lower, params.upper, n)
    ctx.progress(0.5, "adding Laplace noise")
    mean = laplace_mechanism(clipped_mean, delta_mean, params.epsilon, ctx.noise)
    return DpMeanResult(column=params.column, mean=mean, n=n, lower=params.lower, upper=params.upper,
                        epsilon=params.epsilon, sensitivity=delta_mean).model_dump()


KIND = JobKind(
    name="dp-mean",
    description="ε-DP mean of a column clipped to public [lower, upper] (Laplace mechanism).",
    params=DpMeanParams,
    cost=cost,
    run=run,
    roles=frozenset({"curator", "modeler"}),
    event=event,
)
