"""DESIGN §7 contract: the release functions at their documented path (they live in :mod:`shared.releases`)."""

from shared.releases.gaussian import gaussian_release
from shared.releases.po_gp_ucb import largest_r, omega, po_gp_ucb_release

__all__ = ["gaussian_release", "largest_r", "omega", "po_gp_ucb_release"]
