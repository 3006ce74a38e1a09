"""Differential-privacy building blocks: noise sources, calibration and mechanisms, accounting, the sparse
vector technique, and the reconstruction attack that audits a release. Imports nothing else in ``shared``."""
