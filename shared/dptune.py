"""DESIGN §7 contract: Ding et al.'s selection at its documented path (it lives in :mod:`shared.algorithms.ding.dptune`)."""

from shared.algorithms.ding.dptune import constant_overhead_select

__all__ = ["constant_overhead_select"]
