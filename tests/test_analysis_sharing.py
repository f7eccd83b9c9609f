"""The `sharing` analysis module: fractional GPU requests, co-location, GPU memory against
capacity and the v2023 fragmentation replay, on hand-built data whose every number is derived by
hand below, on imported tables without those records, and on the real Alibaba v2023 trace checked
against the csv module."""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.analysis.definitions import get_definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from ddlx.reports.results import write_results
from ddlx.traces.pai import analyses as pai_analyses
from ddlx.traces.pai import schema as pai_schema
from tests.conftest import real_file, write_pai_release

REAL_V2023 = real_file("alibaba-gpu-v2023")


def _sharing(home: Path, trace: str) -> ModuleResult:
    return run_analysis(home, trace, ["sharing"]).module("sharing")


def _rows(frame: pl.DataFrame, key: str) -> dict[str, dict]:
    return {row[key]: row for row in frame.to_dicts()}


def _skipped(result: ModuleResult) -> set[str]:
    return {n.what for n in result.not_applicable}


# -- PAI: the 5-job release of conftest ------------------------------------------------------------

@pytest.fixture(scope="module")
def pai_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pai")
    ingest("pai", write_pai_release(folder / "release"), folder / "home")
    return folder / "home"


def test_pai_fractional_shares_by_gpu_type(pai_home: Path) -> None:
    result = _sharing(pai_home, "pai")
    by_type = _rows(result.table("fractional_by_gpu_type"), "gpu_type")
    # GPU jobs: j1 (T4, 2 x 50 % -> 1.0 GPU, fractional, run 3990 s), j2 (V100, 4 x 100 % -> 4 GPUs,
    # run 500 s), j3 (P100, 25 % -> 0.25 GPU, fractional, still running: no run time), j4 (T4,
    # 100 % -> 1 GPU, never started). j5 asks for no GPU.
    # GPU-hours: j1 1.0 x 3990 / 3600, j2 4 x 500 / 3600; sharing GPU-time = j1's.
    assert set(by_type) == {"all", "T4", "V100", "P100"}
    overall = by_type["all"]
    assert (overall["gpu_jobs"], overall["sharing_jobs"], overall["sharing_job_share"]) == (4, 2, 0.5)
    assert overall["gpu_hours"] == pytest.approx((3990 + 2000) / 3600)
    assert overall["sharing_gpu_hours"] == pytest.approx(3990 / 3600)
    assert overall["sharing_gpu_hours_share"] == pytest.approx(3990 / 5990)
    assert (by_type["T4"]["gpu_jobs"], by_type["T4"]["sharing_jobs"]) == (2, 1)  # j1, j4
    assert by_type["T4"]["sharing_gpu_hours_share"] == pytest.approx(1.0)  # j4 never ran
    assert (by_type["P100"]["sharing_job_share"], by_type["P100"]["sharing_gpu_hours_share"]) == (1.0, None)
    assert (by_type["V100"]["sharing_jobs"], by_type["V100"]["sharing_gpu_hours_share"]) == (0, 0.0)
    assert result.finding("sharing_gpu_time_share").value == pytest.approx(3990 / 5990)


def test_pai_gpus_asked_per_instance(pai_home: Path) -> None:
    result = _sharing(pai_home, "pai")
    # Tasks with plan_gpu: j1 worker 2 x 50 %, j2 worker 4 x 100 %, j3 1 x 25 %, j4 1 x 100 %:
    # 8 GPU instances; 0.25 GPU: 1 (j3), 0.5: 2 (j1), 1.0: 4 + 1 (j2, j4).
    rows = result.table("fraction_distribution").to_dicts()
    assert [(r["gpus_per_instance"], r["shares_gpu"], r["instances"], r["jobs"]) for r in rows] == [
        (0.25, True, 1, 1), (0.5, True, 2, 1), (1.0, False, 5, 2)]
    assert [r["instance_share"] for r in rows] == pytest.approx([1 / 8, 2 / 8, 5 / 8])
    assert result.finding("sharing_instance_share").value == pytest.approx(3 / 8)


