"""The hand-written broken inputs of tests/data: each `<trace>-broken` folder fails to ingest with
exit 1 and one `Error:` line naming its file, line and field and what was expected, with no
traceback. The data home is left without a catalog or any half-written store, and the folder is
described in tests/data/README.md."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure, tree_digest

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
