"""Bad Philly input, through the CLI: one `Error:` line naming the file and the line, job or field
and what was expected; exit 1; no traceback; the previous catalog and store left as they were."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure
from tests.test_philly_ingest import CPU_ROWS, GPU_HEADER, GPU_ROWS, JOBS, MACHINE_ROWS, write_philly_release


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, list[str]]:
    """A data home holding a good Philly ingest: (home, catalog bytes, store version folders).

    Shared by the tests of this module: each one checks that its failed ingest left it unchanged.
    """
    from ddlx.datasets.ingest import ingest

    base = tmp_path_factory.mktemp("philly-bad")
    home = base / "home"
    ingest("philly", write_philly_release(base / "good"), home)
    store = home / "store" / "philly"
    return home, (home / "catalog.duckdb").read_bytes(), sorted(p.name for p in store.iterdir())


def _assert_untouched(ingested: tuple[Path, bytes, list[str]]) -> None:
    home, catalog_bytes, versions = ingested
    assert (home / "catalog.duckdb").read_bytes() == catalog_bytes
    assert sorted(p.name for p in (home / "store" / "philly").iterdir()) == versions


def _ingest_bad(cli, tmp_path: Path, ingested, overrides: dict[str, bytes], archive: bool = False):
    release = write_philly_release(tmp_path / "bad", archive=archive, overrides=overrides)
    return cli("datasets", "ingest", "philly", "--from", release, "--data-home", ingested[0])


def _jobs_with(change) -> bytes:
    jobs = copy.deepcopy(JOBS)
    change({job["jobid"]: job for job in jobs})
    return json.dumps(jobs, indent=4).encode()


def _csv(header: str, rows: list[str]) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def test_malformed_json_names_the_line(cli, tmp_path: Path, ingested) -> None:
    text = json.dumps(JOBS, indent=4)
    broken = text.replace('"user": "u3"', '"user" "u3"')
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if '"user" "u3"' in text)
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": broken.encode()})
    assert_clean_failure(result, "cluster_job_log", f"line {line}", "malformed JSON", "expected one JSON array")
    _assert_untouched(ingested)


def test_truncated_json_array(cli, tmp_path: Path, ingested) -> None:
    text = json.dumps(JOBS, indent=4)
    cut = text[: text.index('"jobid": "app_05"')]  # cut inside the object of job app_05
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": cut.encode()}, archive=True)
    assert_clean_failure(result, "trace-data.tar.gz:cluster_job_log", f"line {cut.count(chr(10)) + 1}",
                          "malformed JSON")
    _assert_untouched(ingested)


def test_attempt_ending_before_it_starts(cli, tmp_path: Path, ingested) -> None:
    def change(jobs: dict) -> None:
        jobs["app_05"]["attempts"][1]["end_time"] = "2017-10-10 09:59:59"

    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": _jobs_with(change)})
    assert_clean_failure(result, "cluster_job_log", "job app_05, attempt 2", "2017-10-10 09:59:59",
                          "expected an attempt to end after it starts")
    _assert_untouched(ingested)


def test_unknown_job_status(cli, tmp_path: Path, ingested) -> None:
    def change(jobs: dict) -> None:
        jobs["app_03"]["status"] = "Exploded"

    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": _jobs_with(change)})
    assert_clean_failure(result, "cluster_job_log", "job app_03", "'Exploded'", "field 'status'",
                          "expected one of Pass, Killed, Failed")
    _assert_untouched(ingested)


@pytest.mark.parametrize("change, needles", [
    (lambda jobs: jobs["app_04"]["attempts"][0].update(start_time="yesterday"),
     ["job app_04, attempt 1", "start_time 'yesterday'", "expected 'YYYY-MM-DD HH:MM:SS'"]),
    (lambda jobs: jobs["app_02"].update(attempts="none"),
     ["job app_02", "attempts is a string", "expected an array of attempts"]),
    (lambda jobs: jobs["app_01"]["attempts"][0].update(detail={"ip": "m8a"}),
     ["job app_01, attempt 1", "detail is an object", "expected an array"]),
    (lambda jobs: jobs["app_06"].pop("jobid"), ["a job has no jobid", "u4"]),
])
def test_job_log_of_the_wrong_shape(cli, tmp_path: Path, ingested, change, needles: list[str]) -> None:
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": _jobs_with(change)})
    assert_clean_failure(result, "cluster_job_log", *needles)
    _assert_untouched(ingested)


def test_empty_job_log(cli, tmp_path: Path, ingested) -> None:
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_job_log": b"\n"})
    assert_clean_failure(result, "cluster_job_log", "file is empty", "expected one JSON array")
    _assert_untouched(ingested)


def test_utilisation_row_with_a_wrong_field_count(cli, tmp_path: Path, ingested) -> None:
    rows = GPU_ROWS[:3] + ["2017-11-05 01:31:00 PDT,m2a,10.5,NA,,,,,,"] + GPU_ROWS[3:]  # no trailing comma
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_gpu_util": _csv(GPU_HEADER, rows)})
    assert_clean_failure(result, "cluster_gpu_util", "line 5", "found 10 fields; expected 11")
    _assert_untouched(ingested)


@pytest.mark.parametrize("file, header, rows, line, needles", [
    ("cluster_gpu_util", GPU_HEADER, GPU_ROWS + ["2017-11-05 01:30:00 EST,m2a,10.5,NA,,,,,,,"], 8,
     ["field 'time'", "zone suffix 'EST'", "expected PDT or PST"]),
    ("cluster_cpu_util", "time,machine_id,cpu_util", ["2017-11-27 00:04:00 UTC,m9,12.5"] + CPU_ROWS, 2,
     ["field 'time'", "zone suffix 'UTC'", "expected PDT or PST"]),
    ("cluster_cpu_util", "time,machine_id,cpu_util", CPU_ROWS + ["2017-11-27 00:04:00,m9,12.5"], 5,
     ["field 'time'", "cannot read time", "expected 'YYYY-MM-DD HH:MM:SS PDT'"]),
    ("cluster_gpu_util", GPU_HEADER, GPU_ROWS[:1] + ["2017-10-03 00:08:00 PDT,m8b,60.8,busy,,,,,,,"], 3,
     ["field 'gpu1_util'", "cannot read 'busy'", "expected a number (or 'NA' or nothing when missing)"]),
    ("cluster_cpu_util", "time,machine_id,cpu_util", CPU_ROWS[:2] + ["2017-11-27 00:04:00 PST,m9,12.5%"], 4,
     ["field 'cpu_util'", "cannot read '12.5%'", "expected a number"]),
    ("cluster_mem_util", "time,machine_id,mem_total,mem_free", ["2017-11-27 00:04:00 PST,m9,264116568.0,n/a"], 2,
     ["field 'mem_free'", "cannot read 'n/a'", "expected a number"]),
    ("cluster_gpu_util", GPU_HEADER, GPU_ROWS[:2] + ["2017-10-03 00:08:00 PDT,m8b,1,2,3,4,5,6,7,8,9"], 4,
     ["unexpected value '9' after gpu7_util", "expected the row to end with a comma"]),
])
def test_unreadable_utilisation_values_name_the_line(cli, tmp_path: Path, ingested, file: str, header: str,
                                                     rows: list[str], line: int, needles: list[str]) -> None:
    result = _ingest_bad(cli, tmp_path, ingested, {file: _csv(header, rows)})
    assert_clean_failure(result, file, f"line {line}", *needles)
    _assert_untouched(ingested)


def test_wrong_header(cli, tmp_path: Path, ingested) -> None:
    result = _ingest_bad(cli, tmp_path, ingested, {"cluster_cpu_util": _csv("time,machineId,cpu", CPU_ROWS)})
    assert_clean_failure(result, "cluster_cpu_util", "line 1", "header is 'time,machineId,cpu'",
                          "expected 'time,machine_id,cpu_util'")
    _assert_untouched(ingested)


def test_machine_list_with_a_word_for_a_number(cli, tmp_path: Path, ingested) -> None:
    rows = MACHINE_ROWS + ["m1,eight, 12GB"]
    result = _ingest_bad(cli, tmp_path, ingested,
                         {"cluster_machine_list": _csv("machineId, number of GPUs, single GPU mem", rows)})
    assert_clean_failure(result, "cluster_machine_list", "line 6", "field 'number of GPUs'", "'eight'",
                          "expected a whole number")
    _assert_untouched(ingested)


def test_machine_list_with_an_unreadable_memory_size(cli, tmp_path: Path, ingested) -> None:
    rows = MACHINE_ROWS[:1] + ["m1,2, 12 MB"] + MACHINE_ROWS[1:]
    result = _ingest_bad(cli, tmp_path, ingested,
                         {"cluster_machine_list": _csv("machineId, number of GPUs, single GPU mem", rows)})
    assert_clean_failure(result, "cluster_machine_list", "line 3", "field 'single GPU mem'", "' 12 MB'",
                          "expected a size like '24GB'")
    _assert_untouched(ingested)


def test_missing_file(cli, tmp_path: Path, ingested) -> None:
    release = write_philly_release(tmp_path / "bad")
    (release / "cluster_cpu_util").unlink()
    result = cli("datasets", "ingest", "philly", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, str(release), "missing table files", "cluster_cpu_util or trace-data.tar.gz")
    _assert_untouched(ingested)


def test_archive_without_a_member(cli, tmp_path: Path, ingested) -> None:
    import io
    import tarfile

    release = tmp_path / "bad"
    release.mkdir()
    with tarfile.open(release / "trace-data.tar.gz", "w:gz") as tar:
        data = b"machineId, number of GPUs, single GPU mem\nm1,2, 12GB\n"
        info = tarfile.TarInfo("trace-data/cluster_machine_list")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    result = cli("datasets", "ingest", "philly", "--from", release, "--data-home", ingested[0])
    assert_clean_failure(result, "trace-data.tar.gz", "archive has no member", "cluster_job_log")
    _assert_untouched(ingested)


def test_bad_rows_within_allowance_are_skipped_and_reported(cli, tmp_path: Path, home: Path) -> None:
    rows = GPU_ROWS + ["2017-11-05 01:31:00 PDT,m2a,10.5,NA", "2017-11-05 01:32:00 PDT,m2a"]
    release = write_philly_release(tmp_path / "bad", overrides={"cluster_gpu_util": _csv(GPU_HEADER, rows)})
    result = cli("datasets", "ingest", "philly", "--from", release, "--data-home", home, "--max-rejected-rows", "2")
    assert result.code == 0, result.err
    from ddlx.datasets.catalog import read_registrations

    entry = read_registrations(home)["philly"].manifest["inputs"]["philly_gpu_util"]
    assert (entry["rows"], entry["rejected_rows"]) == (len(GPU_ROWS), 2)
    assert "line 8: found 4 fields; expected 11" in entry["rejected_examples"][0]