def test_pai_instances_running_at_once_per_machine(pai_home: Path) -> None:
    result = _sharing(pai_home, "pai")
    frame = result.table("colocation_distribution")
    hours = {(r["machine_gpu_type"], r["running_instances"]): r["machine_hours"] for r in frame.to_dicts()}
    # Instances kept (jX ends before it starts and is left out): window from the first start
    # (1010) to the last start or end (j5's end, 100060): 99050 s for each of the 4 machines.
    #   m1 (T4): i1a 1010-5000, i1b 1030-4990 -> 0 for 0 s, 1 for 20 + 10 s, 2 for 3960 s, 0 for 95060 s
    #   m2 (V100): i2a 2150-2600 -> 0 for 1140 + 97460 s, 1 for 450 s
    #   m3 (P100): i3 3005-(no end: its end was not logged; left out) -> 0 for 99050 s
    #   m4 (CPU): i2p 2100-2600, i5 100000-100060 -> 0 for 1090 + 97400 s, 1 for 500 + 60 s
    level0 = 95060 + 1140 + 97460 + 99050 + 1090 + 97400
    level1 = 30 + 450 + 560
    level2 = 3960
    assert level0 + level1 + level2 == 4 * 99050
    assert hours[("all", 0)] == pytest.approx(level0 / 3600)
    assert hours[("all", 1)] == pytest.approx(level1 / 3600)
    assert hours[("all", 2)] == pytest.approx(level2 / 3600)
    assert hours[("T4", 2)] == pytest.approx(3960 / 3600)
    assert hours[("T4", 1)] == pytest.approx(30 / 3600)
    assert ("P100", 1) not in hours and hours[("P100", 0)] == pytest.approx(99050 / 3600)
    assert hours[("CPU", 1)] == pytest.approx(560 / 3600)
    assert len(hours) == 3 + 2 + 3 + 2 + 1  # all 0-2, CPU 0-1, T4 0-2, V100 0-1, P100 0
    busy = {r["running_instances"]: r["busy_time_share"]
            for r in frame.filter(pl.col("machine_gpu_type") == "all").to_dicts()}
    assert busy[0] is None and busy[2] == pytest.approx(level2 / (level1 + level2))
    colocated = result.finding("colocated_busy_time_share")
    assert colocated.value == pytest.approx(level2 / (level1 + level2))
    # Held to the window end, i3 would run on m3 from 3005 to 100060: 97055 s more at 1 instance.
    held = level2 / (level1 + 97055 + level2)
    assert colocated.alternative == (f"{held * 100:.1f} % if the 1 instance with no recorded end is held to the "
                                     "trace end")
    assert "(1 instance with no recorded end left out)" in colocated.population
    # machine_num_worker of the two metric rows: 2.0 and 1.0 -> median 1.5
    assert result.finding("machine_num_worker_p50").value == pytest.approx(1.5)
    cdf = result.table("machine_num_worker_cdf")
    assert (cdf["value"].min(), cdf["value"].max(), cdf["rows"].unique().to_list()) == (1.0, 2.0, [2])


def test_machine_instance_levels(pai_home: Path) -> None:
    with open_trace(pai_home, "pai") as ctx:
        levels = pai_analyses.machine_instance_levels(ctx)

    def seconds(machine: str, held_open: bool) -> dict[int, float]:
        rows = levels.filter((pl.col("machine") == machine) & (pl.col("held_open") == held_open))
        return dict(zip(rows["instances"].to_list(), rows["seconds"].to_list(), strict=True))

    # The window: first instance start to the last end (j5's, 100060), 99050 s.
    # m1: i1a starts 1010, i1b 1030, i1b ends 4990, i1a 5000 (jX, ending before it starts, is left out):
    # 1 instance for 20 + 10 s, 2 for 3960 s, none for the rest, either way of counting.
    m1 = {1: 30.0, 2: 3960.0, 0: 99050.0 - 3990.0}
    assert seconds("m1", True) == m1 and seconds("m1", False) == m1
    # m3: i3 starts 3005 and is still running: held open it runs to the window end; else m3 is never busy.
    assert seconds("m3", True) == {1: 100060.0 - 3005.0, 0: 99050.0 - 97055.0}
    assert seconds("m3", False) == {0: 99050.0}
    assert set(levels["machine"]) == {"m1", "m2", "m3", "m4"}
    assert levels.group_by("machine", "held_open").agg(pl.col("seconds").sum())["seconds"].to_list() == [99050.0] * 8


