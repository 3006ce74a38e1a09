"""``pobo-modeler dpareto``'s baseline options are checked before anything is sent, and its plot draws a baseline's
points and front beside DPareto's, each in its own marker and colour and named in the legend (without a baseline,
DPareto's alone). The command's output against a real curator is checked in tests/e2e/test_dpareto_baseline_cli.py."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.commands.dpareto import front_figure, save_plot
from shared.api.jobs import DparetoPoint, DparetoResult
from tests.modeler_client.test_cli_and_plot import flat
from tests.modeler_client.test_job_commands import OFFLINE

SETTING = {"epochs": 2.0, "lot_size": 8.0, "learning_rate": 0.01, "noise_variance": 1.0, "clip_norm": 1.0}


@pytest.mark.parametrize(("options", "said"), [
    (["--baseline", "sobol"], "'sobol' is not one of"),
    (["--baseline-points", "40"], "baseline_points needs a baseline"),
    (["--baseline", "random", "--baseline-points", "769"], "--baseline-points"),
])
def test_a_baseline_the_curator_would_refuse_exits_2_before_sending(options, said):
    refused = CliRunner().invoke(app, ["dpareto", *OFFLINE, *options], env={"COLUMNS": "200"})
    assert refused.exit_code == 2 and said in flat(refused.output), refused.output


def points(*pairs: tuple[float, float]) -> list[DparetoPoint]:
    return [DparetoPoint(params=SETTING, epsilon=epsilon, error=error) for epsilon, error in pairs]


def result(**baseline) -> DparetoResult:
    return DparetoResult(warning="not DP", anti_ideal=[10.0, 1.0], hypervolume=3.0, delta=1e-5, n_train=40, n_test=20,
                         majority_baseline=0.6, best_accuracy=0.8, overhead_seconds=0.1,
                         points=points((1.0, 0.3), (2.0, 0.2), (3.0, 0.4)), front=points((1.0, 0.3), (2.0, 0.2)),
                         **baseline)


def drawn(fig) -> dict[str, tuple]:
    """Each legend label: the offsets and colour of its scatter, or the data and colour of its line."""
    [ax] = fig.axes
    found = {c.get_label(): (c.get_offsets().tolist(), tuple(c.get_facecolor()[0][:3]), c.get_paths()[0])
             for c in ax.collections}
    found |= {line.get_label(): (np.column_stack(line.get_data()).tolist(), to_rgba(line.get_color())[:3], None)
              for line in ax.get_lines()}
    assert sorted(found) == sorted(t.get_text() for t in ax.get_legend().get_texts())
    return found


def test_the_plot_draws_the_baseline_beside_dpareto_in_its_own_marker_and_colour(tmp_path):
    with_baseline = result(baseline="random", baseline_points=points((1.5, 0.35), (4.0, 0.25), (5.0, 0.5)),
                           baseline_front=points((1.5, 0.35), (4.0, 0.25)), baseline_hypervolume=2.5)
    found = drawn(front_figure(with_baseline))
    assert set(found) == {"DPareto: evaluated settings", "DPareto: Pareto front", "random baseline: evaluated settings",
                          "random baseline: Pareto front"}
    assert found["random baseline: evaluated settings"][0] == [[1.5, 0.35], [4.0, 0.25], [5.0, 0.5]]
    assert found["random baseline: Pareto front"][0] == [[1.5, 0.35], [4.0, 0.25]]
    assert found["DPareto: evaluated settings"][0] == [[1.0, 0.3], [2.0, 0.2], [3.0, 0.4]]
    dpareto_points, baseline_points = found["DPareto: evaluated settings"], found["random baseline: evaluated settings"]
    assert dpareto_points[1] != baseline_points[1] and dpareto_points[2] != baseline_points[2]  # colour, marker
    assert found["DPareto: Pareto front"][1] != found["random baseline: Pareto front"][1]

    out = tmp_path / "front.png"
    save_plot(with_baseline, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_a_baseline_only_dpareto_is_drawn():
    assert set(drawn(front_figure(result()))) == {"DPareto: evaluated settings", "DPareto: Pareto front"}
