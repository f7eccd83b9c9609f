"""`ddlx placement` on a hand-written v2023 release: the table, the files, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ddlx.datasets.ingest import ingest
from ddlx.simulate.placement import POLICIES
from tests.conftest import assert_clean_failure
from tests.test_pai_v2023_ingest import write_release


def test_the_command_runs_every_policy_and_writes_its_results(cli, tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "placement"
    ingest("pai-v2023", write_release(tmp_path / "release"), home)
    result = cli("placement", "--seeds", "2", "--workers", "1", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert all(f"  {policy} " in result.out for policy in POLICIES)
    assert "100% of capacity" in result.out and f"results: {out}" in result.out
    document = json.loads((out / "experiment.json").read_text())
    assert document["seeds"] == [0, 1] and document["policies"] == list(POLICIES)
    assert document["source"]["task_list"] == "default" and document["source"]["node_set"] == "gpu"
    steps = pl.read_parquet(out / "steps.parquet")
    assert set(steps["policy"]) == set(POLICIES) and set(steps["seed"]) == {0, 1}
    # every run ends once the arrived requests reach the capacity
    last = steps.group_by("policy", "seed").agg(pl.col("arrived_workload").max())
    assert last["arrived_workload"].min() >= 1.0
    summary = pl.read_parquet(out / "summary.parquet")
    assert sorted(set(summary["level"])) == [0.9, 0.95, 1.0]


def test_a_variant_list_and_bad_names(cli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai-v2023", write_release(tmp_path / "release"), home)
    variant = cli("placement", "--pod-list", "multigpu20", "--policies", "fgd,best-fit", "--seeds", "1",
                  "--out", tmp_path / "v", "--data-home", home)
    assert variant.code == 0, variant.err
    assert "task list 'multigpu20'" in variant.out
    wrong_list = cli("placement", "--pod-list", "multigpu2", "--out", tmp_path / "w", "--data-home", home)
    assert_clean_failure(wrong_list, "no task list 'multigpu2'", "did you mean 'multigpu20'")
    wrong_policy = cli("placement", "--policies", "fgd,bestfit", "--data-home", home)
    assert wrong_policy.code == 2 and "unknown policy 'bestfit'" in wrong_policy.err
