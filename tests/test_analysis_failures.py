"""The `failures` module on hand-built data: a 10-job CSV imported with `datasets import` (every
expected number derived by hand below), the tiny Philly release for attempts and retries, a table
without states, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import failures
from ddlx.analysis.context import open_trace
from ddlx.analysis.definitions import registry
from ddlx.analysis.options import AnalysisOptions
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from tests.test_philly_ingest import write_philly_release

# Ten jobs; times in seconds from the epoch. run = end - start; GPU-hours = gpus * run / 3600.
#   j1  u1 vA 1   COMPLETED run 3600  -> 1 GPU-h      bucket 1
#   j2  u1 vA 1   FAILED    run 1800  -> 0.5          bucket 1
#   j3  u2 vA 2   FAILED    run 3600  -> 2            bucket (1,2]
#   j4  u2 vB 4   CANCELLED run 7200  -> 8            bucket (2,4]
#   j5  u3 vB 8   COMPLETED run 18000 -> 40           bucket (4,8]
#   j6  u3 vB 8   FAILED    run 900   -> 2            bucket (4,8]
#   j7  u4 vC 0.5 COMPLETED run 7200  -> 1            bucket (0,1)
#   j8  u4 vC 1   RUNNING   start 3600, no end -> no run time, 0 GPU-h
#   j9  u5 vC 2   PENDING   never started      -> 0   bucket (1,2]
#   j10 u5 vA 1   FAILED    never started      -> 0   bucket 1
# All GPU-hours: 1 + 0.5 + 2 + 8 + 40 + 2 + 1 = 54.5.
HAND_CSV = """job_id,user,vc,gpus,state,submit,start,end
j1,u1,vA,1,COMPLETED,0,0,3600
j2,u1,vA,1,FAILED,0,0,1800
j3,u2,vA,2,FAILED,0,0,3600
j4,u2,vB,4,CANCELLED,0,0,7200
j5,u3,vB,8,COMPLETED,0,0,18000
j6,u3,vB,8,FAILED,0,0,900
j7,u4,vC,0.5,COMPLETED,0,0,7200
j8,u4,vC,1,RUNNING,0,3600,
j9,u5,vC,2,PENDING,100,,
j10,u5,vA,1,FAILED,200,,
"""
MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"
TOTAL_GPU_HOURS = 54.5


@pytest.fixture(scope="module")
def hand_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("failures")
    (base / "jobs.csv").write_text(HAND_CSV)
    import_dataset("hand", base / "jobs.csv", base / "home", mapping=MAPPING)
    return base / "home"


@pytest.fixture(scope="module")
def hand_result(hand_home: Path) -> failures.ModuleResult:
    with open_trace(hand_home, "hand") as ctx:
        return failures.analyze(ctx)


def _rows(frame: pl.DataFrame, *keys: str) -> dict:
    """Rows of `frame` keyed by the values of `keys` (a tuple when several)."""
    out = {}
    for row in frame.to_dicts():
        key = tuple(row[k] for k in keys)
        out[key if len(keys) > 1 else key[0]] = row
    return out


def test_state_mix_by_count_and_gpu_time(hand_result) -> None:
    mix = _rows(hand_result.table("state_mix"), "state")
    # completed j1, j5, j7 (1 + 40 + 1 GPU-h); failed j2, j3, j6, j10 (0.5 + 2 + 2 + 0); cancelled j4 (8).
    assert {s: r["jobs"] for s, r in mix.items()} == {"completed": 3, "failed": 4, "cancelled": 1, "running": 1,
                                                       "pending": 1}
    assert {s: r["gpu_hours"] for s, r in mix.items()} == pytest.approx(
        {"completed": 42.0, "failed": 4.5, "cancelled": 8.0, "running": 0.0, "pending": 0.0})
    assert mix["failed"]["job_share"] == pytest.approx(4 / 10)
    assert mix["completed"]["gpu_hours_share"] == pytest.approx(42 / TOTAL_GPU_HOURS)
    assert hand_result.table("state_mix")["state"].to_list()[0] == "failed"  # most jobs first


def test_state_mix_by_gpu_bucket(hand_result) -> None:
    mix = _rows(hand_result.table("state_mix_by_gpu_bucket"), "gpu_bucket", "state")
    # Bucket 1 holds j1 completed (1 GPU-h), j2 and j10 failed (0.5 GPU-h), j8 running.
    assert (mix[("1", "failed")]["jobs"], mix[("1", "failed")]["job_share"]) == (2, pytest.approx(2 / 4))
    assert mix[("1", "failed")]["gpu_hours_share"] == pytest.approx(0.5 / 1.5)
    # Bucket (4,8]: j5 completed 40 GPU-h, j6 failed 2 GPU-h.
    assert mix[("(4,8]", "failed")]["gpu_hours_share"] == pytest.approx(2 / 42)
    assert len(mix) == 9
    order = hand_result.table("state_mix_by_gpu_bucket")["gpu_bucket"].unique(maintain_order=True).to_list()
    assert order == ["(0,1)", "1", "(1,2]", "(2,4]", "(4,8]"]


def test_top_users_with_an_other_row(hand_home: Path) -> None:
    with open_trace(hand_home, "hand") as ctx:
        frame = failures.state_mix_by_user(ctx, top=2)
        everyone = failures.state_mix_by_user(ctx)
    # GPU-hours by user: u3 42, u2 10, u1 1.5, u4 1, u5 0 -> top 2 are u3 and u2; the other
    # three users hold j1, j7 (completed, 2 GPU-h), j2, j10 (failed, 0.5), j8 (running), j9 (pending).
    rows = _rows(frame, "user", "state")
    assert frame.filter(pl.col("rank") == 1)["user"].unique().to_list() == ["u3"]
    assert frame.filter(pl.col("rank") == 2)["user"].unique().to_list() == ["u2"]
    other = {s: r for (u, s), r in rows.items() if u == "other"}
    assert {s: r["jobs"] for s, r in other.items()} == {"completed": 2, "failed": 2, "running": 1, "pending": 1}
    assert {s: r["gpu_hours"] for s, r in other.items()} == pytest.approx(
        {"completed": 2.0, "failed": 0.5, "running": 0.0, "pending": 0.0})
    assert rows[("other", "completed")]["rank"] is None and rows[("other", "completed")]["users"] == 3
    assert (rows[("other", "failed")]["total_jobs"], rows[("other", "failed")]["total_gpu_hours"]) == (
        6, pytest.approx(2.5))
    assert rows[("other", "completed")]["job_share"] == pytest.approx(2 / 6)
    assert rows[("u2", "cancelled")]["gpu_hours_share"] == pytest.approx(8 / 10)
    # With the default of 20, all five users have a row and there is no 'other'.
    assert sorted(everyone["user"].unique().to_list()) == ["u1", "u2", "u3", "u4", "u5"]


def test_top_vcs_through_the_option(hand_home: Path) -> None:
    with open_trace(hand_home, "hand", options=AnalysisOptions(top_vcs=2)) as ctx:
        result = failures.analyze(ctx)
    frame = result.table("state_mix_by_vc")
    # vB 8 + 40 + 2 = 50 GPU-h, vA 1 + 0.5 + 2 + 0 = 3.5, vC 1 -> vC becomes 'other'.
    assert frame["vc"].unique(maintain_order=True).to_list() == ["vB", "vA", "other"]
    other = frame.filter(pl.col("vc") == "other")
    assert other["cluster"].to_list() == [None] * 3 and other["vcs"].to_list() == [1] * 3
    assert sorted(other["state"].to_list()) == ["completed", "pending", "running"]
    assert frame.filter(pl.col("vc") == "vA")["total_gpu_hours"].to_list() == pytest.approx([3.5, 3.5])
    assert "top 2 virtual clusters" in next(t.row for t in result.tables if t.name == "state_mix_by_vc")


def test_time_to_failure(hand_result) -> None:
    q = _rows(hand_result.table("time_to_failure_quantiles"), "gpu_bucket")
    # Failed jobs with a run time: j6 900, j2 1800, j3 3600 (j10 never started).
    # p50: the middle one; p90: position (3 - 1) * 0.9 = 1.8 -> 1800 + 0.8 * (3600 - 1800) = 3240.
    assert (q["all"]["failed_jobs"], q["all"]["jobs_with_value"]) == (4, 3)
    assert (q["all"]["p50_s"], q["all"]["p90_s"], q["all"]["mean_s"]) == pytest.approx((1800, 3240, 6300 / 3))
    assert (q["1"]["failed_jobs"], q["1"]["jobs_with_value"], q["1"]["p50_s"]) == (2, 1, 1800)
    assert (q["(1,2]"]["p50_s"], q["(4,8]"]["p50_s"]) == (3600, 900)
    assert list(q) == ["all", "1", "(1,2]", "(4,8]"]
    cdf = hand_result.table("time_to_failure_cdf")
    overall = cdf.filter(pl.col("gpu_bucket") == "all")
    assert overall.filter(pl.col("probability") == 0.5)["run_s"].item() == 1800
    steps = {p: overall.filter(pl.col("probability") == p)["run_s"].item() for p in (0.25, 0.33, 0.34, 0.66, 0.67)}
    assert steps == {0.25: 900, 0.33: 900, 0.34: 1800, 0.66: 1800, 0.67: 3600}  # 1 of 3 at or below 900
    assert overall["jobs"].unique().to_list() == [3]
    assert overall["run_s"].is_sorted()


def test_gpu_time_lost(hand_result) -> None:
    lost = _rows(hand_result.table("gpu_time_lost"), "state", "gpu_bucket")
    # Lost = failed (4.5 GPU-h) + cancelled (8 GPU-h) = 12.5 of 54.5.
    assert lost[("all", "all")]["gpu_hours"] == pytest.approx(12.5)
    assert lost[("all", "all")]["share_of_all_gpu_hours"] == pytest.approx(12.5 / TOTAL_GPU_HOURS)
    assert lost[("failed", "all")]["jobs"] == 4 and lost[("cancelled", "all")]["gpu_hours"] == pytest.approx(8)
    # Failed in bucket 1: j2 0.5 GPU-h (j10 none) of the bucket's 1.5 GPU-h.
    assert lost[("failed", "1")]["gpu_hours"] == pytest.approx(0.5)
    assert lost[("failed", "1")]["share_of_bucket_gpu_hours"] == pytest.approx(0.5 / 1.5)
    assert lost[("failed", "1")]["share_of_all_gpu_hours"] == pytest.approx(0.5 / TOTAL_GPU_HOURS)
    assert lost[("cancelled", "(2,4]")]["share_of_bucket_gpu_hours"] == pytest.approx(1.0)
    assert lost[("failed", "(4,8]")]["share_of_bucket_gpu_hours"] == pytest.approx(2 / 42)
    assert set(lost) == {("all", "all"), ("all", "1"), ("all", "(1,2]"), ("all", "(2,4]"), ("all", "(4,8]"),
                         ("failed", "all"), ("failed", "1"), ("failed", "(1,2]"), ("failed", "(4,8]"),
                         ("cancelled", "all"), ("cancelled", "(2,4]")}


def test_failure_rate_against_job_size(hand_result) -> None:
    rate = _rows(hand_result.table("failure_rate_by_gpu_bucket"), "gpu_bucket")
    # Finished = completed, failed or cancelled. Bucket 1: j1, j2, j10 finished (j8 running), 2 failed.
    assert [rate["1"][k] for k in ("jobs", "finished_jobs", "failed_jobs", "cancelled_jobs")] == [4, 3, 2, 0]
    assert rate["1"]["failed_share"] == pytest.approx(2 / 3)
    # (1,2]: j3 failed, j9 pending -> 1 of 1 finished failed. (2,4]: j4 cancelled.
    assert (rate["(1,2]"]["finished_jobs"], rate["(1,2]"]["failed_share"]) == (1, 1.0)
    assert (rate["(2,4]"]["failed_share"], rate["(2,4]"]["failed_or_cancelled_share"]) == (0.0, 1.0)
    assert rate["(4,8]"]["failed_share"] == 0.5 and rate["(0,1)"]["failed_share"] == 0.0
    # All: 8 finished, 4 failed, 1 cancelled.
    assert (rate["all"]["jobs"], rate["all"]["finished_jobs"]) == (10, 8)
    assert (rate["all"]["failed_share"], rate["all"]["failed_or_cancelled_share"]) == (4 / 8, 5 / 8)


def test_findings_and_definitions(hand_result) -> None:
    found = {f.name: f.value for f in hand_result.findings}
    assert found == pytest.approx({
        "failed_share": 4 / 8, "failed_or_cancelled_share": 5 / 8,
        "failed_gpu_time_share": 4.5 / TOTAL_GPU_HOURS, "gpu_hours_lost": 12.5,
        "gpu_hours_lost_share": 12.5 / TOTAL_GPU_HOURS, "time_to_failure_p50": 1800})
    assert [(n.what, n.why) for n in hand_result.not_applicable] == [
        ("attempts and retries", "the trace publishes no scheduling attempts per job (no attempts view)")]
    declared = {d.id for d in failures.DEFINITIONS}
    assert {"failures.gpu_time_lost", "failures.time_to_failure", "runtime.sum_of_attempts"} <= declared
    assert declared <= set(registry())
    assert set(hand_result.definition_ids) <= set(registry())


@pytest.fixture(scope="module")
def philly_result(tmp_path_factory: pytest.TempPathFactory) -> failures.ModuleResult:
    base = tmp_path_factory.mktemp("philly-failures")
    ingest("philly", write_philly_release(base / "release"), base / "home")
    with open_trace(base / "home", "philly") as ctx:
        return failures.analyze(ctx)


def test_philly_attempts_and_retries(philly_result) -> None:
    """The tiny Philly release of test_philly_ingest (see its comments for each job):
    app_03 has no attempt; app_01, app_04, app_06, app_07 one; app_02 and app_05 two."""
    per = _rows(philly_result.table("attempts_per_job"), "attempts")
    assert {k: r["jobs"] for k, r in per.items()} == {0: 1, 1: 4, 2: 2}
    # app_02: attempt 1 ran 23:00-00:30 PDT (5,400 s) on 2 GPUs, attempt 2 08:50-09:10 UTC (1,200 s) on
    # 4 GPUs; its job run time is 3 h 10 min (11,400 s, gaps included) at 4 GPUs.
    # app_05: attempt 1 has no start (adds nothing), attempt 2 ran 1,800 s on 1 GPU, which is also
    # the job's run time (it started with attempt 2).
    two = per[2]
    assert two["run_hours"] == pytest.approx((11400 + 1800) / 3600)
    assert two["attempts_run_hours"] == pytest.approx((5400 + 1200 + 1800) / 3600)
    assert two["gpu_hours"] == pytest.approx((4 * 11400 + 1800) / 3600)
    assert two["attempts_gpu_hours"] == pytest.approx(2 * 5400 / 3600 + 4 * 1200 / 3600 + 1 * 1800 / 3600)
    assert two["gpu_hours_before_last_attempt"] == pytest.approx(2 * 5400 / 3600)
    assert two["before_last_attempt_share"] == pytest.approx(3 / (29 / 6))
    # One attempt each: app_01 8 GPUs x 193,263 s, app_06 2 x 3,600 s, app_07 1 x 300 s; app_04's attempt
    # has no end (not logged), so it adds no GPU-time.
    one_gpu_hours = (8 * 193263 + 2 * 3600 + 300) / 3600
    assert per[1]["attempts_gpu_hours"] == pytest.approx(one_gpu_hours)
    assert per[1]["gpu_hours"] == pytest.approx(one_gpu_hours)
    assert per[1]["gpu_hours_before_last_attempt"] == 0
    states = _rows(philly_result.table("state_by_attempts"), "attempts", "state")
    assert {k: r["jobs"] for k, r in states.items()} == {
        (0, "failed"): 1, (1, "completed"): 3, (1, "cancelled"): 1,
        (2, "cancelled"): 1, (2, "failed"): 1}
    assert states[(1, "completed")]["job_share"] == 0.75  # app_04 keeps its final status, Pass
    found = {f.name: f.value for f in philly_result.findings}
    assert found["retried_share"] == pytest.approx(2 / 6)  # app_02, app_05 of the 6 jobs with an attempt
    assert found["gpu_hours_before_last_attempt_share"] == pytest.approx(3 / (one_gpu_hours + 29 / 6))
    # One failed job has a run time: app_05, 1,800 s (app_03 never ran).
    assert found["time_to_failure_p50"] == 1800
    assert found["failed_share"] == pytest.approx(2 / 7)  # app_03, app_05 of the 7 jobs, all with a final status


def test_a_table_without_states_users_or_vcs_is_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "bare.csv").write_text("submit,duration,gpus\n0,60,1\n10,120,2\n")
    import_dataset("bare", tmp_path / "bare.csv", tmp_path / "home",
                   mapping="submit=submit,duration=duration,gpus=gpus")
    with open_trace(tmp_path / "home", "bare") as ctx:
        result = failures.analyze(ctx)
    assert result.tables == [] and result.findings == []
    assert [n.what for n in result.not_applicable] == [
        "final-state mix", "time to failure", "GPU-time lost to failed and cancelled jobs",
        "failure rate against job size", "attempts and retries"]
    assert {n.why for n in result.not_applicable[:4]} == {"the trace records no job states"}


def test_cli_writes_the_failures_tables(cli, hand_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = cli("analyze", "dataset", "hand", "--module", "failures", "--data-home", hand_home, "--out", out)
    assert result.code == 0, result.err
    assert "failed share of finished jobs" in result.out
    summary = json.loads((out / "summary.json").read_text())
    tables = summary["modules"]["failures"]["tables"]
    assert set(tables) == {"state_mix", "state_mix_by_gpu_bucket", "state_mix_by_user", "state_mix_by_vc",
                           "time_to_failure_cdf", "time_to_failure_quantiles", "gpu_time_lost",
                           "failure_rate_by_gpu_bucket"}
    lost = pl.read_parquet(out / "failures" / "gpu_time_lost.parquet")
    assert lost.filter((pl.col("state") == "all") & (pl.col("gpu_bucket") == "all"))["gpu_hours"].item() == 12.5
    assert "failures.gpu_time_lost" in {d["id"] for d in summary["definitions"]}
