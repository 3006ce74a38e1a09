"""How well each model predicts a problem from a few answers: the correlation between the posterior mean and the
true values over every candidate, after a MAP fit on ``--answers`` uniformly random rows, for

* ``pobo``: the modeler's fit (:func:`shared.gp.regression.fit_hyperparameters` with BoTorch's priors and objective,
  the density of each parameter, whose maximum is the prior's mode; the constant prior mean fitted with the rest;
  one start at the priors' modes, ``modeler_client.surrogate.FIT_RESTARTS`` random ones);
* ``pobo, sample mean, 3 restarts``: the same objective with the prior mean held at the answers' mean and three
  random restarts;
* ``pobo, prior at its median``: that, with each prior as a density on the log-parameter, whose maximum is the
  median (e³ ≈ 20 × the mode for the lengthscale prior);
* ``BoTorch``: ``SingleTaskGP`` with its defaults and ``fit_gpytorch_mll`` (when the extra is installed).

It isolates the model from the acquisition: the same rows for every model, no loop.

    nice -n 5 .venv/bin/python benchmarks/gp_fit_accuracy.py [--seeds 10] [--answers 25] [--problems levy-6d ...]

Results in ``results/gp_fit_accuracy_<date>_<commit>.json`` (never overwritten).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: I001  (one BLAS thread, before numpy loads)
import numpy as np

import bo_quality
from modeler_client.surrogate import FIT_RESTARTS
from shared.gp.regression import CandidatePosterior, HyperparameterPrior, fit_hyperparameters


def pobo_correlation(X: np.ndarray, y: np.ndarray, rows: np.ndarray, prior: HyperparameterPrior, seed: int,
                     prior_mean: str = "fitted", n_restarts: int = FIT_RESTARTS) -> float:
    fit = fit_hyperparameters(X[rows], y[rows], ard=True, prior=prior, input_scale=np.ptp(X, axis=0),
                              n_restarts=n_restarts, rng=seed, prior_mean=prior_mean)
    posterior = CandidatePosterior(X, fit.kernel, fit.noise_variance, fit.prior_mean)
    for i in rows:
        posterior.observe(int(i), float(y[i]))
    return float(np.corrcoef(np.asarray(posterior.mean), y)[0, 1])


def botorch_correlation(X: np.ndarray, y: np.ndarray, rows: np.ndarray) -> float:
    from modeler_client.adapters.botorch_discrete import BoTorchProposer, torch

    proposer = BoTorchProposer(X)
    for i in rows:
        proposer.tell(int(i), float(y[i]))
    model = proposer._model()
    with torch.no_grad():
        mean = model.posterior(proposer.Z).mean.squeeze(-1).numpy()
    return float(np.corrcoef(mean, y)[0, 1])


def markdown(payload: dict) -> str:
    """The correlation table as docs/modeler_quality.md shows it (``make report``)."""
    results = payload["results"]
    models = list(dict.fromkeys(m for cells in results.values() for m in cells))
    out = [f"{payload['seeds']} seeds, {payload['answers']} random answers each: the correlation of "
           "each model's posterior mean with the true values over every candidate, mean ± s.e. (1: perfect).", "",
           "| problem | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    for name, cells in results.items():
        out.append(f"| {name} | " + " | ".join(f"{cells[m]['mean_se'][0]:.3f} ± {cells[m]['mean_se'][1]:.3f}"
                                                if m in cells else "—" for m in models) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--answers", type=int, default=25)
    parser.add_argument("--problems", nargs="+", default=["levy-6d", "ackley-5d", "styblinski-tang-8d",
                                                          "rosenbrock-4d", "diabetes", "loans"],
                        choices=bo_quality.SUITE)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=harness.REPOSITORY).stdout.strip()
    have_botorch = bo_quality.botorch_missing() is None
    results = {}
    for name in args.problems:
        problem = bo_quality.loader(name)(0)
        X, y = problem.X, problem.y
        prior = HyperparameterPrior.dim_scaled(X.shape[1])
        cells: dict[str, list[float]] = {"pobo": [], "pobo, sample mean, 3 restarts": [],
                                         "pobo, prior at its median": [], "BoTorch": []}
        for seed in range(args.seeds):
            rows = np.random.default_rng([seed, 5]).choice(len(y), args.answers, replace=False)
            cells["pobo"].append(pobo_correlation(X, y, rows, prior, seed))
            cells["pobo, sample mean, 3 restarts"].append(pobo_correlation(X, y, rows, prior, seed, "sample_mean", 3))
            cells["pobo, prior at its median"].append(pobo_correlation(X, y, rows, prior.peaking_at_medians(), seed,
                                                                       "sample_mean", 3))
            if have_botorch:
                cells["BoTorch"].append(botorch_correlation(X, y, rows))
        results[name] = {model: dict(mean_se=bo_quality.mean_se(v), per_seed=v) for model, v in cells.items() if v}
        print(name + ": " + "; ".join(f"{m} {c['mean_se'][0]:.3f} ± {c['mean_se'][1]:.3f}"
                                      for m, c in results[name].items()), flush=True)
    payload = dict(results=results, seeds=args.seeds, answers=args.answers, commit=commit)
    path = harness.write_json(harness.dated_name("gp_fit_accuracy"), payload)
    print(markdown(payload), path)


if __name__ == "__main__":
    main()