def test_pai_gpu_memory_against_device_capacity(pai_home: Path) -> None:
    result = _sharing(pai_home, "pai")
    summary = _rows(result.table("gpu_memory_summary"), "gpu_type")
    # Sensor rows: w1a (j1 worker: 50 % of a GPU -> 1 device, on m1 T4, 16 GB): peak 20 GB -> 1.25,
    # mean 10 -> 0.625; w1b (same task, m1): peak 6 -> 0.375, mean 5 -> 0.3125; w2a (j2 worker,
    # 100 % -> 1 device, m2 V100 16 GB): peak 12 -> 0.75, mean 5 -> 0.3125.
    assert set(summary) == {"all", "T4", "V100"}
    overall = summary["all"]
    assert (overall["instances"], overall["instances_sized"]) == (3, 3)
    assert overall["p50_peak_share"] == pytest.approx(0.75)
    assert overall["mean_peak_share"] == pytest.approx((1.25 + 0.375 + 0.75) / 3)
    assert overall["peak_above_half_share"] == pytest.approx(2 / 3)  # 1.25 and 0.75
    assert overall["peak_above_device_share"] == pytest.approx(1 / 3)  # 1.25
    # Sharing instances (plan_gpu 50): w1a peak 20 GB > 0.5 x 16 = 8 GB, w1b 6 GB is not -> 1 of 2
    assert (overall["sharing_instances"], overall["sharing_over_requested_share"]) == (2, 0.5)
    assert (summary["T4"]["capacity_gb"], summary["T4"]["p50_peak_share"]) == (16.0, pytest.approx((1.25 + 0.375) / 2))
    assert summary["V100"]["sharing_over_requested_share"] is None  # no sharing instance on V100
    assert result.finding("gpu_memory_peak_share_p50").value == pytest.approx(0.75)
    assert result.finding("sharing_instances_over_requested_memory").value == pytest.approx(0.5)
    cdf = result.table("gpu_memory_cdf")
    mean_t4 = cdf.filter((pl.col("gpu_type") == "T4") & (pl.col("statistic") == "mean"))
    assert (mean_t4["value"].min(), mean_t4["value"].max()) == (pytest.approx(0.3125), pytest.approx(0.625))
    assert _skipped(result) == {"fragmentation of GPU capacity (replay)", "fill-up placement experiment (FGD paper)"}


def test_every_sized_gpu_model_has_a_source_and_is_in_the_definition() -> None:
    assert set(pai_schema.GPU_MEMORY_SOURCES) == set(pai_schema.GPU_MEMORY_GB)
    assert "MISC" not in pai_analyses.PAI_GPU_MEMORY_GB
    text = get_definition("sharing.gpu_memory.capacity").text
    assert all(f"{model} {gb:g} GB" in text for model, (gb, _) in pai_analyses.PAI_GPU_MEMORY_GB.items())


def test_unsized_gpu_types_are_reported_as_not_applicable(tmp_path: Path) -> None:
    # Move m1 (where j1's two sensor rows ran) to MISC: its rows cannot be sized.
    from tests.conftest import PAI_FIXTURE

    spec = "\n".join(PAI_FIXTURE["pai_machine_spec"]).replace("m1,T4", "m1,MISC") + "\n"
    release = write_pai_release(tmp_path / "release", overrides={"pai_machine_spec": spec.encode()})
    ingest("pai", release, tmp_path / "home")
    result = _sharing(tmp_path / "home", "pai")
    summary = _rows(result.table("gpu_memory_summary"), "gpu_type")
    assert (summary["MISC"]["instances"], summary["MISC"]["capacity_gb"], summary["MISC"]["p50_peak_share"]) == (
        2, None, None)
    assert (summary["all"]["instances"], summary["all"]["instances_sized"]) == (3, 1)
    assert summary["all"]["p50_peak_share"] == pytest.approx(0.75)  # w2a alone
    assert "GPU memory share on MISC machines, 2 instances" in _skipped(result)


# -- Alibaba v2023: a hand-built cluster replayed by hand ---------------------------------------

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")

