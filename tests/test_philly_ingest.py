"""Ingest of a hand-written tiny Philly release (loose files and trace-data.tar.gz): stored rows,
UTC conversions across the 2017-11-05 DST change, canonical jobs, checks and figures; and the real
machine list read in place."""

from __future__ import annotations

import csv
import io
import json
import re
import tarfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from ddlx.traces.philly import reader as philly
from tests.conftest import real_file

PACIFIC = ZoneInfo("America/Los_Angeles")
GPUS = [f"gpu{i}" for i in range(8)]

# Seven jobs; every expected number below is worked out by hand from these rows.
#   app_01 Pass: 1 attempt, 8 GPUs on m8a.
#   app_02 Killed: attempt 1 2 GPUs on m2a; attempt 2 on m2a + m2b (4 GPUs) in the repeated hour
#          of 2017-11-05: start 01:50 (first occurrence, PDT), end 01:10 (must be the second, PST).
#   app_03 Failed: no attempt.
#   app_04 Pass: still running (end "None"), 4 GPUs on m8a.
#   app_05 Failed: attempt 1 without start (null) or end (""), no GPU; attempt 2 1 GPU on m2b.
#   app_06 Pass: submitted_time null; runs on m9, a machine missing from the machine list.
#   app_07 Killed: its attempt starts 10 s before its submission.
JOBS: list[dict] = [
    {"status": "Pass", "vc": "vcA", "jobid": "app_01", "user": "u1",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-09 06:53:12",
                   "detail": [{"ip": "m8a", "gpus": GPUS}]}]},
    {"status": "Killed", "vc": "vcA", "jobid": "app_02", "user": "u2",
     "submitted_time": "2017-11-04 22:59:00",
     "attempts": [{"start_time": "2017-11-04 23:00:00", "end_time": "2017-11-05 00:30:00",
                   "detail": [{"ip": "m2a", "gpus": ["gpu0", "gpu1"]}]},
                  {"start_time": "2017-11-05 01:50:00", "end_time": "2017-11-05 01:10:00",
                   "detail": [{"ip": "m2a", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2b", "gpus": ["gpu0", "gpu1"]}]}]},
    {"status": "Failed", "vc": "vcB", "jobid": "app_03", "user": "u1",
     "submitted_time": "2017-12-01 10:00:00", "attempts": []},
    {"status": "Pass", "vc": "vcB", "jobid": "app_04", "user": "u3",
     "submitted_time": "2017-12-22 02:00:00",
     "attempts": [{"start_time": "2017-12-22 03:00:00", "end_time": "None",
                   "detail": [{"ip": "m8a", "gpus": GPUS[:4]}]}]},
    {"status": "Failed", "vc": "vcA", "jobid": "app_05", "user": "u2",
     "submitted_time": "2017-10-10 09:00:00",
     "attempts": [{"start_time": None, "end_time": "", "detail": []},
                  {"start_time": "2017-10-10 10:00:00", "end_time": "2017-10-10 10:30:00",
                   "detail": [{"ip": "m2b", "gpus": ["gpu1"]}]}]},
    {"status": "Pass", "vc": "vcC", "jobid": "app_06", "user": "u4", "submitted_time": None,
     "attempts": [{"start_time": "2017-10-20 12:00:00", "end_time": "2017-10-20 13:00:00",
                   "detail": [{"ip": "m9", "gpus": ["gpu0", "gpu1"]}]}]},
    {"status": "Killed", "vc": "vcC", "jobid": "app_07", "user": "u4",
     "submitted_time": "2017-10-21 12:00:10",
     "attempts": [{"start_time": "2017-10-21 12:00:00", "end_time": "2017-10-21 12:05:00",
                   "detail": [{"ip": "m2a", "gpus": ["gpu0"]}]}]},
]

GPU_HEADER = "time,machineId," + ",".join(f"gpu{i}_util" for i in range(8))
GPU_ROWS = [
    "2017-11-05 01:30:00 PDT,m2a,10.5,NA,,,,,,,",
    "2017-11-05 01:30:00 PST,m2a,20.0,30.0,,,,,,,",
    "2017-11-05 01:30:00 PDT,m8a,1,2,3,4,5,6,7,8,",
    "2017-11-05 01:30:00 PST,m8a,NA,NA,NA,NA,NA,NA,NA,NA,",
    "2017-10-03 00:08:00 PDT,m8b,60.8,99.366666667,100.0,63.333333333,100.0,100.0,100.0,100.0,",
    "2017-12-01 10:00:00 PST,m9,100.5,,,,,,,,",
]
CPU_ROWS = [
    "2017-11-05 01:59:00 PDT,m2a,31.845",
    "2017-11-05 01:00:00 PST,m2a,NA",
    "2017-11-27 00:04:00 PST,m9,12.5",
]
MEM_ROWS = [
    "2017-10-03 00:06:00 PDT,m8a,528272672.0,2030730.6667",
    "2017-10-03 00:07:00 PDT,m8a,NA,NA",
]
# m8b is listed with 2 GPUs, but its utilisation rows show 8: the list under-counts it.
MACHINE_ROWS = ["m2a,2, 12GB", "m2b,2, 12GB", "m8a,8, 24GB", "m8b,2, 12GB"]


def release_files(overrides: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """The five release files of the tiny trace (name -> bytes), with some replaced."""
    files = {
        "cluster_job_log": json.dumps(JOBS, indent=4).encode(),
        "cluster_gpu_util": ("\n".join([GPU_HEADER, *GPU_ROWS]) + "\n").encode(),
        "cluster_cpu_util": ("\n".join(["time,machine_id,cpu_util", *CPU_ROWS]) + "\n").encode(),
        "cluster_mem_util": ("\n".join(["time,machine_id,mem_total,mem_free", *MEM_ROWS]) + "\n").encode(),
        "cluster_machine_list":
            ("\n".join(["machineId, number of GPUs, single GPU mem", *MACHINE_ROWS]) + "\n").encode(),
    }
    files.update(overrides or {})
    return files


def write_philly_release(folder: Path, archive: bool = False, overrides: dict[str, bytes] | None = None) -> Path:
    """Write the tiny release into `folder`: loose files, or `trace-data.tar.gz` with the files
    under `trace-data/` (as the official archive)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = release_files(overrides)
    if archive:
        with tarfile.open(folder / "trace-data.tar.gz", "w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(f"trace-data/{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    else:
        for name, data in files.items():
            (folder / name).write_bytes(data)
    return folder


def pacific(text: str, fold: int = 0) -> float:
    """Unix seconds of a Pacific wall-clock time; `fold=1` picks the second of a repeated hour."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=PACIFIC, fold=fold).timestamp()


def utc(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


@pytest.fixture(scope="module")
def philly_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the tiny release, ingested from loose files."""
    base = tmp_path_factory.mktemp("philly")
    ingest("philly", write_philly_release(base / "release"), base / "home")
    return base / "home"


def _rows(home: Path, sql: str) -> list[dict]:
    return catalog.query(home, sql).to_dicts()


def test_job_log_rows_and_nested_attempts(philly_home: Path) -> None:
    rows = {r["jobid"]: r for r in _rows(philly_home, "SELECT jobid, \"user\", vc, status, num_attempts, "
                                                       "epoch(submitted_time) AS submit_s, attempts "
                                                       "FROM philly_job_log")}
    assert sorted(rows) == [job["jobid"] for job in JOBS]
    assert {j: r["num_attempts"] for j, r in rows.items()} == {
        "app_01": 1, "app_02": 2, "app_03": 0, "app_04": 1, "app_05": 2, "app_06": 1, "app_07": 1}
    assert (rows["app_02"]["user"], rows["app_02"]["vc"], rows["app_02"]["status"]) == ("u2", "vcA", "Killed")
    assert rows["app_01"]["submit_s"] == pacific("2017-10-07 01:11:39") == utc("2017-10-07 08:11:39")
    assert rows["app_03"]["submit_s"] == pacific("2017-12-01 10:00:00") == utc("2017-12-01 18:00:00")
    assert rows["app_06"]["submit_s"] is None
    # Attempts keep the wall clock as read (no zone); "None", "" and null are all missing.
    second = rows["app_02"]["attempts"][1]
    assert second["start_time"] == datetime(2017, 11, 5, 1, 50) and second["end_time"] == datetime(2017, 11, 5, 1, 10)
    assert second["detail"] == [{"ip": "m2a", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2b", "gpus": ["gpu0", "gpu1"]}]
    assert rows["app_04"]["attempts"][0]["end_time"] is None
    assert (rows["app_05"]["attempts"][0]["start_time"], rows["app_05"]["attempts"][0]["end_time"]) == (None, None)


def test_attempts_in_utc_with_the_repeated_hour_resolved(philly_home: Path) -> None:
    rows = {(r["jobid"], r["attempt"]): r for r in _rows(philly_home, """
        SELECT jobid, attempt, is_last_attempt, running_at_trace_end, epoch(start_time) AS start_s,
               epoch(end_time) AS end_s, duration_s, num_machines, num_gpus, machines FROM philly_attempts""")}
    assert len(rows) == 1 + 2 + 1 + 2 + 1 + 1
    first, second = rows[("app_02", 1)], rows[("app_02", 2)]
    assert (first["start_s"], first["end_s"]) == (pacific("2017-11-04 23:00:00"), pacific("2017-11-05 00:30:00"))
    # 01:50 is read as the first 01:50 (PDT, 08:50 UTC); 01:10 read the same way would precede it,
    # so it is the second 01:10 (PST, 09:10 UTC).
    assert second["start_s"] == pacific("2017-11-05 01:50:00", fold=0) == utc("2017-11-05 08:50:00")
    assert second["end_s"] == pacific("2017-11-05 01:10:00", fold=1) == utc("2017-11-05 09:10:00")
    assert second["duration_s"] == 20 * 60
    assert (second["num_machines"], second["num_gpus"], second["machines"]) == (2, 4, ["m2a", "m2b"])
    assert (first["num_machines"], first["num_gpus"], first["is_last_attempt"]) == (1, 2, False)
    assert second["is_last_attempt"] and not second["running_at_trace_end"]
    assert rows[("app_04", 1)]["running_at_trace_end"] and rows[("app_04", 1)]["end_s"] is None
    assert rows[("app_01", 1)]["num_gpus"] == 8
    empty = rows[("app_05", 1)]
    assert (empty["start_s"], empty["end_s"], empty["num_gpus"], empty["num_machines"]) == (None, None, 0, 0)
    assert not empty["running_at_trace_end"]


def test_canonical_jobs_hand_derived(philly_home: Path) -> None:
    jobs = {r["job_id"]: r for r in _rows(philly_home, """
        SELECT *, epoch(submit_time) AS submit_s, epoch(start_time) AS start_s, epoch(end_time) AS end_s
        FROM jobs WHERE trace = 'philly'""")}
    assert len(jobs) == 7
    j1, j2, j3, j4, j5, j6, j7 = (jobs[f"app_0{i}"] for i in range(1, 8))
    # app_01: submitted 01:11:39, started 01:12:09 (queue 30 s), ended 2 days 5:41:03 after the start.
    assert (j1["queue_s"], j1["run_s"]) == (30, 2 * 86400 + 5 * 3600 + 41 * 60 + 3)
    assert (j1["num_gpus"], j1["num_instances"], j1["state"], j1["raw_state"]) == (8, 1, "completed", "Pass")
    # app_02: 23:00 PDT start, 09:10 UTC end (PST reading) -> 06:00 -> 09:10 UTC = 3 h 10 min;
    # GPUs of the largest attempt (attempt 2: 2 + 2 GPUs on 2 machines).
    assert j2["start_s"] == utc("2017-11-05 06:00:00") and j2["end_s"] == utc("2017-11-05 09:10:00")
    assert (j2["queue_s"], j2["run_s"]) == (60, 3 * 3600 + 10 * 60)
    assert (j2["num_gpus"], j2["num_instances"], j2["state"]) == (4, 2, "cancelled")
    # app_03: no attempt, kept with 0 GPUs.
    assert (j3["start_time"], j3["end_time"], j3["queue_s"], j3["run_s"]) == (None, None, None, None)
    assert (j3["num_gpus"], j3["num_instances"], j3["state"]) == (0, 0, "failed")
    # app_04: its last attempt has no end (not logged): no end, no run time, and it keeps its final
    # status Pass; submitted 02:00 PST, started 03:00 PST.
    assert (j4["queue_s"], j4["end_time"], j4["run_s"]) == (3600, None, None)
    assert (j4["num_gpus"], j4["state"], j4["raw_state"]) == (4, "completed", "Pass")
    # app_05: the first attempt has no start, the second ran 10:00-10:30 (submitted 09:00): the
    # job started at 10:00 (before, a first attempt without a start left the job without one).
    assert (j5["start_s"], j5["queue_s"], j5["run_s"]) == (pacific("2017-10-10 10:00:00"), 3600, 1800)
    assert j5["end_s"] == pacific("2017-10-10 10:30:00") and (j5["num_gpus"], j5["num_instances"]) == (1, 1)
    assert (j6["submit_time"], j6["queue_s"], j6["run_s"], j6["num_gpus"]) == (None, None, 3600, 2)
    assert (j7["queue_s"], j7["run_s"], j7["state"]) == (-10, 300, "cancelled")
    for job in jobs.values():
        assert (job["cluster"], job["source_tz"], job["num_tasks"], job["fractional_gpu"]) == (
            "philly", "America/Los_Angeles", 1, False)
        assert (job["num_cpus"], job["mem_gb"], job["gpu_type"]) == (None, None, None)


def test_utilisation_rows_in_utc(philly_home: Path) -> None:
    gpu = _rows(philly_home, "SELECT epoch(time) AS t, machine_id, gpu0_util, gpu1_util, gpu7_util, gpus_reporting "
                             "FROM philly_gpu_util ORDER BY t, machine_id")
    assert [(r["t"], r["machine_id"]) for r in gpu] == [
        (utc("2017-10-03 07:08:00"), "m8b"),
        (utc("2017-11-05 08:30:00"), "m2a"), (utc("2017-11-05 08:30:00"), "m8a"),
        (utc("2017-11-05 09:30:00"), "m2a"), (utc("2017-11-05 09:30:00"), "m8a"),
        (utc("2017-12-01 18:00:00"), "m9"),
    ]
    # The suffix tells the two 01:30 apart: PDT is the first (fold 0), PST the second (fold 1).
    assert (gpu[1]["t"] == pacific("2017-11-05 01:30:00", fold=0)
            and gpu[3]["t"] == pacific("2017-11-05 01:30:00", fold=1))
    # GPU fields with a number: NA (offline) and empty (no such GPU) both count as none.
    assert [r["gpus_reporting"] for r in gpu] == [8, 1, 8, 2, 0, 1]
    assert (gpu[1]["gpu0_util"], gpu[1]["gpu1_util"], gpu[1]["gpu7_util"]) == (10.5, None, None)
    assert (gpu[0]["gpu1_util"], gpu[2]["gpu7_util"]) == (99.366666667, 8.0)
    cpu = _rows(philly_home, "SELECT epoch(time) AS t, machine_id, cpu_util FROM philly_cpu_util ORDER BY t")
    assert [(r["t"], r["cpu_util"]) for r in cpu] == [
        (pacific("2017-11-05 01:59:00", fold=0), 31.845), (pacific("2017-11-05 01:00:00", fold=1), None),
        (utc("2017-11-27 08:04:00"), 12.5)]
    mem = _rows(philly_home, "SELECT mem_total, mem_free FROM philly_mem_util ORDER BY time")
    assert mem == [{"mem_total": 528272672.0, "mem_free": 2030730.6667}, {"mem_total": None, "mem_free": None}]
    machines = _rows(philly_home, "SELECT * FROM philly_machine_list ORDER BY machine_id")
    assert [(m["machine_id"], m["num_gpus"], m["gpu_mem_gb"]) for m in machines] == [
        ("m2a", 2, 12.0), ("m2b", 2, 12.0), ("m8a", 8, 24.0), ("m8b", 2, 12.0)]


def test_validation_checks_and_figures(philly_home: Path) -> None:
    manifest = catalog.read_registrations(philly_home)["philly"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    expected = {
        ("philly_job_log", "jobs with no attempt (kept in philly_jobs: no start, 0 GPUs)"): 1,  # app_03
        ("philly_job_log", "jobs without submitted_time"): 1,  # app_06
        ("philly_job_log", "jobs whose jobid appears more than once"): 0,
        ("philly_attempts", "attempts without start_time"): 1,  # app_05 #1
        ("philly_attempts", "attempts without end_time"): 2,  # app_04 #1, app_05 #1
        ("philly_attempts", "attempts without end_time that are not the job's last (logging gaps)"): 1,
        ("philly_attempts", "attempts listing no GPU"): 1,
        ("philly_attempts", "attempts with a time in the repeated hour of a DST change (2017-11-05 01:xx)"): 1,
        ("philly_attempts", "attempts starting before the previous attempt of the job ended"): 0,
        ("philly_attempts", "attempts on a machine missing from the machine list"): 1,  # app_06 on m9
        ("philly_jobs", "jobs whose first attempt has no start (their start is a later attempt's)"): 1,  # app_05
        ("philly_jobs", "jobs whose last attempt has no end (not logged: the job keeps its final status)"): 1,  # app_04
        ("philly_jobs", "jobs with negative queueing delay (first attempt before submission)"): 1,  # app_07
        ("philly_jobs", "jobs with negative run time (last attempt ends before the first starts)"): 0,
        ("philly_jobs", "jobs whose attempts differ in GPU count (num_gpus: the largest)"): 2,  # app_02, app_05
        ("philly_gpu_util", "rows where no GPU reports a number (all NA or empty)"): 1,  # m8a PST
        # m2a PDT (1 of 2 listed) and m8a PST (0 of 8); m8b reports more than listed; m9 is not listed.
        ("philly_gpu_util",
         "rows where fewer GPUs report a number than the machine list gives (some NA, i.e. offline)"): 2,
        ("philly_gpu_util", "rows with a GPU above 100 %"): 1,  # m9 100.5
        ("philly_gpu_util", "rows for machines not in the machine list"): 1,
        ("philly_cpu_util", "rows with cpu_util NA (offline)"): 1,
        ("philly_cpu_util", "rows for machines not in the machine list"): 1,
        ("philly_mem_util", "rows with mem_total or mem_free NA (offline)"): 1,
        ("philly_mem_util", "rows with mem_free above mem_total"): 0,
        ("philly_machine_list", "machines listed more than once"): 0,
    }
    assert {key: found.get(key) for key in expected} == expected
    figures = {f["figure"]: f["value"] for f in manifest["figures"]}
    assert figures["GPUs in the machine list (sum of num_gpus)"] == 2 + 2 + 8 + 2
    assert figures["machines in the machine list"] == 4
    # Most GPU fields with a number in one row: m2a 2 (10.5,NA then 20,30), m8a 8 (then all NA), m8b 8, m9 1.
    assert (figures["GPUs seen in the utilisation log (per machine, most GPUs with a number in one row)"]
            == 2 + 8 + 8 + 1)
    assert figures["machines in the utilisation log"] == 4
    assert figures["GPUs seen in the utilisation log minus GPUs in the machine list"] == 19 - 14
    assert figures["machines with more GPUs in the utilisation log than in the machine list"] == 1  # m8b
    assert figures["machines in the utilisation log missing from the machine list"] == 1  # m9
    assert (figures["virtual clusters"], figures["users"]) == (3, 4)
    assert manifest["rows"] == {"philly_job_log": 7, "philly_gpu_util": 6, "philly_cpu_util": 3, "philly_mem_util": 2,
                                "philly_machine_list": 4, "philly_attempts": 8, "philly_jobs": 7}


def test_archive_with_trace_data_folder_ingests_like_loose_files(philly_home: Path, tmp_path: Path) -> None:
    release = write_philly_release(tmp_path / "tgz", archive=True)
    for source in (release, release / "trace-data.tar.gz"):
        home = tmp_path / f"home-{source.name}"
        result = ingest("philly", source, home)
        assert result.tables["philly_jobs"] == 7
        for table in ("jobs", "philly_attempts", "philly_gpu_util", "philly_machine_list"):
            order = "ORDER BY ALL"
            assert catalog.query(home, f"SELECT * FROM {table} {order}").equals(
                catalog.query(philly_home, f"SELECT * FROM {table} {order}")), table
        files = catalog.read_registrations(home)["philly"].manifest["inputs"]["philly_job_log"]["files"]
        assert files[0]["member"] == "cluster_job_log" and files[0]["official_sha256"] is not None


def test_loose_files_in_a_trace_data_subfolder(tmp_path: Path) -> None:
    write_philly_release(tmp_path / "release" / "trace-data")
    result = ingest("philly", tmp_path / "release", tmp_path / "home")
    assert result.tables["philly_gpu_util"] == 6 and result.tables["philly_jobs"] == 7


def test_real_machine_list_read_in_place(tmp_path: Path) -> None:
    """The official machine list: machines and GPUs per GPU-memory size, as the csv module reads them."""
    raw = real_file("philly/cluster_machine_list")
    folder = raw.parent
    machines: Counter[float] = Counter()
    gpus: Counter[float] = Counter()
    with open(raw, newline="") as handle:
        reader = csv.reader(handle, skipinitialspace=True)
        assert next(reader) == ["machineId", "number of GPUs", "single GPU mem"]
        for machine_id, num_gpus, memory in reader:
            size = float(memory.removesuffix("GB"))
            machines[size] += 1
            gpus[size] += int(num_gpus)
    result = ingest("philly", folder, tmp_path / "home", tables=["philly_machine_list"])
    assert result.tables == {"philly_machine_list": sum(machines.values())}
    stored = _rows(tmp_path / "home", "SELECT gpu_mem_gb, count(*) AS machines, sum(num_gpus) AS gpus "
                                      "FROM philly_machine_list GROUP BY ALL")
    assert {r["gpu_mem_gb"]: (r["machines"], r["gpus"]) for r in stored} == {
        size: (machines[size], gpus[size]) for size in machines}
    figures = {f["figure"]: f["value"]
               for f in catalog.read_registrations(tmp_path / "home")["philly"].manifest["figures"]}
    assert figures["GPUs in the machine list (sum of num_gpus)"] == sum(gpus.values())


def test_the_doc_page_names_every_figure_as_the_report_does() -> None:
    """docs/traces/philly.md lists each figure of the validation report under its own name and
    says what "GPUs seen" counts as the code does (`NA` is not a number; the page used to say
    `NA` was included)."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "traces" / "philly.md").read_text()
    figures = philly.figures({"philly_machine_list", "philly_gpu_util", "philly_job_log"})
    rows = re.finditer(r"^\| `(philly_\w+)` \| ([^|]+?) \| \w+ \|$", doc, flags=re.M)
    listed = {(m.group(1), m.group(2)) for m in rows}
    assert listed == {(f.table, f.name) for f in figures}
    assert "`NA` included" not in doc and "a GPU that is `NA`\nin every row of its machine is not seen" in doc

