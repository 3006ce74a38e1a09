"""Differentially private learners whose privacy–utility trade-offs DPareto maps.

* :class:`DPSGDClassifier` (with :func:`DPLogisticRegression`, :func:`DPLinearSVM`): DP-SGD / DP-Adam.
"""

from shared.learners.dpsgd import DPLinearSVM, DPLogisticRegression, DPSGDClassifier

__all__ = ["DPSGDClassifier", "DPLinearSVM", "DPLogisticRegression"]
