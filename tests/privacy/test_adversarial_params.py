"""Requester-chosen parameters never buy less noise than the charged ε requires.

Every job kind's ``cost`` and ``run`` are exercised with a real :class:`JobContext` on a small table, with
each requester-supplied parameter swept to its extremes. A recording noise source sees every value the
kind hands to the sampler, with the scale and grid it asked for. From those the test computes the
privacy each release really spends, two ways, and checks that their sum never exceeds the charge:

* worst case, from first principles: the largest change of the noised value that one record can cause
  (an accuracy is in [0, 1]; a clipped mean moves by (upper − lower)/n; a partitioned mean by 1/k; a
  DP-SGD noise multiplier is the recorded noise std over 2·clip_norm, fed to the accountant);
* observed, on neighbouring tables (one record changed): the change of the noised value itself, which
  also catches floating-point rounding that the formulas leave out.

Known failures on the old code: dp-bo with ``signal_std=1e-6, noise_std=1e-9, dataset_kernel=1`` spent
~10⁵ times its charge (defect 3), and dp-mean with bounds (1e15 − 3, 1e15) 6.7 times (the float mean's
rounding moved it by more than (upper − lower)/n).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from curator_service.jobs import DatasetInfo, JobContext
from curator_service.persistence.blobs import RawTable
from curator_service.services.job_kinds import KINDS
from curator_service.services.job_kinds.inputs import held_out_split
from shared.api.schemas import ScalingSpec
from shared.dp.accounting import dpsgd_epsilon
from shared.dp.noise import SeededNoise

N, FEATURES = 80, ("a", "b", "c")
SLACK = 1 + 1e-9  # float noise in the checks' own arithmetic


@dataclass
class Draw:
    kind: str  # "laplace", "gaussian" or "exponential"
    values: np.ndarray  # what the noise was added to (scores for the exponential mechanism)
    scale: float  # Laplace scale, Gaussian std, or the exponential mechanism's sensitivity
    grid: float = 0.0
    epsilon: float = 0.0  # the exponential mechanism's ε


@dataclass
class RecordingNoise(SeededNoise):
    """Seeded research noise that records every request (Gaussian values are not kept: DP-SGD makes many)."""

    seed: int = 0
    draws: list[Draw] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.seed)

    def add_laplace(self, values, scale, grid):
        self.draws.append(Draw("laplace", np.array(values, dtype=float), scale, grid))
        return super().add_laplace(values, scale, grid)

    def add_gaussian(self, values, std, grid):
        self.draws.append(Draw("gaussian", np.empty(0), std, grid))
        return super().add_gaussian(values, std, grid)

    def exponential_index(self, scores, sensitivity, epsilon):
        self.draws.append(Draw("exponential", np.array(scores, dtype=float), sensitivity, epsilon=epsilon))
        return super().exponential_index(scores, sensitivity, epsilon)

    def of(self, kind: str) -> list[Draw]:
        return [d for d in self.draws if d.kind == kind]


def table(seed: int = 0, y: np.ndarray | None = None) -> RawTable:
    """Features in [0, 1]³, a 0/1 label that depends on them, and a numeric column ``y``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(N, 3))
    label = (X @ [2.0, -1.0, 0.5] + 0.3 * rng.standard_normal(N) > 0.6).astype(float)
    columns = {name: X[:, j] for j, name in enumerate(FEATURES)}
    columns.update(label=label, y=rng.uniform(0.0, 1.0, N) if y is None else y)
    return RawTable(columns, FEATURES)


def with_column(raw: RawTable, name: str, row: int, value: float) -> RawTable:
    """The neighbouring table: ``raw`` with one record's ``name`` changed to ``value``."""
    changed = raw.columns[name].copy()
    changed[row] = value
    return RawTable({**raw.columns, name: changed}, raw.feature_columns)


