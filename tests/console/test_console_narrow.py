"""The console on a phone, at a true 360 px CSS viewport (Chromium's device-metrics emulation: ``--window-size``
alone renders at 500 px and hides what goes wrong): no table cell is narrower than its content, an MRN or a number
reads on one line, and no button or badge is cut off (each lies within the viewport, or inside a box that scrolls
to it). Checked on the worklist, a session, the keys and the audit pages; a screenshot of each goes to
``$POBO_SCREENSHOT_DIR`` when set."""

from __future__ import annotations

import numpy as np

from modeler_client.client import ModelerClient
from shared.api.schemas import DatasetSpec
from tests.console.test_console_pages import UNIT_BOX, api, unique

PHONE = {"width": 360, "height": 740, "deviceScaleFactor": 2, "mobile": True}

# What the page's own layout says, measured in the browser: every list names the element's tag, class and text.
LAYOUT = r"""
const lineHeight = el => parseFloat(getComputedStyle(el).lineHeight) || 1.2 * parseFloat(getComputedStyle(el).fontSize);
const name = el => `${el.tagName.toLowerCase()}.${el.className} ${JSON.stringify(el.textContent.trim().slice(0, 40))}`;
const scroller = el => {
  for (let box = el.parentElement; box; box = box.parentElement) {
    const overflow = getComputedStyle(box).overflowX;
    if ((overflow === 'auto' || overflow === 'scroll') && box.scrollWidth > box.clientWidth) return box;
  }
  return null;
};
const tooNarrow = [...document.querySelectorAll('td, th')]
  .filter(cell => cell.scrollWidth > cell.clientWidth + 1).map(name);
const lines = el => {
  const text = document.createRange();
  text.selectNodeContents(el);
  return Math.round(text.getBoundingClientRect().height / lineHeight(el));
};
// An identifier, a number or a moment on one line; a column's name on one line.
const broken = [...document.querySelectorAll('th, .nowrap')]
  .filter(el => el.offsetParent !== null && el.textContent.trim() && lines(el) > 1).map(name);
// Any other word of a cell broken over lines other than after its hyphens or slashes (an MRN down the screen one
// character a line, "40" over ".2").
const splitWords = [];
for (const cell of document.querySelectorAll('td')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.data.matchAll(/\S+/g)) {
      const word = document.createRange();
      word.setStart(node, match.index);
      word.setEnd(node, match.index + match[0].length);
      const fragments = new Set([...word.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (fragments.size > 1 + (match[0].match(/[-\/]/g) || []).length) splitWords.push(match[0]);
    }
  }
}
const width = document.documentElement.clientWidth;
const cutOff = [...document.querySelectorAll('button, a.button, input, .badge, nav .count')]
  .filter(el => el.offsetParent !== null && el.type !== 'hidden')
  .filter(el => {
    const r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'INPUT') return true;  // its own text clipped
    const cell = el.closest('td');
    if (cell) {
      const c = cell.getBoundingClientRect();
      if (r.left < c.left - 1 || r.right > c.right + 1) return true;  // spills out of its cell
    }
    if (r.left >= -1 && r.right <= width + 1) return false;
    const box = scroller(el);
    if (box === null) return true;
    const b = box.getBoundingClientRect();
    return r.left < b.left - box.scrollLeft - 1 || r.right > b.left - box.scrollLeft + box.scrollWidth + 1;
  }).map(name);
const wide = [...document.querySelectorAll('main *')].filter(el => el.getBoundingClientRect().right > width + 1)
  .filter(el => scroller(el) === null && el.closest('thead') === null).map(name).slice(0, 5);
return {tooNarrow, broken, splitWords, cutOff, pageWidth: [document.documentElement.scrollWidth, width], wide};
"""


def _mrn_dataset(curator):
    """A manual dataset whose rows are named by long MRNs, with HbA1c in mmol/mol."""
    rng = np.random.default_rng(11)
    X = rng.uniform(0.05, 0.95, size=(12, 2))
    lines = "\n".join(f"MRN-00{4711000 + i},{x[0]!r},{x[1]!r}" for i, x in enumerate(X.tolist()))
    name = unique("narrow-mrn")
    spec = DatasetSpec.model_validate({
        "name": name, "feature_columns": ["x0", "x1"], "evaluator": {"kind": "manual"},
        "budget": {"epsilon": 10.0, "delta": 1e-3}, "scaling": UNIT_BOX,
        "measurement": {"quantity": "HbA1c", "unit": "mmol/mol"}})
    dataset = curator.register_csv(f"mrn,x0,x1\n{lines}\n".encode(), spec, filename=f"{name}.csv")
    with api(curator) as admin:
        admin.put(f"/v1/datasets/{dataset.id}/identifier-column", json={"column": "mrn"}).raise_for_status()
    return dataset


def test_at_a_true_360_px_viewport_no_cell_squeezes_its_content_and_nothing_is_cut_off(admin_console):
    console, curator = admin_console, admin_console.curator
    dataset = _mrn_dataset(curator)
    release = curator.create_release(dataset.id, "gaussian", 1.0, 1e-6)
    key = curator.issue_key([release.id], max_queries=6, name=unique("a-partner-with-a-long-key-name"))
    modeler = ModelerClient(curator.url, key.token)
    session = modeler.open_session(release.id)
    answered, *_ = modeler.query(session.id, [1, 4, 7])
    with api(curator) as admin:
        admin.post(f"/v1/queries/{answered.query_id}/answer", json={"value": 40.2}).raise_for_status()
    driver = console.driver
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    try:
        for name, path in (("worklist", "/console/queries"), ("session", f"/console/sessions/{session.id}"),
                           ("keys", "/console/keys"), ("audit", "/console/audit")):
            console.open(path)
            driver.save_screenshot(str(console.screenshots / f"{name}-360px.png"))
            layout = driver.execute_script(LAYOUT)
            assert driver.execute_script("return window.innerWidth") == 360, (name, layout["wide"])
            assert layout["pageWidth"][0] <= layout["pageWidth"][1] == 360, (name, layout["pageWidth"], layout["wide"])
            assert layout["tooNarrow"] == [], (name, "cells narrower than their content", layout["tooNarrow"])
            assert layout["broken"] == [], (name, "identifiers or numbers broken over lines", layout["broken"])
            assert layout["splitWords"] == [], (name, "words broken over lines", layout["splitWords"])
            assert layout["cutOff"] == [], (name, "buttons or badges cut off", layout["cutOff"])
        console.open("/console/queries")
        shown = [c.text for c in console.all(f'section[data-dataset="{dataset.id}"] td.row-id')]
        assert len(shown) == 2 and all(text.startswith("MRN-004711") for text in shown), shown
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
