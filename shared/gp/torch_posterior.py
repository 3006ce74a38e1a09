"""The candidate posterior on a torch device: a GPU, or torch's CPU build for checks (the ``pobo[gpu]`` extra).

:class:`TorchCandidatePosterior` is :class:`shared.gp.regression.CandidatePosterior` with its candidate-sized
state (the scaled candidates, μ, σ² and the factor V) resident on the device and the rank-one step made of
torch operations. In float64 (the default) every operation of the step is the Numba pass's
(:func:`shared.gp.fused_step.fused_step`) in the same order with the same roundings, so μ, σ², V and the picks
are bitwise the CPU engine's (the ties going to the lowest index):

* the exponent ``query_offset + Σ_k q_k s_k`` and the sum ``kernel_weight ρ + Σ_k c_k V_k`` are summed as the
  pass sums them, four rows a group ((c₀r₀ + c₁r₁) + c₂r₂) + c₃r₃, the groups and then the leftover rows
  added one after another (:func:`ordered_sum`: the groups at once, then a running sum along the rows, which
  ``torch.cumsum`` makes in order on the CPU and on CUDA); never a matrix product, whose order is the library's;
* the exponential is the pass's own (Cody–Waite reduction, Taylor polynomial of degree 13, 2^k added to the
  exponent field), not ``torch.exp``; below −707 (values under 1e−307) both engines defer to their platform's
  exp, which may differ in the last bit there;
* square roots are rounded to nearest (:func:`sqrt_rounded`: CUDA's are; torch's CPU build calls MKL's vector
  sqrt, which is not always);
* no operation fuses a product into a sum (``torch.add(alpha=…)`` and ``addcmul`` may: neither is used).

Every operation is one pass over a tile of ``chunk`` candidates, so this costs more memory traffic than the
fused CPU pass (the group sums and the running sum are written and read back once): docs/gp_engine.md gives
when a GPU pays. ``precision="float32"`` halves the bytes but changes the picks (σ² cancels from 1 to ~1e-5
near observations; fp32 keeps ~7 digits): it warns, and uses ``torch.exp``.
"""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from shared.gp.fused_step import (
    EXP_TAYLOR,
    GIVEN_COLUMN,
    LN2_HI,
    LN2_LO,
    LOG2E,
    MATERN52,
    NORMAL_EXPONENT,
    ROUNDING_SHIFT,
    SQRT5,
)
from shared.gp.kernels import Kernel
from shared.gp.regression import CandidatePosterior

PRECISIONS = {"float64": torch.float64, "float32": torch.float32}
DEFAULT_CHUNK = {"cpu": 1 << 16, "cuda": 1 << 22}  # candidates a tile: in cache on a CPU; few launches on a GPU


def resolve_device(device: str) -> str | None:
    """The torch device a posterior runs on: ``"auto"`` is ``"cuda"`` when torch sees a GPU, else None (the
    Numba engine); any other name must be a device torch can use here."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else None
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise ValueError(f"device {device!r} is not a torch device name (e.g. 'cuda', 'cuda:1', 'cpu')") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch sees no CUDA GPU here (torch {torch.__version__}); "
                         "use device='auto' to fall back to the CPU engine")
    if kind not in DEFAULT_CHUNK:
        raise ValueError(f"device {device!r}: only 'cpu' and CUDA devices are supported")
    return device


def describe_device(device: str) -> str:
    """The device in words, e.g. ``cuda:0 (NVIDIA H100 80GB HBM3), torch 2.13.0``."""
    where = torch.device(device)
    if where.type == "cuda":
        index = where.index if where.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)}), torch {torch.__version__}"
    return f"cpu (torch {torch.__version__})"


def ordered_sum(first: torch.Tensor | float, rows: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """first + Σ_k weights[k] · rows[k] (rows: k × m), rounded as :func:`shared.gp.fused_step._add_rows` rounds
    it: each group of four rows ((w₀r₀ + w₁r₁) + w₂r₂) + w₃r₃, then ``first`` plus the groups and the leftover
    rows' products one after another. ``first``: a length-m tensor or a float."""
    count, m = rows.shape
    groups = count // 4
    terms = torch.empty((1 + groups + count - 4 * groups, m), dtype=rows.dtype, device=rows.device)
    terms[0] = first
    if groups:  # lane by lane: one groups × m product at a time, not all 4 · groups rows of products
        lanes, lane_weights = rows[: 4 * groups].view(groups, 4, m), weights[: 4 * groups].view(groups, 4, 1)
        grouped = terms[1 : 1 + groups]
        torch.mul(lanes[:, 0], lane_weights[:, 0], out=grouped)
        for lane in range(1, 4):
            grouped += lanes[:, lane] * lane_weights[:, lane]
    torch.mul(rows[4 * groups :], weights[4 * groups :, None], out=terms[1 + groups :])
    return torch.cumsum(terms, dim=0)[-1]  # a running sum along the rows: left to right, as the pass adds


