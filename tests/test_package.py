"""The installed package and its command line: layout, help texts, entry points, docs."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ddlx.cli.main import app
from ddlx.datasets.canonical import JOB_COLUMNS, VIEWS
from ddlx.datasets.plugins import TRACES, trace_plugin

REPO = Path(__file__).resolve().parents[1]


def _commands(typer_app):
    """Every visible command's path of names, as `ddlx --help` lists them."""
    from ddlx.cli.help import click_command, walk

    return [path for path, _ in walk(click_command(typer_app)) if path]


@pytest.mark.slow
def test_every_command_has_help_text(cli) -> None:
    commands = list(_commands(app))
    assert ("datasets", "ingest") in commands and ("analyze",) in commands and ("sql",) in commands
    for command in commands:
        result = cli(*command, "--help")
        assert result.code == 0, command
        assert "Usage" in result.out
        summary = re.sub(r"[\s│╭╮╰╯─]+", " ", result.out)
        assert len(summary.split("Usage", 1)[1]) > 60, command


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "ddlx", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "datasets" in done.stdout


def test_only_the_ddlx_package_is_installed() -> None:
    installed = [d for d in importlib.metadata.distributions(name="ddlx") if d.read_text("RECORD")]
    if not installed:
        pytest.skip("ddlx is not installed from a wheel here")
    distribution = installed[0]
    if '"editable": true' in (distribution.read_text("direct_url.json") or ""):
        pytest.skip("editable install: the module list is the source tree's (CI installs the wheel)")
    files = distribution.files or []
    python_files = [str(f) for f in files if str(f).endswith(".py")]
    if not python_files:
        pytest.skip("editable install: no module files recorded")
    assert all(name.startswith("ddlx/") for name in python_files), python_files
    assert {"ddlx/analysis/__init__.py", "ddlx/datasets/__init__.py", "ddlx/cli/main.py"} <= set(python_files)


def _columns(section: str) -> list[tuple[str, str]]:
    return re.findall(r"^\| `(\w+)` \| (\w+) \|", section, flags=re.M)


def test_schema_doc_lists_every_canonical_column() -> None:
    doc = (REPO / "docs" / "schema.md").read_text()
    jobs = doc[doc.index("## Canonical `jobs`"):doc.index("## Canonical views beyond jobs")]
    assert _columns(jobs) == [(c.name, c.sql_type) for c in JOB_COLUMNS]
    for view in VIEWS.values():
        start = doc.index(f"### `{view.name}`")
        section = doc[start:doc.index("\n#", start + 1)]
        assert _columns(section.split("| column | type | meaning |")[1]) == [(c.name, c.sql_type) for c in view.columns]


class _EveryTable(set):
    """A set of stored tables that holds every table: what a trace publishes at most."""

    def __contains__(self, item: object) -> bool:
        return True


def test_schema_doc_says_which_trace_publishes_each_view() -> None:
    doc = (REPO / "docs" / "schema.md").read_text()
    for view in VIEWS.values():
        row = re.search(rf"^\| `{view.name}` \| (.*) \|$", doc, flags=re.M)
        publishers = [name for name in TRACES if view.name in trace_plugin(name).canonical_views(_EveryTable())]
        assert row and re.findall(r"`([\w-]+)`", row.group(1)) == publishers, view.name


def _packages() -> list[str]:
    """The installed packages, as setup.py discovers them."""
    from setuptools import find_packages

    return ["ddlx", *(f"ddlx.{name}" for name in find_packages(str(REPO), exclude=["tests*", "benchmarks*", "docs*"]))]


#: Packages whose sub-packages are plugins, found by discovery: they offer no names of their own.
PLUGIN_PACKAGES = ("ddlx.traces",)


def test_every_package_states_its_public_face() -> None:
    """Each package's __init__ has a docstring and an __all__ whose every name can be imported."""
    for package in _packages():
        module = importlib.import_module(package)
        assert (module.__doc__ or "").strip(), f"{package} has no docstring"
        public = getattr(module, "__all__", None)
        if package in PLUGIN_PACKAGES:
            continue
        assert public, f"{package} does not state __all__"
        for name in public:
            assert not isinstance(getattr(module, name), types.ModuleType), f"{package}.{name} is a module"
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        importlib.import_module("ddlx.datasets").nonexistent
