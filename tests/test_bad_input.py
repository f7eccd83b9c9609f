"""Bad input: one `Error:` line naming file, line or field and what was expected; exit 1; no
traceback; the previous catalog untouched; no staging folders left behind."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from tests.conftest import PAI_FIXTURE, assert_clean_failure, write_pai_release


def _job_rows(*extra: str) -> bytes:
    return ("\n".join(PAI_FIXTURE["pai_job_table"] + list(extra)) + "\n").encode()




@pytest.fixture
def ingested(cli, pai_release: Path, home: Path) -> tuple[Path, bytes, list[str]]:
    """A data home that already holds a good ingest: (home, catalog bytes, store folder names)."""
    assert cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home).code == 0
    store = home / "store" / "pai"
    return home, (home / "catalog.duckdb").read_bytes(), sorted(p.name for p in store.iterdir())


def _assert_untouched(ingested: tuple[Path, bytes, list[str]]) -> None:
    home, catalog_bytes, versions = ingested
    assert (home / "catalog.duckdb").read_bytes() == catalog_bytes
    assert sorted(p.name for p in (home / "store" / "pai").iterdir()) == versions


@pytest.mark.parametrize("name, rows, needles", [
    ("wrong column count", _job_rows("j6,inst6,u1,Terminated,1.0"),
     ["pai_job_table.csv", "line 6", "found 5 fields; expected 6"]),
    ("text in a numeric column", _job_rows("j6,inst6,u1,Terminated,soon,7.0"),
     ["pai_job_table.csv", "line 6", "field 'start_time'", "'soon'", "expected a number"]),
    ("unknown status", _job_rows("j6,inst6,u1,Exploded,1.0,2.0"),
     ["line 6", "field 'status'", "expected one of Terminated, Failed, Running, Waiting"]),
    ("non-UTF-8 byte", _job_rows() + b"j6,inst6,u\xff1,Terminated,1.0,2.0\n",
     ["pai_job_table.csv", "line 6", "not valid UTF-8"]),
    ("empty file", b"", ["pai_job_table.csv", "file is empty", "expected headerless CSV"]),
])
def test_bad_csv_content(cli, tmp_path: Path, ingested, name: str, rows: bytes, needles: list[str]) -> None:
    release = write_pai_release(tmp_path / "bad", overrides={"pai_job_table": rows})
    result = cli("datasets", "ingest", "pai", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, *needles)
    _assert_untouched(ingested)


def test_bad_rows_within_allowance_are_rejected_and_reported(cli, tmp_path: Path, home: Path) -> None:
    release = write_pai_release(tmp_path / "bad", overrides={
        "pai_job_table": _job_rows("j6,inst6,u1,Terminated,soon,7.0", "j7,inst7,u1,Terminated,1.0")})
    result = cli("datasets", "ingest", "pai", "--from", release, "--data-home", home, "--max-rejected-rows", "2")
    assert result.code == 0, result.err
    info = cli("datasets", "info", "pai", "--data-home", home)
    assert "rejected rows" in info.out and "line 6" in info.out and "line 7" in info.out
    from ddlx.datasets.catalog import read_registrations

    entry = read_registrations(home)["pai"].manifest["inputs"]["pai_job_table"]
    assert (entry["rows"], entry["rejected_rows"]) == (5, 2)


def test_truncated_archive(cli, tmp_path: Path, ingested) -> None:
    release = write_pai_release(tmp_path / "bad")
    big = ("\n".join(PAI_FIXTURE["pai_instance_table"] * 2000) + "\n").encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("pai_instance_table.csv")
        info.size = len(big)
        tar.addfile(info, io.BytesIO(big))
    data = buffer.getvalue()
    (release / "pai_instance_table.tar.gz").write_bytes(data[: len(data) // 2])
    result = cli("datasets", "ingest", "pai", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, "pai_instance_table.tar.gz", "truncated or corrupt")
    _assert_untouched(ingested)


def test_not_a_gzip_archive(cli, tmp_path: Path, ingested) -> None:
    release = write_pai_release(tmp_path / "bad")
    (release / "pai_task_table.tar.gz").write_bytes(gzip.compress(b"plain text, not a tar"))
    result = cli("datasets", "ingest", "pai", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, "pai_task_table.tar.gz")
    _assert_untouched(ingested)


def test_folder_missing_tables(cli, tmp_path: Path, ingested) -> None:
    release = write_pai_release(tmp_path / "bad")
    (release / "pai_sensor_table.tar.gz").unlink()
    (release / "pai_machine_metric.tar.gz").unlink()
    result = cli("datasets", "ingest", "pai", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, "missing table files", "pai_sensor_table.csv or pai_sensor_table.tar.gz",
                          "pai_machine_metric")
    _assert_untouched(ingested)


def test_missing_folder_and_unknown_names(cli, tmp_path: Path, home: Path) -> None:
    assert_clean_failure(cli("datasets", "ingest", "pai", "--from", tmp_path / "nope", "--data-home", home),
                          "nope", "does not exist")
    # a name ddlx does not know is a mistake in the command line: exit code 2, as for an unknown option
    assert_clean_failure(cli("datasets", "ingest", "philly2", "--from", tmp_path, "--data-home", home),
                          "unknown trace 'philly2'", "pai", code=2)
    assert_clean_failure(cli("datasets", "ingest", "pai", "--from", tmp_path, "--table", "pai_x",
                              "--data-home", home), "unknown table 'pai_x'", code=2)
    assert_clean_failure(cli("datasets", "download", "philly2", "--data-home", home), "unknown trace", code=2)
    assert_clean_failure(cli("analyze", "pai-trace", "-m", "nope", "--data-home", home), "unknown analysis module",
                         code=2)
    assert_clean_failure(cli("sql", "SELECT 1", "--data-home", home), "no catalog")
    assert_clean_failure(cli("datasets", "info", "pai", "--data-home", home), "not ingested")


def test_users_files_are_not_modified(cli, pai_release: Path, home: Path) -> None:
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in pai_release.iterdir()}
    assert cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home).code == 0
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in pai_release.iterdir()}
    assert before == after
