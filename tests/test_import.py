"""`ddlx datasets import`: real ITP and Philly-derived tables, a hand-written Slurm export, Parquet,
folders and archives, re-import, and the imported rows in the catalog next to other traces.

Expected numbers are computed here with independent readers (tarfile + csv, zoneinfo) or derived
by hand from the fixtures written below.
"""

from __future__ import annotations

import csv
import io
import tarfile
import zipfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets import catalog
from ddlx.datasets.importers import build_spec, import_dataset, parse_mapping
from ddlx.datasets.ingest import ingest
from ddlx.errors import UnknownDatasetError
from tests.conftest import FULL_TRACES, real_file, real_itp_archive, write_pai_release

POLLUX = real_file("philly/pollux_philly_jobs.csv")


def _epoch(text: str, zone: str) -> float:
    """Unix seconds of a wall-clock `YYYY-MM-DD[T ]HH:MM:SS` in `zone` (read with zoneinfo)."""
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


def _rows(home: Path, sql: str) -> list[dict]:
    return catalog.query(home, sql).to_dicts()


# -- real files ------------------------------------------------------------------------------

def test_itp_preset_reads_every_cluster_of_the_real_archive(cli, home: Path, tmp_path: Path) -> None:
    """The ten clusters of the real archive; in a fresh clone, the archive of the one excerpt cluster
    (read from one file, a dataset is one cluster named after the dataset)."""
    archive = real_itp_archive(tmp_path / "itp")
    per_cluster: Counter[str] = Counter()
    gpu_seconds = 0.0
    first_submit: dict[str, float] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".csv"):
                continue
            cluster = Path(member.name).stem
            reader = csv.DictReader(io.TextIOWrapper(tar.extractfile(member), encoding="utf-8"))
            for row in reader:
                per_cluster[cluster] += 1
                gpu_seconds += float(row["num_gpu"]) * float(row["duration"])
                first_submit[cluster] = min(first_submit.get(cluster, float("inf")), float(row["submission_time"]))

    assert len(per_cluster) == (10 if FULL_TRACES else 1)
    result = cli("datasets", "import", "itp", "--from", archive, "--preset", "itp", "--data-home", home)
    assert result.code == 0, result.err
    total = sum(per_cluster.values())
    assert f"itp_jobs: {total:,} rows" in result.out

    found = _rows(home, """SELECT cluster, count(*) AS jobs, min(epoch(submit_time)) AS first_submit,
                                  count(queue_s) AS with_queue, count(*) FILTER (start_time <> submit_time) AS moved
                           FROM jobs WHERE trace = 'itp' GROUP BY cluster""")
    if len(per_cluster) == 1:
        per_cluster = Counter({"itp": total})
        first_submit = {"itp": min(first_submit.values())}
    assert {r["cluster"]: r["jobs"] for r in found} == dict(per_cluster)
    # Seconds from the trace start, read from the default origin (the Unix epoch).
    assert {r["cluster"]: r["first_submit"] for r in found} == first_submit
    assert all(r["with_queue"] == 0 and r["moved"] == 0 for r in found)  # no start: start = submit, queue unknown
    gpu_hours = catalog.query(home, "SELECT sum(num_gpus * run_s) / 3600 FROM jobs WHERE trace = 'itp'").item()
    assert gpu_hours == pytest.approx(gpu_seconds / 3600, rel=1e-12)
    manifest = catalog.read_registrations(home)["itp"].manifest
    assert manifest["title"] == "Imported: itp (preset itp)"
    assert manifest["adapter_options"]["mapping"]["gpus"] == "num_gpu"


