"""DESIGN §7 contract: GP-UCB at its documented path (it lives in :mod:`shared.gp.ucb`)."""

from shared.gp.ucb import GPUCB

__all__ = ["GPUCB"]