def run_kind(kind: str, params: dict[str, Any], raw: RawTable, seed: int = 0,
             progress=lambda fraction, message=None: None):
    """``cost`` then ``run`` with a real context; returns the charge, the result and the recorded noise."""
    info = DatasetInfo(id=1, n=N, d=len(FEATURES), columns=tuple(raw.columns), numeric_columns=tuple(raw.columns),
                       feature_columns=FEATURES, evaluator={"kind": "column", "column": "y"},
                       scaling=ScalingSpec(kind="bounds", lower=[0.0] * 3, upper=[1.0] * 3))
    parsed = KINDS[kind].parse(params)
    charge = KINDS[kind].cost(parsed, info)
    noise = RecordingNoise(seed)
    ctx = JobContext(job_id=1, params=parsed, dataset=info, table=raw, epsilon=charge[0], delta=charge[1],
                     noise=noise, rng=np.random.default_rng(seed + 1), progress=progress, cancelled=lambda: False)
    return charge, KINDS[kind].run(ctx), noise


def laplace_epsilon(change: float, draw: Draw) -> float:
    """ε spent by a Laplace draw on a value that moves by ``change``: the sampler first rounds it to the grid."""
    return (change + draw.grid) / draw.scale


def in_unit_interval(values: np.ndarray) -> bool:
    return bool(np.all((values >= 0.0) & (values <= 1.0)))


# --- dp-mean -----------------------------------------------------------------------------------------

DP_MEAN = [
    dict(lower=0.0, upper=1.0, epsilon=1.0),
    dict(lower=-1e15, upper=1e15, epsilon=1e-6),
    dict(lower=0.0, upper=1e-12, epsilon=1e3),
    dict(lower=1e15 - 3, upper=1e15, epsilon=1.0),  # a range of a few ulps: the mean's rounding dominates
    dict(lower=1e13 - 0.1, upper=1e13, epsilon=1.0),
    dict(lower=-5.0, upper=-4.0, epsilon=0.5),
    dict(lower=-1e-300, upper=1e-300, epsilon=1.0),
]


@pytest.mark.parametrize("bounds", DP_MEAN, ids=lambda b: f"[{b['lower']!r},{b['upper']!r}],eps={b['epsilon']:g}")
def test_dp_mean(bounds):
    params = {"column": "y", **bounds}
    lower, upper = bounds["lower"], bounds["upper"]
    values = lower + np.random.default_rng(3).uniform(0.0, 1.0, N) * (upper - lower)
    base = table(y=values)
    (charged, _), _, noise = run_kind("dp-mean", params, base)
    [draw] = noise.of("laplace")
    worst = laplace_epsilon((upper - lower) / N, draw)
    observed = 0.0
    for row in range(N):  # one record from the lowest to the highest value it may take
        low, high = (run_kind("dp-mean", params, with_column(base, "y", row, v))[2].of("laplace")[0]
                     for v in (lower - abs(lower) - 1.0, upper + abs(upper) + 1.0))
        observed = max(observed, laplace_epsilon(abs(float(high.values) - float(low.values)), draw))
    assert max(worst, observed) <= charged * SLACK, (worst, observed, charged)


# --- dp-bo -------------------------------------------------------------------------------------------

DP_BO_BASE = {"label_column": "label", "log10_lambda": np.linspace(-4, 1, 9).tolist(), "iterations": 6,
              "epsilon": 0.5, "delta": 1e-5}
DP_BO = [
    {},
    {"signal_std": 1e-6, "noise_std": 1e-9, "dataset_kernel": 1.0},  # defect 3's reproducer
    {"signal_std": 1e-9}, {"signal_std": 1e3}, {"noise_std": 1e-9}, {"noise_std": 1e3},
    {"dataset_kernel": 1.0}, {"dataset_kernel": -1.0}, {"lengthscale": 1e-3}, {"lengthscale": 1e3},
    {"prior_mean": -1e3}, {"prior_mean": 1e3}, {"iterations": 1}, {"iterations": 200},
    {"log10_lambda": [-10.0, 10.0]}, {"log10_lambda": np.linspace(-10, 10, 200).tolist()},
    {"validation_fraction": 0.05}, {"validation_fraction": 0.95},
    {"epsilon": 1e-6}, {"epsilon": 1e3}, {"delta": 1e-300}, {"delta": 0.999},
]