def test_philly_derived_table_through_an_explicit_mapping(cli, home: Path) -> None:
    zone = "America/Los_Angeles"
    with open(POLLUX, newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["timestamp"]]
    per_vc = Counter(r["cluster"] for r in rows)
    gpu_hours = sum(float(r["num_gpus"]) * float(r["duration"]) for r in rows) / 3600
    first = rows[0]
    same_as_first = sum(1 for r in rows if (r["timestamp"], r["duration"], r["cluster"]) ==
                        (first["timestamp"], first["duration"], first["cluster"]))

    result = cli("datasets", "import", "philly-pollux", "--from", POLLUX,
                 "--map", "submit=timestamp,duration=duration,gpus=num_gpus,vc=cluster",
                 "--time-unit", "datetime", "--tz", zone, "--data-home", home)
    assert result.code == 0, result.err

    found = _rows(home, "SELECT vc, count(*) AS jobs FROM jobs WHERE trace = 'philly-pollux' GROUP BY vc")
    assert sum(r["jobs"] for r in found) == len(rows)
    assert len(found) == len(per_vc)
    assert {r["vc"]: r["jobs"] for r in found} == dict(per_vc)
    measured = catalog.query(home, "SELECT sum(num_gpus * run_s) / 3600 FROM philly_pollux_jobs").item()
    assert measured == pytest.approx(gpu_hours, rel=1e-12)
    # The first row's wall clock in Pacific time, converted to UTC with zoneinfo.
    expected = _epoch(first["timestamp"], zone)
    matching = catalog.query(home, f"""
        SELECT count(*) FROM philly_pollux_jobs
        WHERE epoch(submit_time) = {expected} AND run_s = {float(first['duration'])} AND vc = '{first['cluster']}'
    """).item()
    assert matching == same_as_first >= 1
    assert catalog.query(home, "SELECT DISTINCT source_tz FROM philly_pollux_jobs").item() == zone
    # The raw table keeps the columns as read, plus where each row came from.
    raw = _rows(home, "SELECT * FROM philly_pollux_job_table LIMIT 1")[0]
    assert set(raw) == {"timestamp", "duration", "num_gpus", "gpu_time", "cluster", "source_file", "source_cluster"}
    assert (raw["source_file"], raw["source_cluster"]) == ("pollux_philly_jobs.csv", "pollux_philly_jobs")


# -- Slurm -----------------------------------------------------------------------------------

SACCT = """\
JobID|JobName|User|Account|Partition|State|Submit|Start|End|AllocTRES|ReqTRES
1001|train_bert|alice|nlp|gpu|COMPLETED|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T12:05:00|billing=16,cpu=16,gres/gpu=4,mem=128G,node=1|billing=16,cpu=16,gres/gpu=4,mem=128G,node=1
1001.batch|batch||nlp||COMPLETED|2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T12:05:00|cpu=16,gres/gpu=4,mem=128G,node=1|
1001.extern|extern||nlp||COMPLETED|2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T12:05:00|billing=16,cpu=16,gres/gpu=4,mem=128G,node=1|
1002_1|sweep|bob|cv|gpu|FAILED|2024-03-01T11:00:00|2024-03-01T11:00:20|2024-03-01T11:10:20|cpu=4,gres/gpu:a100=1,mem=32000M,node=1|cpu=4,gres/gpu:a100=1,mem=32000M,node=1
1002_2|sweep|bob|cv|gpu|TIMEOUT|2024-03-01T11:00:00|2024-03-01T11:01:00|2024-03-01T15:01:00|cpu=4,gres/gpu:a100=1,mem=32000M,node=1|cpu=4,gres/gpu:a100=1,mem=32000M,node=1
1002_2.0|python||cv||CANCELLED|2024-03-01T11:01:05|2024-03-01T11:01:05|2024-03-01T15:01:00|cpu=4,gres/gpu:a100=1,mem=32000M,node=1|
1003|pretrain|carol|nlp|gpu-large|CANCELLED by 0|2024-03-30T23:00:00|2024-03-31T01:30:00|2024-03-31T03:30:00|\
cpu=128,gres/gpu:a100=8,gres/gpu:h100=4,mem=1T,node=2|cpu=128,gres/gpu=12,mem=1T,node=2
1004|waiting|dave|cv|gpu|PENDING|2024-03-31T09:00:00|Unknown|Unknown||billing=2,cpu=2,gres/gpu=1,mem=8G,node=1
1005|notebook|alice|nlp|cpu|RUNNING|2024-03-31T08:00:00|2024-03-31T08:00:10|Unknown|cpu=8,mem=512000K,node=1|cpu=8,mem=500M,node=1
1006|cxl|bob|cv|gpu|CANCELLED by 1234|2024-03-02T07:00:00|None|2024-03-02T07:30:00||cpu=1,gres/gpu=1,mem=4G,node=1
1007|oom|carol|nlp|gpu|OUT_OF_MEMORY|2024-03-02T08:00:00|2024-03-02T08:00:00|2024-03-02T08:20:00|cpu=8,gres/gpu=2,gres/gpu:v100=2,mem=64G,node=1|cpu=8,gres/gpu:v100=2,mem=64G,node=1
"""


