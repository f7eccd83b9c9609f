"""The one list of traces (`ddlx.datasets.traces.FOLDERS`) is what the command line, the docs and
the generator see: each trace has its folder, reader, generator, doc page and README row."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from ddlx.datasets.adapter import TraceAdapter
from ddlx.datasets.traces import FOLDERS, TRACES, get_adapter, get_generator, sample_scale

REPO = Path(__file__).resolve().parents[1]


def test_every_folder_is_a_complete_trace() -> None:
    assert len(TRACES) == len(FOLDERS)
    for folder in FOLDERS:
        assert {p.name for p in (REPO / "datasets" / "traces" / folder).glob("*.py")} >= {
            "__init__.py", "release.py", "reader.py", "generator.py"}, folder
    for name, info in TRACES.items():
        adapter = get_adapter(name)
        assert isinstance(adapter, TraceAdapter) and adapter.name == name == info.name
        assert callable(get_generator(name)) and 0 < sample_scale(name) <= 1


def test_the_docs_list_exactly_the_registered_traces() -> None:
    readme = (REPO / "README.md").read_text()
    table = re.findall(r"^\| [^|]+ \| `([a-z0-9-]+)` \|", readme, flags=re.M)
    assert table == list(TRACES)
    pages = {p.stem for p in (REPO / "docs" / "traces").glob("*.md")}
    assert pages == set(TRACES)
    synth = re.search(r"`ddlx datasets synth TRACE[^`]*` \(([^)]*)\)", readme)
    assert synth is not None and synth.group(1).split(", ") == list(TRACES)


def test_every_trace_has_an_analyze_command(cli) -> None:
    result = cli("analyze", "--help")
    assert result.code == 0
    assert re.findall(r"│ ([a-z0-9-]+)-trace ", result.out) == list(TRACES)


def test_every_trace_folder_is_installed_and_placed_once() -> None:
    """Adding a trace edits one line: its package in pyproject.toml (the folder is found, and this
    test fails while the package is not listed, so a wheel would lack it)."""
    listed = set(re.findall(r'"(ddlx\.datasets\.traces\.\w+)"', (REPO / "pyproject.toml").read_text()))
    assert listed == {f"ddlx.datasets.traces.{folder}" for folder in FOLDERS}
    positions = [importlib.import_module(f"ddlx.datasets.traces.{folder}").LIST_POSITION for folder in FOLDERS]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_every_trace_list_in_the_docs_is_the_registry() -> None:
    """The docs that list the traces list exactly the registered ones, in registry order."""
    names = list(TRACES)
    docs = REPO / "docs"
    analysis = (docs / "analysis.md").read_text()
    header = re.search(r"^\| module part \|(.*)\|$", analysis, flags=re.M)
    assert header and [c.strip() for c in header.group(1).split("|")] == names + ["imported"]
    commands = re.search(r"^ddlx analyze [a-z0-9-]+-trace +# also (.*)$", analysis, flags=re.M)
    assert commands and [names[0]] + [c.removesuffix("-trace") for c in commands.group(1).split(", ")] == names
    schema = (docs / "schema.md").read_text()
    assert re.findall(r"^\| [^|]+ \(`([a-z0-9-]+)`\) \| \[docs/traces/", schema, flags=re.M) == names
    for page in ("import.md", "simulate.md"):
        listed = re.search(r"registered trace \(([^)]*)\)", (docs / page).read_text())
        assert listed and [n.strip("` ") for n in listed.group(1).split(",")] == names, page


def test_every_trace_folder_says_what_each_of_its_files_holds() -> None:
    """A trace package's docstring lists each module of its folder, one `- `file.py`: ...` line each."""
    for folder in FOLDERS:
        package = importlib.import_module(f"ddlx.datasets.traces.{folder}")
        listed = re.findall(r"^- `([a-z_0-9]+\.py)`: \S", package.__doc__ or "", flags=re.M)
        files = sorted(p.name for p in (REPO / "datasets" / "traces" / folder).glob("*.py"))
        assert sorted(listed) == files, folder
