"""The example notebook, executed cell by cell (nbclient) against a live local curator."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from modeler_client.runfile import RunRecord

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "modeler_tour.ipynb"


def test_example_notebook_runs_against_a_live_curator(bowl, curator, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("pandas")
    with curator.admin() as admin:  # the demo's true values in release order, for the random-search band
        rows = admin.get(f"/v1/datasets/{bowl['dataset'].id}/row-order")["rows"]
    np.save(tmp_path / "values.npy", bowl["y"][np.array(rows) - 1])
    for name, value in {"POBO_URL": curator.url, "POBO_TOKEN": bowl["token"], "POBO_RELEASE": str(bowl["release"].id),
                        "POBO_DEMO_VALUES": str(tmp_path / "values.npy"), "POBO_RUN_FILE": str(tmp_path / "nb.json"),
                        "OPENBLAS_NUM_THREADS": "1"}.items():
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = " ".join(o.data.get("text/html", "") for o in outputs if "data" in o)
    assert "20/20 answered" in html  # the progress bar reached the end, in place
    pngs = [base64.b64decode(o.data["image/png"]) for o in outputs if "data" in o and "image/png" in o.data]
    assert pngs and pngs[0][:8] == b"\x89PNG\r\n\x1a\n"  # the figure is shown inline
    importance = [cell for cell in notebook.cells if "importance_figure(release, record)" in cell.source]
    assert len(importance) == 1 and [o for o in importance[0].outputs if "image/png" in o.get("data", {})]
    record = RunRecord.load(tmp_path / "nb.json")
    assert record.finished and len(record.done()) == 20
    assert (tmp_path / "nb.png").stat().st_size > 10_000  # and still saved as a PNG
