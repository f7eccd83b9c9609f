"""The `queueing` analysis module: quantiles, CDFs, waits over thresholds, wait over completion
time and load at submission on hand-built job tables whose answers are derived by hand below; the
PAI task-to-first-instance delay on the 5-job PAI fixture; the real Alibaba v2023 pods against
numbers computed here from the raw CSV with plain Python; the real Philly-derived table (no start
times) is skipped cleanly."""

from __future__ import annotations

import bisect
import csv
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import queueing
from ddlx.analysis.context import TraceContext, open_trace
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, real_file, row_where, write_pai_release
from tests.test_analysis_utilization import HELIOS_GAP_FILES, ingested_helios

V2023_DIR = real_file("alibaba-gpu-v2023")
POLLUX = real_file("philly/pollux_philly_jobs.csv")

# Eight jobs, wall clock of Asia/Shanghai (UTC+8, no daylight saving). queue = start - submit,
# run = end - start (s):
#   a1 1 GPU V100 va  submit 00:30  queue    0  run 3600   (local hour 0; 16 in UTC)
#   a2 1 GPU V100 va  submit 10:00  queue   30  run 1800
#   a3 1 GPU T4   va  submit 10:00  queue  120  run  120   FAILED
#   a4 2 GPU T4   vb  submit 10:00  queue 1200  run 2400
#   a5 4 GPU (no type) vb submit 12:00 queue 7200 run 7200
#   a6 8 GPU V100 vc  submit 12:00  never started (CANCELLED while pending)
#   a7 0 GPU (CPU)  va submit 23:30  queue 1800  run 1800
#   a8 1 GPU V100 vd  submit 23:00  queue   10  run  600
QUEUE_CSV = """\
job_id,user,vc,gpus,gpu_type,state,submit,start,end
a1,u1,va,1,V100,COMPLETED,2024-01-01 00:30:00,2024-01-01 00:30:00,2024-01-01 01:30:00
a2,u1,va,1,V100,COMPLETED,2024-01-01 10:00:00,2024-01-01 10:00:30,2024-01-01 10:30:30
a3,u2,va,1,T4,FAILED,2024-01-01 10:00:00,2024-01-01 10:02:00,2024-01-01 10:04:00
a4,u2,vb,2,T4,COMPLETED,2024-01-01 10:00:00,2024-01-01 10:20:00,2024-01-01 11:00:00
a5,u3,vb,4,,COMPLETED,2024-01-01 12:00:00,2024-01-01 14:00:00,2024-01-01 16:00:00
a6,u3,vc,8,V100,CANCELLED,2024-01-01 12:00:00,,
a7,u1,va,0,,COMPLETED,2024-01-01 23:30:00,2024-01-02 00:00:00,2024-01-02 00:30:00
a8,u4,vd,1,V100,COMPLETED,2024-01-01 23:00:00,2024-01-01 23:00:10,2024-01-01 23:10:10
"""
QUEUE_MAP = ("job_id=job_id,user=user,vc=vc,gpus=gpus,gpu_type=gpu_type,state=state,"
             "submit=submit,start=start,end=end")

