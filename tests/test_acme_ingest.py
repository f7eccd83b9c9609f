"""Acme (`acme`): hand-written Seren and Kalos files with hand-derived canonical numbers, UTC
conversions checked with Python's own parser, and bad input through the CLI."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest

SEREN_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
                "duration,queue,gpu_time")
# Kalos in the column order of the AcmeTrace README example.
KALOS_HEADER = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
                "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")

# Hand-derived facts (queue = start - submit, run = end - start, from the times):
#   101 COMPLETED: 08:00:00 -> 08:00:30 -> 09:00:30 (+08:00): queue 30, run 3600; 8 GPUs, 1 node.
#   102 FAILED: submitted 23:59:50 local = 15:59:50 UTC; queue 20, run 600; 16 GPUs, 2 nodes.
#   103 CANCELLED CPU job (gpu_num 0): start = end (Slurm style); queue 300, run 0; no gpu_type.
#   104 TIMEOUT -> failed: queue 0, run 86400; 32 GPUs on 4 nodes.
#   105 NODE_FAIL -> failed: queue 60, run 160 although `duration` says 100 (a check counts it).
#   dlcaaa FAILED: queue 10, run 8; `duration` 18 = end - submit, as in the README example (counted
#     by the check); mem 1000 GB per pod x 8 nodes = 8000 GB.
#   dlcbbb CANCELLED: submitted 16:30 UTC = 00:30 next day in Shanghai; queue 12, run 3600; mem 500.
#   dlcccc CANCELLED in the queue: no start, end, duration, queue; stop_time set; mem 2 x 800.
#   dlcddd COMPLETED MLLM: queue 600, run 7200; mem 1000.
SEREN_ROWS = [
    "101,u1,1,8,128,Pretrain,COMPLETED,2023-03-01 08:00:00+08:00,2023-03-01 08:00:30+08:00,"
    "2023-03-01 09:00:30+08:00,3600,30,28800.0",
    "102,u2,2,16,256,SFT,FAILED,2023-03-01 23:59:50+08:00,2023-03-02 00:00:10+08:00,"
    "2023-03-02 00:10:10+08:00,600,20,9600.0",
    "103,u1,1,0,4,Debug,CANCELLED,2023-03-02 10:00:00+08:00,2023-03-02 10:05:00+08:00,"
    "2023-03-02 10:05:00+08:00,0,300,0.0",
    "104,u3,4,32,512,Eval,TIMEOUT,2023-03-03 12:00:00+08:00,2023-03-03 12:00:00+08:00,"
    "2023-03-04 12:00:00+08:00,86400,0,2764800.0",
    "105,u3,1,1,16,Other,NODE_FAIL,2023-03-04 06:00:00+08:00,2023-03-04 06:01:00+08:00,"
    "2023-03-04 06:03:40+08:00,100,60,100.0",
]
KALOS_ROWS = [
    "dlcaaa,uf1,8,64,960,1000,100.0,Pretrain,FAILED,2023-05-17 11:00:58+00:00,2023-05-17 11:01:08+00:00,"
    "2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,1152.0",
    "dlcbbb,uf2,1,8,120,500,50.0,SFT,CANCELLED,2023-05-17 16:30:00+00:00,2023-05-17 16:30:12+00:00,"
    "2023-05-17 17:30:12+00:00,,2023-05-17 17:30:12+00:00,3600,12.0,28800.0",
    "dlcccc,uf2,2,16,240,800,80.0,Eval,CANCELLED,2023-05-18 02:00:00+00:00,,,,2023-05-18 02:05:00+00:00,,,",
    "dlcddd,uf3,1,8,120,1000,100.0,MLLM,COMPLETED,2023-05-19 00:00:00+00:00,2023-05-19 00:10:00+00:00,"
    "2023-05-19 02:10:00+00:00,,,7200,600.0,57600.0",
]


def _text(header: str, rows: list[str]) -> str:
    return "\n".join([header, *rows]) + "\n"


def write_release(folder: Path, seren: str | None = None, kalos: str | None = None,
                  clusters: tuple[str, ...] = ("seren", "kalos")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if "seren" in clusters:
        (folder / "trace_seren.csv").write_text(seren if seren is not None else _text(SEREN_HEADER, SEREN_ROWS))
    if "kalos" in clusters:
        (folder / "trace_kalos.csv").write_text(kalos if kalos is not None else _text(KALOS_HEADER, KALOS_ROWS))
    return folder


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return write_release(tmp_path / "release")


def _jobs(home: Path) -> dict[str, dict]:
    rows = catalog.query(home, """
        SELECT *, epoch(submit_time) AS submit_s, epoch(start_time) AS start_s, epoch(end_time) AS end_s,
               hour(submit_time AT TIME ZONE source_tz) AS local_hour
        FROM jobs ORDER BY job_id""").to_dicts()
    return {r["job_id"]: r for r in rows}


def _utc_seconds(text: str) -> float:
    """Python's reading of a time with its offset: seconds since the epoch."""
    return datetime.fromisoformat(text).timestamp()


