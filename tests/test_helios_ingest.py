"""Ingest of a hand-built Helios release (zip and unpacked folders), its bad inputs, and the real
Venus and Earth `cluster_gpu_number.csv` files."""

from __future__ import annotations

import csv
import zipfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, SHARED_TRACES, assert_clean_failure, real_file

SHANGHAI = ZoneInfo("Asia/Shanghai")
LOG_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
REAL_HELIOS = real_file("helios")

# Three clusters; Uranus has a job log but no gpu_number file. Hand-derived facts per job
# (times are Asia/Shanghai wall clock; queue = start - submit, run = end - start):
#   1001 COMPLETED  queue 30, run 7200, 8 GPUs.
#   1002 COMPLETED  CPU-only; submitted 07:00 local = 23:00 UTC the day before; queue 0, run 5.
#   1003 TIMEOUT    -> failed; 2 nodes, 16 GPUs; queue 1800, run 86400.
#   1004 CANCELLED  never started (empty start): canonical end, queue and run NULL.
#   2001 NODE_FAIL  -> failed; crosses local midnight; queue 10, run 600.
#   2002 FAILED     given duration 61 and queue 59, but the times say 60 and 60.
#   2003 CANCELLED  start = end (cancelled while pending, as Slurm writes it); queue 600, run 0;
#                   its VC vcW is not in Earth's gpu_number file.
#   3001 SUSPENDED  -> running (it started and had not finished at the trace end; before, it was
#        read as pending, a job that never started); empty end and duration; queue 10.
#   3002 COMPLETED  CPU-only; queue 0, run 1800.
LOGS: dict[str, list[str]] = {
    "Venus": [
        "1001,uA,vcX,8,64,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:31,2020-06-09 20:41:31,7200,30",
        "1002,uB,vcX,0,4,1,COMPLETED,2020-06-10 07:00:00,2020-06-10 07:00:00,2020-06-10 07:00:05,5,0",
        "1003,uA,vcY,16,128,2,TIMEOUT,2020-06-11 00:30:00,2020-06-11 01:00:00,2020-06-12 01:00:00,86400,1800",
        "1004,uC,vcY,1,8,1,CANCELLED,2020-06-12 12:00:00,,2020-06-12 12:05:00,0,",
    ],
    "Earth": [
        "2001,uA,vcZ,4,32,1,NODE_FAIL,2020-07-01 23:59:59,2020-07-02 00:00:09,2020-07-02 00:10:09,600,10",
        "2002,uD,vcZ,2,16,1,FAILED,2020-07-03 10:00:00,2020-07-03 10:01:00,2020-07-03 10:02:00,61,59",
        "2003,uD,vcW,1,8,1,CANCELLED,2020-07-04 10:00:00,2020-07-04 10:10:00,2020-07-04 10:10:00,0,600",
    ],
    "Uranus": [
        "3001,uE,vcU,8,48,1,SUSPENDED,2020-08-01 08:00:00,2020-08-01 08:00:10,,,10",
        "3002,uE,vcU,0,2,1,COMPLETED,2020-08-01 09:00:00,2020-08-01 09:00:00,2020-08-01 09:30:00,1800,0",
    ],
}

# Venus: 3 days x 2 VCs, totals right, largest 40. Earth: 3 days x 3 VCs, 2020-07-03 missing,
# the 2020-07-02 total (32) is not the VC sum (24); largest total 32.
GPU_NUMBERS: dict[str, list[str]] = {
    "Venus": [
        "date,vcX,vcY,total",
        "2020-06-09,8,16,24",
        "2020-06-10,8,24,32",
        "2020-06-11,16,24,40",
    ],
    "Earth": [
        "date,vcZ,vcQ,vcR,total",
        "2020-07-01,8,0,8,16",
        "2020-07-02,8,8,8,32",
        "2020-07-04,16,8,8,32",
    ],
}


def release_files(overrides: dict[str, str] | None = None) -> dict[str, bytes]:
    """`<Cluster>/<file>` -> content of the hand-built release; `overrides` replaces files."""
    files = {f"{c}/cluster_log.csv": "\n".join([LOG_HEADER, *rows]) + "\n" for c, rows in LOGS.items()}
    files.update({f"{c}/cluster_gpu_number.csv": "\n".join(rows) + "\n" for c, rows in GPU_NUMBERS.items()})
    files.update(overrides or {})
    return {name: text.encode() for name, text in files.items()}