# Two clusters, Unix seconds (UTC). Cluster k1 allocation (GPUs held after each instant):
#   t=0 +4 (L1) -> 4; 200 +4 (L2) -> 8; 500 +2 (L3) -> 10; 600 -4 (L2 ends) -> 6;
#   650 +1 (L4) -> 7; 700 -1 -> 6; 900 -2 -> 4; 1000 -4 (L1 ends) +1 (L5 starts) -> 1; 1100 -1 -> 0.
#   Peak 10 (no capacity is documented: the peak is the only reference). Allocated just BEFORE
#   each submission, load = that / 10, bin = floor(10 x load), at most 9 (a load of exactly 1 is
#   in bin 9; bin 10 is for loads above 1, which the peak never gives):
#   L1 submit 0: 0 -> bin 0, queue 0;   L2 submit 100: 4 -> bin 4, queue 100;
#   L3 submit 300: 8 -> bin 8, queue 200; L4 submit 600: 10 (L2's end at 600 is not before) -> bin 9,
#   queue 50; L5 submit 550: 10 -> bin 9, queue 450; L7 (2 GPUs) submit 550, never starts -> bin 9;
#   L6 is a CPU job: not binned.
# Cluster k2: M1 1 GPU 0-100, M2 1 GPU submitted 50, runs 100-200. Peak 1 (the end and start at
#   100 cancel). M1 submit 0: 0 -> bin 0, queue 0; M2 submit 50: 1 -> bin 9, queue 50.
LOAD_CSV = """\
job_id,cluster,gpus,submit,start,end
L1,k1,4,0,0,1000
L2,k1,4,100,200,600
L3,k1,2,300,500,900
L4,k1,1,600,650,700
L5,k1,1,550,1000,1100
L6,k1,0,550,560,570
L7,k1,2,550,,
M1,k2,1,0,0,100
M2,k2,1,50,100,200
"""
LOAD_MAP = "job_id=job_id,cluster=cluster,gpus=gpus,submit=submit,start=start,end=end"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("queueing")
    (root / "queue.csv").write_text(QUEUE_CSV)
    (root / "load.csv").write_text(LOAD_CSV)
    home = root / "home"
    import_dataset("qa", root / "queue.csv", home, mapping=QUEUE_MAP, time_unit="datetime", tz="Asia/Shanghai")
    import_dataset("load", root / "load.csv", home, mapping=LOAD_MAP, time_unit="s", tz="UTC")
    return home


@pytest.fixture
def qa(home: Path) -> Iterator[TraceContext]:
    with open_trace(home, "qa") as ctx:
        yield ctx


