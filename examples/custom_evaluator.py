"""A ``python`` evaluator: the curator computes each measurement with its own code.

The curator registers a dataset with ``{"kind": "python", "target": "custom_evaluator:risk_score"}``.
When a modeler queries row i, the service imports this module (it must be importable on the curator's
server: installed, or on ``PYTHONPATH``) and calls ``risk_score(row)`` with the raw row as
``{column: value}``. Only the returned number goes back to the modeler; an exception is reported
without the row's values and nothing is charged.

Run this file to see it end to end: it starts a local curator with this folder on its ``PYTHONPATH``,
registers scikit-learn's diabetes table with this evaluator, makes a certified ``gaussian`` release and
lets a modeler search for the patient with the highest score.

    .venv/bin/python examples/custom_evaluator.py
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def risk_score(row: dict[str, float]) -> float:
    """An illustrative (made-up, not clinical) score: higher BMI, blood pressure and serum triglycerides
    (s5, log scale) raise it; it stands for any measurement the curator computes from a record."""
    return 0.04 * row["bmi"] + 0.01 * row["bp"] + 0.8 * row["s5"] - 0.002 * (row["age"] - 50) ** 2


def main() -> None:
    from sklearn.datasets import load_diabetes

    from curator_service.testing import LocalCurator
    from modeler_client.client import ModelerClient
    from modeler_client.loop import RemoteGPUCB
    from modeler_client.runfile import RunSettings

    data = load_diabetes(scaled=False)
    columns = list(data.feature_names)
    here = str(Path(__file__).resolve().parent)
    pythonpath = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as data_dir, LocalCurator(data_dir, env={"PYTHONPATH": pythonpath}) as curator:
        dataset = curator.register_table(
            "diabetes-risk",
            data.data,
            columns,
            evaluator={"kind": "python", "target": "custom_evaluator:risk_score"},
            budget=(4.0, 1e-4),
            scaling={"kind": "bounds", "lower": [0, 1, 10, 40, 50, 20, 10, 1, 2, 40],
                     "upper": [100, 2, 60, 200, 400, 300, 120, 10, 8, 200], "diameter": 1.0},
        )
        release = curator.create_release(dataset.id, "gaussian", 4.0, 1e-5, dim=len(columns))
        key = curator.issue_key([release.id], max_queries=50)
        with tempfile.TemporaryDirectory() as out:
            client = ModelerClient(curator.url, key.token)
            record = RemoteGPUCB.start(client, release.id, RunSettings(iterations=15), Path(out) / "run.json").run()
        truth = max(risk_score(dict(zip(columns, row))) for row in data.data)
        best = record.best()
        print(f"best score found {best.value:.3f} after 15 queries (true maximum {truth:.3f})")


if __name__ == "__main__":
    main()
