"""The `durations` module: a hand-built 9-job table with still-running jobs whose Kaplan-Meier
estimate is worked out by hand below, and the real Philly-derived table `pollux_philly_jobs.csv`
imported through `datasets import`, checked against quantiles computed here with the csv module."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import durations
from ddlx.analysis.context import open_trace
from ddlx.analysis.definitions import registry
from ddlx.datasets.importers import import_dataset
from tests.conftest import FULL_TRACES, real_file

# Nine jobs; times in seconds from the epoch. The trace end is the last time any job records:
# e's end, 1000 s. Running jobs are censored at 1000 - start.
#   a 1 GPU   COMPLETED 0-100     -> 100  finished
#   b 1 GPU   FAILED    0-200     -> 200  finished
#   c 1 GPU   COMPLETED 0-300     -> 300  finished
#   d 1 GPU   RUNNING   from 800  -> 200  censored (tied with b's end)
#   e 1 GPU   COMPLETED 0-1000    -> 1000 finished
#   f 2 GPUs  CANCELLED 0-400     -> 400  finished
#   g 2 GPUs  PENDING   never started -> untimed
#   h 4 GPUs  COMPLETED 0-500     -> 500  finished
#   i 4 GPUs  RUNNING   from 0    -> 1000 censored (tied with e's end)
HAND_CSV = """job_id,gpus,state,submit,start,end
a,1,COMPLETED,0,0,100
b,1,FAILED,0,0,200
c,1,COMPLETED,0,0,300
d,1,RUNNING,800,800,
e,1,COMPLETED,0,0,1000
f,2,CANCELLED,0,0,400
g,2,PENDING,50,,
h,4,COMPLETED,0,0,500
i,4,RUNNING,0,0,
"""
MAPPING = "job_id=job_id,gpus=gpus,state=state,submit=submit,start=start,end=end"

# Kaplan-Meier over all jobs: observations 100e 200e 200c 300e 400e 500e 1000e 1000c (e = ended,
# c = censored; a job censored at t is still at risk at t).
#   t=100:  8 at risk, 1 ends -> S = 7/8
#   t=200:  7 at risk (d included), 1 ends -> S = 7/8 * 6/7 = 3/4
#   t=300:  5 at risk -> S = 3/4 * 4/5 = 3/5
#   t=400:  4 at risk -> S = 3/5 * 3/4 = 9/20
#   t=500:  3 at risk -> S = 9/20 * 2/3 = 3/10
#   t=1000: 2 at risk (e and i), 1 ends -> S = 3/10 * 1/2 = 3/20; the estimate never reaches 0.9.
# So 1 - S: 0.125, 0.25, 0.4, 0.55, 0.7, 0.85; median 400 (first >= 0.5), p90 none.
# Bucket 1 (a-e): 100e 200e 200c 300e 1000e: S = 4/5, 4/5*3/4 = 3/5, 3/5*1/2 = 3/10, 0
#   -> 1 - S: 0.2, 0.4, 0.7, 1; median 300, p90 1000. (Dropping d before 200 would give
#   4/5 * 2/3 * 1/2 = 4/15 at 300 instead of 3/10.)
# Bucket (2,4] (h, i): 500e 1000c -> S(500) = 1/2: median 500, p90 none.


@pytest.fixture(scope="module")
def hand_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("durations")
    (base / "jobs.csv").write_text(HAND_CSV)
    import_dataset("hand", base / "jobs.csv", base / "home", mapping=MAPPING)
    return base / "home"


@pytest.fixture(scope="module")
def hand_result(hand_home: Path):
    with open_trace(hand_home, "hand") as ctx:
        return durations.analyze(ctx)


def _by(frame: pl.DataFrame, key: str) -> dict:
    return {row[key]: row for row in frame.to_dicts()}


def test_run_time_by_gpu_bucket_with_kaplan_meier(hand_result) -> None:
    rows = _by(hand_result.table("run_time_by_gpu_bucket"), "gpu_bucket")
    assert list(rows) == ["all", "1", "(1,2]", "(2,4]"]
    overall = rows["all"]
    assert [overall[k] for k in ("jobs", "finished_jobs", "censored_jobs", "untimed_jobs")] == [9, 6, 2, 1]
    # Finished run times 100 200 300 400 500 1000: p50 at position 2.5 -> 350; p90 at 4.5 -> 750.
    assert (overall["p50_s"], overall["p90_s"], overall["mean_s"]) == pytest.approx((350, 750, 2500 / 6))
    assert (overall["km_p50_s"], overall["km_p90_s"], overall["km_p99_s"]) == (400, None, None)
    one = rows["1"]
    assert [one[k] for k in ("jobs", "finished_jobs", "censored_jobs", "untimed_jobs")] == [5, 4, 1, 0]
    assert (one["p50_s"], one["km_p50_s"], one["km_p90_s"]) == (250, 300, 1000)  # finished: 100 200 300 1000
    assert [rows["(1,2]"][k] for k in ("jobs", "finished_jobs", "untimed_jobs", "km_p50_s")] == [2, 1, 1, 400]
    assert (rows["(2,4]"]["km_p50_s"], rows["(2,4]"]["km_p90_s"], rows["(2,4]"]["censored_jobs"]) == (500, None, 1)


def test_cdf_table_puts_the_estimate_next_to_the_plain_cdf(hand_result) -> None:
    cdf = hand_result.table("run_time_cdf_by_gpu_bucket")
    assert cdf["gpu_bucket"].unique(maintain_order=True).to_list() == ["all", "1", "(1,2]", "(2,4]"]
    overall = {round(r["probability"], 3): r for r in cdf.filter(pl.col("gpu_bucket") == "all").to_dicts()}
    # Plain CDF of the 6 finished run times 100 200 300 400 500 1000, as steps: at p the smallest
    # run time with at least 6p of them at or below it (200 covers 2/6 = 0.333...), never 350.
    steps = {p: overall[p]["run_s"] for p in (0.0, 0.16, 0.17, 0.2, 0.33, 0.34, 0.5, 0.51, 0.84, 0.99, 1.0)}
    assert steps == {0.0: 100, 0.16: 100, 0.17: 200, 0.2: 200, 0.33: 200, 0.34: 300, 0.5: 300, 0.51: 400,
                     0.84: 1000, 0.99: 1000, 1.0: 1000}
    # Kaplan-Meier: 1 - S reaches 0.4 at 300, 0.55 at 400, 0.85 at 1000, and never 0.86.
    assert [overall[p]["run_s_km"] for p in (0.0, 0.4, 0.41, 0.55, 0.56, 0.85)] == [100, 300, 400, 400, 500, 1000]
    assert overall[0.86]["run_s_km"] is None and overall[1.0]["run_s_km"] is None
    assert (overall[0.5]["finished_jobs"], overall[0.5]["censored_jobs"]) == (6, 2)
    one = {round(r["probability"], 3): r for r in cdf.filter(pl.col("gpu_bucket") == "1").to_dicts()}
    # 1 - S = 0.4 at 200 only because d, censored at 200, still counts as at risk there.
    assert [one[p]["run_s_km"] for p in (0.2, 0.21, 0.4, 0.41, 0.7, 0.71, 1.0)] == [100, 200, 200, 300, 300, 1000, 1000]
    assert cdf.height == 4 * 105  # the 105 probabilities of sql.CDF_PROBABILITIES per group


def test_survival_at_fixed_run_times(hand_result) -> None:
    survival = hand_result.table("run_time_survival_by_gpu_bucket")
    at = {(r["gpu_bucket"], r["run_s"]): r for r in survival.to_dicts()}
    # Over all jobs at 600 s: S = 3/10 (last event at or below 600 is 500); finished jobs longer
    # than 600 s: 1 of 6. At 1 h: S = 3/20; no finished job ran longer.
    assert at[("all", 600.0)]["survival_km"] == pytest.approx(3 / 10)
    assert at[("all", 600.0)]["survival_finished"] == pytest.approx(1 / 6)
    assert at[("all", 3600.0)]["survival_km"] == pytest.approx(3 / 20)
    assert at[("all", 3600.0)]["survival_finished"] == 0
    assert (at[("all", 60.0)]["survival_km"], at[("all", 60.0)]["survival_finished"]) == (1, 1)
    assert at[("1", 600.0)]["survival_km"] == pytest.approx(3 / 10)  # 4/5 * 3/4 * 1/2
    assert at[("1", 600.0)]["survival_finished"] == pytest.approx(1 / 4)
    assert at[("(2,4]", 86400.0)]["survival_km"] == pytest.approx(1 / 2)
    assert survival["run_s"].unique().sort().to_list() == list(durations.SURVIVAL_TIMES_S)


def test_run_time_by_state(hand_result) -> None:
    rows = _by(hand_result.table("run_time_by_state"), "state")
    assert list(rows) == ["completed", "running", "cancelled", "failed", "pending"]  # by jobs, then name
    completed = rows["completed"]  # a 100, c 300, h 500, e 1000
    assert (completed["jobs"], completed["finished_jobs"], completed["p50_s"], completed["mean_s"]) == (
        4, 4, 400, 475)
    assert completed["p90_s"] == pytest.approx(500 + 0.7 * 500)  # position 2.7
    running = rows["running"]  # d censored at 200, i at 1000
    assert [running[k] for k in ("jobs", "finished_jobs", "censored_jobs", "untimed_jobs")] == [2, 0, 2, 0]
    assert (running["p50_s"], running["censored_p50_s"]) == (None, 600)
    assert (rows["failed"]["p50_s"], rows["cancelled"]["p50_s"]) == (200, 400)
    assert (rows["pending"]["untimed_jobs"], rows["pending"]["p50_s"]) == (1, None)
    cdf = hand_result.table("run_time_cdf_by_state")
    censored = cdf.filter(pl.col("censored"))
    assert censored["state"].unique().to_list() == ["running"]
    # Runs so far 200 and 1000: the CDF holds 200 up to a half and jumps to 1000 after.
    assert [censored.filter(pl.col("probability") == p)["run_s"].item() for p in (0.25, 0.5, 0.51)] == [200, 200, 1000]
    assert sorted(cdf.filter(~pl.col("censored"))["state"].unique().to_list()) == ["cancelled", "completed", "failed"]


def test_findings(hand_result) -> None:
    found = {f.name: f.value for f in hand_result.findings}
    assert found == {"run_time_p50_km": 400, "run_time_p90_km": None, "run_time_p50_finished": 350,
                     "censored_jobs": 2, "censored_share": 2 / 8}
    assert hand_result.not_applicable == []
    assert {d.id for d in durations.DEFINITIONS} <= set(registry())
    assert "durations.kaplan_meier_runtime" in hand_result.definition_ids


def test_without_any_timed_job_everything_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "waiting.csv").write_text("submit,start,end,gpus,state\n0,,,1,PENDING\n5,,,2,PENDING\n")
    import_dataset("waiting", tmp_path / "waiting.csv", tmp_path / "home",
                   mapping="submit=submit,start=start,end=end,gpus=gpus,state=state")
    with open_trace(tmp_path / "home", "waiting") as ctx:
        result = durations.analyze(ctx)
    assert (result.tables, result.findings) == ([], [])
    assert [(n.what, n.why) for n in result.not_applicable] == [
        ("run-time distributions", "no job of this trace has a run time or a start time")]


POLLUX = real_file("philly/pollux_philly_jobs.csv")


def _bucket(gpus: float) -> str:
    """GPU bucket as docs define it (gpu_request.bucket), written out independently."""
    if gpus == 0:
        return "0"
    if gpus < 1:
        return "(0,1)"
    if gpus == 1:
        return "1"
    for bound, label in ((2, "(1,2]"), (4, "(2,4]"), (8, "(4,8]")):
        if gpus <= bound:
            return label
    return ">8"


def _interpolated(values: list[float], p: float) -> float:
    """Linear interpolation between order statistics at position (n - 1) p."""
    h = (len(values) - 1) * p
    low = math.floor(h)
    high = min(low + 1, len(values) - 1)
    return values[low] + (h - low) * (values[high] - values[low])


@pytest.mark.slow
def test_real_pollux_philly_jobs(tmp_path: Path) -> None:
    """The real Philly-derived table: no state and no start column, so every job ended at submit +
    duration and none is censored; quantiles per GPU bucket as computed here from the raw CSV."""
    runs: dict[str, list[float]] = defaultdict(list)
    with open(POLLUX, newline="") as handle:
        for row in csv.DictReader(handle):
            duration = float(row["duration"])
            runs[_bucket(float(row["num_gpus"]))].append(duration)
            runs["all"].append(duration)
    for values in runs.values():
        values.sort()
    import_dataset("philly-pollux", POLLUX, tmp_path / "home",
                   mapping="submit=timestamp,duration=duration,gpus=num_gpus,vc=cluster",
                   time_unit="datetime", tz="America/Los_Angeles")
    with open_trace(tmp_path / "home", "philly-pollux") as ctx:
        result = durations.analyze(ctx)
    rows = _by(result.table("run_time_by_gpu_bucket"), "gpu_bucket")
    assert set(rows) == set(runs)
    for bucket, values in runs.items():
        row = rows[bucket]
        assert (row["jobs"], row["finished_jobs"], row["censored_jobs"], row["untimed_jobs"]) == (
            len(values), len(values), 0, 0), bucket
        for name, p in (("p50_s", 0.5), ("p90_s", 0.9), ("p99_s", 0.99)):
            assert row[name] == pytest.approx(_interpolated(values, p), rel=1e-12), (bucket, name)
        assert row["mean_s"] == pytest.approx(sum(values) / len(values), rel=1e-9)
        # Nothing censored: Kaplan-Meier is the empirical distribution, the median the smallest
        # run time with at least half of the jobs at or below it.
        assert row["km_p50_s"] == values[math.ceil(len(values) / 2) - 1], bucket
    if FULL_TRACES:
        assert rows["all"]["jobs"] == 82247
    found = {f.name: f.value for f in result.findings}
    assert found["censored_jobs"] == 0
    assert found["run_time_p50_finished"] == pytest.approx(_interpolated(runs["all"], 0.5))
    assert ("run time by final state", "the trace records no job states") in [
        (n.what, n.why) for n in result.not_applicable]


def test_cli_writes_the_durations_tables(cli, hand_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = cli("analyze", "dataset", "hand", "--module", "durations", "--data-home", hand_home, "--out", out)
    assert result.code == 0, result.err
    assert "median run time (Kaplan-Meier, running jobs censored)" in result.out
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["modules"]["durations"]["tables"]) == {
        "run_time_by_gpu_bucket", "run_time_cdf_by_gpu_bucket", "run_time_survival_by_gpu_bucket",
        "run_time_by_state", "run_time_cdf_by_state", "reduction"}
    table = pl.read_parquet(out / "durations" / "run_time_by_gpu_bucket.parquet")
    assert table.filter(pl.col("gpu_bucket") == "all")["km_p50_s"].item() == 400
    assert "durations.kaplan_meier_runtime" in {d["id"] for d in summary["definitions"]}
