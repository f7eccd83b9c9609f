"""Everything ddlx knows about one trace lives in its folder, `traces/<trace>/` (and the folders
of the formats published with it, `formats/<format>/`).

No module outside that folder names a trace: not its registry name, not its label, not a raw
table of it (`<folder>_...`). Analysis reads canonical views and asks whether one is present;
what only one trace's records allow is declared by that trace (`analyses.py`). The names come
from the registry, so a new trace is covered as soon as it is registered.
"""

from __future__ import annotations

import re
from pathlib import Path

from ddlx.datasets.plugins import TRACES, format_plugins, trace_plugins

REPO = Path(__file__).resolve().parent.parent

#: The trace folders (`ddlx.traces.<folder>`).
FOLDERS = [plugin.package.rpartition(".")[2] for plugin in trace_plugins()]

#: Folders of the repository that are not the installed package, or that may name traces: the
#: trace folders and the folders of the formats published with a trace's tools.
NOT_SCANNED = ("tests", "benchmarks", "docs", "build", ".venv", "traces",
               *(plugin.package.replace("ddlx.", "").replace(".", "/") for plugin in format_plugins() if plugin.trace))

#: Phrases that name a simulator's input format, not a trace: the simulator published with the
#: PAI release (`pai-sim`) and the Helios/Lucid schedulers' priority list.
SIMULATOR_FORMATS = ("pai-sim", "PAI_SIM", "PAI v2020 release", "PAI v2020 simulator", "Helios/Lucid-style")


def _words() -> set[str]:
    """Every word that names a registered trace: parts of its name and folder, and its label's
    words that no other use shares (e.g. `v2023`, not `Alibaba`)."""
    words = {part for name in TRACES for part in re.split(r"[-_]", name)}
    words |= {part for folder in FOLDERS for part in folder.split("_")}
    return {w.lower() for w in words}


def _offences(root: Path = REPO) -> list[str]:
    word = re.compile(r"\b(" + "|".join(sorted(_words())) + r")\b", re.IGNORECASE)
    table = re.compile(r"\b(" + "|".join(sorted(FOLDERS)) + r")_[a-z]")
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if any(relative == f or relative.startswith(f + "/") for f in NOT_SCANNED) or "/." in "/" + relative:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            cleaned = line
            for phrase in SIMULATOR_FORMATS:
                cleaned = cleaned.replace(phrase, "")
            if word.search(cleaned) or table.search(cleaned) or re.search(r"ctx\.trace\s*(==|!=|in\b)", cleaned):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_no_module_outside_the_trace_folders_names_a_trace() -> None:
    offences = _offences()
    assert not offences, "modules outside traces/ name a trace:\n" + "\n".join(offences)


def test_the_check_sees_a_trace_name(tmp_path: Path) -> None:
    """The check is not blind: a module that names a trace, its table or branches on the trace is
    caught, and the trace folders and tests are not scanned."""
    name = next(iter(TRACES))
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "probe.py").write_text(
        f'TABLE = "{FOLDERS[0]}_job_table"\nif ctx.trace == "x":\n    pass\n"""Reads the {name.upper()} log."""\n')
    (tmp_path / "traces" / FOLDERS[0]).mkdir(parents=True)
    (tmp_path / "traces" / FOLDERS[0] / "reader.py").write_text(f'TABLE = "{FOLDERS[0]}_job_table"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(f'TRACE = "{name}"\n')
    offences = _offences(tmp_path)
    assert [o.split(":")[:2] for o in offences] == [["analysis/probe.py", "1"], ["analysis/probe.py", "2"],
                                                      ["analysis/probe.py", "4"]]
