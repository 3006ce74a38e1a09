"""The job kinds' parameters are one wire contract (shared.api.jobs): the curator's kinds validate with it and
the modeler's commands build it, so a value the curator would refuse is refused before anything is sent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from curator_service.services.job_kinds import dp_bo, dp_mean, dp_tune, dpareto
from modeler_client.cli import app
from shared.algorithms.dpareto.problems import DPSGD_SPACE, learning_rates_for
from shared.api import jobs
from shared.api.governance import KeyPolicy
from shared.api.jobs import DpBoParams, DpMeanParams

runner = CliRunner()
# Nothing listens on port 9 (discard): a command that got as far as sending would fail with exit 1, not 2.
OFFLINE = ["--url", "http://127.0.0.1:9", "--token", "t", "--dataset", "1", "--label-column", "y"]


def test_the_curator_kinds_validate_with_the_wire_models():
    assert (dp_mean.KIND.params, dp_bo.KIND.params, dp_tune.KIND.params, dpareto.KIND.params) == (
        jobs.DpMeanParams, jobs.DpBoParams, jobs.DpTuneParams, jobs.DparetoParams)


@pytest.mark.parametrize("name", ["batch_size", "learning_rate", "noise_variance", "clip_norm"])
def test_a_dpareto_range_of_one_value_is_refused_by_the_model(name):
    """A one-value range would be a division by zero in the search; the check is in the model now, so the
    modeler sees it too (it was in the kind's cost only)."""
    low = (jobs.DparetoParams.model_fields[name].default or (0.01, 1.0))[0]  # learning_rate's default is None
    with pytest.raises(ValidationError, match=f"{name} must be a range"):
        jobs.DparetoParams(label_column="y", **{name: (low, low)})
    with pytest.raises(ValueError, match=f"{name} must be a range"):
        dpareto.KIND.parse({"label_column": "y", name: [low, low]})


@pytest.mark.parametrize(("command", "option", "value"), [
    ("dp-bo", "--validation-fraction", "1.5"),
    ("dp-tune", "--final-delta", "2"),
    ("dpareto", "--initial-points", "1"),
])
def test_a_value_the_curator_would_refuse_exits_2_naming_the_option(command, option, value):
    result = runner.invoke(app, [command, *OFFLINE, option, value])
    assert result.exit_code == 2, result.output
    assert option in result.output


def test_the_dpareto_job_defaults_are_the_papers_table_1_domain():
    """The wire cannot import the maths, so the defaults stand twice: they must agree. The learning rates default to
    Table 1's scaled to the table's size, which on Adult's 32,561 training rows are Table 1's."""
    defaults = jobs.DparetoParams(label_column="y")
    assert defaults.learning_rate is None
    wire = {"epochs": (1, defaults.max_epochs), "lot_size": defaults.batch_size,
            "learning_rate": learning_rates_for(32_561), "noise_variance": defaults.noise_variance,
            "clip_norm": defaults.clip_norm}
    assert {h.name: (h.low, h.high) for h in DPSGD_SPACE} == wire


@pytest.mark.parametrize("model, params", [
    (DpMeanParams, {"column": "y", "lower": 0, "upper": 1, "epsilon": 0.5, "seed": True}),
    (DpMeanParams, {"column": "y", "lower": 0, "upper": 1, "epsilon": "0.5"}),
    (DpBoParams, {"log10_lambda": [-3, 0], "iterations": "5", "epsilon": 1, "delta": 1e-6, "label_column": "y"}),
    (DpBoParams, {"log10_lambda": [-3, True], "iterations": 5, "epsilon": 1, "delta": 1e-6, "label_column": "y"}),
])
def test_job_parameters_take_json_numbers_only(model, params):
    """Loose parsing read "seed": true as seed 1 and "0.5" as 0.5: the wire's strict types refuse them."""
    with pytest.raises(ValidationError):
        model.model_validate(params)


def test_a_key_policy_takes_json_numbers_only():
    assert KeyPolicy.model_validate({"epsilon_cap": 0.5}).epsilon_cap == 0.5
    for loose in ({"epsilon_cap": "0.5"}, {"delta_cap": True}):
        with pytest.raises(ValidationError):
            KeyPolicy.model_validate(loose)
