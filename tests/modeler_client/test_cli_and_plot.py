"""``pobo-modeler`` against a real curator, and the PNG plots."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.plot import figure_runs, plot_runs, random_search_band
from modeler_client.runfile import RunRecord

runner = CliRunner()


def flat(output: str) -> str:
    """Terminal output without Rich's box characters and line wrapping."""
    return " ".join(re.sub(r"[│┃╭╮╰╯─┏┓┗┛━┌┐└┘┬┴┼├┤]", " ", output).split())


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_run_resume_plot_and_info(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    release = str(bowl["release"].id)
    result = runner.invoke(app, ["run", "--release", release, "-T", "4", "--out", str(out), "--optimum", "5"], env=env)
    assert result.exit_code == 0, result.output
    assert "done" in result.output and bowl["token"] not in out.read_text()  # the key never lands in the file
    assert "posterior on CPU (Numba, 1 thread)" in flat(result.output)
    assert len(RunRecord.load(out).done()) == 4

    result = runner.invoke(app, ["resume", str(out), "--iterations", "6"], env=env)
    assert result.exit_code == 0, result.output
    assert len(RunRecord.load(out).done()) == 6

    result = runner.invoke(app, ["plot", str(out), "--out", str(tmp_path / "run.png")])
    assert result.exit_code == 0, result.output
    assert png_size(tmp_path / "run.png")[0] > 1000  # two panels: best so far and simple regret

    result = runner.invoke(app, ["info", "--release", release], env=env)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "is NOT differentially private" in text and "NO: not certified differentially private" in text
    assert "seeded yes: reproducible noise, NOT certified" in text  # the fixture's release is seeded
    assert "WARNING" in text and "po-gp-ucb" in text
    used = 500 - 6  # the fixture's key may make 500 queries; this module's runs may have spent more
    left = int(text.split("queries left ")[1].split(" of 500")[0])
    assert left <= used and "epsilon spent / cap 0 / no cap of its own" in text
    assert "job kinds it may run none" in text  # a modeler key runs no job unless the curator allows it


def test_run_with_logei_records_it_and_picks_by_it(bowl, curator, tmp_path):
    """``--acquisition logei`` lands in the run file's settings, and each pick after the first is the largest log
    expected improvement of the surrogate rebuilt from the answers before it."""
    from modeler_client.client import ModelerClient
    from modeler_client.surrogate import Surrogate, release_options
    from shared.gp.ucb import log_expected_improvement

    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    result = runner.invoke(app, ["run", "--release", str(bowl["release"].id), "-T", "5", "--acquisition", "logei",
                                 "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    record = RunRecord.load(out)
    assert record.settings.acquisition == "logei" and len(record.done()) == 5
    queries = sorted(record.done(), key=lambda q: q.iteration)
    Z = ModelerClient(curator.url, bowl["token"]).inputs(bowl["release"].id)
    surrogate = Surrogate(Z, record.release, record.settings, **release_options(record.release, record.settings))
    for k in range(2, 5):
        surrogate.update([q.index for q in queries[:k]], np.array([q.value for q in queries[:k]]))
        post = surrogate.ucb.posterior
        scores = log_expected_improvement(post.mean, post.std, post.observed_values.max())
        scores[surrogate.ucb.never_suggested(post)] = -np.inf
        assert queries[k].index == int(np.argmax(scores))


def test_device_says_where_the_posterior_runs(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    command = ["run", "--release", str(bowl["release"].id), "-T", "3", "--batch", "2", "--out",
               str(tmp_path / "run.json")]
    refused = runner.invoke(app, [*command, "--device", "gpu0"], env=env)
    assert refused.exit_code == 2 and not (tmp_path / "run.json").exists()  # refused before a session opens
    assert "Invalid value for --device" in flat(refused.output)
    pytest.importorskip("torch", reason="the torch engine needs torch (pip install 'pobo[gpu]'); CI installs it")
    result = runner.invoke(app, [*command, "--device", "cpu"], env=env)
    assert result.exit_code == 0, result.output
    assert "posterior on cpu (torch" in flat(result.output) and len(RunRecord.load(tmp_path / "run.json").done()) == 3


def test_api_errors_end_with_the_servers_sentence_and_exit_code_1(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": "not-a-key"}
    result = runner.invoke(app, ["run", "--release", "1", "-T", "2", "--out", str(tmp_path / "r.json")], env=env)
    assert result.exit_code == 1
    assert "unauthorized" in result.output and "Traceback" not in result.output


def test_plot_without_a_known_optimum_has_one_panel(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    command = ["run", "--release", str(bowl["release"].id), "-T", "3", "--out", str(out)]
    assert runner.invoke(app, command, env=env).exit_code == 0
    one = plot_runs([RunRecord.load(out)], tmp_path / "one.png")
    width, _ = png_size(one)
    assert width < 1000


def test_random_search_band_is_the_exact_distribution_of_the_best_of_k_rows():
    from shared.algorithms.planner import random_search_regret

    values = np.random.default_rng(4).normal(size=60)
    mean, low, high = random_search_band(values, 10)
    for k in (1, 3, 10):
        assert mean[k - 1] == pytest.approx(values.max() - random_search_regret(values, k), abs=1e-9)
    draws = np.array([np.random.default_rng(s).choice(values, 5, replace=False).max() for s in range(4000)])
    assert low[4] == pytest.approx(np.quantile(draws, 0.1), abs=0.05)  # a Monte Carlo check of the quantiles
    assert high[4] == pytest.approx(np.quantile(draws, 0.9), abs=0.05)
    low_min = random_search_band(values, 5, goal="minimize")[0]
    assert low_min[0] == pytest.approx(values.mean()) and low_min[4] < low_min[0]  # best = smallest


def test_figure_shows_every_measurement_the_best_so_far_the_band_and_names_dataset_and_release(bowl, curator, tmp_path):
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    result = runner.invoke(app, ["run", "--release", str(bowl["release"].id), "-T", "6", "--out", str(out),
                                 "--optimum", str(bowl["y"].max())], env=env)
    assert result.exit_code == 0, result.output
    record = RunRecord.load(out)
    figure = figure_runs([record], random_values=bowl["y"])
    best_ax, regret_ax = figure.axes
    dots = best_ax.collections[0].get_offsets()
    np.testing.assert_array_equal(dots[:, 1], [q.value for q in record.done()])  # every measurement
    np.testing.assert_array_equal(best_ax.lines[0].get_ydata(), record.best_so_far())
    assert any("random search" in t.get_text() for t in best_ax.get_legend().get_texts())
    assert f"dataset {bowl['dataset'].id}" in figure.get_suptitle()
    assert f"release {bowl['release'].id}" in figure.get_suptitle()
    assert len(regret_ax.lines) >= 2  # the run's regret and the random-search mean


def test_run_to_dataframe_has_one_row_per_query_with_best_so_far_and_regret(bowl, curator, tmp_path):
    pytest.importorskip("pandas")
    env = {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"]}
    out = tmp_path / "run.json"
    args = ["run", "--release", str(bowl["release"].id), "-T", "6", "--batch", "3", "--out", str(out), "--optimum", "5"]
    assert runner.invoke(app, args, env=env).exit_code == 0
    record = RunRecord.load(out)
    frame = record.to_dataframe()
    assert len(frame) == 6 and frame["request"].tolist() == [1, 1, 1, 2, 2, 2]
    assert frame["index"].tolist() == [q.index for q in record.queries]
    np.testing.assert_allclose(frame["best_so_far"], record.best_so_far())
    np.testing.assert_allclose(frame["simple_regret"], record.simple_regret())
