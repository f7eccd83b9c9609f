"""The docs describe ddlx as it is: no page of docs/ or the README narrates how it came to be (history
belongs in CHANGELOG.md, which is not checked), and docs/performance.md stays a short page of what
to expect."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Phrases that tell of an earlier state of ddlx or of its making, matched case-insensitively
#: between word boundaries.
NARRATING = (
    r"releases? ago",
    r"this release",
    r"the previous release",
    r"(an|the) (earlier|later) release",
    r"the release before",
    r"no longer",
    r"used to",
    r"(was|were) changed",
    r"we (changed|now|used)",
    r"until now",
    r"from now on",
    r"previously",
    r"formerly",
    r"as before",
    r"is now",
    r"are now",
    r"now (runs|reads|gives|takes|uses|writes)",
    r"before this (change|release|version)",
    r"(measured and )?not adopted",
    r"the (old|new|previous) code",
    r"(earlier|previous|older) versions? of ddlx",
)
PATTERN = re.compile(r"\b(" + "|".join(NARRATING) + r")\b", re.IGNORECASE)

#: Present-tense uses of a phrase above that describe the tool, not its history: blanked before
#: the search. Each is the exact words on the page.
PRESENT_TENSE = (
    "a running job that no longer fits",  # docs/simulate.md: the pool simulator's preemption rule
)

PERFORMANCE_MAX_LINES = 250


def doc_pages() -> list[Path]:
    """README.md and every page under docs/ (CHANGELOG.md is the place for history)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def narrations(pages: list[Path]) -> list[str]:
    """`file:line: 'phrase'` for every narrating phrase on `pages`, paths relative to the repository
    where they lie in it."""
    found = []
    for page in pages:
        name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for allowed in PRESENT_TENSE:
                line = re.sub(re.escape(allowed), " ", line, flags=re.IGNORECASE)
            found += [f"{name}:{number}: {m.group(0)!r}" for m in PATTERN.finditer(line)]
    return found


def test_the_pages_checked_are_the_docs() -> None:
    names = {page.relative_to(ROOT).as_posix() for page in doc_pages()}
    assert {"README.md", "docs/performance.md", "docs/analysis.md", "docs/traces/pai.md"} <= names
    assert "CHANGELOG.md" not in names


def test_no_page_narrates_development() -> None:
    found = narrations(doc_pages())
    assert not found, "pages narrate history (move it to CHANGELOG.md):\n" + "\n".join(found)


def test_a_narrating_phrase_is_found_with_its_file_and_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\nThe sweep is exact.\nIt is faster than two releases ago, and\n"
                    "the loader No Longer reads twice; LAS keeps a running job that no longer fits out.\n"
                    "A file refused to load is named; it was measured with a tool.\n",
                    encoding="utf-8")
    assert narrations([page]) == [f"{page}:4: 'releases ago'", f"{page}:5: 'No Longer'"]


def test_performance_page_is_short() -> None:
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= PERFORMANCE_MAX_LINES, f"docs/performance.md has {len(lines)} lines"
