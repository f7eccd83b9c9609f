"""The `helios-sc21` profile on a hand-built Helios release (every value worked out by hand from the
rows below) and on the real Venus and Earth cluster_gpu_number.csv files."""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import mean

import pytest

from ddlx.analysis.reproduce import DIFFERS, MATCHES, NOT_HERE, NOT_YET, get_profile, reproduce
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, real_file
from tests.test_helios_ingest import LOG_HEADER, write_folders

REAL_HELIOS = real_file("helios")

# Three jobs per cluster (Asia/Shanghai wall clock; duration = end - start, queue = start - submit):
#   Venus  1 COMPLETED  1 GPU  duration 100  queue 0
#          2 COMPLETED  CPU    duration 50   queue 5
#          3 CANCELLED  2 GPUs duration 30   queue 10
#   Earth  11 FAILED    4 GPUs duration 10   queue 0
#          12 TIMEOUT   1 GPU  duration 200  queue 0
#          13 FAILED    CPU    duration 7    queue 0
#   Saturn 21 NODE_FAIL 8 GPUs duration 5    queue 20
#          22 COMPLETED 2 GPUs duration 300  queue 0
#          23 CANCELLED 1 GPU  never started: empty start and queue, duration 0
#   Uranus 31 SUSPENDED 8 GPUs started, no end: empty duration, queue 10
#          32 COMPLETED CPU    duration 1800 queue 0
#          33 COMPLETED 3 GPUs duration 1000 queue 0
LOGS: dict[str, list[str]] = {
    "Venus": [
        "1,u1,vcA,1,8,1,COMPLETED,2020-05-01 10:00:00,2020-05-01 10:00:00,2020-05-01 10:01:40,100,0",
        "2,u2,vcA,0,4,1,COMPLETED,2020-05-01 11:00:00,2020-05-01 11:00:05,2020-05-01 11:00:55,50,5",
        "3,u1,vcX,2,16,1,CANCELLED,2020-05-02 09:00:00,2020-05-02 09:00:10,2020-05-02 09:00:40,30,10",
    ],
    "Earth": [
        "11,u3,vcB,4,32,1,FAILED,2020-06-01 08:00:00,2020-06-01 08:00:00,2020-06-01 08:00:10,10,0",
        "12,u3,vcB,1,8,1,TIMEOUT,2020-06-01 09:00:00,2020-06-01 09:00:00,2020-06-01 09:03:20,200,0",
        "13,u4,vcB,0,2,1,FAILED,2020-06-02 09:00:00,2020-06-02 09:00:00,2020-06-02 09:00:07,7,0",
    ],
    "Saturn": [
        "21,u5,vcC,8,64,1,NODE_FAIL,2020-07-01 12:00:00,2020-07-01 12:00:20,2020-07-01 12:00:25,5,20",
        "22,u5,vcC,2,16,1,COMPLETED,2020-07-01 13:00:00,2020-07-01 13:00:00,2020-07-01 13:05:00,300,0",
        "23,u6,vcC,1,8,1,CANCELLED,2020-07-02 13:00:00,,2020-07-02 13:10:00,0,",
    ],
    "Uranus": [
        "31,u7,vcD,8,48,1,SUSPENDED,2020-08-01 08:00:00,2020-08-01 08:00:10,,,10",
        "32,u7,vcD,0,2,1,COMPLETED,2020-08-01 09:00:00,2020-08-01 09:00:00,2020-08-01 09:30:00,1800,0",
        "33,u8,vcD,3,24,1,COMPLETED,2020-08-02 09:00:00,2020-08-02 09:00:00,2020-08-02 09:16:40,1000,0",
    ],
}

# Daily totals, chosen so that truncating the mean and rounding it differ, and with different
# numbers of VC columns per cluster (the stored table holds one row per VC and day):
#   Venus  (2 VCs) 1022, 1023, 1023 -> mean 3068 / 3 = 1022.67 -> 1022 (rounded it would be 1023)
#   Earth  (1 VC)  996, 999         -> mean 997.5               -> 997
#   Saturn (3 VCs) 2080, 2081       -> mean 2080.5              -> 2080
#   Uranus (1 VC)  2119, 2120, 2120 -> mean 6359 / 3 = 2119.67  -> 2119
#   all: 1022.67 + 997.5 + 2080.5 + 2119.67 = 6220.33 -> 6220 (the sum of the truncated values is 6218)
GPU_NUMBERS: dict[str, list[str]] = {
    "Venus": ["date,vcA,vcX,total", "2020-05-01,1000,22,1022", "2020-05-02,1000,23,1023", "2020-05-03,1001,22,1023"],
    "Earth": ["date,vcB,total", "2020-06-01,996,996", "2020-06-02,999,999"],
    "Saturn": ["date,vcC,vcS,vcT,total", "2020-07-01,2000,40,40,2080", "2020-07-02,2000,41,40,2081"],
    "Uranus": ["date,vcD,total", "2020-08-01,2119,2119", "2020-08-02,2120,2120", "2020-08-03,2120,2120"],
}

