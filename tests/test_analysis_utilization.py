"""The utilization module and GPU capacity: the allocation sweep and exact time-weighted means,
capacity per source (hand-built releases and the real v2023 node list and Philly machine list),
shares of a capacity that changes by day, the hour-of-week profile across a local midnight,
measured utilisation (PAI fixture, a tiny Philly release) and PAI requests against usage.

Every expected number is derived by hand below (the arithmetic is in the comments) or, for the
real files, counted here with the csv module.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import allocation
from ddlx.analysis.capacity import gpu_capacity
from ddlx.analysis.context import open_trace
from ddlx.analysis.fast import bins as fast_bins
from ddlx.analysis.fast import steps as fast_steps
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from ddlx.errors import DdlxError
from ddlx.reports.report import build_report
from ddlx.traces.philly import analyses as philly_analyses
from tests.conftest import real_file, write_pai_release
from tests.test_philly_ingest import GPU_HEADER, write_philly_release

REAL_V2023 = real_file("alibaba-gpu-v2023")
REAL_PHILLY_MACHINES = real_file("philly/cluster_machine_list")


def analyze(home: Path, trace: str, **options: object) -> ModuleResult:
    return run_analysis(home, trace, ["utilization"], options=options).module("utilization")


def rows(frame: pl.DataFrame, *keys: str) -> dict:
    """The rows of `frame` by the value(s) of `keys`."""
    return {(r[keys[0]] if len(keys) == 1 else tuple(r[k] for k in keys)): r for r in frame.to_dicts()}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def skipped(result: ModuleResult) -> dict[str, str]:
    return {n.what: n.why for n in result.not_applicable}


# -- the sweep: an imported table in UTC ---------------------------------------------------------
#   a  2 GPUs, vc v1, runs 00:30-02:15: crosses the bin edges 01:00 and 02:00.
#   b  1 GPU,  vc v2, starts 01:00, no end: still running, holds its GPU to the trace end.
#   c  4 GPUs, vc v1, never started: holds nothing.
#   d  3 GPUs, vc v2, runs 02:30-03:20; its end is the trace end.
# The window runs from the first submission (00:00) to 03:20.
SWEEP_CSV = """id,vc,sub,st,en,g
a,v1,2024-03-01 00:00:00,2024-03-01 00:30:00,2024-03-01 02:15:00,2
b,v2,2024-03-01 00:10:00,2024-03-01 01:00:00,,1
c,v1,2024-03-01 00:20:00,,,4
d,v2,2024-03-01 02:00:00,2024-03-01 02:30:00,2024-03-01 03:20:00,3
"""
SWEEP_MAP = "job_id=id,vc=vc,submit=sub,start=st,end=en,gpus=g"


@pytest.fixture(scope="module")
def sweep_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sweep")
    (base / "lab.csv").write_text(SWEEP_CSV)
    import_dataset("lab", base / "lab.csv", base / "home", mapping=SWEEP_MAP, time_unit="datetime", tz="UTC")
    return base / "home"


def test_hourly_bins_are_exact_time_weighted_means(sweep_home: Path) -> None:
    result = analyze(sweep_home, "lab")
    series = result.table("allocation_by_cluster")
    assert series["bin_start"].to_list() == [utc(f"2024-03-01 0{h}:00:00") for h in range(4)]
    # 00-01: a 2 GPUs x 30 min = 3600 GPU-s / 3600 s = 1.0; peak 2.
    # 01-02: a 2 + b 1 all hour = 3.0; peak 3.
    # 02-03: a 2 x 15 min (1800) + b 3600 + d 3 x 30 min (5400) = 10800 / 3600 = 3.0;
    #        the value is 3 (a+b), 1 from 02:15 (b), 4 from 02:30 (b+d): peak 4.
    # 03-03:20 (the window ends at 03:20, 1200 s covered): b 1200 + d 3 x 1200 = 4800 / 1200 = 4.0.
    assert series["covered_s"].to_list() == [3600.0, 3600.0, 3600.0, 1200.0]
    assert series["mean_gpus"].to_list() == pytest.approx([1.0, 3.0, 3.0, 4.0], abs=1e-9)
    assert series["peak_gpus"].to_list() == [2.0, 3.0, 4.0, 4.0]
    assert series["capacity_gpus"].null_count() == series.height  # an imported table has no capacity

    # Per VC: v1 holds only a (c never started): 1.0, 2.0, 0.5 (2 x 15 min), 0.
    # v2 holds b and d: 0, 1.0, (3600 + 5400) / 3600 = 2.5, 4.0.
    by_vc = result.table("allocation_by_vc")
    v1 = by_vc.filter(pl.col("vc") == "v1")
    v2 = by_vc.filter(pl.col("vc") == "v2")
    assert v1["mean_gpus"].to_list() == pytest.approx([1.0, 2.0, 0.5, 0.0], abs=1e-9)
    assert v2["mean_gpus"].to_list() == pytest.approx([0.0, 1.0, 2.5, 4.0], abs=1e-9)
    assert v1["peak_gpus"].to_list() == [2.0, 2.0, 2.0, 0.0]

    # Whole window (12000 s): a 2 x 6300 + b 1 x 8400 + d 3 x 3000 = 30000 GPU-s -> 2.5 GPUs.
    whole = result.table("allocation_vs_capacity").row(0, named=True)
    assert whole["mean_gpus"] == pytest.approx(2.5, abs=1e-12)
    assert whole["peak_gpus"] == 4.0
    assert whole["end_gpus"] == 1.0  # b, still running
    assert whole["capacity_source"] is None and whole["mean_share"] is None
    assert result.finding("allocated_gpus_mean").value == pytest.approx(2.5, abs=1e-12)
    assert result.finding("allocated_gpus_at_end").value == 1.0
    assert "GPU capacity, and allocated GPUs as a share of it" in skipped(result)
    assert "measured GPU utilisation" in skipped(result)
    assert "requests against usage" in skipped(result)


def test_a_finer_resolution_and_bins_cut_by_the_window(sweep_home: Path) -> None:
    series = analyze(sweep_home, "lab", resolution_s=1800).table("allocation_by_cluster")
    # Half-hour bins: 00:00 0, 00:30 2, 01:00 3, 01:30 3,
    # 02:00 (a 2 GPUs x 900 s + b 1 x 1800 s = 3600 GPU-s / 1800 s) 2.0, 02:30 (b + d) 4, 03:00 (20 min covered) 4.
    assert series["mean_gpus"].to_list() == pytest.approx([0.0, 2.0, 3.0, 3.0, 2.0, 4.0, 4.0], abs=1e-9)
    assert series["covered_s"].to_list()[-1] == 1200.0
    assert series["bin_start"][-1] == utc("2024-03-01 03:00:00")


def test_too_long_series_are_written_coarser_and_said_so(sweep_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # At 60 s the window has 200 bins: 200 rows for the cluster, 400 for the two VCs.
    monkeypatch.setattr(allocation, "MAX_SERIES_ROWS", 300)
    result = analyze(sweep_home, "lab", resolution_s=60)
    assert result.table("allocation_by_cluster").height == 200
    # 400 > 300: the first coarser step that fits is 300 s (2 VCs x 40 bins).
    assert result.table("allocation_by_vc").height == 80
    assert skipped(result)["allocation_by_vc at 60 s"].endswith("written at 300 s")


def test_a_bad_resolution_is_refused(sweep_home: Path) -> None:
    with pytest.raises(DdlxError, match="resolution_s must be a positive whole number"):
        analyze(sweep_home, "lab", resolution_s=0)


# -- hour of week across a local midnight ---------------------------------------------------------
# Wall clock in Asia/Shanghai. 2024-01-07 is a Sunday.
#   a 2 GPUs Sunday 23:30 -> Monday 01:30;  b 1 GPU Sunday 22:30, still running;
#   d CPU-only, Monday 02:00-03:00: its end (Monday 03:00) is the trace end.
WEEK_CSV = """id,sub,st,en,g
a,2024-01-07 22:00:00,2024-01-07 23:30:00,2024-01-08 01:30:00,2
b,2024-01-07 22:00:00,2024-01-07 22:30:00,,1
d,2024-01-08 02:00:00,2024-01-08 02:00:00,2024-01-08 03:00:00,0
"""


def test_hour_of_week_in_local_time_across_midnight(tmp_path: Path) -> None:
    (tmp_path / "week.csv").write_text(WEEK_CSV)
    import_dataset("week", tmp_path / "week.csv", tmp_path / "home",
                   mapping="job_id=id,submit=sub,start=st,end=en,gpus=g", time_unit="datetime", tz="Asia/Shanghai")
    profile = analyze(tmp_path / "home", "week").table("allocation_hour_of_week")
    # Sunday 22:00 is hour 6 * 24 + 22 = 166; Monday 00:00 is hour 0.
    #   166 (Sun 22-23): b from 22:30 = 0.5;  167 (Sun 23-24): b 1 + a 2 x 0.5 h = 2.0
    #   0 (Mon 00-01): b 1 + a 2 = 3.0;  1 (Mon 01-02): b 1 + a 2 x 0.5 h = 2.0;  2 (Mon 02-03): b 1.0
    found = rows(profile, "hour_of_week")
    assert sorted(found) == [0, 1, 2, 166, 167]
    assert {h: r["mean_gpus"] for h, r in found.items()} == pytest.approx(
        {166: 0.5, 167: 2.0, 0: 3.0, 1: 2.0, 2: 1.0}, abs=1e-9)
    assert (found[167]["weekday"], found[167]["hour"]) == ("Sunday", 23)
    assert (found[0]["weekday"], found[0]["hour"]) == ("Monday", 0)
    assert all(r["observed_h"] == 1.0 for r in found.values())


# -- Helios: daily VC capacity that changes --------------------------------------------------------
# Venus: vcA has 4 GPUs on 2020-06-01 and 2 on 06-02; vcB 4 both days (cluster: 8, then 6).
# Earth: vcZ 10 GPUs both days. Jobs (local wall clock, Asia/Shanghai = UTC+8):
#   v1 vcA 2 GPUs 06-01 22:00 -> 06-02 02:00 (crosses local midnight; its end is the trace end)
#   v2 vcB 4 GPUs 06-01 23:00 -> 06-02 00:30
#   e1 vcZ 5 GPUs 06-01 22:00 -> 06-01 23:00
# The window runs 22:00 -> 02:00 local (14:00 -> 18:00 UTC).
HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
HELIOS_FILES = {
    "Venus/cluster_log.csv": [
        HELIOS_HEADER,
        "v1,u1,vcA,2,8,1,COMPLETED,2020-06-01 22:00:00,2020-06-01 22:00:00,2020-06-02 02:00:00,14400,0",
        "v2,u2,vcB,4,8,1,FAILED,2020-06-01 23:00:00,2020-06-01 23:00:00,2020-06-02 00:30:00,5400,0",
    ],
    "Venus/cluster_gpu_number.csv": ["date,vcA,vcB,total", "2020-06-01,4,4,8", "2020-06-02,2,4,6"],
    "Earth/cluster_log.csv": [
        HELIOS_HEADER,
        "e1,u3,vcZ,5,8,1,COMPLETED,2020-06-01 22:00:00,2020-06-01 22:00:00,2020-06-01 23:00:00,3600,0",
    ],
    "Earth/cluster_gpu_number.csv": ["date,vcZ,total", "2020-06-01,10,10", "2020-06-02,10,10"],
}


def ingested_helios(base: Path, files: dict[str, list[str]]) -> Path:
    """The data home of the Helios release `files` (path -> lines) written under `base` and ingested."""
    for name, lines in files.items():
        (base / "release" / name).parent.mkdir(parents=True, exist_ok=True)
        (base / "release" / name).write_text("\n".join(lines) + "\n")
    ingest("helios", base / "release", base / "home")
    return base / "home"


@pytest.fixture(scope="module")
def helios_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_helios(tmp_path_factory.mktemp("helios"), HELIOS_FILES)


def test_helios_capacity_is_one_row_per_cluster_vc_and_local_day(helios_home: Path) -> None:
    with open_trace(helios_home, "helios") as ctx:
        capacity = gpu_capacity(ctx)
    assert set(capacity["source"]) == {"helios_vc_capacity"}
    assert capacity["gpu_type"].null_count() == capacity.height
    found = {(r["cluster"], r["vc"], r["valid_from"]): (r["valid_to"], r["gpus"]) for r in capacity.to_dicts()}
    # A local day starts at 16:00 UTC the day before.
    day1, day2, day3 = utc("2020-05-31 16:00:00"), utc("2020-06-01 16:00:00"), utc("2020-06-02 16:00:00")
    assert found == {
        ("Venus", "vcA", day1): (day2, 4), ("Venus", "vcB", day1): (day2, 4),
        ("Venus", "vcA", day2): (day3, 2), ("Venus", "vcB", day2): (day3, 4),
        ("Earth", "vcZ", day1): (day2, 10), ("Earth", "vcZ", day2): (day3, 10),
    }


def test_shares_follow_the_capacity_of_each_day(helios_home: Path) -> None:
    result = analyze(helios_home, "helios")
    venus = result.table("allocation_by_cluster").filter(pl.col("cluster") == "Venus")
    # Local hours 22, 23 (capacity 8), 00, 01 (capacity 6):
    #   22-23: v1 2 -> 0.25;  23-24: v1 2 + v2 4 = 6 -> 0.75;
    #   00-01: v1 2 + v2 4 for half an hour = 4 -> 4/6, peak 6 -> 6/6;  01-02: 2 -> 2/6.
    assert venus["capacity_gpus"].to_list() == [8.0, 8.0, 6.0, 6.0]
    assert venus["mean_gpus"].to_list() == pytest.approx([2.0, 6.0, 4.0, 2.0], abs=1e-9)
    assert venus["mean_share"].to_list() == pytest.approx([0.25, 0.75, 4 / 6, 2 / 6], abs=1e-9)
    assert venus["peak_share"].to_list() == pytest.approx([0.25, 0.75, 1.0, 2 / 6], abs=1e-9)
    by_vc = rows(result.table("allocation_by_vc"), "cluster", "vc", "bin_start")
    # vcA holds 2 GPUs all along: 2/4 on the first day, 2/2 on the second.
    assert by_vc[("Venus", "vcA", utc("2020-06-01 15:00:00"))]["mean_share"] == pytest.approx(0.5)
    assert by_vc[("Venus", "vcA", utc("2020-06-01 16:00:00"))]["mean_share"] == pytest.approx(1.0)

    summary = rows(result.table("allocation_vs_capacity"), "cluster")
    # Venus over 4 h: GPU-hours 2 + 6 + 4 + 2 = 14 -> 3.5 GPUs; capacity (8 x 2 h + 6 x 2 h) / 4 h = 7;
    # share = (2/8 + 6/8 + 4/6 + 2/6) / 4 = 0.5; peak share 6/6 at local midnight, when capacity drops.
    assert summary["Venus"]["mean_gpus"] == pytest.approx(3.5)
    assert summary["Venus"]["capacity_gpus"] == pytest.approx(7.0)
    assert summary["Venus"]["mean_share"] == pytest.approx(0.5)
    assert summary["Venus"]["peak_share"] == pytest.approx(1.0)
    # Earth: 5 GPUs for 1 h of 4 -> 1.25 GPUs, share 0.125, peak 5/10.
    assert summary["Earth"]["mean_gpus"] == pytest.approx(1.25)
    assert summary["Earth"]["mean_share"] == pytest.approx(0.125)
    assert summary["Earth"]["peak_share"] == pytest.approx(0.5)
    # All clusters: capacity 18 on day 1 and 16 on day 2; allocated 7, 6, 4, 2 by hour.
    # share = (7/18 + 6/18 + 4/16 + 2/16) / 4 = 0.2743055...; peak 7/18 (22:00-23:00); mean 19/4 GPUs.
    assert summary[None]["mean_gpus"] == pytest.approx(4.75)
    assert summary[None]["capacity_gpus"] == pytest.approx(17.0)
    assert summary[None]["mean_share"] == pytest.approx((7 / 18 + 6 / 18 + 4 / 16 + 2 / 16) / 4)
    assert summary[None]["peak_share"] == pytest.approx(7 / 18)
    assert result.finding("allocated_share_mean").value == pytest.approx((7 / 18 + 6 / 18 + 4 / 16 + 2 / 16) / 4)
    assert result.finding("allocated_share_peak").value == pytest.approx(7 / 18)
    assert "allocated GPUs per gpu_type" in skipped(result)


# Venus again, with no capacity for local day 06-02 (vcA 4 and vcB 4 on 06-01, vcA 2 and vcB 4 on 06-03):
#   g1 vcA 2 GPUs 06-01 22:00 -> 06-03 02:00; g2 vcB 8 GPUs 06-02 12:00 -> 13:00, when no capacity is
#   known; g3 vcB 4 GPUs from 06-03 00:00, the instant the capacity of 06-03 starts, to 01:00.
HELIOS_GAP_FILES = {
    "Venus/cluster_log.csv": [
        HELIOS_HEADER,
        "g1,u1,vcA,2,8,1,COMPLETED,2020-06-01 22:00:00,2020-06-01 22:00:00,2020-06-03 02:00:00,100800,0",
        "g2,u2,vcB,8,8,1,COMPLETED,2020-06-02 12:00:00,2020-06-02 12:00:00,2020-06-02 13:00:00,3600,0",
        "g3,u2,vcB,4,8,1,COMPLETED,2020-06-03 00:00:00,2020-06-03 00:00:00,2020-06-03 01:00:00,3600,0",
    ],
    "Venus/cluster_gpu_number.csv": ["date,vcA,vcB,total", "2020-06-01,4,4,8", "2020-06-03,2,4,6"],
}


@pytest.fixture(scope="module")
def helios_gap_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_helios(tmp_path_factory.mktemp("helios_gap"), HELIOS_GAP_FILES)


@pytest.fixture(params=["helios_home", "helios_gap_home"])
def capacity_home(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue(request.param)


def test_a_gap_in_capacity_counts_no_share(helios_gap_home: Path) -> None:
    with open_trace(helios_gap_home, "helios", cache=False) as ctx:
        window = allocation.trace_window(ctx)
        assert window is not None
        venus = allocation.allocation_vs_capacity(ctx, ("cluster",), window).row(0, named=True)
    # Covered: 06-01 22:00-24:00 (8 GPUs, 2 held) and 06-03 00:00-02:00 (6 GPUs; 6 held for 1 h, then 2).
    # The 10 GPUs held on 06-02 fall in no piece; the peak is 6 of 6 at the start of 06-03.
    assert venus["capacity_covered_s"] == 4 * 3600
    assert venus["capacity_gpus"] == pytest.approx(7.0)
    assert venus["mean_share"] == pytest.approx((2 * 2 / 8 + (6 + 2) / 6) / 4)
    assert venus["peak_share"] == pytest.approx(1.0)
    assert venus["peak_gpus"] == 10.0


@pytest.mark.parametrize("groups", [(), ("cluster",), ("cluster", "vc")])
@pytest.mark.parametrize("window_of", [allocation.trace_window, allocation.active_window])
def test_steps_looked_up_in_memory_give_what_the_asof_joins_give(capacity_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                                groups: tuple[str, ...], window_of) -> None:
    """Capacity changing at local midnight, or missing for a day, per cluster and VC: the steps in
    force at each piece's ends and the peak within each piece, found in memory, against the ASOF
    joins on the steps table."""
    def compute() -> pl.DataFrame:
        with open_trace(capacity_home, "helios", cache=False) as ctx:
            window = window_of(ctx)
            assert window is not None
            return allocation.allocation_vs_capacity(ctx, groups, window)

    in_memory = compute()
    monkeypatch.setattr(fast_steps, "STEPS_SUMMED_IN_MEMORY", 0)
    by_asof = compute()
    assert in_memory.height >= 1 and in_memory["capacity_gpus"].null_count() < in_memory.height
    assert in_memory.equals(by_asof)


def _partials_both_ways(ctx, intervals: str, groups: tuple[str, ...], lo_us: int, hi_us: int,
                        resolution_us: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The sweep's partial results by the query and reduced in memory, rows sorted alike."""
    ctx.execute(f"CREATE OR REPLACE TEMP VIEW test_intervals AS {intervals}")
    by_query = ctx.query(allocation.allocation_partials_sql("test_intervals", groups, lo_us, hi_us, resolution_us))
    in_memory = fast_bins.partials(ctx, intervals, groups, lo_us, hi_us, resolution_us)
    assert in_memory is not None
    order = [*groups, "k"]
    return by_query.sort(order, nulls_last=True), in_memory.sort(order, nulls_last=True)


