"""Parameter importance says how sure it is, and warns when the release is mostly noise; ``info`` states the
release's noise-to-spread ratio and what it means."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.client import ModelerClient
from modeler_client.importance import ImportanceWarning, parameter_importance
from modeler_client.remote import RemoteSession
from modeler_client.runfile import RunSettings

runner = CliRunner()
FEATURES = ["dose", "age", "weight"]
BOX = {"kind": "bounds", "lower": [0, 0, 0], "upper": [1, 1, 1], "diameter": 1}


def flat(output: str) -> str:
    return " ".join(re.sub(r"[│┃╭╮╰╯─┏┓┗┛━┌┐└┘┬┴┼├┤]", " ", output).split())


def measured_run(curator, name: str, epsilon: float, answers: int, tmp_path, *, scaling=BOX):
    """A release of 300 rows whose value depends on the dose only, and a run file holding ``answers`` answers at
    rows spread over the table (not GP-UCB's: the test is of the importance, not of the optimiser)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(300, 3))
    dataset = curator.register_table(name, X, FEATURES, evaluator={"kind": "column", "column": "y"},
                                     budget=(2000.0, 1e-3), extra_columns={"y": np.sin(5 * X[:, 0])},
                                     scaling=scaling)
    release = curator.create_release(dataset.id, "gaussian", epsilon, 1e-5, dim=3, seed=7)  # research: one draw
    token = curator.issue_key([release.id], max_queries=answers).token
    client = ModelerClient(curator.url, token)
    path = tmp_path / f"{name}.json"
    session = RemoteSession.start(client, release.id, path, RunSettings(iterations=answers))
    session.evaluate(rng.choice(300, answers, replace=False).tolist())
    return client, release, session.record, path, {"POBO_URL": curator.url, "POBO_TOKEN": token}


def test_importance_on_a_release_that_is_mostly_noise_warns_on_the_cli_and_in_python(curator, tmp_path):
    client, release, record, path, env = measured_run(curator, "noisy-importance", 1.0, 40, tmp_path)
    result = runner.invoke(app, ["plot", str(path), "--importance"], env=env)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "warning: This release's noise / spread is" in text and "the inputs are mostly noise" in text
    ratio = float(text.split("noise / spread is ")[1].split()[0])
    assert ratio > 1
    with pytest.warns(ImportanceWarning, match="mostly noise"):
        found = parameter_importance(client.inputs(release.id), record)
    assert f"{found.noise_to_spread.value:.2g}" == f"{ratio:.2g}"

    shown = flat(runner.invoke(app, ["info", "--release", str(release.id)], env=env).output)
    assert f"noise / spread {ratio:.2g} (input noise σ over the spread of rows uniform in the public box)" in shown
    assert "Above 1: the input noise is larger than the rows' own spread" in shown


def test_importance_on_a_low_noise_release_ranks_the_true_feature_first_apart_from_the_others(curator, tmp_path):
    client, release, record, path, env = measured_run(curator, "clear-importance", 2000.0, 80, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportanceWarning)  # nothing to warn about
        found = parameter_importance(client.inputs(release.id), record)
    assert found.warnings == [] and found.noise_to_spread.value < 0.3
    first = found.order()[0]
    assert found.names[first] == "dose" and found.first_share[first] == 1.0
    assert all(found.low[first] > found.high[j] for j in range(3) if j != first), (found.low, found.high)
    result = runner.invoke(app, ["plot", str(path), "--importance"], env=env)
    assert result.exit_code == 0 and "warning" not in result.output, result.output
    ranked = [line.split() for line in result.output.splitlines() if line.split()[:1] in [[f] for f in FEATURES]]
    assert ranked[0][:2] == ["dose", "1.00"] and "first in 100% of half-samples" in " ".join(ranked[0])


def test_few_answers_warn_and_a_release_without_a_box_reads_the_ratio_off_its_rows(curator, tmp_path):
    affine = {"kind": "affine", "offset": [0, 0, 0], "scale": [0.1, 0.1, 0.1]}
    client, release, record, path, env = measured_run(curator, "few-importance", 2000.0, 12, tmp_path,
                                                      scaling=affine)
    with pytest.warns(ImportanceWarning, match="Only 12 answers for 3 coordinates"):
        parameter_importance(client.inputs(release.id), record)
    shown = flat(runner.invoke(app, ["info", "--release", str(release.id)], env=env).output)
    assert "(input noise σ over the rows' spread read off the released inputs)" in shown
