"""`ddlx predict train|apply|export` as a user runs them: outputs, exported files checked line by
line against hand-made predictions, clean failures, and training on the real Philly job table."""

from __future__ import annotations

import csv
import json
import math
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from tests.conftest import FULL_TRACES, assert_clean_failure, real_file

POLLUX = real_file("philly/pollux_philly_jobs.csv")


@pytest.fixture
def pcli(cli):
    """The `cli` runner with `ddlx predict` mounted on the main app if cli/main.py does not mount it yet."""
    from ddlx.cli import main
    from ddlx.cli.predict import predict_app

    mounted = any(group.name == "predict" for group in main.app.registered_groups)
    if not mounted:
        main.app.add_typer(predict_app, name="predict")
    yield cli
    if not mounted:
        main.app.registered_groups[:] = [g for g in main.app.registered_groups if g.name != "predict"]


def _toy_csv(path: Path) -> Path:
    # 200 jobs, one a minute; user k runs 100 * (k + 1) s; every 10th job runs 0 s (no target).
    rows = ["job_id,user,submit,duration,gpus"]
    for n in range(200):
        user = n % 4
        rows.append(f"j{n:03d},u{user},{1_704_067_200 + 60 * n},{0 if n % 10 == 9 else 100 * (user + 1)},{1 + user}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_every_predict_command_has_help(pcli) -> None:
    for command in ("train", "apply", "export"):
        result = pcli("predict", command, "--help")
        assert result.code == 0 and "Usage" in result.out
        assert "--data-home" in result.out or command == "export"


def test_train_apply_export_on_an_imported_dataset(pcli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = _toy_csv(tmp_path / "toy.csv")
    done = pcli("datasets", "import", "toy", "--from", source, "--map",
                "job_id=job_id,user=user,submit=submit,duration=duration,gpus=gpus", "--data-home", home)
    assert done.code == 0, done.err

    model = tmp_path / "model"
    result = pcli("predict", "train", "--dataset", "toy", "--out", model, "--data-home", home)
    assert result.code == 0, result.err
    card = json.loads((model / "model_card.json").read_text())
    # 180 jobs with a run time: train floor(0.7 * 180) = 126, validation 144 - 126 = 18, test 36.
    assert "train             126 jobs" in result.out and "validation         18 jobs" in result.out
    assert "test               36 jobs" in result.out
    assert "run_time_not_positive 20" in result.out
    assert f"model {card['model_id']}: {model}" in result.out
    assert "SYNTHETIC" not in result.out

    for suffix in ("parquet", "csv"):
        out = tmp_path / f"predictions.{suffix}"
        result = pcli("predict", "apply", "--model", model, "--dataset", "toy", "--out", out, "--data-home", home)
        assert result.code == 0, result.err
        assert f"200 predictions by model {card['model_id']}" in result.out
        assert "SYNTHETIC" not in result.out
    table = pl.read_parquet(tmp_path / "predictions.parquet")
    assert table.columns[:5] == ["job_id", "pred_s", "p50_s", "p90_s", "model_id"]
    assert table.get_column("synthetic").to_list() == [False] * 200  # imported real data, real model
    assert table.height == 200 and table.get_column("job_id").n_unique() == 200

    estimates = tmp_path / "estimates.csv"
    result = pcli("predict", "export", "--predictions", tmp_path / "predictions.csv", "--format", "estimate-csv",
                  "--out", estimates)
    assert result.code == 0, result.err
    with open(estimates, newline="") as handle:
        exported = {row["job_id"]: float(row["estimate"]) for row in csv.DictReader(handle)}
    assert exported == dict(zip(table.get_column("job_id").to_list(), table.get_column("pred_s").to_list()))
    assert "SYNTHETIC" not in result.err

    # The simulator's job table comes from the dataset, the model's estimates carried along.
    moved = pcli("predict", "export", "--predictions", tmp_path / "predictions.parquet", "--format", "pai-sim",
                 "--out", tmp_path / "sim.csv")
    assert_clean_failure(moved, "ddlx datasets export NAME --format pai-sim --predictions FILE")
    result = pcli("datasets", "export", "toy", "--format", "pai-sim", "--predictions", tmp_path / "predictions.parquet",
                  "--out", tmp_path / "sim.csv", "--data-home", home)
    assert result.code == 0, result.err
    assert "dropped 20 rows" in result.out
    with open(tmp_path / "sim.csv", newline="") as handle:
        sim = list(csv.DictReader(handle))
    ids = {row["job_id"]: row["original_job_id"] for row in csv.DictReader(open(tmp_path / "sim.csv.ids.csv"))}
    assert len(sim) == 180 and ids[sim[0]["job_id"]] == "j000" and sim[0]["submit_time"] == "0"
    # j001 was submitted 60 s after j000 and runs 200 s (user u1); its estimate is the model's.
    assert (ids[sim[1]["job_id"]], sim[1]["submit_time"], sim[1]["duration"]) == ("j001", "60", "200")
    predicted = dict(zip(table.get_column("job_id").to_list(), table.get_column("pred_s").to_list()))
    assert sim[1]["group_gpu_dur"] == str(round(predicted["j001"]))


def _hand_table(path: Path) -> Path:
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    pl.DataFrame({
        "job_id": ["a", "b", "c"], "pred_s": [100.0, 50.0, 10.0], "p50_s": [90.0, 45.0, 9.0],
        "p90_s": [300.0, 150.0, 30.0], "model_id": ["m"] * 3, "cluster": ["c1"] * 3,
        "submit_time": [t0 + timedelta(seconds=10), t0, t0 + timedelta(seconds=30)],
        "user": ["u1", "u2", "u1"], "num_gpus": [2.0, 0.5, None], "num_cpus": [4.0, 1.0, 2.0],
        "num_instances": [1, 2, 1], "run_s": [120.0, 40.0, None], "user_median_s": [90.0, 30.0, 90.0],
        "group_median_s": [80.0, 35.0, 70.0]}).write_parquet(path)
    return path


def test_export_formats_line_by_line(pcli, tmp_path: Path) -> None:
    table = _hand_table(tmp_path / "p.parquet")
    out = tmp_path / "estimate-csv.csv"
    result = pcli("predict", "export", "--predictions", table, "--format", "estimate-csv", "--out", out)
    assert result.code == 0, result.err
    assert out.read_text().splitlines() == ["job_id,estimate", "a,100.0", "b,50.0", "c,10.0"]
    for moved in ("pai-sim", "priority"):
        assert_clean_failure(pcli("predict", "export", "--predictions", table, "--format", moved, "--out",
                                  tmp_path / f"{moved}.csv"), f"--format {moved} --predictions FILE")
        assert not (tmp_path / f"{moved}.csv").exists()


def test_export_refuses_ids_that_repeat_across_clusters(pcli, tmp_path: Path) -> None:
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    path = tmp_path / "two.parquet"
    pl.DataFrame({"job_id": ["1", "1"], "pred_s": [5.0, 7.0], "cluster": ["Earth", "Venus"],
                  "submit_time": [t0, t0]}).write_parquet(path)
    result = pcli("predict", "export", "--predictions", path, "--format", "estimate-csv", "--out", tmp_path / "e.csv")
    assert_clean_failure(result, "repeat", "--cluster")
    assert not (tmp_path / "e.csv").exists()
    result = pcli("predict", "export", "--predictions", path, "--format", "estimate-csv", "--out", tmp_path / "e.csv",
                  "--cluster", "Venus")
    assert result.code == 0, result.err
    assert (tmp_path / "e.csv").read_text().splitlines() == ["job_id,estimate", "1,7.0"]
    result = pcli("predict", "export", "--predictions", path, "--format", "estimate-csv", "--out", tmp_path / "e.csv",
                  "--cluster", "Mars")
    assert_clean_failure(result, "no job of cluster 'Mars'", "Earth, Venus")


def _plain(text: str) -> str:
    """A usage error's panel as plain words (box characters and line wrapping removed)."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


def test_clean_failures(pcli, tmp_path: Path) -> None:
    both = pcli("predict", "train", "--trace", "pai", "--dataset", "x", "--data-home", tmp_path)
    assert both.code == 2 and "exactly one of --trace and --dataset" in _plain(both.err)
    unknown = pcli("predict", "train", "--trace", "mycluster", "--data-home", tmp_path)
    assert unknown.code == 2 and "use --dataset for an imported one" in _plain(unknown.err)
    assert_clean_failure(pcli("predict", "train", "--dataset", "nothing", "--data-home", tmp_path / "h"),
                         "no jobs of 'nothing'", "ddlx datasets import")
    (tmp_path / "empty").mkdir()
    assert_clean_failure(pcli("predict", "apply", "--model", tmp_path / "empty", "--dataset", "x",
                              "--out", tmp_path / "p.parquet", "--data-home", tmp_path), "no model_card.json")
    bad_format = pcli("predict", "export", "--predictions", tmp_path / "p.parquet", "--format", "xml",
                      "--out", tmp_path / "o.csv")
    assert bad_format.code == 2 and "estimate-csv" in _plain(bad_format.err)
    assert_clean_failure(pcli("predict", "export", "--predictions", tmp_path / "absent.parquet", "--format",
                              "estimate-csv", "--out", tmp_path / "o.csv"), "absent.parquet", "no such prediction file")
    # The estimate list needs the job ids and estimates.
    two = tmp_path / "two.csv"
    two.write_text("job_id,p50_s\na,1.0\n")
    assert_clean_failure(pcli("predict", "export", "--predictions", two, "--format", "estimate-csv",
                              "--out", tmp_path / "o.csv"), "two.csv", "no column(s) pred_s", "ddlx predict apply")
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,pred_s\na,1.5\nb,soon\n")
    assert_clean_failure(pcli("predict", "export", "--predictions", bad, "--format", "estimate-csv",
                              "--out", tmp_path / "o.csv"), "bad.csv, line 3, field 'pred_s'", "'soon'")
    assert not (tmp_path / "o.csv").exists()


def _pacific_epoch(text: str) -> float:
    """UTC seconds of a Pacific wall-clock time, read as ddlx's import documents: a repeated hour is
    the second occurrence (standard time), a skipped one is moved forward by the gap."""
    zone = ZoneInfo("America/Los_Angeles")
    naive = datetime.fromisoformat(text)
    first, second = naive.replace(tzinfo=zone, fold=0), naive.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return first.timestamp()
    exists = first.astimezone(timezone.utc).astimezone(zone).replace(tzinfo=None) == naive
    return second.timestamp() if exists else first.timestamp()


def test_real_philly_jobs_train_with_counts_from_the_csv(pcli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = pcli("datasets", "import", "philly-jobs", "--from", POLLUX, "--map",
                "submit=timestamp,duration=duration,gpus=num_gpus,vc=cluster", "--time-unit", "datetime",
                "--tz", "America/Los_Angeles", "--data-home", home)
    assert done.code == 0, done.err
    result = pcli("predict", "train", "--dataset", "philly-jobs", "--out", tmp_path / "model", "--data-home", home)
    assert result.code == 0, result.err
    card = json.loads((tmp_path / "model" / "model_card.json").read_text())

    with open(POLLUX, newline="") as handle:
        rows = list(csv.DictReader(handle))
    times = sorted(_pacific_epoch(r["timestamp"]) for r in rows if float(r["duration"]) > 0)
    n = len(times)
    t1, t2 = times[(7 * n) // 10], times[(8 * n) // 10]
    expected = {"train": sum(t < t1 for t in times), "validation": sum(t1 <= t < t2 for t in times),
                "test": sum(t >= t2 for t in times)}
    assert card["target"]["jobs"] == len(rows) == (82_247 if FULL_TRACES else 412)
    assert card["target"]["with_target"] == n
    assert {w: v["jobs"] for w, v in card["split"]["windows"].items()} == expected
    # Hour and weekday are read in Pacific time; there is no user or group in this table.
    used = {f["name"] for f in card["features"]["used"]}
    assert {"vc", "num_gpus", "submit_hour", "submit_weekday"} <= used and "user" not in used
    for row in card["metrics"]["table"]:
        assert row["jobs"] == expected["test"]
        for name, value in row.items():
            if name == "predictor":
                continue
            if name == "spearman" and row["predictor"] not in ("model", "model_p50"):
                # Without users or groups every baseline predicts the one global median: no ranking.
                assert value is None
            else:
                assert value is not None and math.isfinite(value), (row["predictor"], name)
    model = {row["predictor"]: row for row in card["metrics"]["table"]}
    if FULL_TRACES:  # a ranking worth the name needs the full table's 80,000 jobs
        assert model["model"]["spearman"] > 0.2
    # The predictor's test window, read back through the Python API, is the boundary computed here.
    from ddlx.predict import load_predictor

    assert load_predictor(tmp_path / "model").test_window_start.timestamp() == t2

    # FIFO against SJF with true and with predicted run times on the jobs of the test window (the
    # evidence docs/simulate.md shows): the jobs simulated are the CSV's rows submitted from t2 on
    # with a run time above 0 and 1 to 600 GPUs.
    out = tmp_path / "sim.json"
    result = pcli("simulate", "--dataset", "philly-jobs", "--gpus", "600", "--compare",
                  "fifo,sjf-oracle,sjf-predicted", "--predictor", tmp_path / "model", "--test-window",
                  "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    window = [r for r in rows if _pacific_epoch(r["timestamp"]) >= t2]
    simulated = [r for r in window if float(r["duration"]) > 0 and 0 < float(r["num_gpus"]) <= 600]
    assert document["workload"]["jobs_simulated"] == len(simulated) > (10_000 if FULL_TRACES else 50)
    assert document["workload"]["excluded"]["before_window"] == len(rows) - len(window)
    assert document["estimates"]["jobs_given_to_predictor"] == len(rows)
    assert document["estimates"]["model_ids"] == [card["model_id"]]
    assert [p["policy"] for p in document["policies"]] == ["fifo", "sjf-oracle", "sjf-predicted"]
    work = sum(float(r["duration"]) * float(r["num_gpus"]) for r in simulated)
    assert document["workload"]["work_gpu_s"] == pytest.approx(work, rel=1e-9)