def test_slurm_preset_on_a_sacct_export(cli, tmp_path: Path, home: Path) -> None:
    export = tmp_path / "sacct.txt"
    export.write_text(SACCT)
    zone = "Europe/Berlin"  # CET (UTC+1) until 2024-03-31 02:00, then CEST (UTC+2)
    result = cli("datasets", "import", "hpc", "--from", export, "--preset", "slurm", "--tz", zone,
                 "--data-home", home)
    assert result.code == 0, result.err
    assert "hpc_job_table: 11 rows" in result.out and "hpc_jobs: 8 rows" in result.out  # 3 steps dropped
    rows = _rows(home, "SELECT *, epoch(submit_time) AS submit_s FROM jobs WHERE trace = 'hpc'")
    jobs = {r["job_id"]: r for r in rows}
    assert sorted(jobs) == ["1001", "1002_1", "1002_2", "1003", "1004", "1005", "1006", "1007"]

    j = jobs["1001"]  # untyped gres/gpu=4; queue 10:00 -> 10:05, run 10:05 -> 12:05
    assert (j["num_gpus"], j["num_cpus"], j["mem_gb"], j["num_instances"], j["gpu_type"]) == (4, 16, 128, 1, None)
    assert (j["queue_s"], j["run_s"], j["state"], j["raw_state"]) == (300, 7200, "completed", "COMPLETED")
    # One input file: the cluster is the dataset, not the file name (sacct).
    assert (j["user"], j["vc"], j["job_name"], j["cluster"]) == ("alice", "gpu", "train_bert", "hpc")
    assert j["submit_s"] == _epoch("2024-03-01T10:00:00", zone)
    j = jobs["1002_1"]  # array task; typed gres/gpu:a100=1; 32000 MB = 31.25 GB
    assert (j["num_gpus"], j["gpu_type"], j["mem_gb"], j["queue_s"], j["run_s"], j["state"]) == (
        1, "a100", 32000 / 1024, 20, 600, "failed")
    j = jobs["1002_2"]
    assert (j["state"], j["raw_state"], j["run_s"]) == ("failed", "TIMEOUT", 4 * 3600)
    j = jobs["1003"]  # two typed entries summed (8 + 4); runs across the switch to summer time
    assert (j["num_gpus"], j["gpu_type"], j["num_cpus"], j["mem_gb"], j["num_instances"]) == (12, "a100", 128, 1024, 2)
    assert j["queue_s"] == _epoch("2024-03-31T01:30:00", zone) - _epoch("2024-03-30T23:00:00", zone) == 9000
    assert j["run_s"] == _epoch("2024-03-31T03:30:00", zone) - _epoch("2024-03-31T01:30:00", zone) == 3600
    assert (j["state"], j["raw_state"]) == ("cancelled", "CANCELLED by 0")
    j = jobs["1004"]  # pending: no allocation, so the request (ReqTRES) gives the resources
    assert (j["state"], j["start_time"], j["end_time"], j["queue_s"], j["run_s"]) == ("pending", None, None, None, None)
    assert (j["num_gpus"], j["num_cpus"], j["mem_gb"]) == (1, 2, 8)
    assert j["submit_s"] == _epoch("2024-03-31T09:00:00", zone)  # summer time: UTC+2
    j = jobs["1005"]  # CPU-only and still running; 512000 KB
    assert (j["num_gpus"], j["gpu_type"], j["mem_gb"], j["queue_s"], j["end_time"], j["run_s"], j["state"]) == (
        0, None, 512000 / 1024 / 1024, 10, None, None, "running")
    j = jobs["1006"]  # cancelled before it started: start None, so no end either
    assert (j["state"], j["raw_state"], j["start_time"], j["end_time"], j["num_gpus"]) == (
        "cancelled", "CANCELLED by 1234", None, None, 1)
    j = jobs["1007"]  # untyped count (2) wins over the typed duplicate of the same GPUs
    assert (j["num_gpus"], j["gpu_type"], j["state"], j["queue_s"], j["run_s"]) == (2, "v100", "failed", 0, 1200)
    assert not any(j["fractional_gpu"] for j in jobs.values())

    manifest = catalog.read_registrations(home)["hpc"].manifest
    checks = {c["check"]: c["rows"] for c in manifest["validation"]}
    assert checks["job step rows (job id with '.'), not counted as jobs"] == 3
    assert checks["never started (no start time)"] == 2


