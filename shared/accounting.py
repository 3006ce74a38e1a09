"""DESIGN §7 contract: DP-SGD accounting at its documented path (it lives in :mod:`shared.dp.accounting`)."""

from shared.dp.accounting import dpsgd_epsilon

__all__ = ["dpsgd_epsilon"]
