"""The hand-written broken inputs of tests/data: each `<trace>-broken` folder fails to ingest with
exit 1 and one `Error:` line naming its file, line and field and what was expected, with no
traceback. The data home is left without a catalog or any half-written store, and the folder is
described in tests/data/README.md."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FULL_TRACES, SHARED_TRACES, assert_clean_failure, tree_digest

DATA = Path(__file__).resolve().parent / "data"
README = DATA / "README.md"


@dataclass(frozen=True)
class Defect:
    """The one defect planted in `tests/data/<trace>-broken`: the file (relative to the folder),
    its line, and the parts of the error line that say what was expected."""

    trace: str
    file: str
    line: int
    expected: tuple[str, ...]

    @property
    def folder(self) -> str:
        return f"{self.trace}-broken"


DEFECTS: tuple[Defect, ...] = (
    Defect("pai", "pai_job_table.csv", 2,
           ("field 'end_time'", "cannot read '2020-07-01 10:00:00'", "expected a number")),
    Defect("philly", "cluster_machine_list", 3,
           ("field 'number of GPUs'", "cannot read 'four'", "expected a whole number")),
    Defect("helios", "Venus/cluster_log.csv", 3,
           ("field 'start_time'", "cannot read '2020-06-09 20:05'",
            "expected a time written YYYY-MM-DD HH:MM:SS, seconds included")),
    Defect("pai-v2023", "openb_pod_list_default.csv", 3,
           ("field 'pod_phase'", "cannot read 'Completed'", "expected one of Running, Succeeded, Failed, Pending")),
    Defect("acme", "trace_seren.csv", 3,
           ("found 12 fields", "expected 13")),
)


def _broken_folders() -> list[str]:
    return sorted(path.name for path in DATA.glob("*-broken") if path.is_dir())


def _leftovers(home: Path) -> list[str]:
    """What an ingest left in `home` apart from its (empty) lock files: the catalog, store files,
    or staging folders, even empty ones."""
    return sorted(str(path.relative_to(home)) for path in home.rglob("*") if not path.name.endswith(".lock"))


@pytest.mark.parametrize("defect", DEFECTS, ids=lambda d: d.trace)
def test_broken_input_is_refused_cleanly(cli, tmp_path: Path, defect: Defect) -> None:
    source = tmp_path / defect.folder
    shutil.copytree(DATA / defect.folder, source)
    before = tree_digest(source)
    home = tmp_path / "home"

    result = cli("datasets", "ingest", defect.trace, "--from", source, "--data-home", home)

    error = assert_clean_failure(result, defect.file, f"line {defect.line}", *defect.expected, code=1)
    assert str(source) in error  # the file is named by its full path, as the user gave it
    assert not (home / "catalog.duckdb").exists()
    assert tree_digest(home) == {}
    assert _leftovers(home) == []
    assert tree_digest(source) == before  # ingest never modifies the user's files


def test_every_broken_folder_has_a_planted_defect() -> None:
    assert _broken_folders() == sorted(defect.folder for defect in DEFECTS)
    for defect in DEFECTS:
        target = DATA / defect.folder / defect.file
        assert target.is_file(), target
        assert len(target.read_text(encoding="utf-8").splitlines()) >= defect.line, target


def test_data_files_are_tiny_plain_files() -> None:
    files = [path for folder in _broken_folders() for path in (DATA / folder).rglob("*") if path.is_file()]
    assert files
    for path in files:
        assert path.stat().st_size < 2048, path
        assert not path.name.endswith((".gz", ".tar", ".zip")), path


def _readme_sections() -> dict[str, str]:
    """`## heading` -> the text under it, up to the next heading."""
    parts = re.split(r"^## +(.+?)\s*$", README.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_readme_describes_every_broken_folder() -> None:
    sections = _readme_sections()
    assert sorted(name for name in sections if name.endswith("-broken")) == _broken_folders()
    for defect in DEFECTS:
        text = " ".join(sections[defect.folder].split())
        assert "Defect:" in text, defect.folder
        assert f"`{defect.file}`, line {defect.line}" in text, defect.folder
        assert "Error: " in text, defect.folder
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "hand" in text and "$DDLX_SHARED_TRACES" in text and "../shared/traces" in text
    assert "Whole files are never committed" in text


# -- the excerpts of real traces (tests/data/real) --------------------------------------------------

REAL = DATA / "real"


def _excerpts() -> list[str]:
    """Every data file under tests/data/real, relative to it (the script that writes them aside)."""
    return sorted(str(path.relative_to(REAL)) for path in REAL.rglob("*")
                  if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts)


def _field(section: str, name: str) -> str:
    """The value of the README line `- <name>: value` in `section`."""
    found = re.search(rf"^- {re.escape(name)}: (.+)$", section, flags=re.MULTILINE)
    assert found, name
    return found.group(1).strip()


def _data_rows(path: Path) -> int:
    """Data rows of an excerpt: events of a JSON array, else non-blank lines less a header line
    (the headerless PAI table has none)."""
    data = path.read_bytes()
    if path.suffix == ".json":
        return len(json.loads(data))
    lines = [line for line in data.splitlines() if line.strip()]
    return len(lines) - (0 if path.name.startswith("pai_") else 1)


def _full_bytes(relative: str) -> bytes | None:
    """The full real file an excerpt was cut from, where ../shared/traces is present."""
    if not FULL_TRACES:
        return None
    if relative.startswith("itp-elasticflow/"):
        with tarfile.open(SHARED_TRACES / "itp-elasticflow" / "raw-traces.tar.gz") as archive:
            member = archive.extractfile(Path(relative).name)
            assert member is not None
            return member.read()
    return (SHARED_TRACES / relative).read_bytes()


def _make_excerpts():
    spec = importlib.util.spec_from_file_location("make_excerpts", REAL / "make_excerpts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_real_excerpt_is_described_with_rows_and_sha256() -> None:
    sections = _readme_sections()
    excerpts = _excerpts()
    assert len(excerpts) == 12
    assert sorted(name.removeprefix("real/") for name in sections if name.startswith("real/")) == excerpts
    for relative in excerpts:
        path, section = REAL / relative, sections[f"real/{relative}"]
        assert path.stat().st_size < 100_000, relative
        terms = ("CC-BY-4.0", "Apache-2.0", "MIT", "alibaba/clusterdata's")
        assert _field(section, "Terms").startswith(terms), relative
        assert "../shared/traces/" in _field(section, "Source") and _field(section, "Rows chosen"), relative
        rows = re.match(r"(\d+) \(the full file: ([\d,]+)\)\.$", _field(section, "Rows"))
        assert rows, relative
        assert int(rows.group(1)) == _data_rows(path), relative
        assert int(rows.group(1)) < int(rows.group(2).replace(",", "")), relative  # never a whole file
        assert _field(section, "Excerpt sha256") == f"`{hashlib.sha256(path.read_bytes()).hexdigest()}`", relative
        assert re.fullmatch(r"`[0-9a-f]{64}`", _field(section, "Full file sha256")), relative


@pytest.mark.skipif(not FULL_TRACES, reason="../shared/traces is not beside the repo")
def test_every_real_excerpt_is_the_selection_its_section_describes() -> None:
    """With the full files present: each full file has the sha256 and row count of its section, and
    the excerpt is exactly the rows the script selects from it (every k-th row; faults of every
    6th node)."""
    make = _make_excerpts()
    every = {relative: (header, k) for relative, header, k in make.CSV_EXCERPTS}
    every[f"itp-elasticflow/{make.ITP_MEMBER}"] = (True, make.ITP_EVERY)
    sections = _readme_sections()
    for relative in _excerpts():
        full, section = _full_bytes(relative), sections[f"real/{relative}"]
        assert full is not None
        assert _field(section, "Full file sha256") == f"`{hashlib.sha256(full).hexdigest()}`", relative
        if relative.endswith(".json"):
            events = json.loads(full)
            expected = make.fault_excerpt(full, make.FAULT_NODE_EVERY)
            full_rows = len(events)
        else:
            header, k = every[relative]
            expected = make.every_kth(full, header, k)
            full_rows = sum(1 for line in full.splitlines() if line.strip()) - (1 if header else 0)
        assert (REAL / relative).read_bytes() == expected, relative
        assert _field(section, "Rows").endswith(f"(the full file: {full_rows:,})."), relative


def test_real_fault_excerpt_keeps_each_fault_whole() -> None:
    """Every node's events of the fault excerpt alternate start, end, start, ... in time order, so
    each fault of the excerpt has its start and its end, as in the full trace."""
    events = json.loads((REAL / "stepfun-infinitehbd" / "fault_trace.json").read_bytes())
    by_node: dict[str, list[dict]] = {}
    for event in events:
        by_node.setdefault(event["node_id"], []).append(event)
    assert len(by_node) == 39
    for node_events in by_node.values():
        kinds = [e["event_type"] for e in node_events]
        assert kinds == ["fault_start", "fault_end"] * (len(kinds) // 2)
        times = [e["event_time"] for e in node_events]
        assert times == sorted(times)
    assert [e["event_time"] for e in events] == sorted(e["event_time"] for e in events)
    assert set(events[0]) == {"node_id", "event_time", "event_type", "fault_type"}
    assert set(events[0]["fault_type"]) == {"Level", "Class", "Desc"}