def sqrt_rounded(x: torch.Tensor) -> torch.Tensor:
    """√x correctly rounded, as the CPU engine's ``math.sqrt``: CUDA's double and single sqrt are; torch's CPU
    build computes long vectors with MKL's vector math, which missed the nearest double for 1,191 of 10⁵ uniform
    draws in [0, 100], so there numpy's (the processor's sqrt instruction) instead."""
    if x.device.type == "cpu":
        return torch.from_numpy(np.sqrt(x.numpy()))
    return x.sqrt()


def exp_as_pass(x: torch.Tensor) -> torch.Tensor:
    """exp(x) for x ≤ 0, float64, computed as :func:`shared.gp.fused_step._exp_in_place` computes it (the same
    constants, operations and order; bitwise its result down to −707, torch's exp below)."""
    reduced = x.clamp(min=NORMAL_EXPONENT)
    shifted = reduced * LOG2E
    shifted += ROUNDING_SHIFT
    k = shifted - ROUNDING_SHIFT
    r = reduced - k * LN2_HI
    r -= k * LN2_LO
    p = r * EXP_TAYLOR[13]
    p += EXP_TAYLOR[12]
    for coefficient in EXP_TAYLOR[11::-1]:
        p *= r
        p += coefficient
    bits = p.view(torch.int64)
    bits += k.to(torch.int64) << 52  # 2^k · e^r: k added to the exponent field (|k| ≤ 1021: no overflow)
    return torch.where(x < NORMAL_EXPONENT, torch.exp(x), p)