def write_zip(path: Path, files: dict[str, bytes]) -> Path:
    """The release as the owners pack it: `data/<Cluster>/...` members (with folder entries)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data/", b"")
        for name, data in sorted(files.items()):
            zf.writestr(f"data/{name}", data)
    return path


def write_folders(root: Path, files: dict[str, bytes], under_data: bool = True) -> Path:
    for name, data in files.items():
        path = root / ("data" if under_data else "") / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def utc_epoch(local: str) -> float:
    """Seconds since the epoch of a `YYYY-MM-DD HH:MM:SS` Asia/Shanghai wall-clock time."""
    return datetime.strptime(local, "%Y-%m-%d %H:%M:%S").replace(tzinfo=SHANGHAI).timestamp()


@pytest.fixture
def zipped(tmp_path: Path) -> Path:
    return write_zip(tmp_path / "release" / "data.zip", release_files())


def _jobs(home: Path) -> dict[str, dict]:
    rows = catalog.query(home, """
        SELECT *, epoch(submit_time) AS submit_s, epoch(start_time) AS start_s, epoch(end_time) AS end_s
        FROM jobs ORDER BY job_id""").to_dicts()
    return {r["job_id"]: r for r in rows}


def test_zip_ingest_stores_log_and_capacity(zipped: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = ingest("helios", zipped.parent, home)
    assert result.tables == {"helios_cluster_log": 9, "helios_vc_capacity": 3 * 2 + 3 * 3, "helios_jobs": 9}
    log = catalog.query(home, """
        SELECT cluster, job_id, "user", vc, gpu_num, cpu_num, node_num, state, duration, queue,
               epoch(submit_time) AS submit_s, epoch(start_time) AS start_s, epoch(end_time) AS end_s
        FROM helios_cluster_log ORDER BY job_id""").to_dicts()
    by_id = {r["job_id"]: r for r in log}
    assert [r["cluster"] for r in log] == ["Venus"] * 4 + ["Earth"] * 3 + ["Uranus"] * 2
    assert {k: by_id["1003"][k] for k in ("user", "vc", "gpu_num", "cpu_num", "node_num", "state", "duration",
                                          "queue")} == {"user": "uA", "vc": "vcY", "gpu_num": 16, "cpu_num": 128,
                                                        "node_num": 2, "state": "TIMEOUT", "duration": 86400.0,
                                                        "queue": 1800.0}
    for job_id, rows in (("1001", LOGS["Venus"][0]), ("2001", LOGS["Earth"][0]), ("1002", LOGS["Venus"][1])):
        fields = rows.split(",")
        assert by_id[job_id]["submit_s"] == utc_epoch(fields[7])
        assert by_id[job_id]["start_s"] == utc_epoch(fields[8])
        assert by_id[job_id]["end_s"] == utc_epoch(fields[9])
    # An empty time is NULL; the never-started job keeps its cancel time as end_time in the raw table.
    assert (by_id["1004"]["start_s"], by_id["1004"]["end_s"], by_id["1004"]["queue"]) == (
        None, utc_epoch("2020-06-12 12:05:00"), None)
    assert (by_id["3001"]["end_s"], by_id["3001"]["duration"], by_id["3001"]["state"]) == (None, None, "SUSPENDED")

    capacity = catalog.query(home, """
        SELECT cluster, CAST(date AS VARCHAR) AS day, vc, gpus, total FROM helios_vc_capacity
        ORDER BY cluster, day, vc""").rows()
    assert capacity[:3] == [("Earth", "2020-07-01", "vcQ", 0, 16), ("Earth", "2020-07-01", "vcR", 8, 16),
                            ("Earth", "2020-07-01", "vcZ", 8, 16)]
    assert {(c, d, v): g for c, d, v, g, _ in capacity}[("Venus", "2020-06-10", "vcY")] == 24
    assert {row[2] for row in capacity if row[0] == "Venus"} == {"vcX", "vcY"}  # `total` is not a VC row


def test_canonical_jobs_hand_derived(zipped: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("helios", zipped, home)  # --from data.zip itself
    jobs = _jobs(home)
    assert len(jobs) == 9
    expected = {  # job: (cluster, state, queue_s, run_s, num_gpus, num_cpus, num_instances)
        "1001": ("Venus", "completed", 30, 7200, 8, 64, 1),
        "1002": ("Venus", "completed", 0, 5, 0, 4, 1),
        "1003": ("Venus", "failed", 1800, 86400, 16, 128, 2),
        "1004": ("Venus", "cancelled", None, None, 1, 8, 1),
        "2001": ("Earth", "failed", 10, 600, 4, 32, 1),
        "2002": ("Earth", "failed", 60, 60, 2, 16, 1),
        "2003": ("Earth", "cancelled", 600, 0, 1, 8, 1),
        "3001": ("Uranus", "running", 10, None, 8, 48, 1),
        "3002": ("Uranus", "completed", 0, 1800, 0, 2, 1),
    }
    for job_id, values in expected.items():
        job = jobs[job_id]
        found = (job["cluster"], job["state"], job["queue_s"], job["run_s"], job["num_gpus"], job["num_cpus"],
                 job["num_instances"])
        assert found == values, job_id
    raw = {job_id: job["raw_state"] for job_id, job in jobs.items()}
    assert (raw["1003"], raw["2001"], raw["3001"]) == ("TIMEOUT", "NODE_FAIL", "SUSPENDED")
    assert all(j["trace"] == "helios" and j["source_tz"] == "Asia/Shanghai" and j["num_tasks"] == 1
               and j["mem_gb"] is None and j["gpu_type"] is None and j["fractional_gpu"] is False
               and j["job_group"] is None and j["workload"] is None for j in jobs.values())
    assert (jobs["1001"]["user"], jobs["1001"]["vc"]) == ("uA", "vcX")
    # Never started: no start, and no canonical end (the raw table keeps the cancel time).
    assert (jobs["1004"]["start_s"], jobs["1004"]["end_s"]) == (None, None)
    # UTC instants: 07:00 in Shanghai is 23:00 UTC the day before; the local hour reads back.
    assert jobs["1002"]["submit_s"] == utc_epoch("2020-06-10 07:00:00") == datetime(
        2020, 6, 9, 23, 0, tzinfo=ZoneInfo("UTC")).timestamp()
    hours = catalog.query(home, """
        SELECT hour(submit_time AT TIME ZONE 'UTC') AS utc_hour, hour(submit_time AT TIME ZONE source_tz) AS local_hour
        FROM jobs WHERE job_id = '1002'""").to_dicts()[0]
    assert hours == {"utc_hour": 23, "local_hour": 7}


def test_a_suspended_job_is_unfinished_whatever_end_the_log_gives(tmp_path: Path) -> None:
    """SUSPENDED with an end in the log (a job suspended at that time and never resumed before the
    trace ended): still `running`, with no canonical end or run time; the raw row keeps its end.
    Without a start it is `pending`."""
    log = {"Uranus/cluster_log.csv": "\n".join([
        LOG_HEADER, "3001,uE,vcU,8,48,1,SUSPENDED,2020-08-01 08:00:00,2020-08-01 08:00:10,2020-08-01 09:00:10,3600,10",
        "3003,uE,vcU,1,4,1,SUSPENDED,2020-08-02 08:00:00,,,,"]) + "\n"}
    home = tmp_path / "home"
    ingest("helios", write_zip(tmp_path / "release" / "data.zip", release_files(log)), home)
    jobs = _jobs(home)
    assert [(jobs[j]["state"], jobs[j]["end_s"], jobs[j]["run_s"]) for j in ("3001", "3003")] == [
        ("running", None, None), ("pending", None, None)]
    raw = catalog.query(home, "SELECT epoch(end_time) AS e FROM helios_cluster_log WHERE job_id = '3001'")
    assert raw["e"].to_list() == [utc_epoch("2020-08-01 09:00:10")]


def test_validation_checks_and_figures(zipped: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("helios", zipped.parent, home)
    manifest = catalog.read_registrations(home)["helios"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    expected = {
        ("helios_cluster_log", "missing submit_time (empty)"): 0,
        ("helios_cluster_log", "never started (empty start_time)"): 1,  # 1004
        ("helios_cluster_log", "missing end_time (empty)"): 1,  # 3001
        ("helios_cluster_log", "start before submission"): 0,
        ("helios_cluster_log", "negative duration (end before start)"): 0,
        ("helios_cluster_log", "duration differs from end_time - start_time (both times given)"): 1,  # 2002
        ("helios_cluster_log", "queue differs from start_time - submit_time (both times given)"): 1,  # 2002
        ("helios_cluster_log", "cancelled with start = end (likely cancelled while pending)"): 1,  # 2003
        ("helios_cluster_log", "CPU-only jobs (gpu_num 0)"): 2,  # 1002, 3002
        ("helios_cluster_log", "suspended at trace end (state SUSPENDED)"): 1,
        ("helios_cluster_log", "duplicate job_id within a cluster"): 0,
        ("helios_vc_capacity", "empty GPU count of a VC"): 0,
        ("helios_vc_capacity", "negative GPU count of a VC"): 0,
        ("helios_vc_capacity", "days (cluster, date) whose total differs from the sum of the VCs"): 1,
        ("helios_vc_capacity", "duplicate (cluster, date, vc)"): 0,
        ("helios_vc_capacity", "days missing between a cluster's first and last day"): 1,  # Earth 07-03
        ("helios_jobs", "jobs in a VC absent from their cluster's gpu_number file (clusters with one)"): 1,
    }
    assert found == expected
    figures = {(f["table"], f["figure"]): f["value"] for f in manifest["figures"]}
    assert figures == {
        ("helios_cluster_log", "clusters in the input"): 3,
        ("helios_cluster_log", "Earth: jobs"): 3, ("helios_cluster_log", "Earth: GPU jobs (gpu_num > 0)"): 3,
        ("helios_cluster_log", "Saturn: jobs"): None,
        ("helios_cluster_log", "Saturn: GPU jobs (gpu_num > 0)"): None,
        ("helios_cluster_log", "Uranus: jobs"): 2, ("helios_cluster_log", "Uranus: GPU jobs (gpu_num > 0)"): 1,
        ("helios_cluster_log", "Venus: jobs"): 4, ("helios_cluster_log", "Venus: GPU jobs (gpu_num > 0)"): 3,
        ("helios_vc_capacity", "clusters in the input"): 2,
        ("helios_vc_capacity", "Earth: largest daily total"): 32, ("helios_vc_capacity", "Earth: days covered"): 3,
        ("helios_vc_capacity", "Earth: mean daily total"): pytest.approx((16 + 32 + 32) / 3),
        ("helios_vc_capacity", "Venus: mean daily total"): (24 + 32 + 40) / 3,
        ("helios_vc_capacity", "Saturn: mean daily total"): None,
        ("helios_vc_capacity", "Uranus: mean daily total"): None,
        ("helios_vc_capacity", "Saturn: largest daily total"): None,
        ("helios_vc_capacity", "Saturn: days covered"): None,
        ("helios_vc_capacity", "Uranus: largest daily total"): None,
        ("helios_vc_capacity", "Uranus: days covered"): None,
        ("helios_vc_capacity", "Venus: largest daily total"): 40, ("helios_vc_capacity", "Venus: days covered"): 3,
    }
    files = manifest["inputs"]["helios_cluster_log"]["files"]
    assert [(f["member"], f["labels"]) for f in files] == [
        (f"data/{c}/cluster_log.csv", {"cluster": c}) for c in ("Earth", "Uranus", "Venus")]
    assert all(f["official_sha256"] is None and len(f["sha256"]) == 64 for f in files)


@pytest.mark.parametrize("under_data", [True, False], ids=["data-Cluster", "Cluster"])
def test_unpacked_folders_ingest_like_the_zip(zipped: Path, tmp_path: Path, under_data: bool) -> None:
    folders = write_folders(tmp_path / "unpacked", release_files(), under_data=under_data)
    ingest("helios", folders, tmp_path / "h1")
    ingest("helios", zipped, tmp_path / "h2")
    for table in ("jobs", "helios_cluster_log", "helios_vc_capacity"):
        order = "cluster, job_id" if table != "helios_vc_capacity" else "cluster, date, vc"
        a = catalog.query(tmp_path / "h1", f"SELECT * FROM {table} ORDER BY {order}")
        b = catalog.query(tmp_path / "h2", f"SELECT * FROM {table} ORDER BY {order}")
        assert a.height > 0 and a.equals(b), table
    files = catalog.read_registrations(tmp_path / "h1")["helios"].manifest["inputs"]["helios_vc_capacity"]["files"]
    assert [(Path(f["path"]).parent.name, f["member"]) for f in files] == [("Earth", None), ("Venus", None)]


def test_each_table_takes_the_clusters_it_finds(tmp_path: Path) -> None:
    """Only Venus has a log, only Earth a gpu_number file: both tables load, each with one cluster."""
    files = release_files()
    keep = {name: data for name, data in files.items()
            if name in ("Venus/cluster_log.csv", "Earth/cluster_gpu_number.csv")}
    home = tmp_path / "home"
    result = ingest("helios", write_zip(tmp_path / "r" / "data.zip", keep).parent, home)
    assert (result.tables["helios_cluster_log"], result.tables["helios_vc_capacity"]) == (4, 9)
    figures = {f["figure"]: f["value"] for f in catalog.read_registrations(home)["helios"].manifest["figures"]
               if f["table"] == "helios_vc_capacity"}
    assert figures["Venus: days covered"] is None and figures["Earth: days covered"] == 3


# -- bad input, through the CLI: one Error line, exit 1, previous catalog and store unchanged ------------




@pytest.fixture
def ingested(cli, zipped: Path, tmp_path: Path) -> tuple[Path, bytes, list[str]]:
    home = tmp_path / "home"
    assert cli("datasets", "ingest", "helios", "--from", zipped.parent, "--data-home", home).code == 0
    store = home / "store" / "helios"
    return home, (home / "catalog.duckdb").read_bytes(), sorted(p.name for p in store.iterdir())


def _assert_untouched(ingested: tuple[Path, bytes, list[str]]) -> None:
    home, catalog_bytes, versions = ingested
    assert (home / "catalog.duckdb").read_bytes() == catalog_bytes
    assert sorted(p.name for p in (home / "store" / "helios").iterdir()) == versions


def _venus_log(*extra: str) -> dict[str, str]:
    return {"Venus/cluster_log.csv": "\n".join([LOG_HEADER, *LOGS["Venus"], *extra]) + "\n"}


@pytest.mark.parametrize("name, packing, overrides, needles", [
    ("unknown state", "zip", _venus_log("1005,uA,vcX,1,8,1,RUNNING,2020-06-13 10:00:00,,,,"),
     ["data.zip:data/Venus/cluster_log.csv, line 6, field 'state'", "'RUNNING'",
      "expected one of COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, SUSPENDED"]),
    ("wrong field count", "folders",
     _venus_log("1005,uA,vcX,1,8,1,COMPLETED,2020-06-13 10:00:00,2020-06-13 10:00:00"),
     ["Venus/cluster_log.csv, line 6", "found 9 fields; expected 12"]),
    ("bad time", "zip", _venus_log("1005,uA,vcX,1,8,1,COMPLETED,2020-06-13 10:00:00,2020-06-31 25:00:00,,,"),
     ["data.zip:data/Venus/cluster_log.csv, line 6, field 'start_time'", "'2020-06-31 25:00:00'",
      "expected a time written YYYY-MM-DD HH:MM:SS"]),
    ("wrong log header", "folders",
     {"Earth/cluster_log.csv": LOG_HEADER.replace("queue", "wait") + "\n" + LOGS["Earth"][0]},
     ["Earth/cluster_log.csv, line 1", "header is", "expected 'job_id,user,vc"]),
    ("gpu_number header without total", "zip", {"Venus/cluster_gpu_number.csv": "date,vcX,vcY\n2020-06-09,8,16\n"},
     ["data.zip:data/Venus/cluster_gpu_number.csv, line 1", "expected 'date,<VC columns>,total'"]),
    ("text in a GPU count", "folders",
     {"Earth/cluster_gpu_number.csv": "date,vcZ,total\n2020-07-01,8,8\n2020-07-02,eight,8\n"},
     ["Earth/cluster_gpu_number.csv, line 3, field 'vcZ'", "'eight'", "expected a whole number"]),
])
def test_bad_content(cli, tmp_path: Path, ingested, name: str, packing: str, overrides: dict[str, str],
                     needles: list[str]) -> None:
    files = release_files(overrides)
    if packing == "zip":
        source = write_zip(tmp_path / "bad" / "data.zip", files)
    else:
        source = write_folders(tmp_path / "bad", files)
    result = cli("datasets", "ingest", "helios", "--from", source, "--data-home", ingested[0])
    assert_clean_failure(result, *needles)
    _assert_untouched(ingested)


def test_zip_without_cluster_files(cli, tmp_path: Path, ingested) -> None:
    source = write_zip(tmp_path / "bad" / "data.zip", {"README.md": b"nothing here\n",
                                                        "Mars/cluster_log.csv": LOG_HEADER.encode()})
    result = cli("datasets", "ingest", "helios", "--from", source.parent, "--data-home", ingested[0])
    assert_clean_failure(result, "data.zip", "archive holds no cluster file", "data/<Cluster>/cluster_log.csv",
                          "Earth, Saturn, Uranus, Venus")
    _assert_untouched(ingested)


@pytest.mark.parametrize("damage", ["truncated", "not a zip"])
def test_corrupt_zip(cli, tmp_path: Path, ingested, damage: str) -> None:
    good = write_zip(tmp_path / "good" / "data.zip", release_files()).read_bytes()
    bad = tmp_path / "bad" / "data.zip"
    bad.parent.mkdir()
    bad.write_bytes(good[: len(good) // 2] if damage == "truncated" else b"PK\x03\x04 not really a zip")
    result = cli("datasets", "ingest", "helios", "--from", bad, "--data-home", ingested[0])
    assert_clean_failure(result, "data.zip", "truncated or corrupt")
    _assert_untouched(ingested)


def test_corrupt_member_data(cli, tmp_path: Path, ingested) -> None:
    """A zip whose directory is intact but whose compressed data is damaged fails at extraction."""
    big = "\n".join([LOG_HEADER] + LOGS["Venus"] * 3000) + "\n"
    bad = write_zip(tmp_path / "bad" / "data.zip", release_files({"Venus/cluster_log.csv": big}))
    with zipfile.ZipFile(bad) as zf:
        info = zf.getinfo("data/Venus/cluster_log.csv")
    data = bytearray(bad.read_bytes())
    middle = info.header_offset + 100 + info.compress_size // 2  # inside the member's compressed data
    data[middle:middle + 64] = bytes(64)
    bad.write_bytes(bytes(data))
    result = cli("datasets", "ingest", "helios", "--from", bad, "--data-home", ingested[0])
    assert_clean_failure(result, "data.zip", "truncated or corrupt")
    _assert_untouched(ingested)


def test_missing_table_files_and_wrong_file(cli, tmp_path: Path, ingested) -> None:
    only_capacity = write_folders(tmp_path / "capacity", {k: v for k, v in release_files().items()
                                                          if k.endswith("gpu_number.csv")})
    result = cli("datasets", "ingest", "helios", "--from", only_capacity, "--data-home", ingested[0])
    assert_clean_failure(result, "missing table files", "data/<Cluster>/cluster_log.csv", "data.zip")
    tarball = tmp_path / "data.tar.gz"
    tarball.write_bytes(b"")
    assert_clean_failure(cli("datasets", "ingest", "helios", "--from", tarball, "--data-home", ingested[0]),
                          "not a zip archive", "expected data.zip")
    _assert_untouched(ingested)


# -- the real Venus and Earth cluster_gpu_number.csv -------------------------------------------------


def _read_real_capacity(path: Path) -> dict[str, object]:
    """Days, VCs, GPU-days of the VCs and the largest `total` of a real file, with the csv module."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    vcs = [name for name in rows[0] if name not in ("date", "total")]
    return {
        "days": len({r["date"] for r in rows}),
        "vcs": set(vcs),
        "gpu_days": sum(int(r[vc]) for r in rows for vc in vcs),
        "max_total": max(int(r["total"]) for r in rows),
        "total_mismatch_days": sum(int(r["total"]) != sum(int(r[vc]) for vc in vcs) for r in rows),
        "first": min(r["date"] for r in rows), "last": max(r["date"] for r in rows),
        "vc_rows": len(rows) * len(vcs),
        "mean_total": sum(int(r["total"]) for r in rows) / len(rows),
    }


