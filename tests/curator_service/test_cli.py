"""``pobo-curator`` admin commands against a live server, including the manual-answer flow."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

from curator_service.cli import app
from curator_service.cli.releases import DEFAULT_RELEASE_DELTA
from shared.algorithms.planner import ReleaseSetting, epsilon_for_ratio
from tests.conftest import aligned_table
from tests.curator_service.conftest import ADMIN, bearer, flat

runner = CliRunner()


def test_admin_commands_drive_a_manual_session(curator_cli):
    run, url = curator_cli, curator_cli.url
    out = run("dataset", "add", str(curator_cli.csv), "--name", "lab", "--features", "a,b,c", "--evaluator", "manual",
              "--epsilon", "2", "--delta", "1e-4", "--lower", "0,0,0", "--upper", "1,1,1")
    assert "lab" in out and "registered" in out
    assert "0 / 2" in run("dataset", "list")
    seeded = flat(run("release", "create", "--dataset", "1", "--epsilon", "0.5", "--dim", "2", "--seed", "3"))
    assert "gaussian" in seeded and "NO" in seeded and "warning (release 1)" in seeded and "made with a seed" in seeded
    run("release", "create", "--dataset", "1", "--epsilon", "0.5", "--dim", "2")
    header = ["id", "dataset_id", "mechanism", "certified", "seeded", "epsilon", "delta", "n", "dim", "projection",
              "noise_std", "σ_y"]
    rows = {row[0]: dict(zip(header, row)) for row in aligned_table(run("release", "list"), header)}
    assert (rows["1"]["certified"], rows["1"]["seeded"]) == ("NO", "yes")
    assert (rows["2"]["certified"], rows["2"]["seeded"]) == ("yes", "no")
    out = run("key", "create", "--name", "acme", "--release", "1", "--max-queries", "5")
    token = out.split("stored):")[1].split()[0]
    with httpx.Client(base_url=url, headers=bearer(token)) as modeler:
        session = modeler.post("/v1/releases/1/sessions").json()
        pending = modeler.post(f"/v1/sessions/{session['id']}/queries", json={"indices": [4]}).json()["results"][0]
        assert pending["status"] == "pending"
        out = run("queries", "pending")
        assert "pending queries" in out and str(pending["query_id"]) in out
        run("queries", "answer", str(pending["query_id"]), "3.5")
        assert modeler.get(f"/v1/sessions/{session['id']}/queries").json()["queries"][0]["value"] == 3.5
    assert "release of inputs (gaussian, jl)" in run("ledger")
    assert "reconstruction audit" in run("audit", "reconstruction", "--release", "1", "--known", "5", "--seed", "0")


def test_errors_are_printed_as_the_server_sentence(live_server):
    url = live_server()
    result = runner.invoke(app, ["release", "create", "--dataset", "9", "--epsilon", "1", "--url", url,
                                 "--token", ADMIN])
    assert result.exit_code == 1 and "not_found" in result.output and "dataset with id 9" in result.output
    result = runner.invoke(app, ["dataset", "list", "--url", url, "--token", "wrong"])
    assert result.exit_code == 1 and "unauthorized" in result.output


def test_release_options_and_every_public_parameter_on_the_command_line(curator_cli):
    run = curator_cli
    run("dataset", "add", str(curator_cli.csv), "--name", "t", "--features", "a,b,c", "--evaluator", "column:y",
        "--epsilon", "8", "--lower", "0,0,0", "--upper", "1,1,1")
    out = flat(run("release", "create", "--dataset", "1", "--epsilon", "2", "--measurements-clip", "-2,2",
                   "--measurements-share", "0.5"))
    assert "identity" in out and "projection identity, r = 3" in out and "input share 0.5" in out
    assert "private measurements: clip [-2, 2], share 0.5, noise σ_y =" in out
    sigma = float(out.split("input noise σ = ")[1].split()[0].rstrip(",;"))
    stated = float(out.split("release 1: noise / spread ")[1].split()[0])
    assert stated == float(f"{sigma / (1 / 3**0.5 / 12**0.5):.2g}")  # rows uniform in the unit-diameter box
    assert "(input noise σ over the spread of rows uniform in the public box)" in out
    out = flat(run("release", "create", "--dataset", "1", "--epsilon", "1", "--dim", "2", "--projection", "pca",
                   "--pca-share", "0.2", "--pca-clip-norm", "1"))
    assert "projection pca, r = 2" in out and "DP-PCA: share 0.2, clip norm 1, Gram noise σ =" in out
    listed = flat(run("release", "list"))
    assert "release 1: projection identity" in listed and "release 2: projection pca" in listed
    assert "release of inputs and measurements (gaussian, identity)" in flat(run("ledger"))
    assert "release of inputs (gaussian, pca)" in flat(run("ledger"))
    refused = flat(run("release", "create", "--dataset", "1", "--epsilon", "1", "--projection", "pca", exit_code=2))
    assert "--projection pca with both --pca-share and --pca-clip-norm" in refused


def test_plan_prints_the_noise_the_bound_and_the_simulated_regret_and_charges_nothing(curator_cli):
    run = curator_cli
    run("dataset", "add", str(curator_cli.csv), "--name", "t", "--features", "a,b,c", "--evaluator", "column:y",
        "--epsilon", "8", "--lower", "0,0,0", "--upper", "1,1,1")
    out = flat(run("plan", "--dataset", "1", "--epsilon", "0.5,1,2,4", "--simulate", "1", "--queries", "10"))
    assert "plan for dataset 1 (n = 20, d = 3" in out and "identity" in out
    assert "noise / spread" in out and "risk: ≤ × random search per query (lower is safer)" in out
    assert "utility: simulated regret ± s.e. (lower is better)" in out and "⚠ mostly noise" in out
    needed = epsilon_for_ratio(ReleaseSetting(n=20, d=3, width=1 / 3**0.5, delta=DEFAULT_RELEASE_DELTA))
    assert f"ε needed for noise / spread ≈ 1: {needed:.3g} (below it the released inputs are mostly noise)" in out
    assert "% of a range)" in out and "in standard deviations of the measured values" in out
    assert "half the gap is forecast at" in out and "nothing was charged and no row was read" in out
    assert ("the bound: ≤ N× random search per query, for a modeler whose pick rate on an ordinary record is at most "
            "1/n (n = 20); covers choices made from the released inputs (and measurements only with the "
            "private-measurement option, which this plan does not use)") in out
    assert "0 / 8" in run("dataset", "list")
    too_big = flat(run("plan", "--dataset", "1", "--epsilon", "1,2", "--simulate", "20", "--queries", "10",
                       exit_code=1))
    assert "validation_error" in too_big and "ask for fewer runs" in too_big
