"""The real-data benchmark's core, end to end on a small subsample through a real curator subprocess."""

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress

from modeler_client.client import ModelerClient
from shared.datasets.sg_property import load_sg_property

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_data.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("real_data_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_one_run_over_http_matches_the_in_process_loop(tmp_path, shared_data_file):
    shared_data_file("sg_ura_condo_projects.csv")
    bench = load_benchmark()
    full = load_sg_property()
    rows = np.random.default_rng(0).choice(full.n, size=150, replace=False)
    table = dataclasses.replace(full, features=full.features[rows], objective=full.objective[rows])
    plan = bench.Plan(figure_runs=1, table_runs=1, gaussian_runs=1, timing_runs=1, fit_rows=40, workers=1, iterations=9)
    setting = bench.Setting("po-gp-ucb", "figure", 1, log_epsilon=2.8, r=3)
    console = Console(quiet=True)
    with bench.benchmark_curator(tmp_path / "curator") as curator, Progress(console=console, disable=True) as progress:
        ctx = bench.prepare_dataset(bench.PROPERTY, table, curator, tmp_path, plan, console)
        result = bench.run_dataset(ctx, plan, progress, console, settings=[setting])
        # The service stores rows in a secret order: release index i is file row file_rows[i], and the
        # benchmark's values (regret) must be read through it.
        (release,) = result["settings"][0]["releases"]
        file_rows = ctx.file_rows[ctx.paper_dataset.id]
        assert sorted(file_rows) == list(range(150)) and not np.array_equal(file_rows, np.arange(150))
        key = curator.issue_key([release["id"]], max_queries=4, name="check")
        with ModelerClient(curator.url, key.token) as client:
            answers = client.query(client.open_session(release["id"]).id, [0, 1, 2, 149])
        assert [a.value for a in answers] == list(ctx.table.objective[file_rows[[0, 1, 2, 149]]])

    assert result["n"] == 150 and result["iterations"] == 9
    # po-gp-ucb runs on the preprocessing's own ML fit, held fixed; a certified release's modeler fits its own
    fixed, fitted = ctx.run_settings("po-gp-ucb"), ctx.run_settings("gaussian")
    assert (fixed.hyperparameters, fixed.lengthscale) == ("fixed", ctx.preprocessing.isotropic_lengthscale)
    assert (fixed.signal_variance, fixed.noise_variance) == (ctx.preprocessing.signal_variance,
                                                             ctx.preprocessing.noise_variance)
    assert fitted.hyperparameters == "fit" and fitted.lengthscale is None
    # both registrations name their scaling (the service requires it): identity for the paper's inputs
    assert (ctx.paper_dataset.scaling_kind, ctx.public_dataset.scaling_kind) == ("identity", "bounds")
    assert np.isclose(np.linalg.norm(ctx.paper_inputs, axis=1).max(), 25.0)
    (summary,) = result["settings"]
    assert summary["label"] == "po-gp-ucb ε=e^2.8 r=3" and summary["runs"] == 1
    regret = np.array(summary["mean"])
    assert regret.shape == (9,) and np.all(regret >= 0) and np.all(np.diff(regret) <= 0)  # best-so-far never worsens
    assert summary["releases"] == [release]
    assert release["dim"] == 3 and release["omega"] > 0
    assert release["lifted"] == (release["sigma_min"] < release["omega"])
    # The same release and seed give the same rows over HTTP and in-process; both were timed.
    assert release["same_rows"] is True
    assert release["http_seconds_per_iteration"] > 0 and release["in_process_seconds_per_iteration"] > 0
    guide = result["guideline"]
    assert guide["sigma_min"] > 0 and {row["log_epsilon"] for row in guide["per_epsilon"]} >= {2.6, 2.8, 3.0}
