"""PAI's readings leave out a grouping or a join only where the ingest's validation report proves it
changes nothing (no task repeated, no task without its job): on the hand-built release, where both
hold, the readings are the same with the report and without it; on a release with a repeated task
and an orphan task, the report says so and the readings count by hand as the general queries do."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ddlx.analysis.context import TraceContext, open_trace
from ddlx.datasets.ingest import ingest
from ddlx.traces.pai import analyses, reproduce
from ddlx.traces.pai.reader import ORPHAN_TASKS_CHECK, duplicate_check_name
from tests.conftest import PAI_FIXTURE, write_pai_release


def _readings(ctx: TraceContext) -> dict[str, pl.DataFrame]:
    usage, usage_cdf = analyses.pai_request_vs_usage_tables(ctx)
    return {
        "usage": usage, "usage_cdf": usage_cdf,
        "gpu_memory": analyses.gpu_memory_summary(ctx),
        "instance_gpu_util": analyses.pai_instance_gpu_util_by(ctx, "gpu_bucket"),
        "queue_definitions": analyses.pai_queue_definitions(ctx),
        "notebook_tasks": ctx.query(f"SELECT gpu_type, plan_gpu, count(*) AS tasks FROM "
                                    f"{reproduce._notebook_tasks(ctx)} GROUP BY ALL ORDER BY ALL"),
    }


def _without_report(ctx: TraceContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctx, "validated_rows", lambda table, check: None)


@pytest.fixture(scope="module")
def fixture_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pai_facts")
    ingest("pai", write_pai_release(base / "release"), base / "home")
    return base / "home"


def test_the_readings_are_the_same_with_the_report_and_without(fixture_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with open_trace(fixture_home, "pai", cache=False) as ctx:
        assert ctx.validated_rows("pai_task_table", duplicate_check_name("pai_task_table")) == 0
        assert ctx.validated_rows("pai_task_table", ORPHAN_TASKS_CHECK) == 0
        assert ctx.validated_rows("pai_task_table", "no such check") is None
        with_report = _readings(ctx)
    with open_trace(fixture_home, "pai", cache=False) as ctx:
        _without_report(ctx, monkeypatch)
        without = _readings(ctx)
    assert with_report.keys() == without.keys()
    for name, frame in with_report.items():
        assert_frame_equal(frame, without[name], check_exact=True)


def test_a_repeated_task_and_an_orphan_task_are_read_as_the_general_queries_read_them(tmp_path: Path) -> None:
    # j2's worker row twice; task jZ (50 % of a T4) of no job, with an instance and a sensor row.
    tasks = PAI_FIXTURE["pai_task_table"] + [
        "j2,worker,4.0,Failed,2000.0,2600.0,200.0,8.0,100.0,V100",
        "jZ,worker,1.0,Terminated,1000.0,2000.0,100.0,4.0,50.0,T4"]
    instances = PAI_FIXTURE["pai_instance_table"] + ["jZ,worker,iZ,wZ,instZ,Terminated,1100.0,2000.0,m1"]
    sensors = PAI_FIXTURE["pai_sensor_table"] + [
        "jZ,worker,wZ,instZ,m1,/dev/nvidia0,50.0,25.0,1.0,2.0,4.0,8.0,100.0,200.0,3.0,4.0"]
    overrides = {name: ("\n".join(rows) + "\n").encode() for name, rows in
                 (("pai_task_table", tasks), ("pai_instance_table", instances), ("pai_sensor_table", sensors))}
    ingest("pai", write_pai_release(tmp_path / "release", overrides=overrides), tmp_path / "home")
    with open_trace(tmp_path / "home", "pai", cache=False) as ctx:
        assert ctx.validated_rows("pai_task_table", duplicate_check_name("pai_task_table")) == 1
        assert ctx.validated_rows("pai_task_table", ORPHAN_TASKS_CHECK) == 1
        readings = _readings(ctx)
    # Request against usage, per task with a sensor row: j1 worker and j2 worker (once, its two rows
    # the same task) as on the hand-built release, and jZ worker: GPU 25 of 50, CPU 50 of 100 -> 0.5.
    gpu = readings["usage"].filter(pl.col("resource") == "gpu").row(0, named=True)
    assert (gpu["tasks"], gpu["over_requesting_tasks"]) == (3, 2)  # 1.7, 0.8, 0.5
    assert gpu["p50_usage_ratio"] == pytest.approx(0.8)
    # GPU memory, per sensor row: w1a, w1b, w2a and wZ (peak 8 GB of a 16 GB T4: 0.5), none doubled.
    memory = readings["gpu_memory"].filter(pl.col("gpu_type") == "all").row(0, named=True)
    assert memory["instances"] == 4
    assert memory["mean_peak_share"] == pytest.approx((1.25 + 0.375 + 0.75 + 0.5) / 4)
    # Instance GPU utilisation, per sensor row of a GPU task: w1a 150, w1b 20 (j1: 1 GPU), w2a 80 once
    # (j2: its worker's two rows ask 4 + 4 GPUs, bucket (4,8]), wZ 25 (jZ has no job: unknown).
    by_size = {r["gpu_bucket"]: r for r in readings["instance_gpu_util"].to_dicts()}
    assert {bucket: r["instances"] for bucket, r in by_size.items()} == {"1": 2, "(4,8]": 1, "unknown": 1}
    assert (by_size["(4,8]"]["mean_gpu_util_pct"], by_size["unknown"]["mean_gpu_util_pct"]) == (80.0, 25.0)
    # The notebook's tasks: rows of the task table with a job and an instance: j1 worker, j2 ps, j2
    # worker twice (two rows), j3 tensorflow, j5 worker; jZ has no job.
    notebook = readings["notebook_tasks"]
    assert notebook["tasks"].sum() == 6
    assert notebook.filter(pl.col("gpu_type") == "V100")["tasks"].to_list() == [2]
    assert notebook.filter(pl.col("gpu_type") == "T4")["tasks"].to_list() == [1]  # j1; j4 has no instance
