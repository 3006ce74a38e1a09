"""The modeler's job commands' options: no seed anywhere a modeler key would send one, dp-tune's
held-out evaluation settings, and a bad candidates file refused with a sentence before anything is sent.
Their output against a real curator is checked in tests/e2e/test_dp_{bo,tune}_job.py."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from tests.modeler_client.test_cli_and_plot import flat

runner = CliRunner()
# Nothing listens on port 9 (discard): a command that got as far as connecting would fail differently.
OFFLINE = ["--url", "http://127.0.0.1:9", "--token", "t", "--dataset", "1", "--label-column", "y"]


@pytest.mark.parametrize("command", ["dp-bo", "dp-tune"])
def test_modeler_job_commands_have_no_seed_option(command):
    """Whoever knows a seed can replay the noise; the server refuses one from a modeler key in any mode
    (tests/privacy), and the client does not offer it."""
    help_text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    assert "--label-column" in help_text and "--seed" not in help_text
    refused = runner.invoke(app, [command, *OFFLINE, "--seed", "1"])
    assert refused.exit_code == 2 and "No such option" in refused.output


def test_dp_tune_offers_the_held_out_evaluation_settings():
    help_text = flat(runner.invoke(app, ["dp-tune", "--help"], env={"COLUMNS": "200"}).output)
    # "\S+": the metavar (FLOAT or <float>) depends on typer's version.
    assert re.search(r"--evaluation-epsilon \S+ ε of the held-out accuracy and baseline\. \[default: 0\.1\]", help_text)
    assert re.search(r"--test-fraction \S+ Share of rows held out .* \[default: 0\.2\]", help_text)


def test_a_bad_candidates_file_is_refused_with_a_sentence(tmp_path):
    for content, expected in (("{not json", "Expecting property name"),
                              ('{"learning_rate": 1}', "non-empty JSON list")):
        path = tmp_path / "candidates.json"
        path.write_text(content)
        result = runner.invoke(app, ["dp-tune", *OFFLINE, "--candidates", str(path)])
        assert result.exit_code == 2 and expected in flat(result.output) and "Traceback" not in result.output
