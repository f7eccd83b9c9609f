"""`ddlx simulate` end to end: an imported hand-made dataset (cluster size given with --gpus), the
hand-built PAI release (capacity from the catalog), the JSON it writes, the predictor glue, and the
one-line errors. Expected numbers are derived by hand in the comments."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.cli.simulate import simulate_command
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from tests.conftest import assert_clean_failure, write_pai_release

# Seconds since the Unix epoch. A-D are the four jobs of test_simulate_engine (submissions 0-3 s
# after the first); E is CPU-only, F asks for 8 GPUs (more than the 4 given), G has no duration.
JOBS_CSV = """job,submit,duration,gpus
A,1000,10,2
B,1001,2,4
C,1002,3,2
D,1003,1,1
E,1004,5,0
F,1005,5,8
G,1006,,1
"""


@pytest.fixture
def sim(cli):
    """The `cli` runner with `ddlx simulate` registered (main.py registers it in the package)."""
    from ddlx.cli import main

    if not any(command.name == "simulate" for command in main.app.registered_commands):
        main.app.command("simulate")(simulate_command)
    return cli


@pytest.fixture
def hand_home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS_CSV)
    home = tmp_path / "home"
    import_dataset("hand", tmp_path / "jobs.csv", home, mapping="job_id=job,submit=submit,duration=duration,gpus=gpus")
    return home


def _by_policy(document: dict) -> dict[str, dict]:
    return {entry["policy"]: entry for entry in document["policies"]}


def test_compare_on_an_imported_dataset_writes_json(sim, hand_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "sim.json"
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--compare", "fifo,sjf-oracle", "--no-backfill",
                 "--out", out, "--data-home", hand_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    assert [p.name for p in out.parent.iterdir()] == ["sim.json"]  # no temporary file left
    assert document["capacity"] == {"gpus": 4.0, "source": "given", "rule": "given by the user (--gpus)"}
    assert document["backfill"] is False
    workload = document["workload"]
    assert workload["jobs_considered"] == 7 and workload["jobs_simulated"] == 4
    assert workload["excluded"]["cpu_only"] == 1
    assert workload["excluded"]["larger_than_cluster"] == 1
    assert workload["excluded"]["no_run_time"] == 1
    assert workload["first_submission_utc"] == "1970-01-01T00:16:40+00:00"  # 1000 s after the epoch
    assert workload["work_gpu_s"] == 35.0  # 2*10 + 4*2 + 2*3 + 1*1
    policies = _by_policy(document)
    # fifo without backfilling: JCT 10, 11, 13, 10; sjf-oracle: 10, 11, 13, 1 (see the engine tests).
    assert policies["fifo"]["jct_avg_s"] == pytest.approx(11.0)
    assert policies["fifo"]["queue_avg_s"] == pytest.approx(7.0)
    assert policies["fifo"]["makespan_s"] == 15.0
    assert policies["fifo"]["gpu_utilization"] == pytest.approx(35 / 60)
    assert policies["sjf-oracle"]["jct_avg_s"] == pytest.approx(8.75)
    assert policies["fifo"]["preemptions"] is None
    assert {d["id"] for d in document["definitions"]} >= {"sim.jct.end_minus_submit",
                                                          "sim.utilization.busy_over_capacity_window"}
    # The table: one row per policy, and the excluded jobs named.
    rows = {line.split()[0]: line.split() for line in result.out.splitlines() if line.startswith(("fifo", "sjf"))}
    assert rows["fifo"][1] == "4" and rows["fifo"][2] == "11"  # jobs, average JCT
    assert rows["sjf-oracle"][2] == "8.75"
    assert "excluded: 1 asks for more GPUs than the cluster has" in result.out
    assert "excluded: 1 no GPU requested" in result.out


def test_las_with_thresholds_and_a_job_limit(sim, hand_home: Path, tmp_path: Path) -> None:
    # Queues split at 4 GPU-seconds: the hand-derived LAS schedule of the engine tests (JCT 12, 12, 4, 1).
    out = tmp_path / "las.json"
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--policy", "las", "--las-thresholds", "4",
                 "--out", out, "--data-home", hand_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    las = _by_policy(document)["las"]
    assert las["jct_avg_s"] == pytest.approx(7.25)
    assert las["preemptions"] == 2
    assert document["las_thresholds_gpu_s"] == [4.0]
    # --limit 2 keeps A and B: A runs 0-10, B (4 GPUs) waits for it: 10-12; JCT 10 and 11.
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--policy", "fifo", "--limit", "2",
                 "--out", out, "--data-home", hand_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    assert document["workload"]["excluded"]["after_limit"] == 2  # C and D
    assert _by_policy(document)["fifo"]["jct_avg_s"] == pytest.approx(10.5)


def test_capacity_comes_from_the_catalog(sim, tmp_path: Path) -> None:
    # The hand-built PAI release: machines with 2 (T4), 8 (V100), 2 (P100) and 0 GPUs -> 12 GPUs.
    # Simulated: j1 (1 GPU, submitted 1000, run 3990) and j2 (4 GPUs, submitted 2000, run 500);
    # j3 still running and j4 never started have no run time; j5 is CPU-only.
    home = tmp_path / "home"
    ingest("pai", write_pai_release(tmp_path / "release"), home)
    out = tmp_path / "pai.json"
    result = sim("simulate", "--trace", "pai", "--policy", "fifo", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    assert document["capacity"]["gpus"] == 12.0 and document["capacity"]["source"] == "pai_machine_spec"
    assert document["workload"]["excluded"]["no_run_time"] == 2
    assert document["workload"]["excluded"]["cpu_only"] == 1
    fifo = _by_policy(document)["fifo"]
    # Nothing waits: JCT = run times 3990 and 500; makespan 3990 (j1 ends last); busy 1x3990 + 4x500.
    assert fifo["jct_avg_s"] == pytest.approx((3990 + 500) / 2)
    assert fifo["queue_p95_s"] == 0
    assert fifo["makespan_s"] == 3990
    assert fifo["gpu_utilization"] == pytest.approx(5990 / (12 * 3990))


class _TablePredictor:
    """A stand-in for a saved predictor: fixed predictions per job id, rows returned sorted by id
    desc; its test window starts at `test_from` (Unix seconds)."""

    model_id = "table-v1"

    def __init__(self, predictions: dict[str, float], test_from: float = 0.0, trained_on: str = "hand"):
        self.predictions = predictions
        self.seen: pl.DataFrame | None = None
        self.test_window_start = datetime.fromtimestamp(test_from, tz=timezone.utc)
        self.card = {"data": {"trace": trained_on}}

    def predict(self, jobs: pl.DataFrame) -> pl.DataFrame:
        self.seen = jobs
        return (jobs.select("job_id")
                .with_columns(pl.col("job_id").replace_strict(self.predictions, default=None,
                                                              return_dtype=pl.Float64).alias("pred_s"),
                              pl.lit("table-v1").alias("model_id"))
                .sort("job_id", descending=True))


def test_sjf_predicted_through_a_predictor(sim, hand_home: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Estimates A 1, B 100, C 50, D 200 without backfilling: JCT 10, 11, 3, 10 -> 8.5 (engine tests).
    fake = _TablePredictor({"A": 1.0, "B": 100.0, "C": 50.0, "D": 200.0})
    asked: list[Path] = []
    monkeypatch.setattr("ddlx.predict.load_predictor", lambda path: asked.append(path) or fake)
    out = tmp_path / "pred.json"
    model_dir = tmp_path / "model"
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--compare", "sjf-predicted,fifo", "--no-backfill",
                 "--predictor", model_dir, "--out", out, "--data-home", hand_home)
    assert result.code == 0, result.err
    assert asked == [model_dir]
    # The predictor saw the canonical rows of all seven jobs (its history needs every job), in
    # submission order; four of them are simulated (E, F and G, not simulated, get no prediction).
    assert fake.seen is not None and fake.seen["job_id"].to_list() == list("ABCDEFG")
    assert {"user", "vc", "submit_time", "num_gpus"} <= set(fake.seen.columns)
    document = json.loads(out.read_text())
    assert _by_policy(document)["sjf-predicted"]["jct_avg_s"] == pytest.approx(8.5)
    assert document["estimates"] == {"source": "predictor", "model_ids": ["table-v1"], "jobs": 4,
                                     "jobs_given_to_predictor": 7, "path": str(model_dir)}
    assert "sjf-predicted orders by the predictions of table-v1" in result.out
    assert "trained on" not in result.err


def test_test_window_keeps_the_jobs_the_predictor_never_saw(sim, hand_home: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The window starts at 1002 s: A and B (1000, 1001) are left out. C (2 GPUs, 3 s) and D (1 GPU,
    # 1 s) both start at once on 4 GPUs: JCT 3 and 1 under any policy -> 2. E, F and G keep their
    # own reasons. The predictor still sees all seven jobs.
    fake = _TablePredictor(dict(zip("ABCDEFG", [1.0, 100.0, 50.0, 200.0, 5.0, 5.0, 5.0])), test_from=1002,
                           trained_on="elsewhere")
    monkeypatch.setattr("ddlx.predict.load_predictor", lambda path: fake)
    out = tmp_path / "window.json"
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--compare", "fifo,sjf-predicted",
                 "--predictor", tmp_path / "model", "--test-window", "--out", out, "--data-home", hand_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    workload = document["workload"]
    assert workload["jobs_simulated"] == 2 and workload["excluded"]["before_window"] == 2
    assert workload["excluded"]["cpu_only"] == workload["excluded"]["larger_than_cluster"] == 1
    assert workload["submitted_from_utc"] == workload["first_submission_utc"] == "1970-01-01T00:16:42+00:00"
    assert fake.seen is not None and fake.seen.height == 7
    assert {p: v["jct_avg_s"] for p, v in _by_policy(document).items()} == {"fifo": 2.0, "sjf-predicted": 2.0}
    assert "window: jobs submitted from 1970-01-01T00:16:42+00:00 on" in result.out
    assert "note: model table-v1 was trained on 'elsewhere', applied to 'hand'" in result.err
    # Without the predictor there is no window to take.
    alone = sim("simulate", "--dataset", "hand", "--gpus", "4", "--policy", "fifo", "--test-window",
                "--data-home", hand_home)
    assert alone.code == 2 and "--test-window needs --predictor" in alone.err


def test_clean_errors(sim, hand_home: Path) -> None:
    result = sim("simulate", "--dataset", "hand", "--policy", "fifo", "--data-home", hand_home)
    assert_clean_failure(result, "'hand' documents no GPU capacity", "--gpus")
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--policy", "random", "--data-home", hand_home)
    assert_clean_failure(result, "unknown policy 'random'", "fifo, sjf-oracle, sjf-predicted, las", code=2)
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--compare", "fifo,sjf-predicted",
                 "--data-home", hand_home)
    assert_clean_failure(result, "sjf-predicted needs run-time estimates", "--predictor")
    result = sim("simulate", "--dataset", "nothing", "--gpus", "4", "--policy", "fifo", "--data-home", hand_home)
    assert_clean_failure(result, "no jobs of 'nothing'", "ddlx datasets import")
    result = sim("simulate", "--dataset", "hand", "--gpus", "4", "--policy", "fifo", "--cluster", "elsewhere",
                 "--data-home", hand_home)
    assert_clean_failure(result, "'hand' has no cluster 'elsewhere'", "its clusters: hand")


def test_simulate_has_help(sim) -> None:
    result = sim("simulate", "--help")
    assert result.code == 0
    for option in ("--dataset", "--policy", "--compare", "--predictor", "--backfill", "--gpus",
                   "--limit", "--test-window", "--synthetic", "--out", "--data-home"):
        assert option in result.out
