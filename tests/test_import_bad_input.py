"""`ddlx datasets import` with bad input: one `Error:` line naming the file, the line or column and
what was expected; exit 1 (2 for a malformed option); no traceback; the catalog unchanged."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure, write_pai_release

GOOD = "id,submit,duration,gpus,status\nj1,1000,60,1,COMPLETED\nj2,2000,30,2,Failed\nj3,3000,10,4,Killed\n"
MAPPING = "job_id=id,submit=submit,duration=duration,gpus=gpus,state=status"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, dict[str, list[str]]]:
    """A data home holding the PAI fixture and one good import: (home, catalog bytes, store folders).

    Shared by the tests of this module: each one fails to import and checks it is still as it was.
    """
    from ddlx.datasets.importers import import_dataset
    from ddlx.datasets.ingest import ingest

    root = tmp_path_factory.mktemp("imported")
    home = root / "home"
    ingest("pai", write_pai_release(root / "pai"), home)
    good = root / "good.csv"
    good.write_text(GOOD)
    import_dataset("mine", good, home, mapping=MAPPING)
    return home, (home / "catalog.duckdb").read_bytes(), _store(home)


def _store(home: Path) -> dict[str, list[str]]:
    return {p.name: sorted(q.name for q in p.iterdir()) for p in sorted((home / "store").iterdir())}


def _assert_untouched(imported) -> None:
    home, catalog_bytes, store = imported
    assert (home / "catalog.duckdb").read_bytes() == catalog_bytes
    assert _store(home) == store




def _run(cli, imported, source: Path, *options: str):
    return cli("datasets", "import", "mine", "--from", source, *options, "--data-home", imported[0])


BAD_CSV_CASES = [
    ("mapped column missing", GOOD, ["--map", "job_id=id,submit=submitted,duration=duration,gpus=num_gpu"],
     ["bad.csv", "mapping submit=submitted, gpus=num_gpu: no such column",
      "the file has the columns: id, submit, duration, gpus, status"]),
    ("text in a number column", GOOD.replace("j2,2000,30,2,", "j2,2000,30,two,"), ["--map", MAPPING],
     ["bad.csv", "line 3", "field 'gpus'", "cannot read 'two'", "expected a number"]),
    ("unknown state", GOOD.replace("Killed", "EXPLODED"), ["--map", MAPPING],
     ["bad.csv", "line 4", "field 'status'", "unknown state 'EXPLODED'", "cancelled"]),
    ("unreadable date-time", "submit,duration,gpus\n2024-01-01 10:00:00,5,1\nyesterday,5,1\n",
     ["--map", "submit=submit,duration=duration,gpus=gpus", "--time-unit", "datetime"],
     ["bad.csv", "line 3", "field 'submit'", "cannot read 'yesterday' as a date-time"]),
    ("zone abbreviation is not a zone", "submit,duration,gpus\n2017-10-03 00:08:00 PDT,5,1\n",
     ["--map", "submit=submit,duration=duration,gpus=gpus", "--time-unit", "datetime"],
     ["line 2", "cannot read '2017-10-03 00:08:00 PDT' as a date-time"]),
    ("empty file", "", ["--map", MAPPING], ["bad.csv", "file is empty"]),
    ("windows line endings, bad number", GOOD.replace("\n", "\r\n").replace(",60,", ",sixty,"),
     ["--map", MAPPING], ["bad.csv", "line 2", "field 'duration'", "'sixty'"]),
    ("header names a column twice", "id,submit,submit,duration,gpus\nj,1,2,3,4\n", ["--map", MAPPING],
     ["bad.csv", "line 1", "'submit' twice"]),
]


@pytest.mark.parametrize("name, text, options, needles", BAD_CSV_CASES, ids=[case[0] for case in BAD_CSV_CASES])
def test_bad_csv(cli, tmp_path: Path, imported, name: str, text: str, options: list[str], needles: list[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text, newline="")
    assert_clean_failure(_run(cli, imported, bad, *options), *needles)
    _assert_untouched(imported)


def test_non_utf8_file(cli, tmp_path: Path, imported) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,sub\xffmit,duration,gpus\n")
    assert_clean_failure(_run(cli, imported, bad, "--map", MAPPING), "bad.csv", "line 1", "not valid UTF-8")
    _assert_untouched(imported)


def test_unreadable_parquet_and_text_in_a_parquet_number_column(cli, tmp_path: Path, imported) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    garbage = tmp_path / "jobs.parquet"
    garbage.write_bytes(b"PAR1 this is not really parquet")
    assert_clean_failure(_run(cli, imported, garbage, "--map", MAPPING), "jobs.parquet", "cannot be read as Parquet")
    texty = tmp_path / "texty.parquet"
    pq.write_table(pa.table({"submit": [1.0, 2.0], "duration": [3.0, 4.0], "gpus": ["1", "two"]}), texty)
    assert_clean_failure(_run(cli, imported, texty, "--map", "submit=submit,duration=duration,gpus=gpus"),
                          "texty.parquet", "field 'gpus'", "row 2", "cannot read 'two'")
    _assert_untouched(imported)


def test_missing_corrupt_and_empty_inputs(cli, tmp_path: Path, imported) -> None:
    assert_clean_failure(_run(cli, imported, tmp_path / "nope.csv", "--map", MAPPING), "nope.csv", "does not exist")
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        payload = (GOOD * 3000).encode()
        info = tarfile.TarInfo("c1.csv")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(data.getvalue()[: len(data.getvalue()) // 2])
    assert_clean_failure(_run(cli, imported, truncated, "--map", MAPPING), "cut.tar.gz", "truncated or corrupt")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("no tables here\n")
    assert_clean_failure(_run(cli, imported, empty, "--map", MAPPING), "empty", "holds no CSV or Parquet file")
    _assert_untouched(imported)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can read any file")
def test_file_without_read_permission(cli, tmp_path: Path, imported) -> None:
    locked = tmp_path / "locked.csv"
    locked.write_text(GOOD)
    locked.chmod(0)
    try:
        assert_clean_failure(_run(cli, imported, locked, "--map", MAPPING), "locked.csv", "cannot be read")
    finally:
        locked.chmod(0o644)
    _assert_untouched(imported)


@pytest.mark.parametrize("name", ["pai", "pai_v2023", "acme", "Mine", "2023-jobs"])
def test_names_that_cannot_be_imported(cli, tmp_path: Path, imported, name: str) -> None:
    good = tmp_path / "good.csv"
    good.write_text(GOOD)
    result = cli("datasets", "import", name, "--from", good, "--map", MAPPING, "--data-home", imported[0])
    message = assert_clean_failure(result, repr(name), code=2)
    if name.lower() == name and name[0].isalpha():
        assert "clashes with the registered trace" in message
    _assert_untouched(imported)


@pytest.mark.parametrize("options, needles", [
    (["--map", "foo"], ["--map", "'foo' is not KEY=COLUMN"]),
    (["--map", "submit=a,gpus=b,duration=c,colour=d"], ["--map", "unknown key 'colour'"]),
    (["--map", "submit=a,duration=c"], ["--map", "missing required mapping: gpus"]),
    (["--map", MAPPING, "--time-unit", "fortnights"], ["--time-unit", "unknown time unit 'fortnights'"]),
    (["--map", MAPPING, "--tz", "Mars/Olympus"], ["--tz", "unknown time zone 'Mars/Olympus'"]),
    (["--map", MAPPING, "--origin", "last tuesday"], ["--origin", "'last tuesday' is not a date-time"]),
    (["--preset", "lsf"], ["--preset", "unknown preset 'lsf'"]),
    ([], ["--map", "no column mapping"]),
])
def test_malformed_options_are_usage_errors(cli, tmp_path: Path, imported, options: list[str],
                                             needles: list[str]) -> None:
    good = tmp_path / "good.csv"
    good.write_text(GOOD)
    result = _run(cli, imported, good, *options)
    assert result.code == 2, (result.code, result.err)
    assert "Traceback" not in result.err
    flat = " ".join(result.err.replace("│", " ").split())
    for needle in needles:
        assert needle in flat, (needle, flat)
    _assert_untouched(imported)


def test_windows_line_endings_read_like_unix_ones(cli, tmp_path: Path) -> None:
    rows = {}
    for name, text in (("unix", GOOD), ("windows", GOOD.replace("\n", "\r\n"))):
        source = tmp_path / f"{name}.csv"
        source.write_bytes(text.encode())
        home = tmp_path / f"home-{name}"
        result = cli("datasets", "import", "mine", "--from", source, "--map", MAPPING, "--data-home", home)
        assert result.code == 0, result.err
        query = cli("sql", "SELECT job_id, num_gpus, run_s, raw_state FROM jobs ORDER BY job_id",
                    "--format", "csv", "--data-home", home)
        rows[name] = query.out
    assert rows["windows"] == rows["unix"]
    assert rows["unix"].splitlines()[1:] == ["j1,1.0,60.0,COMPLETED", "j2,2.0,30.0,Failed", "j3,4.0,10.0,Killed"]