# -- other input shapes ----------------------------------------------------------------------

def test_parquet_input_with_millisecond_times_and_an_origin(home: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "jobs.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "submitted_ms": pa.array([0, 90_000, 3_600_500], pa.int64()),
        "runtime_ms": pa.array([1_000, 60_000, 250], pa.int64()),
        "gpus": pa.array([0.5, 2.0, None], pa.float64()),
        "status": pa.array(["Pass", "Killed", "failed"]),
    }), path)
    result = import_dataset("pq", path, home, time_unit="ms", tz="Asia/Shanghai", origin="2020-01-01 00:00:00",
                            mapping={"job_id": "id", "submit": "submitted_ms", "duration": "runtime_ms",
                                     "gpus": "gpus", "state": "status"})
    assert result.tables == {"pq_job_table": 3, "pq_jobs": 3}
    jobs = {r["job_id"]: r for r in _rows(home, "SELECT *, epoch(submit_time) AS s, epoch(end_time) AS e FROM pq_jobs")}
    origin = _epoch("2020-01-01T00:00:00", "Asia/Shanghai")  # 2019-12-31 16:00 UTC
    assert [jobs[k]["s"] for k in ("1", "2", "3")] == [origin, origin + 90, origin + 3600.5]
    assert [jobs[k]["run_s"] for k in ("1", "2", "3")] == [1.0, 60.0, 0.25]
    assert jobs["3"]["e"] == origin + 3600.5 + 0.25
    assert [jobs[k]["state"] for k in ("1", "2", "3")] == ["completed", "cancelled", "failed"]
    assert [jobs[k]["fractional_gpu"] for k in ("1", "2", "3")] == [True, False, False]
    assert jobs["3"]["num_gpus"] is None
    checks = {c["check"]: c["rows"] for c in catalog.read_registrations(home)["pq"].manifest["validation"]}
    assert checks["missing GPU count"] == 1


def _write_folder(folder: Path) -> Path:
    """Two clusters with start and end columns in different column orders; one row carries its own offset."""
    folder.mkdir(parents=True)
    (folder / "east.csv").write_text(
        "id,submit,start,end,gpus,queue\n"
        "e1,2024-01-01 10:00:00,2024-01-01 10:00:30,2024-01-01 11:00:30,8,prod\n"
        "e2,2024-01-01T12:00:00+05:00,2024-01-01T07:10:00Z,,1,dev\n"
    )
    (folder / "sub").mkdir()
    (folder / "sub" / "west.csv").write_text(
        "id,gpus,submit,start,end,queue,extra\n"
        "w1,0.25,2024-01-02 00:00:00,2024-01-02 00:00:00,2024-01-02 00:01:40,,x\n"
    )
    (folder / "README.md").write_text("not a table\n")
    (folder / ".hidden.csv").write_text("not,read\n")
    return folder