def test_real_capacity_files(cli, tmp_path: Path) -> None:
    """The real Venus and Earth capacity files (their excerpts in a fresh clone) against the csv
    module, and, on the full files, the owners' summary of their mean daily total."""
    home = tmp_path / "home"
    result = cli("datasets", "ingest", "helios", "--from", REAL_HELIOS, "--table", "helios_vc_capacity",
                 "--data-home", home)
    assert result.code == 0, result.err
    manifest = catalog.read_registrations(home)["helios"].manifest
    figures = {f["figure"]: f["value"] for f in manifest["figures"]}
    checks = {c["check"]: c["rows"] for c in manifest["validation"]}
    summary_gpus: dict[str, int] = {}
    if FULL_TRACES:
        with open(SHARED_TRACES / "helios" / "helios_cluster_summary.csv", newline="") as handle:
            summary_gpus = {row["id"]: int(row["gpu_num"]) for row in csv.DictReader(handle)}
    mismatches = vc_rows = 0
    for cluster in ("Venus", "Earth"):
        raw = _read_real_capacity(REAL_HELIOS / cluster / "cluster_gpu_number.csv")
        stored = catalog.query(home, f"""
            SELECT count(DISTINCT date) AS days, sum(gpus) AS gpu_days, max(total) AS max_total,
                   CAST(min(date) AS VARCHAR) AS first, CAST(max(date) AS VARCHAR) AS last,
                   list(DISTINCT vc) AS vcs
            FROM helios_vc_capacity WHERE cluster = '{cluster}'""").to_dicts()[0]
        assert (stored["days"], stored["gpu_days"], stored["max_total"]) == (
            raw["days"], raw["gpu_days"], raw["max_total"]), cluster
        assert (stored["first"], stored["last"]) == (raw["first"], raw["last"])
        assert set(stored["vcs"]) == raw["vcs"]
        assert figures[f"{cluster}: largest daily total"] == raw["max_total"]
        assert figures[f"{cluster}: days covered"] == raw["days"]
        assert figures[f"{cluster}: mean daily total"] == pytest.approx(raw["mean_total"])
        # The owners' per-cluster summary gives the mean daily GPU total, cut to a whole number.
        if FULL_TRACES:
            assert int(figures[f"{cluster}: mean daily total"]) == summary_gpus[cluster]
        mismatches += raw["total_mismatch_days"]
        vc_rows += raw["vc_rows"]
    assert figures["Saturn: days covered"] is None and figures["Uranus: largest daily total"] is None
    assert checks["days (cluster, date) whose total differs from the sum of the VCs"] == mismatches
    assert manifest["rows"]["helios_vc_capacity"] == vc_rows
    assert "helios_cluster_log" not in manifest["rows"] and "helios_jobs" not in manifest["rows"]


def test_vc_names_from_a_header_stay_names(tmp_path: Path) -> None:
    """VC names are read from the capacity header: quotes, braces and SQL words stay text."""
    hostile = ['{src}', 'a"b', "x'); DROP TABLE t; --"]
    header = "date," + ",".join('"' + name.replace('"', '""') + '"' for name in hostile) + ",total"
    files = release_files({"Venus/cluster_gpu_number.csv": f"{header}\n2020-06-09,1,2,3,6\n"})
    zipped = write_zip(tmp_path / "release" / "data.zip", files)
    home = tmp_path / "home"
    ingest("helios", zipped.parent, home)
    rows = catalog.query(home, "SELECT vc, gpus FROM helios_vc_capacity WHERE cluster = 'Venus' ORDER BY gpus").rows()
    assert rows == [(hostile[0], 1), (hostile[1], 2), (hostile[2], 3)]
