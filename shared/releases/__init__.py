"""Releases of the inputs: the published PO-GP-UCB transform (uncertified) and the certified Gaussian release."""

from shared.releases.gaussian import GaussianRelease, PcaOption, gaussian_release, gdp_mu
from shared.releases.po_gp_ucb import PoGpUcbRelease, largest_r, omega, po_gp_ucb_release

__all__ = [
    "GaussianRelease",
    "PcaOption",
    "PoGpUcbRelease",
    "gaussian_release",
    "gdp_mu",
    "largest_r",
    "omega",
    "po_gp_ucb_release",
]