JOB_FIGURES = ("jobs_Venus", "gpu_jobs_Venus", "jobs_Earth", "gpu_jobs_Earth", "jobs_Saturn", "gpu_jobs_Saturn",
               "jobs_Uranus", "gpu_jobs_Uranus", "jobs", "gpu_jobs", "gpu_jobs_completed", "gpu_seconds_completed",
               "gpu_time_completed", "gpu_jobs_cancelled", "gpu_seconds_cancelled", "gpu_time_cancelled",
               "gpu_jobs_failed", "gpu_seconds_failed", "gpu_time_failed", "gpu_queue_median")
GPU_FIGURES = ("gpus_Venus", "gpus_Earth", "gpus_Saturn", "gpus_Uranus", "gpus_total")
PENDING = ("philly_fifo_mean_jct", "philly_qssf_mean_jct")


def _files(clusters_with_log: tuple[str, ...], clusters_with_gpus: tuple[str, ...]) -> dict[str, bytes]:
    files = {f"{c}/cluster_log.csv": "\n".join([LOG_HEADER, *LOGS[c]]) + "\n" for c in clusters_with_log}
    files.update({f"{c}/cluster_gpu_number.csv": "\n".join(GPU_NUMBERS[c]) + "\n" for c in clusters_with_gpus})
    return {name: text.encode() for name, text in files.items()}


def _results(home: Path) -> dict[str, dict]:
    return {f["id"]: f for f in reproduce(home, "helios-sc21").to_dict()["figures"]}


def test_profile_declares_every_figure_once() -> None:
    profile = get_profile("helios-sc21")
    ids = [f.id for f in profile.figures]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(JOB_FIGURES) | set(GPU_FIGURES) | set(PENDING)
    declared = {d.id for d in profile.definitions}
    assert {f.definition for f in profile.figures} == declared
    assert all(d.startswith("paper.helios_sc21.") for d in declared)
    assert all(profile.figure(i).compute is None and profile.figure(i).pending for i in PENDING)


def test_hand_built_release(tmp_path: Path) -> None:
    source = write_folders(tmp_path / "release", _files(tuple(LOGS), tuple(GPU_NUMBERS)))
    home = tmp_path / "home"
    ingest("helios", source, home)
    got = _results(home)

    # Jobs: three rows per cluster, 12 in all. GPU jobs (gpu_num > 0): Venus 1, 3; Earth 11, 12;
    # Saturn 21, 22, 23; Uranus 31, 33 -> 2, 2, 3, 2 = 9.
    expected = {"jobs_Venus": 3, "jobs_Earth": 3, "jobs_Saturn": 3, "jobs_Uranus": 3, "jobs": 12,
                "gpu_jobs_Venus": 2, "gpu_jobs_Earth": 2, "gpu_jobs_Saturn": 3, "gpu_jobs_Uranus": 2, "gpu_jobs": 9}
    # States of the 9 GPU jobs: COMPLETED 1, 22, 33 -> 3; CANCELLED 3, 23 -> 2; every other state
    # (FAILED 11, TIMEOUT 12, NODE_FAIL 21, SUSPENDED 31) -> 4. Percent of 9: 33.33, 22.22, 44.44.
    expected.update({"gpu_jobs_completed": 100 * 3 / 9, "gpu_jobs_cancelled": 100 * 2 / 9,
                     "gpu_jobs_failed": 100 * 4 / 9})
    # GPU-seconds, gpu_num x duration: completed 1x100 + 2x300 + 3x1000 = 3700; cancelled 2x30 + 1x0
    # = 60; failed 4x10 + 1x200 + 8x5 (+ 31 with no duration: nothing) = 280; all 4040. The CPU jobs
    # (2, 13, 32) add nothing.
    expected.update({"gpu_seconds_completed": 3700, "gpu_seconds_cancelled": 60, "gpu_seconds_failed": 280,
                     "gpu_time_completed": 100 * 3700 / 4040, "gpu_time_cancelled": 100 * 60 / 4040,
                     "gpu_time_failed": 100 * 280 / 4040})
    # Queue of the GPU jobs that have one (23 has none): 0, 10, 0, 0, 20, 0, 10, 0 -> sorted
    # 0 0 0 0 0 10 10 20, eight values, median (0 + 0) / 2 = 0.
    expected["gpu_queue_median"] = 0
    # GPUs: see GPU_NUMBERS.
    expected.update({"gpus_Venus": 1022, "gpus_Earth": 997, "gpus_Saturn": 2080, "gpus_Uranus": 2119,
                     "gpus_total": 6220})
    for figure_id, value in expected.items():
        assert got[figure_id]["value"] == pytest.approx(value), figure_id
        assert got[figure_id]["value_is_synthetic"] is False

    # Verdicts: the median (0 s) and the GPU counts equal the published ones; every other value
    # is far from the published one; QSSF on Philly is not computed.
    matching = {"gpu_queue_median", *GPU_FIGURES}
    for figure_id in JOB_FIGURES + GPU_FIGURES:
        assert got[figure_id]["verdict"] == (MATCHES if figure_id in matching else DIFFERS), figure_id
    for figure_id in PENDING:
        assert got[figure_id]["verdict"] == NOT_YET and got[figure_id]["value"] is None
        assert "QSSF" in got[figure_id]["reason"] and "philly" in got[figure_id]["reason"]


