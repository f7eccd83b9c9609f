"""From a SYNTHETIC cluster's files to the GPU efficiency findings, through the commands a user runs:
`ddlx datasets synth-cluster`, `ddlx datasets import --preset slurm`, `ddlx datasets import-metrics`
and `ddlx analyze dataset`. Every number is compared with the generator's `plan.json`, which it
accumulates from its own schedule while writing, never by reading the files back.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics


def _table(result, name: str) -> pl.DataFrame:
    (module,) = [m for m in result.modules if m.module == "gpu_efficiency"]
    (table,) = [t for t in module.tables if t.name == name]
    return table.frame


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("cluster")
    write_synthetic_cluster(ClusterSpec(gpus=16, days=1, step=60, seed=3), root / "gen")
    home = root / "home"
    import_dataset("lab", root / "gen" / "sacct.txt", home, preset="slurm", tz="Europe/Berlin")
    import_metrics(home, "lab", root / "gen" / "dcgm.om")
    return home, json.loads((root / "gen" / "plan.json").read_text())


def test_every_job_matches_the_plan(slurm_cluster: tuple[Path, dict]) -> None:
    home, plan = slurm_cluster
    result = run_analysis(home, "lab", ["gpu_efficiency"])
    jobs = _table(result, "jobs").fill_null(0)
    got = {row["job_id"]: (round(row["allocated_gpu_hours"] * 3600), round(row["idle_gpu_hours"] * 3600),
                           round(row["sm_idle_gpu_hours"] * 3600)) for row in jobs.iter_rows(named=True)}
    want = {job["job_id"]: (job["alloc_gpu_s"], job["idle_gpu_s"], job["idle_sm_gpu_s"])
            for job in plan["jobs"] if job["alloc_gpu_s"] > 0}
    assert len(want) > 10 and got == want
    assert result.synthetic  # generated: labelled SYNTHETIC wherever the results are shown
    fleet = plan["fleet"]
    assert jobs["allocated_gpu_hours"].sum() * 3600 == pytest.approx(fleet["alloc_gpu_s"])
    assert jobs["idle_gpu_hours"].sum() * 3600 == pytest.approx(fleet["idle_alloc_gpu_s"])
    # The generated cluster is consistent: its free GPUs beside jobs' known GPUs are no data gap, so
    # no check fires and no finding carries a warning.
    free = (fleet["total_gpu_s"] - fleet["alloc_gpu_s"]) / plan["window"]["step_s"]
    quality = {row["check"]: row for row in _table(result, "data_quality").iter_rows(named=True)}
    unallocated = next(row for check, row in quality.items() if check.startswith("unallocated samples"))
    assert unallocated["of"] == free > 0 and unallocated["count"] == 0
    assert not [f.name for m in result.modules for f in m.findings if f.warning]


def test_users_partitions_and_hours_match_the_plan(slurm_cluster: tuple[Path, dict]) -> None:
    home, plan = slurm_cluster
    result = run_analysis(home, "lab", ["gpu_efficiency"])
    users = {row["user"]: (round(row["allocated_gpu_hours"] * 3600), round(row["idle_gpu_hours"] * 3600))
             for row in _table(result, "users").iter_rows(named=True)}
    assert users == {user: (sums["alloc_gpu_s"], sums["idle_gpu_s"]) for user, sums in plan["by_user"].items()
                     if sums["alloc_gpu_s"] > 0}
    hours = {row["hour"].strftime("%Y-%m-%dT%H:00:00Z"): (round(row["allocated_gpu_hours"] * 3600),
                                                          round(row["idle_gpu_hours"] * 3600))
             for row in _table(result, "idle_share_by_hour").iter_rows(named=True)}
    assert hours == {hour["hour"]: (hour["alloc_gpu_s"], hour["idle_alloc_gpu_s"]) for hour in plan["fleet"]["hourly"]}


def test_pods_of_a_kubernetes_cluster_match_the_plan(tmp_path: Path) -> None:
    """Kubernetes: no job table; the pods on the samples' labels are the jobs, grouped by namespace."""
    write_synthetic_cluster(ClusterSpec(gpus=8, days=1, step=120, seed=5, scheduler="kubernetes",
                                        format="parquet"), tmp_path / "gen")
    plan = json.loads((tmp_path / "gen" / "plan.json").read_text())
    # The pods as a job table: a job is <namespace>/<pod>, as the samples' labels name it.
    pods = pl.read_csv(tmp_path / "gen" / "pods.csv")
    pods.with_columns(pl.concat_str(["namespace", "pod"], separator="/").alias("job")).write_csv(tmp_path / "pods.csv")
    home = tmp_path / "home"
    import_dataset("k8s", tmp_path / "pods.csv", home,
                   mapping="job_id=job,vc=namespace,submit=start,start=start,end=end,gpus=gpus", time_unit="datetime")
    import_metrics(home, "k8s", tmp_path / "gen" / "dcgm.parquet")
    result = run_analysis(home, "k8s", ["gpu_efficiency"])
    # The generator's namespaces are its accounts.
    groups = {row["vc"]: (round(row["allocated_gpu_hours"] * 3600), round(row["idle_gpu_hours"] * 3600))
              for row in _table(result, "groups").iter_rows(named=True)}
    assert len(groups) > 2 and groups == {name: (sums["alloc_gpu_s"], sums["idle_gpu_s"])
                                          for name, sums in plan["by_account"].items() if sums["alloc_gpu_s"] > 0}


def test_generated_telemetry_beside_real_jobs_is_labelled_synthetic(tmp_path: Path) -> None:
    """Jobs imported from a table without ddlx's marker, telemetry from the generator: the analysis of
    the dataset is SYNTHETIC all the same."""
    write_synthetic_cluster(ClusterSpec(gpus=8, days=1, step=600, seed=2), tmp_path / "gen")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "sacct.txt").write_bytes((tmp_path / "gen" / "sacct.txt").read_bytes())
    home = tmp_path / "home"
    import_dataset("mixed", tmp_path / "jobs" / "sacct.txt", home, preset="slurm", tz="Europe/Berlin")
    assert not run_analysis(home, "mixed", ["overview"]).synthetic
    import_metrics(home, "mixed", tmp_path / "gen" / "dcgm.om")
    assert run_analysis(home, "mixed", ["gpu_efficiency"]).synthetic
