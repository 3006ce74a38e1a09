"""Privacy oracles for DPareto: the (ε, δ) each hyperparameter setting of a DP learner guarantees.

* :func:`dpsgd_epsilon`: DP-SGD / DP-Adam (Avent et al., Algorithms 3 and 4) by the RDP accountant of
  dp-accounting with Wang, Balle & Kasiviswanathan's (2019) bound for the Gaussian mechanism on lots
  sampled *without replacement* (fixed size m out of n), replace-one neighbours. Two RDP→(ε, δ)
  conversions of the same RDP curve ρ(α):

  - ``"tight"`` (default): Canonne, Kamath & Steinke (2020, Prop. 12), dp-accounting's own,
    ε = min_α [ρ(α) + log((α − 1)/α) − (log δ + log α)/(α − 1)];
  - ``"classic"``: Mironov (2017, Prop. 3), ε = min_α [ρ(α) + log(1/δ)/(α − 1)], the conversion of the
    DPareto authors' accountant (``anaRDPacct.get_eps`` of autodp 0.1, the version their code names, in
    ``dpareto/utils/privacy_calculator.py``). autodp 0.1 amplifies by Wang et al.'s Theorem 27 bound
    (``improved_bound_flag=True`` in autodp ≥ 0.2, whose default became the looser Theorem 9), which gives
    the same ρ(α) at integer orders as ours, so "classic" reproduces the authors' numbers up to our order
    grid (exact where the best order is in RDP_ORDERS; 0.160 against 0.159 at (4, 128, 8), whose best
    order 144 lies between 128 and 192). It is never below "tight".

  Both are valid (ε, δ) guarantees of the same mechanism. classic/tight is 1.39 at the authors' two
  reference points, and 1.13–2.24 (median 1.36) over the 198 settings of the DPareto Adult benchmark with
  ε ≤ 10 (largest at the smallest ε); near 1 only for ε in the hundreds.
* :func:`svt_epsilon`: the closed form of the paper's Algorithm 1 (its Appendix B).
* :func:`gaussian_mechanism_epsilon`: the exact privacy profile of the Gaussian mechanism (Balle & Wang
  2018, Theorem 8) solved for ε, for output perturbation.
"""

from __future__ import annotations

import math
from functools import lru_cache

import dp_accounting
import numpy as np
from dp_accounting import rdp
from scipy.optimize import brentq

from shared.checks import open_unit, positive
from shared.dp.mechanisms import gaussian_delta

# Integer orders are where the without-replacement bound is exact (fractional orders interpolate it).
RDP_ORDERS = tuple(range(2, 65)) + (72, 80, 96, 128, 192, 256, 384, 512, 1024)


def _validate_dpsgd(n: int, batch_size: int, epochs: int, noise_multiplier: float, delta: float) -> None:
    if not (n >= 1 and 1 <= batch_size <= n and epochs >= 1):
        raise ValueError("need n ≥ 1, 1 ≤ batch_size ≤ n and epochs ≥ 1")
    open_unit(delta, "delta")
    if noise_multiplier < 0:
        raise ValueError("noise_multiplier must be ≥ 0")


@lru_cache(maxsize=256)  # composing is the cost (~1 s); both conversions of one setting share it
def _dpsgd_accountant(n: int, batch_size: int, epochs: int, noise_multiplier: float) -> rdp.RdpAccountant:
    steps = epochs * max(1, round(n / batch_size))
    step = dp_accounting.SampledWithoutReplacementDpEvent(
        source_dataset_size=n, sample_size=batch_size, event=dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    accountant = rdp.RdpAccountant(RDP_ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    return accountant.compose(dp_accounting.SelfComposedDpEvent(step, steps))


CONVERSIONS = ("tight", "classic")


def dpsgd_epsilon(n: int, batch_size: int, epochs: int, noise_multiplier: float, delta: float, *,
                  conversion: str = "tight") -> float:
    """ε of DP-SGD with fixed-size lots sampled without replacement, replace-one neighbours.

    ``noise_multiplier`` σ is relative to the replace-one sensitivity of the *sum* of clipped
    gradients (2L): the noise std on the sum is σ·2L, as in Algorithm 3. Steps = epochs · round(n / m).
    ``conversion`` picks the RDP→(ε, δ) conversion (module docstring): "tight" (ours) or "classic"
    (the DPareto authors'). Returns ``inf`` for σ = 0.
    """
    _validate_dpsgd(n, batch_size, epochs, noise_multiplier, delta)
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, not {conversion!r}")
    if noise_multiplier == 0:
        return math.inf
    accountant = _dpsgd_accountant(n, batch_size, epochs, noise_multiplier)
    if conversion == "tight":
        return float(accountant.get_epsilon(delta))
    orders = np.asarray(RDP_ORDERS, dtype=float)
    # The accountant's RDP curve at RDP_ORDERS; dp-accounting exposes no public getter for it.
    return float(np.min(accountant._rdp + math.log(1.0 / delta) / (orders - 1.0)))


def svt_epsilon(noise: float, bound: float) -> float:
    """ε of Algorithm 1 (pure DP): (1 + (2C)^(1/3)) (1 + (2C)^(2/3)) / b for noise b and answer bound C."""
    c = 2.0 * positive(bound, "the answer bound C")
    noise = positive(noise, "the noise b")
    return (1.0 + c ** (1.0 / 3.0)) * (1.0 + c ** (2.0 / 3.0)) / noise


def gaussian_mechanism_epsilon(noise_std: float, sensitivity: float, delta: float) -> float:
    """The smallest ε for which adding N(0, s²) to a query of ℓ2 sensitivity Δ is (ε, δ)-DP: the root of
    ``shared.dp.mechanisms.gaussian_delta`` (Balle & Wang 2018, Theorem 8) in ε.

    Returns 0 when even ε = 0 meets δ (very large noise).
    """
    positive(noise_std, "noise_std"), positive(sensitivity, "sensitivity"), open_unit(delta, "delta")
    if gaussian_delta(noise_std, 0.0, sensitivity) <= delta:
        return 0.0
    upper = 1.0
    while gaussian_delta(noise_std, upper, sensitivity) > delta:
        upper *= 2.0
    return float(brentq(lambda e: gaussian_delta(noise_std, e, sensitivity) - delta, 0.0, upper,
                        xtol=1e-12, rtol=1e-10))