def test_clusters_missing_from_the_catalog(tmp_path: Path) -> None:
    """Only Venus's log and Venus's and Earth's gpu_number files: Venus's figures and Earth's GPUs are
    computed, the rest names the missing clusters' files."""
    source = write_folders(tmp_path / "release", _files(("Venus",), ("Venus", "Earth")), under_data=False)
    home = tmp_path / "home"
    ingest("helios", source, home)
    got = _results(home)
    # Venus: 3 jobs, 2 GPU jobs (1 and 3); GPUs as in the full release (1022 and 997).
    assert (got["jobs_Venus"]["value"], got["jobs_Venus"]["verdict"]) == (3, DIFFERS)
    assert (got["gpu_jobs_Venus"]["value"], got["gpu_jobs_Venus"]["verdict"]) == (2, DIFFERS)
    assert (got["gpus_Venus"]["value"], got["gpus_Venus"]["verdict"]) == (1022, MATCHES)
    assert (got["gpus_Earth"]["value"], got["gpus_Earth"]["verdict"]) == (997, MATCHES)
    for cluster in ("Earth", "Saturn", "Uranus"):
        for figure_id in (f"jobs_{cluster}", f"gpu_jobs_{cluster}"):
            assert got[figure_id]["verdict"] == NOT_HERE and got[figure_id]["value"] is None
            assert f"{cluster}/cluster_log.csv" in got[figure_id]["reason"]
    for cluster in ("Saturn", "Uranus"):
        assert got[f"gpus_{cluster}"]["verdict"] == NOT_HERE
        assert f"{cluster}/cluster_gpu_number.csv" in got[f"gpus_{cluster}"]["reason"]
    # Datacenter-wide figures are never computed over some of the clusters.
    for figure_id in [f for f in JOB_FIGURES if not f.endswith(tuple(f"_{c}" for c in LOGS))]:
        assert got[figure_id]["verdict"] == NOT_HERE, figure_id
        assert "Earth, Saturn, Uranus" in got[figure_id]["reason"], figure_id
    assert got["gpus_total"]["verdict"] == NOT_HERE and "Saturn, Uranus" in got["gpus_total"]["reason"]


def _real_gpus(cluster: str) -> int:
    """The mean of the file's daily `total`, truncated, with the csv module."""
    with open(REAL_HELIOS / cluster / "cluster_gpu_number.csv", newline="") as handle:
        return int(mean(int(row["total"]) for row in csv.DictReader(handle)))


def test_real_venus_and_earth_gpus(tmp_path: Path) -> None:
    """Only the real capacity files (Venus, Earth): their GPU counts match the summary (on the
    excerpts of a fresh clone, a count matches where its truncated mean happens to equal the
    published one); Saturn, Uranus and the datacenter total lack their files; the job figures lack
    the log table."""
    home = tmp_path / "home"
    ingest("helios", REAL_HELIOS, home, tables=["helios_vc_capacity"])
    got = _results(home)
    for cluster, published in (("Venus", 1022), ("Earth", 997)):
        gpus = _real_gpus(cluster)
        if FULL_TRACES:
            assert gpus == published  # Venus 1022.76 -> 1022, Earth 997.66 -> 997
        verdict = MATCHES if gpus == published else DIFFERS
        assert (got[f"gpus_{cluster}"]["value"], got[f"gpus_{cluster}"]["verdict"]) == (gpus, verdict)
    # Saturn's and Uranus's files are absent: their counts, and the total over all four, would be
    # wrong values if computed from what is there, so they are not computable here, naming the files.
    for cluster in ("Saturn", "Uranus"):
        assert got[f"gpus_{cluster}"]["verdict"] == NOT_HERE and got[f"gpus_{cluster}"]["value"] is None
        assert f"{cluster}/cluster_gpu_number.csv" in got[f"gpus_{cluster}"]["reason"]
    assert got["gpus_total"]["verdict"] == NOT_HERE and "Saturn, Uranus" in got["gpus_total"]["reason"]
    for figure_id in JOB_FIGURES:
        assert got[figure_id]["verdict"] == NOT_HERE, figure_id
        assert "helios_cluster_log" in got[figure_id]["reason"], figure_id
    for figure_id in PENDING:
        assert got[figure_id]["verdict"] == NOT_YET
