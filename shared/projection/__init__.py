"""Releases of the inputs: the published PO-GP-UCB transform (uncertified) and the certified Gaussian release."""

from shared.projection.po_gp_ucb import PoGpUcbRelease, largest_r, omega, po_gp_ucb_release
from shared.projection.gaussian import GaussianRelease, gaussian_release  # noqa: F401  (privacy engineer)

__all__ = ["PoGpUcbRelease", "largest_r", "omega", "po_gp_ucb_release"]