# Nodes: n0 T4 x2, 8 cores, 32 GiB; n1 V100M16 x1, 16 cores, 64 GiB; n2 CPU-only, 4 cores, 8 GiB.
# GPU requests (one pod each):
#   A p1 1 x 500 milli, 2 cores, 4 GiB, any model      B p2 1 x 700, 2 cores, 4 GiB, any model
#   C p3 2 GPUs, 4 cores, 8 GiB, T4                    D p5 1 GPU, 16 cores, 8 GiB, V100M16 (never scheduled)
#   E p6 1 x 200, 6 cores, 4 GiB, T4
# CPU pods: F p4 3 cores 4 GiB; G p8 20 cores (fits no node -> unplaced).
# Replay, the owners' best-fit: score int(100 (1 - s)), s = 0.5 (free cores - asked) / 128 + 0.5 (free GPUs -
# asked) / 8, among the nodes where the pod fits; ties to the first node by name:
#   t=10  p1 A: n0 s = 0.5 x 6/128 + 0.5 x 1.5/8 = 0.117 -> 88; n1 s = 0.5 x 14/128 + 0.5 x 0.5/8 = 0.086 -> 91
#         -> n1 [500 free]
#   t=15  p4 F: n0 s = 0.5 x 5/128 + 0.5 x 2/8 -> 85; n1 0.5 x 11/128 + 0.5 x 0.5/8 -> 92; n2 0.5 x 1/128 -> 99 -> n2
#   t=20  p2 B: only n0 has 700 free -> n0 GPU0 (both whole, lowest index) [300, 1000], 6 cores left
#   t=40  p6 E (T4): n0, on the GPU with the least free share that fits -> GPU0 [100, 1000], 0 cores
#   t=50  p8 G: no node has 20 cores -> unplaced
#   t=100 p1 leaves: n1 [1000];  t=200 p2 leaves: n0 [800, 1000], 2 cores;  t=250 p6 leaves: n0 empty
#   t=300 p3 C: n0 has 2 whole GPUs -> n0 [0, 0];  t=350 p3 leaves;  t=400 p4 leaves
# Target workload: 7 classes of one pod each; 6 cover 6/7 < 95 %, so all 7 are kept, each p = 1/7.
# Unusable (free capacity no GPU class can use), after the events of each instant:
#   t=10, 15: n0 whole GPUs usable by A; n1's 500 usable by A (14 cores free) -> 0
#   t=20: n0 GPU0 300 usable by E (6 cores free), GPU1 by A -> 0
#   t=40, 50, 100: n0 has 0 cores free: no class runs on it -> its 100 + 1000 milli = 1.1 GPUs
#   t=200: n0 has 2 cores: A fits (800 >= 500) -> 0; later instants 0
# Expected (ATC'23) measure: per node, the free milli each class cannot use, summed, x 1/7 (the CPU-only
# classes F and G cannot use any: U each):
#   t=10, 15: n0 [1000,1000] 8 cores: D (model), F, G -> 3 x 2000 = 6000; n1 [500] 14 cores: B (500 < 700),
#     C, E (model), D (16 cores > 14), F, G -> 6 x 500 = 3000 -> 9000 / 7 milli
#   t=20: n0 [300,1000] 6 cores: A 300, B 300, C 1300 (1 whole GPU < 2), D 1300, E 0, F, G 1300 -> 5800; n1 3000
#     -> 8800 / 7
#   t=40, 50: n0 [100,1000] no cores: 7 x 1100 = 7700; n1 3000 -> 10700 / 7
#   t=100: n1 [1000] 16 cores: C, E (model), F, G -> 4 x 1000 = 4000; n0 7700 -> 11700 / 7
#   t=200: n0 [800,1000] 2 cores: C, E (cores), D (model), F, G -> 5 x 1800 = 9000; n1 4000 -> 13000 / 7
#   t=250: n0 empty: D, F, G -> 6000; n1 4000 -> 10000 / 7;  t=300: n0 full -> 0; n1 4000 -> 4000 / 7;
#   t=350, 400: 10000 / 7
# The same measure against the GPU pods' classes alone (A-E, one pod each: 4 of 5 < 95 %, all kept, each
# p = 1/5), the terms of F and G left out of the sums above:
#   t=10, 15: n0 D 2000; n1 B, C, D, E 4 x 500 -> 4000 / 5;  t=20: n0 300 + 300 + 1300 + 1300 + 0 = 3200,
#   n1 2000 -> 5200 / 5;  t=40, 50: n0 5 x 1100 = 5500, n1 2000 -> 7500 / 5;  t=100: n1 C, E 2000, n0 5500
#   -> 7500 / 5;  t=200: n0 C, D, E 3 x 1800 = 5400, n1 2000 -> 7400 / 5;  t=250: n0 D 2000, n1 2000 -> 4000 / 5;
#   t=300: n1 2000 / 5;  t=350, 400: 4000 / 5
# Free GPUs: t=10,15: 2.5; t=20: 1.8; t=40,50: 1.6; t=100: 2.1; t=200: 2.8; t=250: 3; t=300: 1; 350,400: 3
V2023_FIXTURE: dict[str, list[str]] = {
    "openb_node_list_all_node.csv": [
        NODE_HEADER,
        "n0,8000,32768,2,T4",
        "n1,16000,65536,1,V100M16",
        "n2,4000,8192,0,",
    ],
    "openb_pod_list_default.csv": [
        POD_HEADER,
        "p1,2000,4096,1,500,,LS,Succeeded,0,100,10",
        "p2,2000,4096,1,700,,LS,Failed,0,200,20",
        "p3,4000,8192,2,1000,T4,LS,Succeeded,250,350,300",
        "p4,3000,4096,0,0,,BE,Running,0,400,15",
        "p5,16000,8192,1,1000,V100M16,LS,Pending,5,500,",
        "p6,6000,4096,1,200,T4,LS,Succeeded,30,250,40",
        "p8,20000,4096,0,0,,BE,Failed,50,450,50",
    ],
}
EVENT_TIMES = [10, 15, 20, 40, 50, 100, 200, 250, 300, 350, 400]
FRAGMENTED = [0, 0, 0, 1.1, 1.1, 1.1, 0, 0, 0, 0, 0]
EXPECTED = [m / 7000 for m in (9000, 9000, 8800, 10700, 10700, 11700, 13000, 10000, 4000, 10000, 10000)]
EXPECTED_GPU_PODS = [m / 5000 for m in (4000, 4000, 5200, 7500, 7500, 7500, 7400, 4000, 2000, 4000, 4000)]
FREE = [2.5, 2.5, 1.8, 1.6, 1.6, 2.1, 2.8, 3.0, 1.0, 3.0, 3.0]
RUNNING = [1, 2, 3, 4, 4, 3, 2, 1, 2, 1, 0]