def test_folder_input_labels_each_file_as_a_cluster(home: Path, tmp_path: Path) -> None:
    folder = _write_folder(tmp_path / "tables")
    mapping = "job_id=id,submit=submit,start=start,end=end,gpus=gpus,vc=queue"
    result = import_dataset("lab", folder, home, mapping=mapping, time_unit="datetime", tz="Europe/Paris")
    assert result.tables == {"lab_job_table": 3, "lab_jobs": 3}
    jobs = {r["job_id"]: r for r in _rows(home, "SELECT *, epoch(submit_time) AS s FROM lab_jobs")}
    assert {k: j["cluster"] for k, j in jobs.items()} == {"e1": "east", "e2": "east", "w1": "west"}
    assert jobs["e1"]["s"] == _epoch("2024-01-01T10:00:00", "Europe/Paris")
    assert (jobs["e1"]["queue_s"], jobs["e1"]["run_s"], jobs["e1"]["vc"]) == (30, 3600, "prod")
    # An offset wins over --tz: 12:00+05:00 is 07:00 UTC; the start 07:10Z is 600 s later.
    assert jobs["e2"]["s"] == datetime(2024, 1, 1, 7, 0, tzinfo=timezone.utc).timestamp()
    assert (jobs["e2"]["queue_s"], jobs["e2"]["end_time"], jobs["e2"]["run_s"]) == (600, None, None)
    assert (jobs["w1"]["num_gpus"], jobs["w1"]["fractional_gpu"], jobs["w1"]["run_s"], jobs["w1"]["vc"]) == (
        0.25, True, 100, None)
    raw = _rows(home, "SELECT source_file, extra FROM lab_job_table ORDER BY source_file")
    assert [(r["source_file"], r["extra"]) for r in raw] == [
        ("east.csv", None), ("east.csv", None), ("sub/west.csv", "x")]


