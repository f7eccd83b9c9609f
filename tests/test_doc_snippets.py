"""Every fenced ```python block of the README and of docs/ runs as written: each page's blocks in
order, in one namespace per page, in a fresh folder with a data home of its own (`$DDLX_HOME`),
where a registered trace that is not ingested is read from its SYNTHETIC sample. A block that fails
fails the test, with the page and the block's first line."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A fenced Python block: ```python on its own line, up to the closing fence.
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def snippets(page: Path) -> list[tuple[int, str]]:
    """The Python blocks of `page`: (line of the opening fence, code)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


PAGES = [page for page in doc_pages() if snippets(page)]


def test_the_docs_have_python_snippets_and_each_is_found() -> None:
    assert len(PAGES) >= 4
    total = sum(len(snippets(page)) for page in PAGES)
    fences = sum(page.read_text(encoding="utf-8").count("```python") for page in doc_pages())
    assert total == fences  # no block the pattern misses (an unclosed fence, say)


@pytest.fixture(scope="module")
def docs_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data home for every page: the SYNTHETIC samples are generated once."""
    return tmp_path_factory.mktemp("docs") / "ddlx-home"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_every_python_snippet_runs(page: Path, docs_home: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_HOME", str(docs_home))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_snippet__"}
    for line, code in snippets(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        output = io.StringIO()
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the docs' own code
        except Exception as exc:  # noqa: BLE001 - reported with the block it came from
            pytest.fail(f"{where}: {type(exc).__name__}: {exc}\n--- block ---\n{code}--- output ---\n"
                        f"{output.getvalue()[-2000:]}")
