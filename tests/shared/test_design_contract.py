"""docs/design.md §7: the names outside checks import must stay importable from their canonical paths."""

import importlib

import pytest

CONTRACT = {
    "shared.releases.po_gp_ucb": ["omega", "po_gp_ucb_release", "largest_r"],
    "shared.releases.gaussian": ["gaussian_release"],
    "shared.gp.ucb": ["GPUCB"],
    "shared.dp.mechanisms": ["analytic_gaussian_sigma", "exponential_mechanism_probabilities"],
    "shared.dp.accounting": ["dpsgd_epsilon"],
    "shared.algorithms.ding.dptune": ["constant_overhead_select"],
    "shared.algorithms.dpareto.pareto": ["pareto_front", "hypervolume_2d"],
}


@pytest.mark.parametrize("module,name", [(m, n) for m, names in CONTRACT.items() for n in names])
def test_design_name_imports_from_its_documented_path(module, name):
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.parametrize("module", ["shared.projection", "shared.ucb", "shared.mechanisms", "shared.accounting",
                                    "shared.dptune", "shared.pareto"])
def test_retired_top_level_aliases_are_gone(module):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)