def test_canonical_jobs_match_hand_derived_numbers(release: Path, home: Path) -> None:
    result = ingest("acme", release, home)
    assert result.tables == {"acme_job_trace": 9, "acme_jobs": 9}
    jobs = _jobs(home)
    j101, j102, j103, j104, j105 = (jobs[str(i)] for i in range(101, 106))
    assert (j101["cluster"], j101["trace"], j101["user"], j101["workload"]) == ("seren", "acme", "u1", "Pretrain")
    assert (j101["queue_s"], j101["run_s"], j101["num_gpus"], j101["num_cpus"], j101["mem_gb"]) == (
        30, 3600, 8, 128, None)
    assert (j101["num_instances"], j101["num_tasks"], j101["gpu_type"], j101["fractional_gpu"]) == (1, 1, "A100", False)
    assert (j101["state"], j101["raw_state"], j101["source_tz"], j101["vc"]) == (
        "completed", "COMPLETED", "Asia/Shanghai", None)
    assert (j102["queue_s"], j102["run_s"], j102["num_instances"], j102["state"]) == (20, 600, 2, "failed")
    assert (j103["queue_s"], j103["run_s"], j103["num_gpus"], j103["gpu_type"], j103["state"]) == (
        300, 0, 0, None, "cancelled")
    assert (j104["queue_s"], j104["run_s"], j104["num_instances"], j104["state"], j104["raw_state"]) == (
        0, 86400, 4, "failed", "TIMEOUT")
    assert (j105["queue_s"], j105["run_s"], j105["state"], j105["raw_state"]) == (60, 160, "failed", "NODE_FAIL")
    aaa, bbb, ccc, ddd = (jobs[f"dlc{x * 3}"] for x in "abcd")
    assert (aaa["cluster"], aaa["queue_s"], aaa["run_s"], aaa["mem_gb"], aaa["num_instances"]) == (
        "kalos", 10, 8, 1000 * 8, 8)
    assert (aaa["num_gpus"], aaa["num_cpus"], aaa["state"]) == (64, 960, "failed")
    assert (bbb["queue_s"], bbb["run_s"], bbb["mem_gb"], bbb["state"]) == (12, 3600, 500, "cancelled")
    assert (ccc["start_s"], ccc["end_s"], ccc["queue_s"], ccc["run_s"]) == (None, None, None, None)
    assert (ccc["state"], ccc["mem_gb"], ccc["workload"]) == ("cancelled", 2 * 800, "Eval")
    assert (ddd["queue_s"], ddd["run_s"], ddd["mem_gb"], ddd["state"], ddd["workload"]) == (
        600, 7200, 1000, "completed", "MLLM")
    states = [j["state"] for j in jobs.values()]
    assert (states.count("completed"), states.count("failed"), states.count("cancelled")) == (2, 4, 3)


