"""The console's release review says what the noise-to-spread ratio means, and the session page's parameter
importance carries its intervals and warns on a release that is mostly noise. Plain HTTP against the real server."""

from __future__ import annotations

import html
import re
import uuid

import httpx
import numpy as np

from modeler_client.client import ModelerClient
from tests.console.test_release_form import UNIT_BOX, _hidden, _logged_in


def _text(page: str, element_id: str) -> str:
    (found,) = re.findall(rf'<[^>]*id="{element_id}"[^>]*>(.*?)</(?:p|table)>', page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found)).split())


def test_review_and_session_pages_say_when_the_inputs_are_mostly_noise(console_curator):
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2))
    dataset = console_curator.register_table(f"noise-{uuid.uuid4().hex[:6]}", X, ["dose", "age"],
                                             evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
                                             extra_columns={"y": np.sin(5 * X[:, 0])}, scaling=UNIT_BOX)
    page_path = f"/console/datasets/{dataset.id}"
    release = console_curator.create_release(dataset.id, "gaussian", 1.0, 1e-5, seed=3)
    key = console_curator.issue_key([release.id], max_queries=20)
    modeler = ModelerClient(console_curator.url, key.token)
    session = modeler.open_session(release.id)
    modeler.query(session.id, list(range(0, 80, 4)))
    with httpx.Client(base_url=console_curator.url, timeout=120) as console:
        cookies = _logged_in(console, console_curator.admin_token)
        page = console.get(page_path, headers=cookies).text
        typed = {"csrf": _hidden(page, "csrf"), "mechanism": "gaussian", "epsilon": "1", "delta": "1e-6", "dim": "auto"}
        review = console.post(f"{page_path}/review-release", data=typed, headers=cookies).text
        meaning = _text(review, "confirm-noise-meaning")
        ratio = float(re.match(r"Noise / spread ([\d.,]+) ?\. ", meaning).group(1).replace(",", ""))
        assert ratio > 1 and "Above 1: the input noise is larger than the rows' own spread" in meaning

        shown = console.get(f"/console/sessions/{session.id}", headers=cookies).text
        shown = html.unescape(shown)
        assert "importance-warning" in shown and "the inputs are mostly noise" in shown
        assert "Only 20 answers" not in shown  # 10 per coordinate: not few
        intervals = _text(shown, "importance-intervals")
        assert "dose" in intervals and "age" in intervals and "% of halves" in intervals


def test_the_planning_panel_names_risk_and_utility_flags_noisy_rows_and_says_the_epsilon_for_unit_noise(
        console_curator):
    X = np.random.default_rng(2).uniform(size=(80, 2))
    dataset = console_curator.register_table(f"plan-{uuid.uuid4().hex[:6]}", X, ["dose", "age"],
                                             evaluator={"kind": "column", "column": "y"}, budget=(10.0, 1e-3),
                                             extra_columns={"y": X.sum(axis=1)}, scaling=UNIT_BOX)
    page_path = f"/console/datasets/{dataset.id}"
    with httpx.Client(base_url=console_curator.url, timeout=300) as console:
        cookies = _logged_in(console, console_curator.admin_token)
        page = console.get(page_path, headers=cookies).text
        typed = {"csrf": _hidden(page, "csrf"), "mechanism": "gaussian", "epsilon": "0.5, 1000", "delta": "1e-6",
                 "dim": "auto"}
        shown = html.unescape(console.post(f"{page_path}/plan", data=typed, headers=cookies).text)
    table = _text(shown, "plan-table")
    assert "risk: at most × random search per query (lower is safer)" in table
    assert "utility: simulated regret ± s.e. (lower is better)" in table
    rows = re.findall(r'<tr data-epsilon="([^"]+)"( class="mostly-noise")?>', shown)
    assert [(float(e), bool(flag)) for e, flag in rows] == [(0.5, True), (1000.0, False)]
    numbers_unwrapped = re.sub(r'<span class="nowrap">([^<]*)</span>', r"\1", shown)  # each number in its span
    assert len(re.findall(r'<td class="regret">[\d.]+ ± [\d.]+</td>', numbers_unwrapped)) == 2
    needed = float(re.search(r"ε needed for noise / spread ≈ 1: ([\d.,]+) ?\.", _text(shown, "plan-unit-noise"))
                   .group(1).replace(",", ""))
    assert 0.5 < needed < 1000
    assert "the mean ± its standard error over 3 synthetic stand-in tables" in _text(shown, "plan-simulation")
