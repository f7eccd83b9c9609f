"""`ddlx datasets export --format pollux`: the workload CSV of the Pollux and Sia simulators.

An eight-job table imported by hand; every field of every line is worked out below from the rows,
independently of the exporter. The file is read back the way both simulators read it: rows of a CSV
with the columns name,time,application,num_replicas,batch_size, numbers parsed as numbers, the
application looked up in the six they model, and (as Sia does) the application taken again from
the name before its first `-`.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.synthetic import home_with_jobs_or_sample
from ddlx.formats.export import export_dataset
from tests.conftest import assert_clean_failure

T0 = 1_700_000_000
ROWS = f"""job_id,user,vc,gpus,state,submit,start,end
j-b,ann,vc1,2,COMPLETED,{T0 + 10},{T0 + 70},{T0 + 3670}
j-a,bob,vc2,0.5,FAILED,{T0},{T0 + 5},{T0 + 605.6}
j-c,ann,vc2,0,COMPLETED,{T0 + 10},{T0 + 20},{T0 + 30}
j-d,cy,,8,RUNNING,{T0 + 100},{T0 + 160},
j-e,bob,vc1,1,COMPLETED,{T0 + 200},{T0 + 200},{T0 + 200.2}
j-f,cy,vc1,32,COMPLETED,{T0 + 250.7},{T0 + 300},{T0 + 11100}
j-h,ann,vc2,128,CANCELLED,{T0 + 400},{T0 + 400},{T0 + 4000}
j-g,bob,vc1,,COMPLETED,{T0 + 500},{T0 + 510},{T0 + 520}
"""
MAPPING = "job_id=job_id,user=user,vc=vc,gpus=gpus,state=state,submit=submit,start=start,end=end"
HEADER = ["name", "time", "application", "num_replicas", "batch_size"]
# The smallest local (per-replica) batch size the simulators measured for each application (their
# traces/<application>/placements.csv): a job's batch_size / num_replicas may not go below it.
SMALLEST_LOCAL_BATCH = {"bert": 4, "cifar10": 32, "deepspeech2": 10, "imagenet": 20, "ncf": 32, "yolov3": 4}

# Submission order (ties by job id): j-a 1, j-b 2, j-c 3, j-d 4, j-e 5, j-f 6, j-h 7, j-g 8.
# GPU-hours: j-a 0.5 x 600.6 / 3600 = 0.08 -> cifar10; j-b 2 x 3600 / 3600 = 2 -> deepspeech2;
# j-e 1 x 0.2 / 3600 -> cifar10; j-f 32 x 10800 / 3600 = 96 -> yolov3 (32 replicas, at most 16);
# j-h 128 x 3600 / 3600 = 128 -> imagenet (128 replicas, at most 64).
# Dropped: j-c (0 GPUs), j-d (running: no GPU time), j-g (no GPU count).
EXPECTED = [
    ["cifar10-1", 0, "cifar10", 1, 4096],
    ["deepspeech2-2", 10, "deepspeech2", 2, 640],
    ["cifar10-5", 200, "cifar10", 1, 4096],
    ["yolov3-6", 250, "yolov3", 16, 64],  # submitted at 250.7 -> 250
    ["imagenet-7", 400, "imagenet", 64, 3200],
]


def read_like_the_simulators(path: Path) -> list[list[object]]:
    """The workload rows as the simulators use them; asserts what their readers rely on."""
    assert path.read_text().splitlines()[0] == ",".join(HEADER)
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for row in rows:
        assert list(row) == HEADER
        assert row["application"] in SMALLEST_LOCAL_BATCH, row
        assert row["name"].split("-")[0] == row["application"], row  # how Sia finds the application
        for key in ("time", "num_replicas", "batch_size"):
            assert row[key].isdigit(), row  # whole, non-negative, no `8.0`, never empty
        replicas, batch = int(row["num_replicas"]), int(row["batch_size"])
        assert 1 <= replicas <= 64 and batch / replicas >= SMALLEST_LOCAL_BATCH[row["application"]], row
        out.append([row["name"], int(row["time"]), row["application"], replicas, batch])
    times = [row[1] for row in out]
    assert times == sorted(times) and times[0] == 0 and len({row[0] for row in out}) == len(out)
    return out


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def test_every_field_of_every_line(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    result = export_dataset(home, "lab", "pollux", out)
    assert read_like_the_simulators(out) == EXPECTED and result.rows == 5
    ids = (tmp_path / "lab.csv.ids.csv").read_text().splitlines()
    assert ids == ["name,job_id,cluster", "cifar10-1,j-a,lab", "deepspeech2-2,j-b,lab", "cifar10-5,j-e,lab",
                   "yolov3-6,j-f,lab", "imagenet-7,j-h,lab"]
    assert result.loss.dropped == {
        "no GPU count (the simulators run GPU jobs only)": 1,
        "CPU-only job, 0 GPUs (the simulators run GPU jobs only)": 1,
        "no run time: never started or still running (application=gputime needs the job's GPU time)": 1}
    filled = dict(result.loss.filled)
    assert filled["application"].endswith("cifar10 2, deepspeech2 1, imagenet 1, yolov3 1")
    assert "(1 jobs)" in filled["num_replicas"] and "2 jobs capped" in filled["num_replicas"]


def test_one_application_for_every_job_keeps_jobs_without_a_run_time(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    result = export_dataset(home, "lab", "pollux", out, options={"application": "bert"})
    # j-d (8 GPUs, still running) is kept; j-h's 128 GPUs are capped at 64; bert's batch size is 384.
    assert read_like_the_simulators(out) == [
        ["bert-1", 0, "bert", 1, 384], ["bert-2", 10, "bert", 2, 384], ["bert-4", 100, "bert", 8, 384],
        ["bert-5", 200, "bert", 1, 384], ["bert-6", 250, "bert", 32, 384], ["bert-7", 400, "bert", 64, 384]]
    assert len(result.loss.dropped) == 2 and "bert 6" in dict(result.loss.filled)["application"]


def test_a_sample_follows_the_gpu_time_rule(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "helios.csv"
    export_dataset(home, "helios", "pollux", out, use_sample=True)
    rows = read_like_the_simulators(out)
    ids = pl.read_csv(tmp_path / "helios.csv.ids.csv", schema_overrides={"job_id": pl.String})
    with open_trace(home_with_jobs_or_sample(home, "helios", True), "helios") as ctx:
        jobs = ctx.query(f"SELECT cluster, job_id, num_gpus, run_s FROM {ctx.jobs}")
    joined = ids.join(jobs, on=["cluster", "job_id"], how="left", maintain_order="left")
    assert joined.height == len(rows) and joined["num_gpus"].null_count() == 0
    for (name, _, application, replicas, _), gpus, run in zip(
            rows, joined["num_gpus"].to_list(), joined["run_s"].to_list(), strict=True):
        hours = gpus * run / 3600
        expected = "cifar10" if hours < 1 else "deepspeech2" if hours < 10 else "yolov3" if hours < 100 else "imagenet"
        assert application == expected, (name, gpus, run)
        assert replicas == min(-(-gpus // 1), 16 if expected == "yolov3" else 64), (name, gpus)
    assert {row[2] for row in rows} >= {"cifar10", "deepspeech2"}


@pytest.mark.parametrize("option", ["application=gpt2", "application="])
def test_a_bad_application_fails_in_one_line(cli, home: Path, tmp_path: Path, option: str) -> None:
    out = tmp_path / "x.csv"
    done = cli("datasets", "export", "lab", "--format", "pollux", "--out", out, "--option", option,
               "--data-home", home)
    assert_clean_failure(done, "--option application=", "gputime", "yolov3", code=2)
    assert not out.exists()