@pytest.fixture(scope="module")
def v2023_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("v2023")
    (folder / "release").mkdir()
    for name, lines in V2023_FIXTURE.items():
        (folder / "release" / name).write_text("\n".join(lines) + "\n")
    ingest("pai-v2023", folder / "release", folder / "home")
    return folder / "home"


def test_v2023_replay_series_matches_the_hand_replay(v2023_home: Path) -> None:
    result = _sharing(v2023_home, "pai-v2023")
    series = result.table("fragmentation_series")
    assert series["t_s"].to_list() == EVENT_TIMES
    assert series["pods_running"].to_list() == RUNNING
    assert series["fragmented_gpus"].to_list() == pytest.approx(FRAGMENTED)
    assert series["expected_fragmented_gpus"].to_list() == pytest.approx(EXPECTED)
    assert series["expected_fragmented_gpus_gpu_pods"].to_list() == pytest.approx(EXPECTED_GPU_PODS)
    assert series["free_gpus"].to_list() == pytest.approx(FREE)
    at_40 = series.filter(pl.col("t_s") == 40).to_dicts()[0]
    # n0 GPU1 whole; partial: n0 GPU0 100 + n1 GPU0 500 milli
    assert (at_40["free_whole_gpus"], at_40["free_partial_gpus"]) == (1.0, pytest.approx(0.6))
    assert at_40["fragmented_share_of_free"] == pytest.approx(1.1 / 1.6)
    assert series["t"].dt.epoch("s").to_list() == EVENT_TIMES