def quantile_cont(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (DuckDB's quantile_cont), written out here."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def test_quantiles_by_gpu_bucket_and_cdf(qa: TraceContext) -> None:
    summary, cdf = queueing.by_gpu_bucket(qa)
    assert summary["gpu_bucket"].to_list() == ["0", "1", "(1,2]", "(2,4]", "(4,8]"]
    one = row_where(summary, gpu_bucket="1")
    # a1, a2, a3, a8: queues [0, 10, 30, 120]; p50 = (10 + 30) / 2; p90 at rank 2.7 = 30 + 0.7 x 90.
    assert (one["jobs"], one["jobs_never_started"], one["jobs_with_value"]) == (4, 0, 4)
    assert one["p50_s"] == pytest.approx(20.0)
    assert one["p90_s"] == pytest.approx(93.0)
    assert one["mean_s"] == pytest.approx(40.0)
    # a6 never started: counted, no quantiles.
    never = row_where(summary, gpu_bucket="(4,8]")
    assert (never["jobs"], never["jobs_never_started"], never["jobs_with_value"]) == (1, 1, 0)
    assert never["p50_s"] is None
    assert row_where(summary, gpu_bucket="(2,4]")["p99_s"] == pytest.approx(7200.0)
    # CDF: 105 probabilities per bucket with values; the bucket without values has no rows.
    ones = cdf.filter(pl.col("gpu_bucket") == "1")
    assert ones.height == 105 and set(cdf["gpu_bucket"]) == {"0", "1", "(1,2]", "(2,4]"}
    assert row_where(ones, probability=0.0)["queue_s"] == 0.0 and row_where(ones, probability=1.0)["queue_s"] == 120.0
    # Steps through the four values: at p the smallest with at least 4p of them at or below it;
    # the p50 of 20 s above lies between two jobs, the CDF never shows it.
    assert [row_where(ones, probability=p)["queue_s"] for p in (0.25, 0.26, 0.5, 0.51, 0.75, 0.76)] == [
        0, 10, 10, 30, 30, 120]
    assert set(ones["jobs_with_value"]) == {4}


def test_quantiles_by_gpu_type_vc_and_local_hour(qa: TraceContext) -> None:
    types, _ = queueing.by_gpu_type(qa)
    # GPU jobs only (a7 is CPU): V100 = a1, a2, a6 (never started), a8 -> [0, 30, 10].
    v100 = row_where(types, gpu_type="V100")
    assert (v100["jobs"], v100["jobs_never_started"], v100["jobs_with_value"]) == (4, 1, 3)
    assert v100["p50_s"] == pytest.approx(10.0)
    assert row_where(types, gpu_type="T4")["p50_s"] == pytest.approx(660.0)  # (120 + 1200) / 2
    assert row_where(types, gpu_type="unspecified")["jobs"] == 1  # a5 has no type

    vcs, vc_cdf = queueing.by_vc(qa, top_vcs=2)
    # Jobs per VC: va 4, vb 2, vc 1, vd 1 -> top 2 named, vc and vd pooled as 'other'.
    assert vcs["vc"].to_list() == ["va", "vb", "other"]
    va = row_where(vcs, vc="va")  # a1, a2, a3, a7: [0, 30, 120, 1800]
    assert (va["jobs"], va["vcs"], va["p50_s"]) == (4, 1, pytest.approx(75.0))
    other = row_where(vcs, vc="other")  # a6 never started, a8 queued 10
    assert (other["jobs"], other["vcs"], other["jobs_never_started"], other["p50_s"]) == (2, 2, 1, 10.0)
    assert set(vc_cdf["vc"]) == {"va", "vb", "other"}

    hours, _ = queueing.by_submit_hour(qa)
    # Local hours (Asia/Shanghai): a1 at 0 (16 in UTC); a2-a4 at 10; a5, a6 at 12; a7, a8 at 23.
    assert dict(zip(hours["submit_hour"], hours["jobs"])) == {0: 1, 10: 3, 12: 2, 23: 2}
    assert row_where(hours, submit_hour=10)["p50_s"] == pytest.approx(120.0)  # [30, 120, 1200]
    assert row_where(hours, submit_hour=23)["p50_s"] == pytest.approx(905.0)  # [10, 1800]
    assert row_where(hours, submit_hour=12)["jobs_never_started"] == 1


def test_waits_over_thresholds(qa: TraceContext) -> None:
    over = queueing.waits_over_thresholds(qa)
    assert over["gpu_bucket"][0] == "all"
    assert sorted(set(over["threshold_s"])) == [60.0, 600.0, 3600.0, 21600.0, 86400.0]
    # Started jobs' queues: 0, 10, 30, 120, 1200, 1800, 7200 (7); a6 never started (1).
    expected = {60.0: 4, 600.0: 3, 3600.0: 1, 21600.0: 0, 86400.0: 0}
    for threshold, jobs_over in expected.items():
        row = row_where(over, gpu_bucket="all", threshold_s=threshold)
        assert (row["jobs"], row["jobs_with_value"], row["jobs_never_started"]) == (8, 7, 1)
        assert row["jobs_over"] == jobs_over
        assert row["share_of_started"] == pytest.approx(jobs_over / 7)
        assert row["upper_share_with_never_started"] == pytest.approx((jobs_over + 1) / 8)
    one = row_where(over, gpu_bucket="1", threshold_s=60.0)  # a3 (120 s) of four 1-GPU jobs
    assert one["share_of_started"] == pytest.approx(0.25)
    big = row_where(over, gpu_bucket="(4,8]", threshold_s=86400.0)  # a6 alone: no share without it
    assert big["share_of_started"] is None and big["upper_share_with_never_started"] == 1.0
    custom = queueing.waits_over_thresholds(qa, thresholds_s=[100])
    assert row_where(custom, gpu_bucket="all")["jobs_over"] == 4  # 120, 1200, 1800, 7200


def test_wait_share_of_completion(qa: TraceContext) -> None:
    shares = queueing.wait_share_of_completion(qa)
    # queue / (queue + run): a1 0, a2 30/1830 = 1/61, a3 120/240 = 1/2, a4 1200/3600 = 1/3,
    # a5 7200/14400 = 1/2, a7 1800/3600 = 1/2, a8 10/610 = 1/61; a6 never started.
    pooled = row_where(shares, gpu_bucket="all")
    assert pooled["jobs_with_value"] == 7
    assert pooled["p50_share"] == pytest.approx(1 / 3)  # sorted: 0, 1/61, 1/61, 1/3, 1/2, 1/2, 1/2
    assert pooled["mean_share"] == pytest.approx((0 + 2 / 61 + 1 / 3 + 3 / 2) / 7)
    one = row_where(shares, gpu_bucket="1")  # a1, a2, a3, a8: 0, 1/61, 1/61, 1/2
    assert one["p50_share"] == pytest.approx(1 / 61)


def test_queueing_by_load_at_submission(home: Path) -> None:
    with open_trace(home, "load") as ctx:
        load = queueing.queueing_by_load(ctx)
    assert set(load["reference"]) == {"peak_allocation"}
    k1 = load.filter(pl.col("cluster") == "k1")
    assert k1["load_bin"].to_list() == [0, 4, 8, 9]
    assert set(k1["mean_reference_gpus"]) == {10.0}
    assert row_where(k1, load_bin=4)["mean_allocated_gpus"] == 4.0
    assert row_where(k1, load_bin=8)["p50_s"] == 200.0
    top = row_where(k1, load_bin=9)  # L4, L5 (queues 50, 450) and L7 (never started), all at 10 GPUs
    assert (top["jobs"], top["jobs_never_started"], top["jobs_with_value"]) == (3, 1, 2)
    assert (top["p50_s"], top["min_allocated_gpus"], top["max_allocated_gpus"]) == (250.0, 10.0, 10.0)
    assert (top["load_share_low"], top["load_share_high"]) == pytest.approx((0.9, 1.0))
    k2 = load.filter(pl.col("cluster") == "k2")
    assert k2["load_bin"].to_list() == [0, 9] and set(k2["mean_reference_gpus"]) == {1.0}
    pooled = load.filter(pl.col("cluster") == "all clusters")
    assert row_where(pooled, load_bin=0)["jobs"] == 2  # L1, M1
    nine = row_where(pooled, load_bin=9)  # L4, L5, L7, M2: queues 50, 450, 50
    assert (nine["jobs"], nine["p50_s"], nine["mean_reference_gpus"]) == (4, 50.0, None)


def test_load_against_a_capacity_that_changes_by_day(tmp_path: Path) -> None:
    """Helios gives a capacity per local day, several intervals per cluster (an as-of join); the
    peak allocation is one interval (a join on the cluster): both in one table."""
    home = ingested_helios(tmp_path, HELIOS_GAP_FILES)
    with open_trace(home, "helios", cache=False) as ctx:
        load = queueing.queueing_by_load(ctx).filter(pl.col("cluster") == "Venus")
    # g1 2 GPUs from 06-01 22:00 to 06-03 02:00, g2 8 GPUs 06-02 12:00-13:00, g3 4 GPUs from 06-03 00:00.
    # Allocated just before each submission: g1 0, g2 2 (g1), g3 2 (g1; g2 has ended).
    # Capacity: 8 on 06-01, none on 06-02 (g2 left out), 6 from 06-03 00:00 (g3 submitted at that
    # instant takes it): g1 0/8 -> bin 0, g3 2/6 -> bin 3. Peak 10 (06-02 12:00): 0, 2/10, 2/10 -> 0, 2, 2.
    capacity = load.filter(pl.col("reference") == "capacity")
    assert dict(zip(capacity["load_bin"], capacity["jobs"])) == {0: 1, 3: 1}
    assert dict(zip(capacity["load_bin"], capacity["mean_reference_gpus"])) == {0: 8.0, 3: 6.0}
    assert row_where(capacity, load_bin=3)["mean_allocated_gpus"] == 2.0
    peak = load.filter(pl.col("reference") == "peak_allocation")
    assert dict(zip(peak["load_bin"], peak["jobs"])) == {0: 1, 2: 2}
    assert set(peak["mean_reference_gpus"]) == {10.0}


def test_analyze_on_an_imported_table(home: Path) -> None:
    result = run_analysis(home, "qa", ["queueing"]).module("queueing")
    assert {t.name for t in result.tables} == {
        "by_gpu_bucket", "cdf_by_gpu_bucket", "by_gpu_type", "cdf_by_gpu_type", "by_vc", "cdf_by_vc",
        "by_submit_hour", "cdf_by_submit_hour", "waits_over_thresholds", "wait_share_of_completion",
        "by_load_at_submit"}
    assert [n.what for n in result.not_applicable] == [
        "queueing against load as a share of capacity",
        "other readings of the queueing delay"]
    assert result.finding("queue_delay_p50_1gpu").value == pytest.approx(20.0)
    assert result.finding("never_started_share").value == pytest.approx(1 / 8)
    assert result.finding("wait_over_1h_share").value == pytest.approx(1 / 7)
    assert result.finding("wait_share_p50").value == pytest.approx(1 / 3)
    # The only job of more than 4 GPUs never started: no median for the largest jobs.
    assert "queue_delay_p50_largest" not in {f.name for f in result.findings}
    # Nothing runs when any GPU job of this table is submitted (peak 4 GPUs: a5 at 14:00-16:00), so
    # the busiest load bin is the first; its GPU jobs' queues 0, 10, 30, 120, 1200, 7200 -> p50 75.
    high = result.finding("queue_delay_p50_at_high_load_peak_allocation")
    assert (high.value, "0%-10% of peak allocation" in high.text) == (75.0, True)
    assert "queue_delay_p50_at_high_load_capacity" not in {f.name for f in result.findings}
    for table in result.tables:
        assert "queue_delay.submit_to_first_start" in table.definitions


def test_analyze_options(home: Path) -> None:
    options = {"top_vcs": 1, "queue_thresholds_s": [100, 1000]}
    result = run_analysis(home, "qa", ["queueing"], options=options).module("queueing")
    # VCs by jobs: va 4, then vb, vc, vd pooled (2 + 1 + 1 jobs).
    vcs = result.table("by_vc")
    assert (vcs["vc"].to_list(), vcs["vcs"].to_list(), vcs["jobs"].to_list()) == (["va", "other"], [1, 3], [4, 4])
    over = result.table("waits_over_thresholds").filter(pl.col("gpu_bucket") == "all")
    assert dict(zip(over["threshold_s"], over["jobs_over"])) == {100.0: 4, 1000.0: 3}  # of 0..7200 above
    assert "wait_over_1h_share" not in {f.name for f in result.findings}  # 1 h is not a threshold here


def test_pai_fixture_task_to_first_instance(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai", write_pai_release(tmp_path / "release"), home)
    result = run_analysis(home, "pai", ["queueing"]).module("queueing")
    table = result.table("pai_definitions")
    # Canonical (job submit -> first instance): j1 10, j2 100, j3 5, j5 0; j4 never started.
    canonical = row_where(table, definition="queue_delay.submit_to_first_start")
    assert (canonical["per"], canonical["rows"], canonical["rows_with_value"]) == ("job", 5, 4)
    assert canonical["p50_s"] == pytest.approx(7.5)
    # Official notes (job start_time -> first task start): 0 for j1, j2, j3, j5; j4's task start is 0 (missing).
    official = row_where(table, definition="pai.queue_delay.submit_to_first_task_start")
    assert (official["rows"], official["rows_with_value"], official["p90_s"]) == (5, 4, 0.0)
    # Per task, task start -> first instance start: j1 worker 1010-1000 = 10, j2 ps 2100-2000 = 100,
    # j2 worker 2150-2000 = 150, j3 3005-3000 = 5, j5 100000-100000 = 0; j4's task has neither.
    # Sorted [0, 5, 10, 100, 150]: p50 10, p90 at rank 3.6 = 100 + 0.6 x 50 = 130, mean 265 / 5 = 53.
    task = row_where(table, definition="pai.queue_delay.task_to_first_instance")
    assert (task["per"], task["rows"], task["rows_with_value"]) == ("task", 6, 5)
    assert (task["p50_s"], task["p90_s"], task["mean_s"]) == pytest.approx((10.0, 130.0, 53.0))
    assert result.finding("task_queue_delay_p50").value == 10.0
    # Load on the fixture: j1 (1 GPU) runs 1010-5000, j2 (4) 2100-2600; j3 (0.25, Running, no end)
    # is left out of allocated GPUs in PAI. Peak 5. Allocated before j1's submission (1000): 0;
    # j2's (2000): 1; j3's (3000): 1; j4's (4000): 1. Against the peak: bins 0, 2, 2, 2. Against
    # the machine list's capacity (2 T4 + 8 V100 + 2 P100 = 12 GPUs): 0, 1/12, 1/12, 1/12 -> bin 0.
    load = result.table("by_load_at_submit").filter(pl.col("cluster") == "pai")
    peak = load.filter(pl.col("reference") == "peak_allocation")
    assert dict(zip(peak["load_bin"], peak["jobs"])) == {0: 1, 2: 3}
    capacity = load.filter(pl.col("reference") == "capacity")
    assert dict(zip(capacity["load_bin"], capacity["jobs"])) == {0: 4}
    assert set(capacity["mean_reference_gpus"]) == {12.0}
    assert "capacity.pai_machine_spec" in next(t for t in result.tables if t.name == "by_load_at_submit").definitions


@pytest.mark.slow
def test_real_table_without_start_times_is_skipped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    import_dataset("philly-pollux", POLLUX, home, mapping="submit=timestamp,duration=duration,gpus=num_gpus,vc=cluster",
                   time_unit="datetime", tz="America/Los_Angeles")
    result = run_analysis(home, "philly-pollux", ["queueing"]).module("queueing")
    assert result.tables == [] and result.findings == []
    assert [n.what for n in result.not_applicable] == ["queueing delay"]


def _bucket(gpus: float) -> str:
    """The GPU-request buckets of `gpu_request.bucket`, written out independently."""
    if gpus == 0:
        return "0"
    if gpus < 1:
        return "(0,1)"
    for label, top in (("1", 1), ("(1,2]", 2), ("(2,4]", 4), ("(4,8]", 8)):
        if gpus <= top:
            return label
    return ">8"


@pytest.mark.slow
def test_real_v2023_default_workload(tmp_path: Path) -> None:
    with open(V2023_DIR / "openb_pod_list_default.csv", newline="") as handle:
        pods = list(csv.DictReader(handle))
    last_deletion = max(int(p["deletion_time"]) for p in pods)
    queues: dict[str, list[float]] = {}
    never: dict[str, int] = {}
    all_queues: list[float] = []
    jobs = []  # (creation, scheduled or None, end or None, milli-GPUs)
    for pod in pods:
        milli = int(pod["gpu_milli"]) if int(pod["num_gpu"]) == 1 else int(pod["num_gpu"]) * 1000
        bucket = _bucket(milli / 1000)
        created = int(pod["creation_time"])
        if pod["scheduled_time"] == "":
            never[bucket] = never.get(bucket, 0) + 1
            jobs.append((created, None, None, milli))
            continue
        scheduled = int(pod["scheduled_time"])
        still_running = pod["pod_phase"] == "Running" and int(pod["deletion_time"]) == last_deletion
        queues.setdefault(bucket, []).append(scheduled - created)
        all_queues.append(scheduled - created)
        jobs.append((created, scheduled, None if still_running else int(pod["deletion_time"]), milli))

    home = tmp_path / "home"
    ingest("pai-v2023", V2023_DIR, home)
    result = run_analysis(home, "pai-v2023", ["queueing"]).module("queueing")

    summary = result.table("by_gpu_bucket")
    assert set(summary["gpu_bucket"]) == set(queues) | set(never)
    for bucket, values in queues.items():
        row = row_where(summary, gpu_bucket=bucket)
        assert row["jobs_with_value"] == len(values)
        assert row["jobs_never_started"] == never.get(bucket, 0)
        for name, q in (("p50_s", 0.5), ("p90_s", 0.9), ("p99_s", 0.99)):
            assert row[name] == pytest.approx(quantile_cont(values, q), abs=1e-6), (bucket, name)
        assert row["mean_s"] == pytest.approx(sum(values) / len(values))

    over = row_where(result.table("waits_over_thresholds"), gpu_bucket="all", threshold_s=3600.0)
    assert over["jobs_over"] == sum(1 for v in all_queues if v > 3600)
    assert over["jobs_never_started"] == sum(never.values()) == (897 if FULL_TRACES else 28)
    assert result.finding("never_started_share").value == pytest.approx(sum(never.values()) / len(pods))
    # No wall clock in v2023: the hour-of-day part is skipped, with its reason.
    skipped = {n.what: n.why for n in result.not_applicable}
    assert "offsets" in skipped["queueing delay by hour of submission"]
    assert "queueing delay by VC" in skipped

    # Load at submission, by a sorted sweep in exact milli-GPUs: each scheduled GPU pod adds its
    # GPUs at scheduling and removes them at deletion (never, if still running at the trace end).
    # Allocated before a creation instant = the running total after the last event time strictly
    # before it. References: the peak running total, and the capacity = GPUs of the all_node list.
    # bin = floor(10 x allocated / reference), at most 9; 10 when allocated is above the reference.
    deltas: dict[int, int] = {}
    for _, start, end, milli in jobs:
        if milli > 0 and start is not None:
            deltas[start] = deltas.get(start, 0) + milli
            if end is not None:
                deltas[end] = deltas.get(end, 0) - milli
    times = sorted(deltas)
    running, total = [], 0
    for t in times:
        total += deltas[t]
        running.append(total)
    with open(V2023_DIR / "openb_node_list_all_node.csv", newline="") as handle:
        capacity = sum(int(node["gpu"]) for node in csv.DictReader(handle)) * 1000
    load = result.table("by_load_at_submit").filter(pl.col("cluster") == "openb")
    for reference, reference_milli in (("peak_allocation", max(running)), ("capacity", capacity)):
        expected_queues: dict[int, list[float]] = {}
        expected_jobs: dict[int, int] = {}
        for created, start, _, milli in jobs:
            if milli == 0:
                continue
            index = bisect.bisect_left(times, created) - 1
            allocated = running[index] if index >= 0 else 0
            load_bin = 10 if allocated > reference_milli else min(allocated * 10 // reference_milli, 9)
            expected_jobs[load_bin] = expected_jobs.get(load_bin, 0) + 1
            if start is not None:
                expected_queues.setdefault(load_bin, []).append(start - created)
        rows = load.filter(pl.col("reference") == reference)
        assert rows["mean_reference_gpus"].to_list() == pytest.approx([reference_milli / 1000] * rows.height)
        assert dict(zip(rows["load_bin"], rows["jobs"])) == expected_jobs
        for load_bin, values in expected_queues.items():
            assert row_where(rows, load_bin=load_bin)["p50_s"] == pytest.approx(quantile_cont(values, 0.5))
        # Headline: the highest bin holding at least 1 % of the GPU pods (and some queueing delay).
        headline = max(b for b, n in expected_jobs.items() if n >= 0.01 * sum(expected_jobs.values())
                       and b in expected_queues)
        assert result.finding(f"queue_delay_p50_at_high_load_{reference}").value == pytest.approx(
            quantile_cont(expected_queues[headline], 0.5))