def test_times_keep_their_offsets(release: Path, home: Path) -> None:
    ingest("acme", release, home)
    jobs = _jobs(home)
    for header, rows in ((SEREN_HEADER, SEREN_ROWS), (KALOS_HEADER, KALOS_ROWS)):
        for row in csv.DictReader(io.StringIO(_text(header, rows))):
            job = jobs[row["job_id"]]
            for column in ("submit", "start", "end"):
                text = row[f"{column}_time"]
                assert job[f"{column}_s"] == (_utc_seconds(text) if text else None), (row["job_id"], column)
    # 2023-03-01 08:00:00+08:00 is midnight UTC; 16:30 UTC is 00:30 of the next day in Shanghai.
    assert jobs["101"]["submit_s"] == 1677628800
    assert (jobs["101"]["local_hour"], jobs["102"]["local_hour"], jobs["dlcbbb"]["local_hour"]) == (8, 23, 0)
    raw = catalog.query(home, """
        SELECT epoch(fail_time) AS fail_s, epoch(stop_time) AS stop_s, shared_mem_per_pod
        FROM acme_job_trace WHERE job_id IN ('dlcaaa', '101') ORDER BY job_id""").to_dicts()
    assert raw == [{"fail_s": None, "stop_s": None, "shared_mem_per_pod": None},
                   {"fail_s": _utc_seconds("2023-05-17 11:01:16+00:00"), "stop_s": None, "shared_mem_per_pod": 100.0}]


def test_validation_report(release: Path, home: Path) -> None:
    ingest("acme", release, home)
    manifest = catalog.read_registrations(home)["acme"].manifest
    found = {(c["table"], c["check"]): c["rows"] for c in manifest["validation"]}
    expected = {
        ("acme_job_trace", "missing start_time (never started)"): 1,  # dlcccc
        ("acme_job_trace", "missing end_time"): 1,
        ("acme_job_trace", "duration differs from end_time - start_time by more than 1 s"): 2,  # 105, dlcaaa
        ("acme_job_trace", "queue differs from start_time - submit_time by more than 1 s"): 0,
        ("acme_job_trace", "gpu_time differs from duration * gpu_num by more than 1 GPU-second"): 0,
        ("acme_job_trace", "CPU-only jobs (gpu_num 0)"): 1,  # 103
        ("acme_job_trace", "node_num, gpu_num or cpu_num not a whole number"): 0,
        ("acme_job_trace", "type empty or outside Pretrain, SFT, Eval, MLLM, Debug, Other"): 0,
        ("acme_job_trace", "Kalos CANCELLED jobs without stop_time"): 0,
        ("acme_job_trace", "duplicate job_id within a cluster"): 0,
        ("acme_jobs", "jobs that never started"): 1,
    }
    for key, count in expected.items():
        assert found[key] == count, key
    figures = {f["figure"]: f["value"] for f in manifest["figures"]}
    assert figures["seren: GPU jobs"] == 4 and figures["kalos: GPU jobs"] == 4
    assert figures["kalos: GPU time (sum of gpu_time)"] == pytest.approx((1152 + 28800 + 57600) / 3600)
    assert figures["seren: largest job"] == 32


def _reordered(text: str, order: list[str]) -> str:
    """The same CSV with its columns in `order`."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=order, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv.DictReader(io.StringIO(text)))
    return out.getvalue()


def test_kalos_columns_in_another_order_read_the_same(tmp_path: Path) -> None:
    readme_order = write_release(tmp_path / "a")
    shared_first = SEREN_HEADER.split(",") + ["mem_per_pod_GB", "shared_mem_per_pod", "fail_time", "stop_time"]
    appended = write_release(tmp_path / "b", kalos=_reordered(_text(KALOS_HEADER, KALOS_ROWS), shared_first))
    ingest("acme", readme_order, tmp_path / "h1")
    ingest("acme", appended, tmp_path / "h2")
    query = "SELECT * FROM acme_job_trace ORDER BY job_id"
    assert catalog.query(tmp_path / "h1", query).equals(catalog.query(tmp_path / "h2", query))


def test_one_cluster_alone_and_the_release_layout(tmp_path: Path) -> None:
    seren = ingest("acme", write_release(tmp_path / "s", clusters=("seren",)), tmp_path / "h1")
    assert seren.tables == {"acme_job_trace": 5, "acme_jobs": 5}
    assert catalog.query(tmp_path / "h1", "SELECT count(mem_gb) AS n FROM jobs").item() == 0
    kalos = ingest("acme", write_release(tmp_path / "k" / "data" / "job_trace", clusters=("kalos",)),
                   tmp_path / "h2")
    assert kalos.tables == {"acme_job_trace": 4, "acme_jobs": 4}
    ingest("acme", tmp_path / "k", tmp_path / "h3")  # the release's data/job_trace/ folder is found
    assert catalog.query(tmp_path / "h3", "SELECT sum(mem_gb) AS gb FROM jobs").item() == 8000 + 500 + 1600 + 1000


@pytest.fixture(scope="module")
def good_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding a good ingest (failed ingests must leave it as it is)."""
    root = tmp_path_factory.mktemp("acme-good")
    ingest("acme", write_release(root / "release"), root / "home")
    return root / "home"