def test_v2023_fill_up_experiment_in_the_sharing_section(v2023_home: Path) -> None:
    """The FGD paper's fill-up, three seeds, on the hand-made GPU nodes: a curve per policy over the
    levels 50-130 % that the arrivals reach, the table at 90-130 %, and findings that read them."""
    from ddlx.placement import POLICIES
    from ddlx.placement.experiment import LEVELS

    result = _sharing(v2023_home, "pai-v2023")
    curves, summary = result.table("fill_up_curves"), result.table("fill_up_summary")
    # arrivals depend on the seed only, so every policy is read at the same levels (whole percents, 50-130 %)
    levels = curves.group_by("policy").agg(pl.col("level").sort())
    assert set(levels["policy"]) == set(POLICIES) and len({tuple(v) for v in levels["level"].to_list()}) == 1
    assert {round(v * 100, 6) for v in curves["level"]} <= set(range(50, 131))
    assert curves["unallocated_min"].le(curves["unallocated_mean"]).all()
    assert curves["unallocated_mean"].le(curves["unallocated_max"]).all()
    assert set(summary["level"]) <= set(LEVELS) and summary["seeds"].is_between(1, 3).all()
    fgd_full = summary.filter((pl.col("policy") == "fgd") & (pl.col("level") == 1.0))["mean"].item()
    assert result.finding("fill_up_fgd_unallocated").value == fgd_full
    assert "sharing.fill_up" in result.tables[[t.name for t in result.tables].index("fill_up_curves")].definitions


def test_v2023_replay_time_weighted_means_and_outcomes(v2023_home: Path) -> None:
    result = _sharing(v2023_home, "pai-v2023")
    # Each state holds until the next instant; from 10 to 400 = 390 s.
    durations = [b - a for a, b in zip(EVENT_TIMES, EVENT_TIMES[1:])] + [0]
    assert sum(durations) == 390
    mean = lambda values: sum(v * d for v, d in zip(values, durations)) / 390  # noqa: E731
    by_model = _rows(result.table("fragmentation_by_model"), "gpu_model")
    overall = by_model["all"]
    assert (overall["nodes"], overall["gpus"]) == (2, 3)
    assert overall["mean_fragmented_gpus"] == pytest.approx(1.1 * 160 / 390)  # 1.1 GPUs during 40-200
    assert overall["mean_expected_fragmented_gpus"] == pytest.approx(mean(EXPECTED))
    assert overall["mean_free_gpus"] == pytest.approx(857 / 390)
    assert overall["fragmented_share_of_free"] == pytest.approx((1.1 * 160) / 857)
    assert overall["max_fragmented_gpus"] == pytest.approx(1.1)
    t4 = by_model["T4"]
    assert (t4["nodes"], t4["gpus"], t4["mean_fragmented_gpus"]) == (1, 2, pytest.approx(1.1 * 160 / 390))
    assert by_model["V100M16"]["mean_fragmented_gpus"] == 0
    # n1 contributes 3000 / 7 milli from 10 to 100 s and 4000 / 7 from 100 to 400 s (derived above).
    assert by_model["V100M16"]["mean_expected_fragmented_gpus"] == pytest.approx((90 * 3 + 300 * 4) / 7 / 390)
    assert result.finding("expected_fragmented_gpus_mean").value == pytest.approx(mean(EXPECTED))
    assert overall["mean_expected_fragmented_gpus_gpu_pods"] == pytest.approx(mean(EXPECTED_GPU_PODS))
    assert result.finding("expected_fragmented_gpus_gpu_pods_mean").value == pytest.approx(mean(EXPECTED_GPU_PODS))
    pods = _rows(result.table("fragmentation_pods"), "outcome")
    assert {k: (v["pods"], v["gpu_pods"]) for k, v in pods.items()} == {
        "placed": (5, 4), "unplaced": (1, 0), "never scheduled": (1, 1)}
    assert pods["placed"]["gpus"] == pytest.approx(0.5 + 0.7 + 2 + 0.2)
    assert result.finding("unplaced_pods").value == 1
    assert result.finding("fragmented_gpus_mean").value == pytest.approx(1.1 * 160 / 390)
    assert _skipped(result) == {"instances running at once per machine", "workers per machine (machine_num_worker)",
                                "GPU memory used against device capacity"}


