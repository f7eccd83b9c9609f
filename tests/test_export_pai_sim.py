"""`ddlx datasets export --format pai-sim`: the job CSV of the PAI v2020 release's simulator.

A five-job table imported by hand; every field of every row is worked out below from the rows,
independently of the exporter. The file is then read the way the simulator's loader reads it
(`_parse_like_the_simulator`, the rules of its `utils._add_job`), to show that the demand the
simulator computes is the dataset's, and that its ids survive the digit conversion and sort.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.synthetic import home_with_jobs_or_sample
from ddlx.formats.export import export_dataset

T0 = 1_700_000_000
ROWS = f"""job_id,user,grp,gpus,cpus,inst,gtype,submit,start,end
007,ann,g1,8,16,2,V100,{T0},{T0 + 10},{T0 + 100}
12,bob,g1,1,3,3,,{T0 + 5},{T0 + 5},{T0 + 45}
x-9,ann,g1,0,4,1,,{T0 + 200},{T0 + 220},{T0 + 420}
5,cy,g2,2,,,T4,{T0 + 300},{T0 + 300},{T0 + 300}
0042,dee,g1,4,,,T4,{T0 + 600.6},{T0 + 600.6},{T0 + 2601}
"""
MAPPING = ("job_id=job_id,user=user,job_group=grp,gpus=gpus,cpus=cpus,instances=inst,gpu_type=gtype,"
           "submit=submit,start=start,end=end")
HEADER = ("job_id,user,gpu_type,num_gpu,num_cpu,num_inst,submit_time,duration,"
          "user_dur,user_gpu_dur,group_dur,group_gpu_dur")

# Run times: 007 90 s, 12 40 s, x-9 200 s, 5 0 s (dropped: nothing to replay), 0042 2000.4 s.
# Without history, the median run time of the written jobs: median(40, 90, 200, 2000.4) = (90 + 200) / 2 = 145.
# History (jobs of the same user / group that ENDED before the submission):
#   007 at T0: none -> 145, 145.   12 at T0+5: none (007 ends at T0+100) -> 145, 145.
#   x-9 at T0+200: user ann: 007 (90) -> 90; group g1: 007 (90), 12 (40) -> 65.
#   0042 at T0+600.6: user dee: none -> 145; group g1: 007, 12, x-9 (ends T0+420) -> median(90, 40, 200) = 90.
# Per instance: 007 8 GPUs / 2 = 4, 16 cores / 2 = 8; 12: 1 GPU / 3 = 0.333.. -> 0.34 (up to a hundredth),
#   3 cores / 3 = 1; x-9 CPU-only; 0042: instances unknown -> 1, cores unknown -> 0.
# Submit: whole seconds since T0 (600.6 -> 601). Without --predictions the *_gpu_dur columns repeat group_dur.
EXPECTED = [
    "1,ann,V100,4,8,2,0,90,145,145,145,145",
    "2,bob,MISC,0.34,1,3,5,40,145,145,145,145",
    "3,ann,CPU,0,4,1,200,200,90,65,65,65",
    "4,dee,T4,4,0,1,601,2000,145,90,90,90",
]
IDS = ["1,007,lab", "2,12,lab", "3,x-9,lab", "4,0042,lab"]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


def _parse_like_the_simulator(path: Path) -> list[dict]:
    """The simulator's reading of its job CSV: csv.DictReader; an all-digit value (not the user) becomes an
    integer; the estimate columns go through float(); num_cpu/num_gpu become hundredths (empty: 0);
    submit_time and num_inst are rounded (empty: 1); duration is truncated, at least 1."""
    jobs = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            job: dict = {}
            for key, value in row.items():
                if value.isdigit() and key != "user":
                    job[key] = round(float(value))
                elif key in ("user_dur", "user_gpu_dur", "group_dur", "group_gpu_dur"):
                    job[key] = float(value)  # the simulator swallows a failure here, and its sort then breaks
                else:
                    job[key] = value
            for key in ("num_cpu", "num_gpu"):
                job[key] = 0 if job[key] == "" else round(100 * float(job[key]))
            for key in ("submit_time", "num_inst"):
                job[key] = 1 if job[key] == "" else round(float(job[key]))
            job["duration"] = max(int(float(job["duration"])), 1)
            jobs.append(job)
    return jobs


def test_every_field_of_every_row(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    result = export_dataset(home, "lab", "pai-sim", out)
    lines = out.read_text().splitlines()
    assert lines[0] == HEADER
    assert lines[1:] == EXPECTED and result.rows == 4
    assert (tmp_path / "lab.csv.ids.csv").read_text().splitlines() == ["job_id,original_job_id,cluster", *IDS]
    assert not any(".0," in line or line.endswith(".0") for line in lines)  # integers as integers
    loss = result.loss
    assert loss.dropped == {"no run time above 0 (the simulator replays each job's run time)": 1}
    filled = dict(loss.filled)
    assert "1 jobs' GPUs, 0 jobs' CPUs; unknown CPUs written 0 (1 jobs)" in filled["num_gpu, num_cpu"]
    assert "(1 jobs)" in filled["num_inst"] and "MISC when unknown (1 jobs)" in filled["gpu_type"]
    assert "145 s (3 jobs' user_dur, 2 jobs' group_dur)" in filled["user_dur, group_dur"]
    assert "8 GPUs and 16 CPU cores" in dict(loss.without_place)["cluster size"]


def test_the_simulator_asks_the_datasets_totals_and_keeps_the_ids(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lab.csv"
    export_dataset(home, "lab", "pai-sim", out)
    jobs = _parse_like_the_simulator(out)
    ids = {int(row["job_id"]): row["original_job_id"] for row in csv.DictReader(open(f"{out}.ids.csv"))}
    # (GPUs, cores) of the whole job in the table, in hundredths: 007 (8, 16), 12 (1, 3), x-9 (0, 4), 0042 (4, unknown)
    totals = {"007": (800, 1600), "12": (100, 300), "x-9": (0, 400), "0042": (400, 0)}
    for job in jobs:
        gpus, cpus = totals[ids[job["job_id"]]]
        assert job["num_inst"] * job["num_cpu"] == cpus
        if ids[job["job_id"]] == "12":  # 1 GPU over 3 instances: 0.34 each, 1.02 asked, never less than 1
            assert job["num_inst"] * job["num_gpu"] == 102
        else:
            assert job["num_inst"] * job["num_gpu"] == gpus
    assert [type(job["job_id"]) for job in jobs] == [int] * 4
    assert sorted(ids.values()) == ["0042", "007", "12", "x-9"]  # leading zeros kept, beside the file
    # the scheduler's sorts: SJF, FIFO, SJU, SJG, SJGG (all ids integers, so ties compare)
    assert [j["job_id"] for j in sorted(jobs, key=lambda e: (e["duration"], e["job_id"]))] == [2, 1, 3, 4]
    assert [j["job_id"] for j in sorted(jobs, key=lambda e: (e["group_gpu_dur"], e["job_id"]))] == [3, 4, 1, 2]
    for key in ("user_dur", "group_dur", "submit_time"):
        sorted(jobs, key=lambda e: (e[key], e["job_id"]))


def test_the_simulators_mean_jct_counts_each_instance(home: Path, tmp_path: Path) -> None:
    """The simulator places a job as num_inst instances and keeps one finished record per instance
    (`JobHistory.add_done_job`); its avg_jct is the records' sum over their number. On a cluster where
    nothing waits a job's JCT is its duration, so its avg_jct weighs each job by its instances, while
    ddlx's mean JCT is over jobs (docs/export.md, `pai-sim`)."""
    out = tmp_path / "lab.csv"
    export_dataset(home, "lab", "pai-sim", out)
    jobs = _parse_like_the_simulator(out)
    records = [job["duration"] for job in jobs for _ in range(job["num_inst"])]
    # 007: 2 instances of 90 s; 12: 3 of 40 s; x-9: 1 of 200 s; 0042: 1 of 2000 s (instances unknown: 1).
    assert records == [90, 90, 40, 40, 40, 200, 2000]
    assert sum(records) / len(records) == pytest.approx((2 * 90 + 3 * 40 + 200 + 2000) / 7)  # 357.1 s
    assert sum(job["duration"] for job in jobs) / len(jobs) == (90 + 40 + 200 + 2000) / 4  # 582.5 s per job


