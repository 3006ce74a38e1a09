"""Releases of the inputs: the published PO-GP-UCB transform (uncertified) and the certified Gaussian release."""

from shared.projection.gaussian import GaussianRelease, gaussian_release
from shared.projection.po_gp_ucb import PoGpUcbRelease, largest_r, omega, po_gp_ucb_release

__all__ = ["GaussianRelease", "PoGpUcbRelease", "gaussian_release", "largest_r", "omega", "po_gp_ucb_release"]
