"""Every reference to a section of the design resolves inside the repository: code cites ``docs/design.md §N`` with a
section N that the page has, a markdown page links ``[design §N](…design.md#anchor)`` to that section's heading, and
nothing cites a design outside the tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
CITATION = re.compile(r"docs/design\.md §(\d+)((?:, §\d+)*)")
LINK = re.compile(r"\[design §(\d+)\]\(([^)#]*design\.md)#([^)]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(text: str) -> dict[int, str]:
    """The design's numbered sections: number -> anchor."""
    return {int(m.group(1)): anchor(m.group(0).lstrip("# ")) for m in re.finditer(r"(?m)^## (\d+)\. .*$", text)}


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in listed.stdout.splitlines()]


def bad_references(path: Path, text: str, known: dict[int, str], design: Path = DESIGN) -> list[str]:
    """The references of ``text`` (a file at ``path``) to ``design`` that do not resolve, each with why."""
    bad = [f"{path.name}: 'DESIGN §' cites a file outside the repository" for _ in re.finditer(r"DESIGN §", text)]
    for match in CITATION.finditer(text):
        numbers = [int(match.group(1)), *map(int, re.findall(r"\d+", match.group(2)))]
        bad += [f"{path.name}: §{n} is not a section of docs/design.md" for n in numbers if n not in known]
    for match in LINK.finditer(text):
        number, target, fragment = int(match.group(1)), match.group(2), match.group(3)
        if (path.parent / target).resolve() != design.resolve():
            bad.append(f"{path.name}: [design §{number}] links {target}, not docs/design.md")
        elif known.get(number) != fragment:
            bad.append(f"{path.name}: [design §{number}] links #{fragment}, not the section's #{known.get(number)}")
    return bad


def test_the_anchor_is_githubs():
    assert anchor('8. What "good" means here') == "8-what-good-means-here"
    assert anchor("5. The HTTP API (v1)") == "5-the-http-api-v1"


def test_a_bad_reference_is_found(tmp_path):
    known, design, page = {4: "4-privacy-what-each-release-promises"}, tmp_path / "design.md", tmp_path / "page.md"
    bad = ("DESIGN §4; docs/design.md §9; [design §4](elsewhere/design.md#4-privacy-what-each-release-promises); "
           "[design §4](design.md#4-privacy); docs/design.md §4, §5")
    assert len(bad_references(page, bad, known, design)) == 5
    good = "docs/design.md §4 and [design §4](design.md#4-privacy-what-each-release-promises)"
    assert bad_references(page, good, known, design) == []


def test_every_design_reference_in_the_tree_resolves():
    known = sections(DESIGN.read_text(encoding="utf-8"))
    assert sorted(known) == list(range(1, 9))
    bad = []
    for path in tracked_text_files():
        if path != Path(__file__).resolve():
            bad += bad_references(path, path.read_text(encoding="utf-8"), known)
    assert bad == []


def test_the_code_and_the_docs_cite_the_design():
    """The references exist (the check above is not vacuous) and the README links the page."""
    texts = [path.read_text(encoding="utf-8") for path in tracked_text_files()]
    assert sum(len(CITATION.findall(text)) for text in texts) >= 25
    assert sum(len(LINK.findall(text)) for text in texts) >= 4
    assert "(docs/design.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