def test_the_models_estimate_goes_where_the_sjgg_policy_reads(home: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.parquet"
    pl.DataFrame({"cluster": ["lab", "lab", "lab"], "job_id": ["007", "12", "x-9"],
                  "pred_s": [1000.4, 50.0, 7.0]}).write_parquet(predictions)
    out = tmp_path / "lab.csv"
    result = export_dataset(home, "lab", "pai-sim", out, predictions=predictions)
    # user_dur and group_dur stay the history medians; 0042 has no prediction: its group_dur, 90
    assert out.read_text().splitlines()[1:] == [
        "1,ann,V100,4,8,2,0,90,145,1000,145,1000",
        "2,bob,MISC,0.34,1,3,5,40,145,50,145,50",
        "3,ann,CPU,0,4,1,200,200,90,7,65,7",
        "4,dee,T4,4,0,1,601,2000,145,90,90,90",
    ]
    filled = dict(result.loss.filled)
    assert "2 jobs have no prediction" in filled["estimate"]  # 0042, and 5 that is not written
    assert "group_dur when it has no prediction (1 written jobs)" in filled["user_gpu_dur, group_gpu_dur"]
    document = json.loads(result.sidecar.read_text())
    assert document["resources"][0]["format"] == "pai-sim" and document["resources"][1]["path"] == "lab.csv.ids.csv"


def test_the_synthetic_sample_keeps_the_canonical_totals(tmp_path: Path) -> None:
    out = tmp_path / "pai.csv"
    result = export_dataset(tmp_path / "empty", "pai", "pai-sim", out, use_sample=True)
    assert result.synthetic and out.read_text().splitlines()[0] == HEADER
    with open_trace(home_with_jobs_or_sample(tmp_path / "empty", "pai", use_sample=True), "pai") as ctx:
        canonical = ctx.query(f"SELECT job_id, num_gpus, num_cpus, num_instances, run_s FROM {ctx.jobs}")
    replayed = canonical.filter((pl.col("run_s") > 0) & pl.col("num_gpus").is_not_null())
    jobs = _parse_like_the_simulator(out)
    assert len(jobs) == replayed.height == result.rows > 100
    ids = {int(row["job_id"]): row["original_job_id"] for row in csv.DictReader(open(f"{out}.ids.csv"))}
    totals = {row["job_id"]: row for row in replayed.iter_rows(named=True)}
    exact = 0
    for job in jobs:
        want = totals[ids[job["job_id"]]]
        inst = max(want["num_instances"], 1)
        assert job["num_inst"] == inst
        for key, total in (("num_gpu", want["num_gpus"]), ("num_cpu", want["num_cpus"])):
            asked, needed = job["num_inst"] * job[key], total * 100  # hundredths
            assert needed - 1e-6 <= asked < needed + inst  # never short; over by under a hundredth per instance
            exact += asked == round(needed)
    assert exact > len(jobs)  # most jobs' shares divide exactly
    assert sum(j["num_inst"] * j["num_gpu"] for j in jobs) >= round(replayed["num_gpus"].sum() * 100)
    assert [j["job_id"] for j in jobs] == list(range(1, len(jobs) + 1))
    assert all(value != "" for job in jobs for key, value in job.items() if key != "user")