class TorchCandidatePosterior(CandidatePosterior):
    """:class:`shared.gp.regression.CandidatePosterior` with the candidates, μ, σ² and V on ``device``.

    ``precision``: ``"float64"`` (bitwise the Numba engine) or ``"float32"`` (half the memory and traffic; the
    picks differ; warns). ``chunk``: candidates a tile (default 65,536 on the CPU, 4,194,304 on a GPU, where each
    operation is a kernel launch); a step's temporaries take about (t/2 + 30) · chunk numbers. ``reserve``
    allocates V for that many observations up front (then no step copies V to grow it; without it V grows by
    ``block_rows`` rows, each growth a copy). The host keeps the caller's candidates (refits read the observed
    rows) and L, w, the observed indices and values (t numbers each).
    """

    # The candidate-sized state lives on the device as tensors: every method of the base that reads it is
    # overridden here, so these narrow the base's host arrays only in type. Without torch installed (its types
    # unknown to mypy, so Any) the narrowing is no error and the ignore unused: `unused-ignore` allows both.
    _scaled: torch.Tensor  # type: ignore[assignment, unused-ignore]
    _mean: torch.Tensor  # type: ignore[assignment, unused-ignore]
    _variance: torch.Tensor  # type: ignore[assignment, unused-ignore]

    def __init__(
        self,
        candidates: ArrayLike,
        kernel: Kernel,
        noise_variance: float,
        prior_mean: float = 0.0,
        *,
        device: str = "cuda",
        precision: Literal["float64", "float32"] = "float64",
        jitter: float = 1e-10,
        block_rows: int | None = None,
        chunk: int | None = None,
        reserve: int = 0,
    ):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}")
        if precision == "float32":
            warnings.warn("precision='float32': σ² cancels from the prior variance to ~1e-5 near observations and "
                          "keeps few digits in float32, so the picks differ from the float64 engine's within a few "
                          "steps; use it only where float64 does not fit", stacklevel=2)
        self.device = torch.device(device)
        self.dtype = PRECISIONS[precision]
        super().__init__(candidates, kernel, noise_variance, prior_mean, jitter=jitter, block_rows=block_rows,
                         chunk=chunk or DEFAULT_CHUNK[self.device.type], reserve=reserve)

    def _allocate(self, scaled: NDArray, reserve: int) -> None:
        n, dtype, device = self.n_candidates, self.dtype, self.device
        # built on the host as the CPU engine builds it: same bits
        self._scaled = torch.as_tensor(scaled, dtype=dtype, device=device)
        self._variance = torch.as_tensor(self.prior_variance, dtype=dtype, device=device).clone()  # unclipped
        self._mean = torch.full((n,), self.prior_mean, dtype=dtype, device=device)
        # V's rows; zeroed: the memory is touched
        self._factor = torch.zeros((max(reserve, self.block_rows), n), dtype=dtype, device=device)

    def _tensor(self, values: ArrayLike) -> torch.Tensor:
        return torch.as_tensor(np.asarray(values, dtype=float), dtype=self.dtype, device=self.device)

    @property
    def mean(self) -> NDArray:
        return self._mean.cpu().double().numpy()

    @property
    def variance(self) -> NDArray:
        return np.maximum(self._variance.cpu().double().numpy(), 0.0)

    def mean_at(self, index: int) -> float:
        return float(self._mean[index])

    def variance_at(self, index: int) -> float:
        return max(float(self._variance[index]), 0.0)

    def upper_confidence_bound(self, beta: float) -> NDArray:
        return self._scores(0, self.n_candidates, math.sqrt(beta)).cpu().double().numpy()

    def _stored_column(self, index: int) -> NDArray:
        return self._factor[: self.n_observations, index].cpu().double().numpy()

    def _scores(self, a: int, b: int, sqrt_beta: float) -> torch.Tensor:
        """μ + √β √max(σ², 0) over [a, b) (the pass's ``_ucb``: the product, then the sum)."""
        scores = sqrt_rounded(self._variance[a:b].clamp(min=0.0))
        scores *= sqrt_beta
        scores += self._mean[a:b]
        return scores

    def _kernel_column(self, index: int, a: int, b: int, query: torch.Tensor, query_offset: float) -> torch.Tensor:
        """ρ over candidates [a, b) for the SE and Matérn-5/2 profiles, as the pass makes it."""
        exponent = ordered_sum(query_offset, self._scaled[:, a:b], query).clamp_(max=0.0)
        if a <= index < b:
            exponent[index - a] = 0.0  # d² = 0 exactly, whatever the expansion's rounding
        if self._profile == MATERN52:
            squared = exponent * -2.0
            root = sqrt_rounded(squared)
            factors = squared * (5.0 / 3.0)
            factors += 1.0
            factors += root * SQRT5
            exponent = root * -SQRT5
        column = exp_as_pass(exponent) if self.dtype == torch.float64 else torch.exp(exponent)
        coincident_exponent, coincident_value = self._coincident
        if coincident_exponent <= 0.0:
            column = torch.where(exponent >= coincident_exponent, coincident_value, column)
        if self._profile == MATERN52:
            column *= factors
        return column

    def _step(self, index: int, l_row: NDArray, pivot: float, w: float, next_beta: float | None,
              excluded: NDArray) -> int:
        t, n = self.n_observations, self.n_candidates
        if t == len(self._factor):  # grow V by block_rows rows (a copy: ``reserve`` avoids it)
            grown = torch.zeros((t + self.block_rows, n), dtype=self.dtype, device=self.device)
            grown[:t] = self._factor
            self._factor = grown
        if self._profile == GIVEN_COLUMN:
            given = self._tensor(np.asarray(self.kernel(self.candidates, self.candidates[index : index + 1])).ravel())
        else:
            query = torch.ones(len(self._scaled), dtype=self.dtype, device=self.device)
            query[:-1] = self._scaled[:-1, index]
            query_offset = float(self._scaled[-1, index])
        kernel_weight = float(self._kernel_scale / pivot)
        coefficients = self._tensor(-l_row / pivot)
        skipped = torch.as_tensor(excluded, dtype=torch.int64, device=self.device)
        sqrt_beta = None if next_beta is None else math.sqrt(next_beta)
        bests = []
        for a in range(0, n, self.chunk):
            b = min(a + self.chunk, n)
            column = (given[a:b] if self._profile == GIVEN_COLUMN
                      else self._kernel_column(index, a, b, query, query_offset))
            v = ordered_sum(column * kernel_weight, self._factor[:t, a:b], coefficients)
            self._factor[t, a:b] = v
            self._mean[a:b] += v * float(w)
            self._variance[a:b] -= v * v
            if sqrt_beta is not None:
                bests.append(self._tile_best(a, b, sqrt_beta, skipped))
        return self._first_best(bests) if bests else -1

    def _tile_best(self, a: int, b: int, sqrt_beta: float, excluded: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(best score, its index from a) over [a, b) outside ``excluded`` (sorted), ties to the lowest index;
        left on the device (no synchronisation per tile)."""
        scores = self._scores(a, b, sqrt_beta)
        inside = excluded[(excluded >= a) & (excluded < b)]
        scores[inside - a] = -math.inf
        best = torch.argmax(scores)  # the first of equal maxima
        return scores[best], best + a

    @staticmethod
    def _first_best(bests: list[tuple[torch.Tensor, torch.Tensor]]) -> int:
        """The index of the best tile's best (the first tile of equal maxima), −1 when every score is −∞."""
        scores = torch.stack([score for score, _ in bests])
        tile = int(torch.argmax(scores))
        return -1 if float(scores[tile]) == -math.inf else int(bests[tile][1])

    def best_upper_confidence_bound(self, beta: float, excluded: NDArray) -> int:
        sqrt_beta = float(np.sqrt(beta))
        skipped = torch.as_tensor(np.asarray(excluded, dtype=np.int64), device=self.device)
        return self._first_best([self._tile_best(a, min(a + self.chunk, self.n_candidates), sqrt_beta, skipped)
                                 for a in range(0, self.n_candidates, self.chunk)])
