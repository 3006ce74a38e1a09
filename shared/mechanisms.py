"""DESIGN §7 contract: the mechanisms' calibration at its documented path (it lives in :mod:`shared.dp.mechanisms`)."""

from shared.dp.mechanisms import analytic_gaussian_sigma, exponential_mechanism_probabilities

__all__ = ["analytic_gaussian_sigma", "exponential_mechanism_probabilities"]