def test_zip_archive_members_are_clusters_unless_a_cluster_column_is_mapped(home: Path, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/alpha.csv", "sub,dur,g,site\n100,10,1,s1\n200,20,2,s2\n")
        zf.writestr("data/beta.csv", "sub,dur,g,site\n300,30,4,s1\n")
        zf.writestr("data/NOTES", "ignored\n")
    import_dataset("zipped", archive, home, mapping="submit=sub,duration=dur,gpus=g")
    counts = {r["cluster"]: r["n"] for r in _rows(home, "SELECT cluster, count(*) AS n FROM zipped_jobs GROUP BY 1")}
    assert counts == {"alpha": 2, "beta": 1}
    import_dataset("zipped", archive, home, mapping="submit=sub,duration=dur,gpus=g,cluster=site")
    counts = {r["cluster"]: r["n"] for r in _rows(home, "SELECT cluster, count(*) AS n FROM zipped_jobs GROUP BY 1")}
    assert counts == {"s1": 2, "s2": 1}
    gpu_seconds = catalog.query(home, "SELECT sum(num_gpus * run_s) FROM zipped_jobs").item()
    assert gpu_seconds == 1 * 10 + 2 * 20 + 4 * 30


# -- re-import, catalog, info ----------------------------------------------------------------

def test_reimport_is_idempotent_and_a_new_spec_imports_again(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("submit,duration,gpus\n2024-06-01 12:00:00,60,1\n")
    options = dict(mapping="submit=submit,duration=duration,gpus=gpus", time_unit="datetime")
    first = import_dataset("t", path, home, tz="UTC", **options)
    again = import_dataset("t", path, home, tz="UTC", **options)
    assert (first.skipped, again.skipped, again.store_dir) == (False, True, first.store_dir)
    shifted = import_dataset("t", path, home, tz="Asia/Tokyo", **options)
    assert not shifted.skipped and not first.store_dir.exists()  # the old version is replaced
    instant = catalog.query(home, "SELECT epoch(submit_time) FROM t_jobs").item()
    assert instant == datetime(2024, 6, 1, 3, 0, tzinfo=timezone.utc).timestamp()  # 12:00 in UTC+9


def test_imported_rows_join_the_jobs_view_next_to_other_traces(cli, home: Path, tmp_path: Path) -> None:
    ingest("pai", write_pai_release(tmp_path / "pai"), home)  # the five-job PAI fixture
    path = tmp_path / "mine.csv"
    path.write_text("job,submit_s,end_s,gpus,who\na,0,100,1,u1\nb,50,80,2,u2\n")
    result = cli("datasets", "import", "mine", "--from", path, "--map",
                 "job_id=job,submit=submit_s,end=end_s,gpus=gpus,user=who", "--data-home", home)
    assert result.code == 0, result.err
    counts = {r["trace"]: r["n"] for r in _rows(home, "SELECT trace, count(*) AS n FROM jobs GROUP BY trace")}
    assert counts == {"pai": 5, "mine": 2}
    mine = _rows(home, "SELECT job_id, \"user\", run_s, queue_s FROM jobs WHERE trace = 'mine' ORDER BY job_id")
    # No start column: start = submit, so run_s = end - submit and the queue is unknown.
    assert [(r["job_id"], r["user"], r["run_s"], r["queue_s"]) for r in mine] == [("a", "u1", 100, None),
                                                                                ("b", "u2", 30, None)]

    info = cli("datasets", "info", "mine", "--data-home", home)
    assert info.code == 0, info.err
    assert "Imported: mine (mapped columns)" in info.out
    assert "mine_job_table" in info.out and "mine_jobs" in info.out and "missing submit time" in info.out
    assert "GPU-hours" in info.out


def test_options_are_checked_before_reading(home: Path) -> None:
    assert parse_mapping(" submit = a , gpus=b,,duration=c ") == {"submit": "a", "gpus": "b", "duration": "c"}
    spec = build_spec("x-1", preset="slurm", mapping="gpus=NGPU")
    assert (spec.mapping["gpus"], spec.mapping["tres"], spec.delimiter, spec.time_unit) == (
        "NGPU", "AllocTRES", "|", "datetime")
    assert (spec.raw_table, spec.jobs_table) == ("x_1_job_table", "x_1_jobs")
    for name in ("pai", "pai_v2023", "Pai", "9lives", "a b"):
        with pytest.raises(UnknownDatasetError):
            build_spec(name, preset="itp")


def test_a_repeated_wall_clock_hour_reads_as_its_first_occurrence(home: Path, tmp_path: Path) -> None:
    """ddlx's one convention for ingest and import: 01:30 on 2017-11-05 in America/Los_Angeles
    (the fall-back hour happens twice) is the first occurrence, 01:30 PDT = 08:30 UTC, as the
    Philly ingest reads its job log and Python's fold=0 reads it (DuckDB alone takes 09:30 UTC).
    Times outside that hour are unambiguous: 00:30 PDT and 02:30 PST."""
    (tmp_path / "dst.csv").write_text("id,submit,start,end,gpus\n"
                                      "j1,2017-11-05 01:30:00,2017-11-05 02:30:00,2017-11-05 03:00:00,1\n"
                                      "j2,2017-11-05 00:30:00,2017-11-05 01:59:59,2017-11-05 03:00:00,1\n")
    import_dataset("dst", tmp_path / "dst.csv", home, mapping="job_id=id,submit=submit,start=start,end=end,gpus=gpus",
                   time_unit="datetime", tz="America/Los_Angeles")
    rows = {r["job_id"]: r for r in _rows(home, "SELECT job_id, epoch(submit_time) AS s, epoch(start_time) AS b "
                                                "FROM dst_jobs")}
    zone = ZoneInfo("America/Los_Angeles")
    first = datetime(2017, 11, 5, 1, 30, tzinfo=zone, fold=0).timestamp()
    assert first == datetime(2017, 11, 5, 8, 30, tzinfo=timezone.utc).timestamp()
    assert (rows["j1"]["s"], rows["j1"]["b"]) == (first, datetime(2017, 11, 5, 10, 30, tzinfo=timezone.utc).timestamp())
    assert rows["j2"]["s"] == datetime(2017, 11, 5, 7, 30, tzinfo=timezone.utc).timestamp()
    assert rows["j2"]["b"] == datetime(2017, 11, 5, 1, 59, 59, tzinfo=zone, fold=0).timestamp()


ITP_ROWS = "job_id,submission_time,duration,num_gpu\na,0,600,1\nb,90000,1200,2\nc,400000,60,8\n"


@pytest.mark.parametrize("options, wall_clock", [
    ({"preset": "itp"}, False),  # the preset says its times are offsets from the trace start
    ({"mapping": "job_id=job_id,submit=submission_time,duration=duration,gpus=num_gpu"}, False),  # 1970
    ({"mapping": "job_id=job_id,submit=submission_time,duration=duration,gpus=num_gpu",
      "origin": "2020-03-02 00:00:00"}, True),  # a stated origin makes them real instants
    ({"preset": "itp", "wall_clock": True}, True),  # told otherwise
])
def test_offset_times_have_no_hours_or_weekdays(tmp_path: Path, options: dict, wall_clock: bool) -> None:
    """Times that are offsets from an undisclosed start (the ITP preset, or numbers without an
    origin beginning in 1970) get no weekday, hour-of-day or hour-of-week results; with an origin
    (2020-03-02 is a Monday) or when told, they do."""
    (tmp_path / "cluster1.csv").write_text(ITP_ROWS)
    home = tmp_path / "home"
    import_dataset("offsets", tmp_path / "cluster1.csv", home, **options)
    result = run_analysis(home, "offsets", ["utilization", "time_patterns"])
    found = {f.name for m in result.modules for f in m.findings}
    assert ("weekend_submission_share" in found) is wall_clock and ("busiest_submit_hour" in found) is wall_clock
    skipped = {n.what for m in result.modules for n in m.not_applicable}
    hour_parts = {"allocated GPUs by hour of the week", "submissions by hour of week"}
    assert hour_parts <= skipped if not wall_clock else not (hour_parts & skipped)
    if wall_clock and "origin" in options:
        # a Monday 00:00, a Tuesday 01:00 and a Friday 15:06:40: no weekend submission.
        assert result.module("time_patterns").finding("weekend_submission_share").value == 0


def test_no_wall_clock_from_the_command_line(cli, tmp_path: Path) -> None:
    """`--no-wall-clock` on date-time strings: stored with the spec, and the analysis then has no
    weekday or hour results although the times read as 2024 dates."""
    (tmp_path / "lab.csv").write_text("id,submit,duration,gpus\n"
                                      "a,2024-03-02 10:00:00,60,1\nb,2024-03-04 11:00:00,60,1\n")
    home = tmp_path / "home"
    result = cli("datasets", "import", "lab", "--from", str(tmp_path / "lab.csv"), "--time-unit", "datetime",
                 "--map", "job_id=id,submit=submit,duration=duration,gpus=gpus", "--no-wall-clock",
                 "--data-home", str(home))
    assert result.code == 0, result.err
    assert catalog.read_registrations(home)["lab"].manifest["adapter_options"]["wall_clock"] is False
    findings = {f.name for f in run_analysis(home, "lab", ["time_patterns"]).module("time_patterns").findings}
    assert "weekend_submission_share" not in findings