@pytest.mark.usefixtures("speedups_on")  # the partials reduced in memory
@pytest.mark.parametrize("home_name,trace", [("sweep_home", "lab"), ("helios_gap_home", "helios"), ("pai_home", "pai")])
@pytest.mark.parametrize("window_of", [allocation.trace_window, allocation.active_window])
@pytest.mark.parametrize("resolution_s", [1800, 3600, 7 * 86400])
def test_partials_reduced_in_memory_are_the_query_rows(request: pytest.FixtureRequest, home_name: str, trace: str,
                                                       window_of, resolution_s: int) -> None:
    """Every grouping, window and bin width: the partials reduced in memory are the rows of
    `allocation_partials_sql` on DuckDB, column types and all."""
    home = request.getfixturevalue(home_name)
    with open_trace(home, trace, cache=False) as ctx:
        window = window_of(ctx)
        assert window is not None
        lo_us, hi_us = round(window.lo * 1e6), round(window.hi * 1e6)
        for groups in [(), ("cluster",), ("cluster", "vc"), ("cluster", "gpu_type")]:
            by_query, in_memory = _partials_both_ways(ctx, allocation.job_intervals_sql(ctx, groups), groups,
                                                      lo_us, hi_us, resolution_s * 1_000_000)
            assert by_query.height >= 1
            assert in_memory.equals(by_query), groups