def _seren_with(old: str, new: str) -> str:
    text = _text(SEREN_HEADER, SEREN_ROWS)
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("name, seren, kalos, needles", [
    ("time without offset", _seren_with("2023-03-02 00:00:10+08:00", "2023-03-02 00:00:10"), None,
     ["trace_seren.csv", "line 3", "field 'start_time'", "'2023-03-02 00:00:10'",
      "expected a time with its UTC offset"]),
    ("time with a zone name", None,
     _text(KALOS_HEADER, KALOS_ROWS[:3]
           + [KALOS_ROWS[3].replace("2023-05-19 02:10:00+00:00", "2023-05-19 02:10:00 CST")]),
     ["trace_kalos.csv", "line 5", "field 'end_time'", "'2023-05-19 02:10:00 CST'"]),
    ("impossible date", _seren_with("2023-03-04 06:00:00+08:00", "2023-02-30 06:00:00+08:00"), None,
     ["trace_seren.csv", "line 6", "field 'submit_time'", "'2023-02-30 06:00:00+08:00'"]),
    ("offset beyond 14 hours", _seren_with("2023-03-03 12:00:00+08:00", "2023-03-03 12:00:00+25:00"), None,
     ["trace_seren.csv", "line 5", "field 'submit_time'", "'2023-03-03 12:00:00+25:00'"]),
    ("unknown state", _seren_with("FAILED", "RUNNING"), None,
     ["trace_seren.csv", "line 3", "field 'state'", "'RUNNING'",
      "expected one of COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL"]),
    ("wrong field count", _text(SEREN_HEADER, SEREN_ROWS + ["106,u4,1,8,128,SFT,COMPLETED"]), None,
     ["trace_seren.csv", "line 7", "found 7 fields; expected 13"]),
    ("text in a number", _seren_with("1,8,128,Pretrain", "1,eight,128,Pretrain"), None,
     ["trace_seren.csv", "line 2", "field 'gpu_num'", "'eight'", "expected a number"]),
    ("Kalos header on the Seren file", _text(KALOS_HEADER, KALOS_ROWS), None,
     ["trace_seren.csv", "line 1", "unexpected or repeated fail_time", "expected the seren columns"]),
    ("Kalos file missing a column", None, _text(SEREN_HEADER, SEREN_ROWS),
     ["trace_kalos.csv", "line 1", "missing mem_per_pod_GB, shared_mem_per_pod, fail_time, stop_time"]),
])
def test_bad_input_is_one_error_line(cli, tmp_path: Path, good_home: Path, name: str, seren: str | None,
                                     kalos: str | None, needles: list[str]) -> None:
    before = (good_home / "catalog.duckdb").read_bytes()
    versions = sorted(p.name for p in (good_home / "store" / "acme").iterdir())
    bad = write_release(tmp_path / "bad", seren=seren, kalos=kalos)
    result = cli("datasets", "ingest", "acme", "--from", bad, "--data-home", good_home)
    assert result.code == 1
    lines = result.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    assert (good_home / "catalog.duckdb").read_bytes() == before
    assert sorted(p.name for p in (good_home / "store" / "acme").iterdir()) == versions


def test_folder_without_either_file(cli, tmp_path: Path, home: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("datasets", "ingest", "acme", "--from", tmp_path / "empty", "--data-home", home)
    assert result.code == 1 and "missing table files: trace_seren.csv or trace_kalos.csv" in result.err