def test_v2023_fractional_requests(v2023_home: Path) -> None:
    result = _sharing(v2023_home, "pai-v2023")
    by_type = _rows(result.table("fractional_by_gpu_type"), "gpu_type")
    # GPU pods: p1 0.5, p2 0.7, p6 0.2 (T4) share a GPU; p3 2 GPUs (T4), p5 1 GPU (V100M16, never ran).
    # GPU-seconds: p1 0.5 x 90 = 45, p2 0.7 x 180 = 126, p6 0.2 x 210 = 42, p3 2 x 50 = 100.
    assert (by_type["all"]["gpu_jobs"], by_type["all"]["sharing_jobs"]) == (5, 3)
    assert by_type["all"]["sharing_gpu_hours_share"] == pytest.approx((45 + 126 + 42) / (45 + 126 + 42 + 100))
    assert (by_type["unspecified"]["gpu_jobs"], by_type["unspecified"]["sharing_jobs"]) == (2, 2)
    assert (by_type["T4"]["gpu_jobs"], by_type["T4"]["sharing_jobs"]) == (2, 1)
    assert by_type["T4"]["sharing_gpu_hours_share"] == pytest.approx(42 / 142)
    rows = result.table("fraction_distribution").to_dicts()
    assert [(r["gpus_per_instance"], r["shares_gpu"], r["instances"]) for r in rows] == [
        (0.2, True, 1), (0.5, True, 1), (0.7, True, 1), (1.0, False, 1), (2.0, False, 1)]


def test_results_are_written(v2023_home: Path, tmp_path: Path) -> None:
    result = run_analysis(v2023_home, "pai-v2023", ["sharing"])
    written = write_results(result, tmp_path / "out")
    names = {p.relative_to(tmp_path / "out").as_posix() for p in written}
    assert {"sharing/fragmentation_series.parquet", "sharing/fragmentation_by_model.parquet",
            "sharing/fraction_distribution.parquet"} <= names
    back = pl.read_parquet(tmp_path / "out" / "sharing" / "fragmentation_series.parquet")
    assert back["fragmented_gpus"].to_list() == pytest.approx(FRAGMENTED)


# -- traces without the records --------------------------------------------------------------------