def dp_bo_spent(noise: RecordingNoise, neighbour: RecordingNoise | None = None) -> float:
    """ε of λ̃ (exponential mechanism) plus ε of ṽ (Laplace), worst case or on this neighbour."""
    [selection], [value] = noise.of("exponential"), noise.of("laplace")
    if neighbour is None:  # any record can move an accuracy anywhere in [0, 1]: only the clip bounds the change
        score_change = 1.0 if in_unit_interval(selection.values) else np.inf
        value_change = 1.0 if in_unit_interval(value.values) else np.inf
    else:
        [other_selection], [other_value] = neighbour.of("exponential"), neighbour.of("laplace")
        score_change = float(np.max(np.abs(selection.values - other_selection.values)))
        value_change = float(abs(value.values - other_value.values))
    return selection.epsilon * score_change / selection.scale + laplace_epsilon(value_change, value)


@pytest.mark.parametrize("change", DP_BO, ids=lambda c: ",".join(f"{k}={np.size(v)}" if k == "log10_lambda" else
                                                                    f"{k}={v:g}" for k, v in c.items()) or "defaults")
def test_dp_bo(change):
    params = {**DP_BO_BASE, **change}
    base = table()
    (charged, _), _, noise = run_kind("dp-bo", params, base)
    spent = [dp_bo_spent(noise)]
    for row in range(4):  # flip one record's label; a validation record moves every accuracy by 1/m
        neighbour = run_kind("dp-bo", params, with_column(base, "label", row, 1.0 - base.columns["label"][row]))[2]
        spent.append(dp_bo_spent(noise, neighbour))
    assert max(spent) <= charged * SLACK, (spent, charged)


# --- dp-tune ------------------------------------------------------------------------------------------

CANDIDATE = {"learning_rate": 0.5, "batch_size": 16, "epochs": 2, "clip_norm": 1.0}
DP_TUNE_BASE = {"label_column": "label", "candidates": [CANDIDATE, {**CANDIDATE, "learning_rate": 2.0}], "k": 4,
                "epsilon": 0.5, "max_iterations": 6, "final_epsilon": 1.0, "final_delta": 1e-5, "u0": 0.3}
DP_TUNE = [
    {}, {"k": 2}, {"k": 16}, {"epsilon": 1e-6}, {"epsilon": 1e3}, {"u0": 0.0}, {"u0": 0.99}, {"g": 1e-9},
    {"g": 0.99}, {"max_iterations": 1}, {"max_iterations": 10_000, "g": 1e-9}, {"final_epsilon": 1e-6},
    {"final_epsilon": 1e3}, {"final_delta": 1e-300}, {"final_delta": 0.99}, {"evaluation_epsilon": 1e-6},
    {"evaluation_epsilon": 1e3}, {"test_fraction": 0.05}, {"test_fraction": 0.5}, {"private_parts": True},
    *({"candidates": [{**CANDIDATE, name: value}]} for name, value in [
        ("learning_rate", 1e-9), ("learning_rate", 1000.0), ("batch_size", 1), ("batch_size", 65_536),
        ("epochs", 1), ("epochs", 100), ("clip_norm", 1e-9), ("clip_norm", 1000.0), ("optimizer", "adam")]),
]


