"""DESIGN §7 contract: Pareto maths at its documented path (it lives in :mod:`shared.algorithms.dpareto.pareto`)."""

from shared.algorithms.dpareto.pareto import hypervolume_2d, pareto_front

__all__ = ["hypervolume_2d", "pareto_front"]