def test_whole_gpu_dataset_skips_every_part(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit,duration,gpus\n0,100,1\n10,50,4\n20,30,0\n")
    import_dataset("lab", path, tmp_path / "home", mapping="submit=submit,duration=duration,gpus=gpus")
    result = _sharing(tmp_path / "home", "lab")
    assert result.tables == [] and result.findings == []
    assert _skipped(result) == {
        "fractional GPU requests (GPU sharing)", "instances running at once per machine",
        "workers per machine (machine_num_worker)", "GPU memory used against device capacity",
        "fragmentation of GPU capacity (replay)", "fill-up placement experiment (FGD paper)"}
    assert all(n.why for n in result.not_applicable)


def test_imported_fractional_jobs_use_the_canonical_columns(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    # a: 0.5 GPU x 100 s on A; b: 2 GPUs x 50 s on A; c: 0.25 GPU x 40 s, no type; d: CPU job.
    path.write_text("submit,duration,gpus,model\n0,100,0.5,A\n10,50,2,A\n20,40,0.25,\n30,10,0,\n")
    import_dataset("frac", path, tmp_path / "home", mapping="submit=submit,duration=duration,gpus=gpus,gpu_type=model")
    result = _sharing(tmp_path / "home", "frac")
    by_type = _rows(result.table("fractional_by_gpu_type"), "gpu_type")
    # GPU-seconds: a 50, b 100, c 10; sharing: a and c -> 60 of 160
    assert (by_type["all"]["gpu_jobs"], by_type["all"]["sharing_jobs"]) == (3, 2)
    assert by_type["all"]["sharing_gpu_hours_share"] == pytest.approx(60 / 160)
    assert by_type["A"]["sharing_gpu_hours_share"] == pytest.approx(50 / 150)
    assert by_type["unspecified"]["sharing_job_share"] == 1.0
    rows = result.table("fraction_distribution").to_dicts()
    assert [(r["gpus_per_instance"], r["shares_gpu"], r["instances"]) for r in rows] == [
        (0.25, True, 1), (0.5, True, 1), (2.0, False, 1)]
    assert result.finding("sharing_instance_share").value == pytest.approx(2 / 3)


# -- the real Alibaba v2023 trace -------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_v2023(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleResult, list[dict[str, str]]]:
    home = tmp_path_factory.mktemp("real-v2023")
    ingest("pai-v2023", REAL_V2023, home)
    with open(REAL_V2023 / "openb_pod_list_default.csv", newline="") as handle:
        pods = list(csv.DictReader(handle))
    return _sharing(home, "pai-v2023"), pods


@pytest.mark.slow
def test_real_v2023_gpu_sharing_pods(real_v2023: tuple[ModuleResult, list[dict[str, str]]]) -> None:
    result, pods = real_v2023
    gpu_pods = [p for p in pods if int(p["num_gpu"]) > 1 or (p["num_gpu"] == "1" and int(p["gpu_milli"]) > 0)]
    sharing_pods = [p for p in pods if p["num_gpu"] == "1" and int(p["gpu_milli"]) < 1000]
    overall = _rows(result.table("fractional_by_gpu_type"), "gpu_type")["all"]
    assert (overall["gpu_jobs"], overall["sharing_jobs"]) == (len(gpu_pods), len(sharing_pods))
    assert overall["sharing_job_share"] == pytest.approx(len(sharing_pods) / len(gpu_pods))
    asked = Counter(int(p["gpu_milli"]) / 1000 if p["num_gpu"] == "1" else float(p["num_gpu"]) for p in gpu_pods)
    rows = result.table("fraction_distribution").to_dicts()
    assert {r["gpus_per_instance"]: r["instances"] for r in rows} == dict(asked)
    assert result.finding("sharing_instance_share").value == pytest.approx(len(sharing_pods) / len(gpu_pods))


def test_real_v2023_replay_accounts_for_every_pod(real_v2023: tuple[ModuleResult, list[dict[str, str]]]) -> None:
    result, pods = real_v2023
    outcomes = _rows(result.table("fragmentation_pods"), "outcome")
    never = sum(1 for p in pods if p["scheduled_time"] == "")
    replayed = [p for p in pods if p["scheduled_time"] and int(p["deletion_time"]) > int(p["scheduled_time"])]
    assert outcomes["never scheduled"]["pods"] == never
    assert sum(v["pods"] for v in outcomes.values()) == len(pods)
    placed = outcomes["placed"]["pods"]
    assert placed + outcomes.get("unplaced", {"pods": 0})["pods"] == len(replayed)
    series = result.table("fragmentation_series")
    by_model = _rows(result.table("fragmentation_by_model"), "gpu_model")
    # With every replayed pod placed, the pods running at an instant are those scheduled at or
    # before it and deleted after it; free capacity is the GPUs of the all_node list less theirs.
    if placed == len(replayed):
        with open(REAL_V2023 / "openb_node_list_all_node.csv", newline="") as handle:
            gpus = sum(int(n["gpu"]) for n in csv.DictReader(handle))
        assert by_model["all"]["gpus"] == gpus
        for row in series.gather_every(max(1, series.height // 40)).to_dicts():
            t = row["t_s"]
            running = [p for p in replayed if int(p["scheduled_time"]) <= t < int(p["deletion_time"])]
            asked = sum(int(p["gpu_milli"]) / 1000 if p["num_gpu"] == "1" else int(p["num_gpu"]) for p in running)
            assert row["pods_running"] == len(running), t
            assert row["free_gpus"] == pytest.approx(gpus - asked), t
    assert (series["fragmented_gpus"] <= series["free_gpus"] + 1e-9).all()
    assert (series["expected_fragmented_gpus"] >= 0).all()
    assert math.isfinite(result.finding("fragmented_gpus_mean").value)


def test_the_fill_up_chart_draws_the_spread_over_seeds(v2023_home: Path) -> None:
    """One line per policy (the mean), with the lowest and highest seed as a shaded band of the
    policy's colour that adds no legend entry."""
    from ddlx.reports import charts
    from ddlx.reports.report import build_report

    analysis = run_analysis(v2023_home, "pai-v2023", ["sharing"])
    chart = next(c for c in build_report(analysis).charts if c.id == "chart-sharing-fill-up-curves")
    curves = analysis.module("sharing").table("fill_up_curves")
    fgd = next(s for s in chart.series if s.name == "fgd")
    rows = curves.filter(pl.col("policy") == "fgd").sort("level")
    assert fgd.y == rows["unallocated_mean"].to_list()
    assert (fgd.band_low, fgd.band_high) == (rows["unallocated_min"].to_list(), rows["unallocated_max"].to_list())
    figure = charts.figure(chart)
    filled = [t for t in figure["data"] if t.get("fill") == "tonexty"]
    assert len(filled) == len(chart.series) and all(t["showlegend"] is False for t in filled)
    assert sum(t.get("showlegend", True) is not False for t in figure["data"]) == len(chart.series)
