"""`ddlx placement` on a hand-written v2023 release: the table, the files, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ddlx.datasets.ingest import ingest
from ddlx.placement import POLICIES
from tests.conftest import assert_clean_failure, tree_digest
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
    # every run fills to 1.3 x the capacity (11 GPUs): its last arrival within one GPU's share of 14.3 GPUs
    last = steps.group_by("policy", "seed").agg(pl.col("arrived_workload").max())
    assert last["arrived_workload"].is_between((14_300 - 1000) / 11_000, 14_300 / 11_000).all()
    assert document["settings"] == {"fill_to": 1.3, "tie_break": "random", "reading": "bin-mean"}
    # a level of the table has a value where some arrival's workload rounds to within 1 % of it
    summary = pl.read_parquet(out / "summary.parquet")
    percents = set(steps["arrived_percent"].to_list())
    read = {level for level in (90, 95, 100, 110, 120, 130) if percents & {level - 1, level, level + 1}}
    assert {round(level * 100) for level in summary["level"]} == read


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


def test_fill_to_tie_break_and_reading_are_options(cli, tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "placement"
    ingest("pai-v2023", write_release(tmp_path / "release"), home)
    result = cli("placement", "--seeds", "2", "--workers", "1", "--policies", "best-fit,fgd", "--fill-to", "1.1",
                 "--tie-break", "name", "--reading", "first-reach", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert "filled to 110% of capacity; ties: name; reading: first-reach" in result.out
    assert "110% of capacity" in result.out and "120% of capacity" not in result.out
    document = json.loads((out / "experiment.json").read_text())
    assert document["settings"] == {"fill_to": 1.1, "tie_break": "name", "reading": "first-reach"}
    steps = pl.read_parquet(out / "steps.parquet")
    assert steps["arrived_workload"].max() <= 12_100 / 11_000
    # first-reach: a level has a value for each seed whose arrivals reach it
    summary = pl.read_parquet(out / "summary.parquet")
    reached = steps.group_by("seed").agg(pl.col("arrived_workload").max())["arrived_workload"].to_list()
    for level in (0.9, 0.95, 1.0, 1.1):
        seeds = summary.filter((pl.col("policy") == "fgd") & (pl.col("level") == level))["seeds"].to_list()
        assert seeds == ([sum(r >= level for r in reached)] if any(r >= level for r in reached) else [])


def test_bad_fill_to_tie_break_or_reading_is_refused_before_anything_runs(cli, tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "placement"
    ingest("pai-v2023", write_release(tmp_path / "release"), home)
    before = tree_digest(home)
    for args, needle in ((("--fill-to", "0"), "fill-to: expected a multiple of the cluster's GPU capacity"),
                         (("--fill-to", "1.3x"), "got '1.3x'"), (("--fill-to", "nan"), "got 'nan'"),
                         (("--fill-to", "11"), "at most 10"),
                         (("--tie-break", "first"), "unknown tie-break 'first'; expected one of: random, name"),
                         (("--reading", "mean"), "unknown reading 'mean'; expected one of: bin-mean, first-reach")):
        refused = cli("placement", *args, "--out", out, "--data-home", home)
        assert_clean_failure(refused, needle, code=2)
        assert not out.exists() and tree_digest(home) == before