def dp_tune_spent(params: dict[str, Any], result: dict[str, Any], noise: RecordingNoise,
                  neighbour: RecordingNoise | None = None) -> float:
    """ε of the sparse vector (each iteration: Δ/b_threshold + 2Δ/b_scores, AboveThreshold's analysis),
    of the final DP-SGD training (the accountant at the recorded noise multiplier) and of the two
    held-out releases (Δ = 1/n_test)."""
    laplace = noise.of("laplace")
    svt = [d for d in laplace if d.values.ndim > 0]
    held_out = [d for d in laplace if d.values.ndim == 0]
    thresholds, scores = svt[0::2], svt[1::2]
    assert len(thresholds) == len(scores) == result["iterations"] <= params["max_iterations"]
    if neighbour is None:
        change = 1.0 / params["k"] if all(in_unit_interval(s.values) for s in scores) else np.inf
    else:
        other = [d for d in neighbour.of("laplace") if d.values.ndim > 0][1]
        change = float(np.max(np.abs(scores[0].values - other.values)))
    spent = sum(laplace_epsilon(change, t) + 2 * laplace_epsilon(change, s) for t, s in zip(thresholds, scores))

    n_test = held_out_split(N, params.get("test_fraction", 0.2))
    for release in held_out:
        assert in_unit_interval(release.values)
        spent += laplace_epsilon(1.0 / n_test, release)

    gaussian = noise.of("gaussian")
    if result["model"] is not None:
        chosen = result["hyperparameters"]
        n_train, batch = N - n_test, min(chosen["batch_size"], N - n_test)
        assert len(gaussian) == chosen["epochs"] * max(1, round(n_train / batch))  # the accountant's steps
        multiplier = min(d.scale for d in gaussian) / (2.0 * chosen["clip_norm"])
        spent += dpsgd_epsilon(n_train, batch, chosen["epochs"], multiplier, params["final_delta"])
    else:
        assert not gaussian
    return spent


@pytest.mark.parametrize("change", DP_TUNE, ids=lambda c: ",".join(
    f"{k}={v}" if k != "candidates" else ",".join(f"{n}={x}" for n, x in v[0].items() if CANDIDATE.get(n) != x)
    for k, v in c.items()) or "defaults")
def test_dp_tune(change):
    params = {**DP_TUNE_BASE, **change}
    base = table()
    (charged, charged_delta), result, noise = run_kind("dp-tune", params, base)
    spent = [dp_tune_spent(params, result, noise)]
    for row in range(3):
        neighbour = run_kind("dp-tune", params, with_column(base, "label", row, 1.0 - base.columns["label"][row]))
        spent.append(dp_tune_spent(params, result, noise, neighbour[2]))
    assert max(spent) <= charged * SLACK, (spent, charged)
    assert charged_delta == params["final_delta"]


# --- dpareto -----------------------------------------------------------------------------------------

DPARETO = [
    {"initial_points": 2, "iterations": 0, "max_epochs": 2},
    {"initial_points": 2, "iterations": 1, "max_epochs": 2, "batch_size": [1, 2], "noise_variance": [1e-9, 2e-9],
     "clip_norm": [999.0, 1000.0], "learning_rate": [9.99, 10.0], "test_fraction": 0.5, "delta": 0.999},
    {"initial_points": 2, "iterations": 0, "max_epochs": 2, "baseline": "random", "baseline_points": 4},
    {"initial_points": 2, "iterations": 0, "max_epochs": 2, "batch_size": [1, 2], "baseline": "grid",
     "baseline_points": 32},
]


@pytest.mark.parametrize("change", DPARETO, ids=["small", "extremes", "random-baseline", "grid-baseline"])
def test_dpareto_releases_nothing_whatever_its_parameters(change):
    """Curator only, free, and it never touches the privacy-noise source: nothing of it is a release."""
    charge, result, noise = run_kind("dpareto", {"label_column": "label", **change}, table())
    assert charge == (0.0, 0.0) and KINDS["dpareto"].roles == {"curator"}
    assert noise.draws == [] and result["not_differentially_private"] is True
    assert result["baseline"] == change.get("baseline", "none")  # the baseline cases did evaluate one


def test_every_kind_is_swept():
    """Every kind a requester submits through POST /v1/jobs; the ``release`` kind is created by its own curator-only
    endpoint, and its options are swept by tests/privacy/test_gaussian_paths.py and test_chunked_release.py."""
    assert {name for name, kind in KINDS.items() if kind.endpoint is None} == {"dp-mean", "dp-bo", "dp-tune", "dpareto"}
    assert {name for name, kind in KINDS.items() if kind.endpoint is not None} == {"release"}
    assert KINDS["release"].roles == {"curator"}
