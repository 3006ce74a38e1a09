"""Gaussian-process maths: kernels, the exact posterior and hyperparameter fitting, GP-UCB (and GP-BUCB),
the expected kernel for noisy inputs. Imports nothing else in ``shared``."""
