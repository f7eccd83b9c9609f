"""The plugins (`ddlx.datasets.plugins`) are what the command line, the docs and the generator see:
each trace has its folder, reader, generator, doc page and README row; each format its folder with a
writer or a reader (or both) of its own name."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from ddlx.datasets.adapter import TraceAdapter
from ddlx.datasets.plugins import (
    TRACES,
    FormatPlugin,
    TracePlugin,
    format_plugins,
    get_adapter,
    get_generator,
    sample_scale,
    trace_plugins,
)

REPO = Path(__file__).resolve().parents[1]

#: The trace folders, in list order.
FOLDERS = [plugin.package.rpartition(".")[2] for plugin in trace_plugins()]


def test_every_folder_is_a_complete_trace() -> None:
    assert len(TRACES) == len(FOLDERS)
    for folder in FOLDERS:
        assert {p.name for p in (REPO / "traces" / folder).glob("*.py")} >= {
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
    listed = re.search(r"the main job: (.*?);", " ".join(result.out.split()))
    assert listed and [n.removesuffix("-trace") for n in listed.group(1).split(", ")] == list(TRACES)


def test_every_plugin_folder_is_installed_and_placed_once() -> None:
    """Adding a trace or a format is adding a folder: setup.py's package discovery installs every
    plugin folder, pyproject.toml names none, and the list positions are distinct."""
    import ast

    setup = ast.parse((REPO / "setup.py").read_text())
    assert any(isinstance(node, ast.Name) and node.id == "find_packages" for node in ast.walk(setup))
    from setuptools import find_packages

    installed = {f"ddlx.{name}" for name in find_packages(str(REPO), exclude=["tests*", "benchmarks*", "docs*"])}
    plugins = {plugin.package for plugin in (*trace_plugins(), *format_plugins())}
    assert plugins <= installed
    assert not re.search(r"ddlx\.(traces|formats)\.", (REPO / "pyproject.toml").read_text())
    folders = {p.parent.name for p in (REPO / "traces").glob("*/__init__.py")}
    assert folders == set(FOLDERS)
    positions = [plugin.list_position for plugin in trace_plugins()]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_every_plugin_is_typed() -> None:
    for folder in (REPO / "traces").glob("*/__init__.py"):
        assert isinstance(importlib.import_module(f"ddlx.traces.{folder.parent.name}").PLUGIN, TracePlugin)
    for folder in (REPO / "formats").glob("*/__init__.py"):
        assert isinstance(importlib.import_module(f"ddlx.formats.{folder.parent.name}").PLUGIN, FormatPlugin)


def test_every_format_folder_holds_its_reader_or_writer() -> None:
    """A format folder's writer and reader carry its name; a format published with a trace names a
    registered trace, which then lists it among its formats; each states its consumer and loader."""
    names = [plugin.name for plugin in format_plugins()]
    assert len(names) == len(set(names)) and len(names) == len(list((REPO / "formats").glob("*/__init__.py")))
    for plugin in format_plugins():
        assert plugin.writer is not None or plugin.reader is not None, plugin.name
        for side in (plugin.writer, plugin.reader):
            assert side is None or side.name == plugin.name, plugin.name
        assert plugin.consumer and plugin.loader
        if plugin.trace is not None:
            assert plugin in next(t for t in trace_plugins() if t.name == plugin.trace).formats
    assert {p.trace for p in format_plugins()} - {None} <= set(TRACES)


def test_every_format_folder_says_what_each_of_its_files_holds() -> None:
    for plugin in format_plugins():
        package = importlib.import_module(plugin.package)
        listed = re.findall(r"^- `([a-z_0-9]+\.py)`: \S", package.__doc__ or "", flags=re.M)
        files = sorted(p.name for p in (REPO / "formats" / plugin.package.rpartition(".")[2]).glob("*.py"))
        assert sorted(listed + ["__init__.py"]) == files, plugin.name


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
        package = importlib.import_module(f"ddlx.traces.{folder}")
        listed = re.findall(r"^- `([a-z_0-9]+\.py)`: \S", package.__doc__ or "", flags=re.M)
        files = sorted(p.name for p in (REPO / "traces" / folder).glob("*.py"))
        assert sorted(listed) == files, folder
