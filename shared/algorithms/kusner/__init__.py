"""Kusner et al. (2015), differentially private Bayesian optimization, and its validation tasks."""
