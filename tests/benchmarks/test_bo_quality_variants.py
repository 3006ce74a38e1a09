"""benchmarks/bo_quality_variants.py: its "default" is the product's surrogate, and each variant changes the one
choice it names. Run in a subprocess: a variant swaps module attributes for the whole process."""

import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]

CHECK = """
import math, sys
sys.path.insert(0, "benchmarks")
import numpy as np
import shared.gp.regression as regression
import shared.gp.ucb as ucb
import modeler_client.surrogate as surrogate

product_prior = regression.HyperparameterPrior.dim_scaled(3)
product_beta = ucb.gp_ucb_beta(7, 500, 0.025)
product_full_fit = [surrogate.full_fit_due(t) for t in range(1, 60)]
import bo_quality_variants as v

v.VARIANTS["centre +3, noise −2"].apply()
prior = regression.HyperparameterPrior.dim_scaled(3)
assert prior.lengthscale.loc == product_prior.lengthscale.loc + 3.0
assert prior.lengthscale.scale == product_prior.lengthscale.scale
assert prior.noise_variance.loc == -2.0 and prior.noise_variance.scale == product_prior.noise_variance.scale
assert ucb.gp_ucb_beta(7, 500, 0.025) == product_beta

v.VARIANTS["paper UCB, β_t × 0.2"].apply()
assert math.isclose(ucb.GPUCB(np.zeros((4, 2)), lengthscale=1.0, signal_variance=1.0, noise_variance=1e-6,
                              delta=0.025).beta(7), 0.2 * v.BETA(7, 4, 0.025))
assert math.isclose(ucb.gp_ucb_beta(7, 500, 0.025), 0.2 * product_beta)

v.VARIANTS["ARD up to d = 8"].apply()
ten_d = ucb.GPUCB(np.random.default_rng(0).uniform(size=(20, 10)), lengthscale=1.0, signal_variance=1.0,
                  noise_variance=1e-6, delta=0.025)
three_d = ucb.GPUCB(np.random.default_rng(0).uniform(size=(20, 3)), lengthscale=1.0, signal_variance=1.0,
                    noise_variance=1e-6, delta=0.025)
assert not ten_d.ard and three_d.ard

v.VARIANTS["multi-start at t ≤ 5 and every 10th"].apply()
assert [surrogate.full_fit_due(t) for t in (5, 6, 10, 15, 20)] == [True, False, True, False, True]

v.VARIANTS["default"].apply()
assert regression.HyperparameterPrior.dim_scaled(3) == product_prior
assert ucb.gp_ucb_beta(7, 500, 0.025) == product_beta
assert ucb.GPUCB(np.zeros((4, 10)), lengthscale=1.0, signal_variance=1.0, noise_variance=1e-6, delta=0.025).ard
assert [surrogate.full_fit_due(t) for t in range(1, 60)] == product_full_fit
print("ok")
"""


def test_each_variant_changes_its_own_choice_and_the_default_is_the_products():
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=REPOSITORY, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")