#: Hand-made sweep input (Unix microseconds; millionths of a GPU), bins of 10 s, window [0 s, 30 s]:
#:   a: 1 GPU from -5 s (counted from 0) to 12 s; 2 GPUs from 12 s, no end; 0.5 GPU from 25 s to 40 s
#:      (its end is after the window: left out); b starts after the window (nothing).
#:   NULL cluster: 1 GPU from 3 s to 30 s (its end, at the window end, falls in bin 3).
HAND_INTERVALS = """SELECT * FROM (VALUES ('a', -5000000, 12000000, 1000000), ('a', 12000000, NULL, 2000000),
                                          ('a', 25000000, 40000000, 500000), (NULL, 3000000, 30000000, 1000000),
                                          ('b', 35000000, 36000000, 1000000))
                    AS t(cluster, start_us, end_us, gpus_micro)"""


@pytest.mark.usefixtures("speedups_on")  # the partials reduced in memory
def test_partials_in_memory_by_hand(sweep_home: Path) -> None:
    """The partials of `HAND_INTERVALS`, worked out by hand: per bin the net change, the moment
    (change x microseconds to the bin's end), the peak running sum before the window end and the
    first change; and, with a window starting before 1970, bins numbered as DuckDB divides."""
    with open_trace(sweep_home, "lab", cache=False) as ctx:
        by_query, in_memory = _partials_both_ways(ctx, HAND_INTERVALS, ("cluster",), 0, 30_000_000, 10_000_000)
        assert in_memory.equals(by_query)
        assert in_memory.with_columns(pl.col("moment").cast(pl.Int64)).rows() == [
            # a: +1 at 0 (bin 0: 1 x 10 s); -1 + 2 at 12 s (bin 1: 1 x 8 s); +0.5 at 25 s (bin 2: 0.5 x 5 s)
            ("a", 0, 1_000_000, 10_000_000_000_000, 1_000_000, 0),
            ("a", 1, 1_000_000, 8_000_000_000_000, 1_000_000, 12_000_000),
            ("a", 2, 500_000, 2_500_000_000_000, 500_000, 25_000_000),
            # NULL: +1 at 3 s (1 x 7 s); -1 at 30 s, the window end: bin 3, no time left, no peak
            (None, 0, 1_000_000, 7_000_000_000_000, 1_000_000, 3_000_000),
            (None, 3, -1_000_000, 0, None, 30_000_000)]
        before_1970 = """SELECT * FROM (VALUES ('a', -15000000, -5000000, 1000000), ('a', -3000000, 2000000, 1000000))
                         AS t(cluster, start_us, end_us, gpus_micro)"""
        by_query, in_memory = _partials_both_ways(ctx, before_1970, ("cluster",), -20_000_000, 5_000_000, 10_000_000)
        assert in_memory.equals(by_query)
        assert in_memory["k"].to_list() == [-1, 0]  # -15 s in bin -1; -5 s, -3 s and 2 s all in bin 0 (toward zero)


