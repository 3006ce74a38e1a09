"""End-to-end: ``pobo-modeler dpareto --baseline random --baseline-points N`` against a real ``pobo-curator serve``
(the server of tests/e2e/test_dpareto_job.py): the job evaluates the baseline, the command prints its hypervolume
beside DPareto's and saves the result, baseline included, beside the plot (the plot's drawing is checked in
tests/modeler_client/test_dpareto_command.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import numpy as np

from tests.modeler_client.test_cli_and_plot import flat


def test_dpareto_prints_the_baselines_hypervolume_beside_dparetos(curator, tmp_path):
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 1.0, size=(80, 3))
    label = (X[:, 0] + X[:, 1] > 1.0).astype(float)
    dataset = curator.register_table(f"front-{uuid.uuid4().hex[:8]}", X, ["a", "b", "c"],
                                     evaluator={"kind": "column", "column": "label"}, budget=(1.0, 1e-3),
                                     extra_columns={"label": label},
                                     scaling={"kind": "bounds", "lower": [0.0] * 3, "upper": [1.0] * 3})
    out = tmp_path / "front.png"
    command = [sys.executable, "-m", "modeler_client.cli", "dpareto", "--url", curator.url, "--token",
               curator.admin_token, "--dataset", str(dataset.id), "--label-column", "label", "--initial-points", "2",
               "--iterations", "1", "--max-epochs", "2", "--baseline", "random", "--baseline-points", "4",
               "--seed", "2", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr + done.stdout

    result = json.loads(out.with_suffix(".json").read_text())
    assert result["baseline"] == "random" and len(result["baseline_points"]) == 4 and len(result["points"]) == 3
    assert result["baseline_front"] and result["baseline_hypervolume"] is not None
    said = re.search(r"hypervolume: DPareto (\S+) \(3 points\), random baseline (\S+) \(4 points\)", flat(done.stdout))
    assert said, done.stdout
    assert [float(v) for v in said.groups()] == [round(result["hypervolume"], 3),
                                                  round(result["baseline_hypervolume"], 3)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
