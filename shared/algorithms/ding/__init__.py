"""Ding et al. (2022), differentially private hyperparameter tuning with constant overhead."""