def test_allocation_series_reduced_by_the_query_when_too_many_changes(sweep_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `STEPS_SUMMED_IN_MEMORY` the partials come from the query: the same series."""
    def series() -> pl.DataFrame:
        with open_trace(sweep_home, "lab", cache=False) as ctx:
            return allocation.allocation_series(ctx, ("cluster", "vc"), 1800)

    in_memory = series()
    monkeypatch.setattr(fast_steps, "STEPS_SUMMED_IN_MEMORY", 0)
    assert series().equals(in_memory) and in_memory["mean_gpus"].sum() > 0


# -- PAI: the five-job fixture ------------------------------------------------------------------
@pytest.fixture(scope="module")
def pai_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pai")
    ingest("pai", write_pai_release(base / "release"), base / "home")
    return base / "home"


def test_pai_capacity_allocation_and_gpu_types(pai_home: Path) -> None:
    result = analyze(pai_home, "pai", resolution_s=1000)
    # Machine spec: m1 T4 2 GPUs, m2 V100 8, m3 P100 2; m4 is CPU-only (left out).
    capacity = result.table("capacity")
    assert {r["gpu_type"]: r["gpus"] for r in capacity.to_dicts()} == {"T4": 2, "V100": 8, "P100": 2}
    assert set(capacity["source"]) == {"pai_machine_spec"} and capacity["valid_from"].null_count() == 3
    # Jobs holding GPUs: j1 1.0 GPU (T4) 1010-5000; j2 4 GPUs (V100) 2100-2600. j3 (0.25 P100 from
    # 3005, status Running, no end) is left out: in PAI a job without an end has no logged end.
    # The window runs 1000 (j1's submission) -> 100060 (j5's end): 99060 s.
    # GPU-s: 3990 + 2000 = 5990 -> mean 5990 / 99060; peak 1 + 4 = 5 of 12 GPUs; none at the end.
    summary = result.table("allocation_vs_capacity").row(0, named=True)
    assert summary["mean_gpus"] == pytest.approx(5990 / 99060)
    assert summary["peak_gpus"] == 5.0
    assert summary["capacity_gpus"] == 12.0
    assert summary["mean_share"] == pytest.approx(5990 / 99060 / 12)
    assert summary["peak_share"] == pytest.approx(5 / 12)
    assert summary["end_gpus"] == 0.0
    left_out = result.finding("unplaced_open_job_gpus")
    assert left_out.value == 0.25 and "(1 jobs)" in left_out.population
    series = result.table("allocation_by_cluster")
    # Bins of 1000 s from 1000: [1000, 2000) j1 990 GPU-s -> 0.99; [2000, 3000) 1000 + 4 x 500 -> 3.0;
    # [3000, 4000) j1 alone -> 1.0.
    assert series["mean_gpus"].to_list()[:3] == pytest.approx([0.99, 3.0, 1.0])
    assert series["peak_share"].to_list()[1] == pytest.approx(5 / 12)
    by_type = rows(result.table("allocation_by_gpu_type"), "gpu_type", "bin_start")
    v100 = by_type[("V100", datetime.fromtimestamp(2000, timezone.utc))]
    # V100: j2's 4 GPUs for 500 of 1000 s = 2.0 of 8 GPUs.
    assert (v100["mean_gpus"], v100["capacity_gpus"], v100["mean_share"]) == (2.0, 8.0, 0.25)


def test_pai_measured_gpu_utilisation(pai_home: Path) -> None:
    result = analyze(pai_home, "pai")
    # GPU instances with a sensor row: w1a 150 and w1b 20 (j1, 1 GPU, completed), w2a 80 (j2, 4 GPUs, failed).
    measured = rows(result.table("measured_gpu_util"), "measure")
    instances = measured["pai_instance_gpu_util"]
    assert (instances["values"], instances["p50_pct"], instances["above_100"]) == (3, 80.0, 1)
    assert instances["mean_pct"] == pytest.approx(250 / 3)
    # Machine metric: 120 and 60 -> median 90, one row above 100.
    machine = measured["pai_machine_gpu_util"]
    assert (machine["values"], machine["p50_pct"], machine["above_100"]) == (2, 90.0, 1)
    cdf = rows(result.table("pai_instance_gpu_util_cdf"), "probability")
    assert (cdf[0.0]["gpu_util_pct"], cdf[0.5]["gpu_util_pct"], cdf[1.0]["gpu_util_pct"]) == (20.0, 80.0, 150.0)
    # Steps through the three values, never between them: 20 holds up to a third of them.
    assert [cdf[p]["gpu_util_pct"] for p in (0.25, 0.33, 0.34, 0.66, 0.67)] == [20, 20, 80, 80, 150]
    by_size = rows(result.table("pai_instance_gpu_util_by_size"), "gpu_bucket")
    assert list(by_size) == ["1", "(2,4]"]
    assert (by_size["1"]["instances"], by_size["1"]["mean_gpu_util_pct"]) == (2, 85.0)
    assert (by_size["(2,4]"]["instances"], by_size["(2,4]"]["p50_gpu_util_pct"]) == (1, 80.0)
    by_state = rows(result.table("pai_instance_gpu_util_by_state"), "state")
    assert {s: r["instances"] for s, r in by_state.items()} == {"completed": 2, "failed": 1}
    machine_cdf = rows(result.table("pai_machine_gpu_util_cdf"), "probability")
    # 60 and 120: the CDF holds 60 up to a half and 120 above; the p50 (90) interpolates.
    assert [machine_cdf[p]["machine_gpu_pct"] for p in (0.5, 0.51)] == [60.0, 120.0]
    assert result.finding("pai_instance_gpu_util_p50").value == 80.0
    assert result.finding("pai_machine_gpu_util_p50").value == 90.0


def test_pai_requests_against_usage(pai_home: Path) -> None:
    result = analyze(pai_home, "pai")
    table = rows(result.table("pai_request_vs_usage"), "resource")
    # Tasks with a sensor row: j1 worker (plan 400 % CPU, 10 GB, 50 % GPU; instances use CPU 250 and 120,
    # GPU 150 and 20, avg_mem 3 and 2, max_mem 4 and 3) and j2 worker (plan 200 %, 8 GB, 100 %; CPU 300,
    # GPU 80, avg_mem 2, max_mem 3). Usage over request:
    #   cpu  j1 185/400 = 0.4625, j2 300/200 = 1.5   -> 1 of 2 below its request
    #   gpu  j1 85/50 = 1.7,      j2 80/100 = 0.8    -> 1 of 2
    #   mem_avg j1 2.5/10 = 0.25, j2 2/8 = 0.25      -> 2 of 2
    #   mem_max j1 3.5/10 = 0.35, j2 3/8 = 0.375     -> 2 of 2
    expected = {"cpu": (1, 0.5, (0.4625 + 1.5) / 2), "gpu": (1, 0.5, 1.25),
                "mem_avg": (2, 1.0, 0.25), "mem_max": (2, 1.0, 0.3625)}
    assert list(table) == ["cpu", "gpu", "mem_avg", "mem_max"]
    for resource, (over, share, median) in expected.items():
        row = table[resource]
        assert row["tasks"] == 2
        assert (row["over_requesting_tasks"], row["over_requesting_share"]) == (over, share), resource
        assert row["p50_usage_ratio"] == pytest.approx(median), resource
    cdf = rows(result.table("pai_usage_ratio_cdf"), "resource", "probability")
    assert (cdf[("gpu", 0.0)]["usage_ratio"], cdf[("gpu", 1.0)]["usage_ratio"]) == pytest.approx((0.8, 1.7))
    assert result.finding("gpu_over_request_share").value == 0.5
    assert result.finding("gpu_usage_ratio_p50").value == pytest.approx(1.25)


# -- Philly: a tiny release with utilisation rows under the jobs ------------------------------------
# Wall clock in US Pacific (October: PDT, UTC-7). Jobs:
#   app_1 Pass    m1 gpu0 + gpu2, 10:58 -> 12:02 (two partial hours, one whole hour)
#   app_2 Pass    m1 gpu1 from 11:30, still running (end None): to the end of the log (12:02 + 1 min)
#   app_3 Failed  m2 gpu0 10:00 -> 10:05, then m2 gpu1 10:06 -> 10:08
#   app_4 Killed  no attempt;  app_5 Pass m9 10:10 -> 10:20 (no utilisation rows for m9)
PHILLY_JOBS = [
    {"status": "Pass", "vc": "vA", "jobid": "app_1", "user": "u1", "submitted_time": "2017-10-02 10:50:00",
     "attempts": [{"start_time": "2017-10-02 10:58:00", "end_time": "2017-10-02 12:02:00",
                   "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu2"]}]}]},
    {"status": "Pass", "vc": "vA", "jobid": "app_2", "user": "u1", "submitted_time": "2017-10-02 11:29:00",
     "attempts": [{"start_time": "2017-10-02 11:30:00", "end_time": "None",
                   "detail": [{"ip": "m1", "gpus": ["gpu1"]}]}]},
    {"status": "Failed", "vc": "vB", "jobid": "app_3", "user": "u2", "submitted_time": "2017-10-02 09:59:00",
     "attempts": [{"start_time": "2017-10-02 10:00:00", "end_time": "2017-10-02 10:05:00",
                   "detail": [{"ip": "m2", "gpus": ["gpu0"]}]},
                  {"start_time": "2017-10-02 10:06:00", "end_time": "2017-10-02 10:08:00",
                   "detail": [{"ip": "m2", "gpus": ["gpu1"]}]}]},
    {"status": "Killed", "vc": "vB", "jobid": "app_4", "user": "u2", "submitted_time": "2017-10-02 10:00:00",
     "attempts": []},
    {"status": "Pass", "vc": "vB", "jobid": "app_5", "user": "u3", "submitted_time": "2017-10-02 10:00:00",
     "attempts": [{"start_time": "2017-10-02 10:10:00", "end_time": "2017-10-02 10:20:00",
                   "detail": [{"ip": "m9", "gpus": ["gpu0"]}]}]},
]
# (minute, machine, gpu values): m1 has 4 GPUs, m2 two; NA = offline.
PHILLY_UTIL = [
    ("10:57", "m1", "90,91,92,93"),   # before app_1 starts
    ("10:58", "m1", "10,50,20,1"),
    ("10:59", "m1", "30,50,NA,1"),
    ("11:00", "m1", "40,60,40,1"),
    ("11:30", "m1", "50,70,60,1"),
    ("11:59", "m1", "60,80,80,1"),
    ("12:00", "m1", "70,90,100,1"),
    ("12:01", "m1", "80,100,90,1"),
    ("12:02", "m1", "99,99,99,101"),  # app_1 has ended (its end is not included); app_2 still runs
    ("10:01", "m2", "5,7"),
    ("10:02", "m2", "15,7"),
    ("10:06", "m2", "50,8"),
    ("10:07", "m2", "50,12"),
    ("10:09", "m2", "NA,NA"),
]
# m2 is listed with 1 GPU, but its rows show 2: the list under-counts it.
PHILLY_MACHINES = ["m1,4, 12GB", "m2,1, 12GB"]


def _philly_util_file() -> bytes:
    lines = [GPU_HEADER]
    for minute, machine, values in PHILLY_UTIL:
        fields = values.split(",")
        lines.append(f"2017-10-02 {minute}:00 PDT,{machine}," + ",".join(fields + [""] * (8 - len(fields))) + ",")
    return ("\n".join(lines) + "\n").encode()


def _philly_values() -> list[float]:
    """Every GPU-minute value of the log, read from the rows above with plain Python."""
    return [float(v) for _, _, values in PHILLY_UTIL for v in values.split(",") if v != "NA"]


@pytest.fixture(scope="module")
def philly_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("philly")
    overrides = {
        "cluster_job_log": json.dumps(PHILLY_JOBS).encode(),
        "cluster_gpu_util": _philly_util_file(),
        "cluster_machine_list": ("\n".join(["machineId, number of GPUs, single GPU mem", *PHILLY_MACHINES])
                                 + "\n").encode(),
    }
    ingest("philly", write_philly_release(base / "release", overrides=overrides), base / "home")
    return base / "home"


def test_philly_capacity_from_both_sources(philly_home: Path) -> None:
    result = analyze(philly_home, "philly")
    capacity = rows(result.table("capacity"), "source")
    # Machine list: 4 + 1 = 5 GPUs. Utilisation log: m1 shows 4 GPU fields, m2 shows 2 -> 6.
    assert capacity["philly_machine_list"]["gpus"] == 5
    assert capacity["philly_gpu_util"]["gpus"] == 6
    assert all(r["cluster"] == "philly" and r["vc"] is None for r in capacity.values())
    summary = rows(result.table("allocation_vs_capacity"), "capacity_source")
    assert set(summary) == {"philly_gpu_util", "philly_machine_list"}
    # Both rows share the allocation; the peak is app_1's 2 GPUs: app_2, whose last attempt has no
    # end, is an end Philly did not log and is left out. Held to the trace end, it would add its
    # 1 GPU from 11:30 on: peak 3 GPUs, said beside the headline.
    assert summary["philly_gpu_util"]["peak_share"] == pytest.approx(2 / 6)
    assert summary["philly_machine_list"]["peak_share"] == pytest.approx(2 / 5)
    assert result.finding("allocated_share_peak").alternative == (
        "50.0 % if the 1 started job with no recorded end is held to the trace end")
    # The headline share is against the GPUs seen in the log (the list under-counts).
    assert "capacity.philly_gpu_util" in result.finding("allocated_share_peak").population


def test_philly_gpu_minute_utilisation(philly_home: Path) -> None:
    result = analyze(philly_home, "philly")
    values = _philly_values()
    assert len(values) == 43  # 9 rows x 4 on m1 less one NA, 4 rows x 2 on m2
    measured = rows(result.table("measured_gpu_util"), "measure")["philly_gpu_minute_util"]
    assert measured["values"] == len(values)
    assert measured["p50_pct"] == statistics.median(values)
    assert measured["mean_pct"] == pytest.approx(statistics.fmean(values))
    assert measured["above_100"] == 1  # 101 at 12:02
    cdf = rows(result.table("philly_gpu_minute_util_cdf"), "probability")
    assert (cdf[0.0]["gpu_util_pct"], cdf[1.0]["gpu_util_pct"]) == (min(values), max(values))
    assert cdf[0.5]["gpu_util_pct"] == statistics.median(values)
    # At 0.9 of 43 sorted values the CDF steps to the smallest with 38.7 or more at or below it: the 39th.
    ordered = sorted(values)
    assert cdf[0.9]["gpu_util_pct"] == ordered[38] and cdf[0.88]["gpu_util_pct"] == ordered[37]
    assert cdf[0.5]["gpu_minutes"] == 43


def test_philly_job_utilisation_joins_attempts_to_their_gpus(philly_home: Path) -> None:
    with open_trace(philly_home, "philly") as ctx:
        jobs = rows(philly_analyses.philly_job_gpu_util(ctx), "job_id")
    # app_1, gpu0 and gpu2 from 10:58 up to 12:02: 10:58 (10, 20), 10:59 (30; gpu2 NA), 11:00 (40, 40),
    # 11:30 (50, 60), 11:59 (60, 80), 12:00 (70, 100), 12:01 (80, 90): 13 GPU-minutes, sum 730.
    # (Hour 11 is read from hourly sums, hours 10 and 12 minute by minute.)
    # app_2's attempt from 11:30 has no end (not logged): it is left out, so app_2 has no GPU-minute.
    # app_3, m2 gpu0 10:01 (5), 10:02 (15), then gpu1 10:06 (8), 10:07 (12): 40 / 4.
    assert set(jobs) == {"app_1", "app_3"}  # app_4 has no attempt, app_5 no rows in the log
    assert (jobs["app_1"]["gpu_minutes"], jobs["app_1"]["gpu_util_pct"]) == (13, pytest.approx(730 / 13))
    assert (jobs["app_3"]["gpu_minutes"], jobs["app_3"]["gpu_util_pct"]) == (4, pytest.approx(10.0))
    assert {j: (r["gpu_bucket"], r["state"]) for j, r in jobs.items()} == {
        "app_1": ("(1,2]", "completed"), "app_3": ("1", "failed")}
    with open_trace(philly_home, "philly") as ctx, ctx.holding_open("attempt"):
        held = rows(philly_analyses.philly_job_gpu_util(ctx), "job_id")
    # Held to the end of the log instead: gpu1 from 11:30 on, 70, 80, 90, 100, 99 -> 439 / 5.
    assert (held["app_2"]["gpu_minutes"], held["app_2"]["gpu_util_pct"]) == (5, pytest.approx(87.8))

    result = analyze(philly_home, "philly")
    by_size = rows(result.table("philly_job_gpu_util_by_size"), "gpu_bucket")
    assert by_size["1"]["jobs"] == 1 and by_size["1"]["p50_gpu_util_pct"] == pytest.approx(10.0)
    assert by_size["(1,2]"]["mean_gpu_util_pct"] == pytest.approx(730 / 13)
    by_state = rows(result.table("philly_job_gpu_util_by_state"), "state")
    assert {s: r["jobs"] for s, r in by_state.items()} == {"completed": 1, "failed": 1}
    # Median of the two jobs: (730 / 13 + 10) / 2; with app_2 held to the end: 730 / 13, the middle of three.
    median = result.finding("philly_job_gpu_util_p50")
    assert median.value == pytest.approx((730 / 13 + 10) / 2)
    assert median.alternative == "56.2 % if the 1 attempt with no recorded end is held to the trace end"
    assert "left out: 1" in median.population


# -- real files ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_v2023_capacity_by_model(tmp_path: Path) -> None:
    expected: Counter[str] = Counter()
    with open(REAL_V2023 / "openb_node_list_all_node.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if int(row["gpu"]) > 0:
                expected[row["model"]] += int(row["gpu"])
    ingest("pai-v2023", REAL_V2023, tmp_path / "home")
    result = analyze(tmp_path / "home", "pai-v2023")
    capacity = result.table("capacity")
    assert {r["gpu_type"]: r["gpus"] for r in capacity.to_dicts()} == dict(expected)
    assert set(capacity["source"]) == {"pai_v2023_nodes"} and set(capacity["cluster"]) == {"openb"}
    summary = result.table("allocation_vs_capacity").row(0, named=True)
    assert summary["capacity_gpus"] == sum(expected.values())
    # v2023 times are offsets from an undisclosed start: no hour of the week.
    assert "allocated GPUs by hour of the week" in skipped(result)


def test_real_philly_machine_list_capacity(tmp_path: Path) -> None:
    with open(REAL_PHILLY_MACHINES, newline="") as handle:
        reader = csv.reader(handle, skipinitialspace=True)
        next(reader)
        listed = sum(int(num_gpus) for _, num_gpus, _ in reader)
    home = tmp_path / "home"
    ingest("philly", write_philly_release(tmp_path / "release", overrides={
        "cluster_job_log": json.dumps(PHILLY_JOBS).encode(), "cluster_gpu_util": _philly_util_file()}), home)
    ingest("philly", REAL_PHILLY_MACHINES.parent, home, tables=["philly_machine_list"])  # the real list, in place
    with open_trace(home, "philly") as ctx:
        capacity = rows(gpu_capacity(ctx), "source")
    assert capacity["philly_machine_list"]["gpus"] == listed
    assert capacity["philly_gpu_util"]["gpus"] == 6  # the tiny log is unchanged


def test_no_capacity_means_an_empty_capacity_table(sweep_home: Path) -> None:
    with open_trace(sweep_home, "lab") as ctx:
        capacity = gpu_capacity(ctx)
    assert capacity.height == 0
    assert capacity.columns == ["cluster", "vc", "gpu_type", "valid_from", "valid_to", "gpus", "source"]


def test_a_job_that_ends_before_it_starts_holds_no_gpus_and_adds_no_gpu_time(tmp_path: Path) -> None:
    """j2 ends (150 s) before it starts (200 s): it neither takes 4 GPUs away from the allocation
    between 150 s and 200 s nor adds -50 s x 4 GPUs of GPU-time. Over the window 0-400 s: j1 holds
    2 GPUs for 100 s, j3 1 GPU for 100 s -> mean (200 + 100) / 400 = 0.75 GPUs, peak 2."""
    (tmp_path / "neg.csv").write_text("id,submit,start,end,gpus\nj1,0,0,100,2\nj2,0,200,150,4\nj3,0,300,400,1\n")
    import_dataset("neg", tmp_path / "neg.csv", tmp_path / "home",
                   mapping="job_id=id,submit=submit,start=start,end=end,gpus=gpus")
    result = run_analysis(tmp_path / "home", "neg", ["overview", "utilization"])
    mix = {r["gpu_bucket"]: r["gpu_hours"] for r in result.module("overview").table("gpu_request_mix").to_dicts()}
    assert mix == {"1": pytest.approx(100 / 3600), "(1,2]": pytest.approx(200 / 3600), "(2,4]": 0}
    found = {f.name: f.value for f in result.module("utilization").findings}
    assert (found["allocated_gpus_mean"], found["allocated_gpus_peak"]) == (pytest.approx(0.75), 2.0)


def test_broken_bounds_are_checks_and_warn_the_numbers_over_them(tmp_path: Path, philly_home: Path) -> None:
    """Values outside their sane bounds are kept, counted as checks of their module, and every
    finding computed over them carries the warning; the report lists the checks among its data
    quality. j2 ends (150 s) before it starts (200 s); j4 starts (40 s) before its submission (50 s)."""
    (tmp_path / "neg.csv").write_text("id,submit,start,end,gpus\nj1,0,0,100,2\nj2,0,200,150,4\n"
                                      "j3,0,300,400,1\nj4,50,40,90,1\n")
    import_dataset("neg", tmp_path / "neg.csv", tmp_path / "home",
                   mapping="job_id=id,submit=submit,start=start,end=end,gpus=gpus")
    result = run_analysis(tmp_path / "home", "neg", ["overview", "queueing"])
    overview = result.module("overview")
    checks = {c.name: (c.flagged, c.of) for c in overview.checks}
    assert checks == {"negative_queueing_delay": (1, 4), "negative_run_time": (1, 4)}
    assert overview.finding("queue_delay_p50").warning.startswith("1 of 4 jobs with a queueing delay: queueing delay")
    assert overview.finding("run_time_p90").warning.startswith("1 of 4 jobs with a run time: run time below zero")
    assert overview.finding("jobs").warning == ""
    queueing = result.module("queueing")
    assert {c.name: c.flagged for c in queueing.checks} == {"negative_queueing_delay": 1}
    assert queueing.finding("never_started_share").warning == "" and queueing.finding("wait_share_p50").warning
    summary = result.to_dict()["modules"]["overview"]
    assert summary["checks"][0]["flagged"] == 1 and summary["findings"][0]["warning"] == ""
    bounds = build_report(result).data_quality.bounds
    assert [(b.module, b.flagged, b.of) for b in bounds if b.flagged] == [
        ("overview", 1, 4), ("overview", 1, 4), ("queueing", 1, 4)]
    # Measured utilisation above 100 %: one GPU-minute of the Philly fixture reads 101.
    util = analyze(philly_home, "philly")
    check = next(c for c in util.checks if c.name == "philly_gpu_minute_util_above_100")
    assert (check.flagged, check.of) == (1, len(_philly_values()))  # 101 at 12:02, of 43 GPU-minutes
    assert util.finding("philly_gpu_minute_util_p50").warning.endswith("measured utilisation above 100 % "
                                                                          "(kept as the trace gives it)")


def test_the_active_window_restricts_allocation_and_a_nearly_empty_window_is_flagged(tmp_path: Path) -> None:
    """Jobs of 1 GPU submitted at 0, 100 and 200 s run 0-50, 100-150 and 200-1000 s. The whole
    trace (0-1000 s) has a mean of (50 + 50 + 800) / 1000 = 0.9 GPUs; its active window, the span of
    the submissions (0-200 s: with three jobs the 0.5th and 99.5th percentiles are the first and
    the last), covers 20 % of it, which the module flags. Over the active window the mean is
    (50 + 50) / 200 = 0.5 GPUs."""
    (tmp_path / "w.csv").write_text("id,submit,start,end,gpus\na,0,0,50,1\nb,100,100,150,1\nc,200,200,1000,1\n")
    import_dataset("w", tmp_path / "w.csv", tmp_path / "home", origin="2024-01-01 00:00:00",
                   mapping="job_id=id,submit=submit,start=start,end=end,gpus=gpus")
    whole = analyze(tmp_path / "home", "w")
    assert whole.finding("allocated_gpus_mean").value == pytest.approx(0.9)
    check = next(c for c in whole.checks if c.name == "nearly_empty_window")
    assert (check.flagged, check.of) == (1, 1) and "covers 20% of the 0.0-day window" in check.text
    whole.apply_checks()
    assert whole.finding("allocated_gpus_mean").warning.startswith("1 of 1 observation windows: the active window")
    active = analyze(tmp_path / "home", "w", window="active")
    assert active.finding("allocated_gpus_mean").value == pytest.approx(0.5)
    assert "over the active window" in active.finding("allocated_gpus_mean").population
    assert next(c for c in active.checks if c.name == "nearly_empty_window").flagged == 0
    with pytest.raises(DdlxError, match="window must be trace or active"):
        analyze(tmp_path / "home", "w", window="busy")


@pytest.mark.parametrize("trace", ["pai", "philly"])
def test_every_cdf_table_of_every_module_steps_through_values(trace: str, pai_home: Path, philly_home: Path) -> None:
    """Each table with a probability column is a CDF: it names `stat.cdf_step`, and its values never
    fall as the probability grows (per group)."""
    from ddlx.analysis.modules import MODULES

    result = run_analysis({"pai": pai_home, "philly": philly_home}[trace], trace, list(MODULES))
    cdfs = [(m.module, t) for m in result.modules for t in m.tables if "probability" in t.frame.columns]
    assert len(cdfs) >= 5
    for module, table in cdfs:
        assert "stat.cdf_step" in table.definitions, (module, table.name)
        schema = table.frame.schema
        values = [c for c in schema if schema[c].is_float() and c != "probability"]
        keys = [c for c in schema if not schema[c].is_float()]  # groups, and counts constant per group
        assert values, table.name
        for _, group in table.frame.group_by(keys):
            for value in values:
                assert group.sort("probability")[value].drop_nulls().is_sorted(), (table.name, value)


def test_without_start_times_allocation_is_called_demand(tmp_path: Path) -> None:
    """An import with no start column takes each job to start at submission: its allocation figures
    say they are demand assuming no queueing; with starts mapped they do not."""
    rows = "job_id,submit,start,duration,gpus\na,0,600,3600,2\nb,1800,3000,3600,4\n"
    (tmp_path / "jobs.csv").write_text(rows)
    for name, mapping in (("nostart", "job_id=job_id,submit=submit,duration=duration,gpus=gpus"),
                          ("started", "job_id=job_id,submit=submit,start=start,duration=duration,gpus=gpus")):
        import_dataset(name, tmp_path / "jobs.csv", tmp_path / "home", mapping=mapping, wall_clock=False)
        result = analyze(tmp_path / "home", name)
        mean = result.finding("allocated_gpus_mean")
        said = "GPUs demanded assuming no queueing" in mean.population
        assert said == (name == "nostart"), mean.population
        assert mean.text == ("mean GPUs demanded assuming no queueing (no start times)" if name == "nostart"
                             else "mean allocated GPUs")
        assert any(n.what == "GPUs allocated as the scheduler placed them"
                   for n in result.not_applicable) == (name == "nostart")
        # a holds 2 GPUs for 3600 s, b 4: 21,600 GPU-seconds over the trace, which ends at b's end:
        # 5,400 s taken from the submissions, 6,600 s from the recorded starts.
        assert mean.value == pytest.approx(21_600 / (5_400 if name == "nostart" else 6_600))
