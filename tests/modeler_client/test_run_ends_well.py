"""``pobo-modeler run`` ends with a sentence, not a traceback or an HTTP error: on Ctrl-C and SIGTERM (a real
subprocess against a real curator) and when the key's queries run out (warned up front)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest
from typer.testing import CliRunner

from modeler_client.cli import app
from modeler_client.runfile import RunRecord

runner = CliRunner()


def said(output: str) -> str:
    return " ".join(re.sub(r"[│┃╭╮╰╯─┏┓┗┛━┌┐└┘┬┴┼├┤]", " ", output).split())


def lab_release(curator, max_queries: int, evaluator: str = "manual"):
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(40, 2))
    evaluated = {"kind": "manual"} if evaluator == "manual" else {"kind": "column", "column": "y"}
    dataset = curator.register_table(f"ends-{uuid.uuid4().hex[:6]}", X, ["dose", "age"], evaluator=evaluated,
                                     budget=(4.0, 1e-3), extra_columns={"y": -np.sum((X - 0.5) ** 2, axis=1)},
                                     scaling={"kind": "bounds", "lower": [0, 0], "upper": [1, 1], "diameter": 1})
    release = curator.create_release(dataset.id, "gaussian", 2.0, 1e-5, dim=2)
    return release, curator.issue_key([release.id], max_queries=max_queries).token


@pytest.mark.parametrize(("stop", "shown", "code"), [(signal.SIGINT, "Ctrl-C", 130), (signal.SIGTERM, "SIGTERM", 143)])
def test_a_stopped_run_says_what_the_lab_holds_and_how_to_resume(curator, tmp_path, stop, shown, code):
    release, token = lab_release(curator, 20)
    path = tmp_path / "lab.json"
    command = [sys.executable, "-m", "modeler_client.cli", "run", "--release", str(release.id), "-T", "5",
               "--batch", "2", "--out", str(path), "--url", curator.url, "--poll", "0.1", "--max-poll", "0.2"]
    process = subprocess.Popen(command, env={**os.environ, "POBO_TOKEN": token, "COLUMNS": "200"},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240  # a poll: the first batch goes out once the client has fitted nothing
        while not (path.exists() and len(RunRecord.load(path).pending()) == 2):
            assert process.poll() is None and time.monotonic() < deadline, process.stdout.read()
            time.sleep(0.2)
        process.send_signal(stop)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    text = said(output)
    assert process.returncode == code, output
    assert f"stopped ({shown}): 2 of T = 5 queries made, 0 measured, 2 still pending" in text, output
    record = RunRecord.load(path)
    rows = ", ".join(str(q.index) for q in record.pending())
    assert f"2 queries pending with the lab (rows {rows}): they are charged" in text, output
    assert f"The run file {path} is saved; continue with: pobo-modeler resume {path}" in text, output
    assert "Traceback" not in output and "Aborted" not in output


def test_a_run_beyond_the_keys_queries_is_warned_up_front_and_ends_with_the_summary(curator, tmp_path):
    release, token = lab_release(curator, 3, evaluator="column")
    path = tmp_path / "short.json"
    result = runner.invoke(app, ["run", "--release", str(release.id), "-T", "5", "--out", str(path)],
                           env={"POBO_URL": curator.url, "POBO_TOKEN": token, "COLUMNS": "200"})
    text = said(result.output)
    assert "warning: this run wants 5 more queries and this key has 3 of 3 left: it will stop after 3" in text
    assert result.exit_code == 4, result.output
    assert "this key's queries are used up: 3 of T = 5 queries made, 3 measured; best" in text, result.output
    assert "nothing is pending with the lab" in text and "HTTP 409" not in text
    record = RunRecord.load(path)
    assert len(record.done()) == 3 and record.in_flight is None
