"""The planner: what a ``gaussian`` release would buy at each ε, before anything is charged.

A thin call of :func:`shared.algorithms.planner.plan` (docs/planner.md) on the dataset's public shape only: n, d, the
width of its public box and the requested release options. It never reads the raw rows and charges nothing.
Its simulation runs GP-UCB on synthetic stand-in tables in the request, so its size is bounded to keep a
request within a few seconds; larger studies run :func:`shared.algorithms.planner.plan` offline.
"""

from __future__ import annotations

from curator_service.persistence.db import Database, get_or_404
from curator_service.persistence.models import Dataset
from curator_service.services.audit import record
from curator_service.services.policy import Principal
from curator_service.services.releases import gaussian_dim, gaussian_options
from shared.algorithms.planner import ReleaseSetting, plan
from shared.api.errors import ApiError
from shared.api.schemas import PlanOut, PlanRequest, PlanRow, ScalingSpec

MAX_SIMULATED_QUERIES = 200
"""simulate_runs × (number of ε + 1) × queries: GP-UCB answers simulated per request (each a GP-UCB step, whose
cost grows with n)."""
MAX_SIMULATED_ROWS = 50_000
MAX_CALIBRATED_CELLS = 5_000_000
"""n × d: the planner calibrates each ε on an n × d stand-in of zeros (memory)."""


def bound_premise(dataset: Dataset, private_measurements: bool) -> str:
    """When "at most N× random search per query" holds (docs/planner.md): the modeler's pick rate on an ordinary
    record is at most 1/n, which needs a row order independent of the values; and which choices it covers."""
    premise = (f"≤ N× random search per query, for a modeler whose pick rate on an ordinary record is at most 1/n "
               f"(n = {dataset.n}); covers choices made from the released inputs (and measurements only with the "
               f"private-measurement option, which this plan {'uses' if private_measurements else 'does not use'})")
    if dataset.in_file_order:
        premise += (f"; dataset {dataset.id} keeps its file's row order, which may follow the values, so the premise "
                    "may fail: re-register the table")
    return premise


def public_width(dataset: Dataset, body: PlanRequest) -> float:
    """Each scaled feature's public range: the request's ``width``, else the dataset's bounds scaling."""
    if body.width is not None:
        return body.width
    scaling = ScalingSpec.model_validate(dataset.scaling)  # a scaling stored before 'width' existed gets its default
    if scaling.kind == "bounds":
        return scaling.width
    raise ApiError(422, "validation_error",
                   f"dataset {dataset.id} has {dataset.scaling['kind']!r} scaling, which has no public box; give "
                   "'width', the public range [0, width] of every scaled feature, to plan for")


def check_size(body: PlanRequest, n: int, d: int) -> None:
    if n * d > MAX_CALIBRATED_CELLS:
        raise ApiError(422, "validation_error",
                       f"a table of {n} × {d} cells is too large to plan in a request (at most "
                       f"{MAX_CALIBRATED_CELLS} cells); run shared.algorithms.planner.plan offline")
    if body.simulate_runs == 0:
        return
    if body.queries > n:
        raise ApiError(422, "validation_error",
                       f"'queries' must be at most n = {n}: a simulated run never queries a row twice")
    work = body.simulate_runs * (len(body.epsilons) + 1) * body.queries
    if work > MAX_SIMULATED_QUERIES:
        raise ApiError(422, "validation_error",
                       f"the simulation asks for simulate_runs × (epsilons + 1) × queries = {work} GP-UCB answers, "
                       f"more than the {MAX_SIMULATED_QUERIES} a request may run; ask for fewer runs, epsilons or "
                       "queries (or run shared.algorithms.planner.plan offline)")
    if n > MAX_SIMULATED_ROWS:
        raise ApiError(422, "validation_error",
                       f"simulating GP-UCB over {n} rows is too slow for a request (at most {MAX_SIMULATED_ROWS}); "
                       "set simulate_runs to 0, or run shared.algorithms.planner.plan offline")


def plan_release(db: Database, principal: Principal, dataset_id: int, body: PlanRequest) -> PlanOut:
    """Audited, then computed outside any transaction (the simulation takes seconds)."""
    with db.write() as session:
        dataset = get_or_404(session, Dataset, dataset_id)
        record(session, principal, "dataset.plan", f"dataset:{dataset_id}")
    check_size(body, dataset.n, dataset.d)
    try:
        setting = ReleaseSetting(n=dataset.n, d=dataset.d, width=public_width(dataset, body), delta=body.delta,
                                 r=gaussian_dim(body, dataset.d), **gaussian_options(body))
        planned = plan(setting, body.epsilons, simulate_runs=body.simulate_runs, queries=body.queries,
                       lengthscale=body.lengthscale)
    except ValueError as exc:
        raise ApiError(422, "validation_error", f"{exc}; change the release options") from None
    return PlanOut(
        dataset_id=dataset_id, n=dataset.n, d=dataset.d, width=setting.width, delta=body.delta, queries=body.queries,
        simulate_runs=body.simulate_runs, bound_covers=planned.bound_covers,
        assumptions=bound_premise(dataset, body.measurements is not None),
        rows=[PlanRow(epsilon=row.epsilon, mu=row.mu, noise_to_spread=row.noise_to_spread,
                      random_search_multiple=row.random_search_multiple, parameters=row.parameters,
                      regret=row.regret, regret_stderr=row.regret_stderr) for row in planned.rows],
        random_search_regret=planned.random_search_regret, non_private_regret=planned.non_private_regret,
        half_gap_epsilon=planned.half_gap_epsilon, unit_noise_epsilon=planned.unit_noise_epsilon,
    )
