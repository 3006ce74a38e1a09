"""DESIGN §7: the names outside checks import must stay importable from their documented paths."""

import importlib

import pytest

CONTRACT = {
    "shared.projection": ["omega", "po_gp_ucb_release", "largest_r", "gaussian_release"],
    "shared.ucb": ["GPUCB"],
    "shared.mechanisms": ["analytic_gaussian_sigma", "exponential_mechanism_probabilities"],
    "shared.accounting": ["dpsgd_epsilon"],
    "shared.dptune": ["constant_overhead_select"],
    "shared.pareto": ["pareto_front", "hypervolume_2d"],
}


@pytest.mark.parametrize("module,name", [(m, n) for m, names in CONTRACT.items() for n in names])
def test_design_name_imports_from_its_documented_path(module, name):
    assert callable(getattr(importlib.import_module(module), name))
