"""`ddlx datasets export --format priority`: the job_id,priority list of the Helios and Lucid simulators.

A small two-cluster table imported by hand and a prediction table written by hand; every row is
worked out below. The file is then read the way the simulators read it (pandas' type inference on
each column, lookup by job id, priority x GPUs for QSSF), re-implemented in a few lines.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import polars as pl
import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.formats.export import export_dataset
from ddlx.formats.model import ExportError

T0 = 1_700_000_000
ROWS = f"""job_id,cl,gpus,submit,start,end
007,venus,8,{T0 + 10},{T0 + 20},{T0 + 620}
12,venus,2,{T0},{T0 + 5},{T0 + 65}
x-9,venus,0,{T0 + 30},{T0 + 30},{T0 + 90}
12,earth,4,{T0 + 40},{T0 + 40},{T0 + 100}
"""
MAPPING = "job_id=job_id,cluster=cl,gpus=gpus,submit=submit,start=start,end=end"
# pred_s of each (cluster, job): venus/007 1000.4, venus/12 50, venus/x-9 7; earth/12 has none.
PREDICTIONS = {"cluster": ["venus", "venus", "venus"], "job_id": ["007", "12", "x-9"], "pred_s": [1000.4, 50.0, 7.0]}
GPUS = {"007": 8, "12": 2, "x-9": 0}


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ROWS)
    import_dataset("lab", tmp_path / "jobs.csv", tmp_path / "home", mapping=MAPPING)
    return tmp_path / "home"


@pytest.fixture()
def predictions(tmp_path: Path) -> Path:
    path = tmp_path / "pred.parquet"
    pl.DataFrame(PREDICTIONS).write_parquet(path)
    return path


def _read_like_pandas(path: Path) -> dict:
    """pandas.read_csv's reading of the file: a column of whole numbers only becomes integers, any other
    value keeps the column text; the simulators then take `data[data.job_id == id].priority.iloc[0]`."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["job_id", "priority"]

    def column(name: str) -> list:
        values = [row[name] for row in rows]
        return [int(v) for v in values] if all(re.fullmatch(r"-?\d+", v) for v in values) else values
    return dict(zip(column("job_id"), column("priority"), strict=True))


def test_every_row_per_job_seconds(home: Path, predictions: Path, tmp_path: Path) -> None:
    out = tmp_path / "venus.csv"
    result = export_dataset(home, "lab", "priority", out, predictions=predictions, options={"cluster": "venus"})
    # venus in submission order: 12 (T0), 007 (T0+10), x-9 (T0+30); 1000.4 -> 1000
    assert out.read_text().splitlines() == ["job_id,priority", "12,50", "007,1000", "x-9,7"]
    assert result.rows == 3 and not result.loss.dropped
    read = _read_like_pandas(out)
    assert read == {"12": 50, "007": 1000, "x-9": 7}  # a text column: 007 keeps its zeros, as in the trace
    # QSSF ranks by priority x gpu_num: the model's seconds x GPUs, not x GPUs squared
    for job_id in ("007", "12"):
        gpus, pred = GPUS[job_id], {"007": 1000.4, "12": 50.0}[job_id]
        assert read[job_id] * gpus == round(pred) * gpus  # 8,000 and 100 GPU-seconds
        assert read[job_id] != round(pred * gpus)  # the file holds seconds, not GPU-seconds
    assert sorted(GPUS, key=lambda j: read[j] * GPUS[j]) == ["x-9", "12", "007"]


def test_all_clusters_name_jobs_by_cluster_when_ids_repeat(home: Path, predictions: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.csv"
    result = export_dataset(home, "lab", "priority", out, predictions=predictions)
    # 12 repeats across venus and earth: ids become <cluster>/<job id>; earth/12 has no prediction: left out
    assert out.read_text().splitlines() == ["job_id,priority", "venus/12,50", "venus/007,1000", "venus/x-9,7"]
    assert result.rows == 3 and result.loss.dropped == {
        "no prediction for the job in the predictions file (the simulators look up every job they replay; run "
        "`ddlx predict apply` on this dataset to cover it)": 1}


def test_digit_ids_read_as_integers_still_match(tmp_path: Path) -> None:
    (tmp_path / "jobs.csv").write_text(f"job_id,gpus,submit,start,end\n765472,1,{T0},{T0},{T0 + 9}\n"
                                       f"765473,2,{T0 + 1},{T0 + 1},{T0 + 9}\n")
    import_dataset("venus", tmp_path / "jobs.csv", tmp_path / "home",
                   mapping="job_id=job_id,gpus=gpus,submit=submit,start=start,end=end")
    predictions = tmp_path / "p.parquet"
    pl.DataFrame({"cluster": ["venus", "venus"], "job_id": ["765472", "765473"],
                  "pred_s": [10326.0, 12489.2]}).write_parquet(predictions)
    out = tmp_path / "p.csv"
    export_dataset(tmp_path / "home", "venus", "priority", out, predictions=predictions)
    # the trace the simulator replays holds the same digits, so both columns read as integers and match
    assert _read_like_pandas(out) == {765472: 10326, 765473: 12489}


def test_refuses_without_predictions_or_with_an_unknown_cluster(home: Path, predictions: Path,
                                                                 tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"the priority list is the model's estimate; give --predictions FILE "
                                          r"from `ddlx predict apply`"):
        export_dataset(home, "lab", "priority", tmp_path / "x.csv")
    unknown = "option cluster=mars: no such cluster in dataset 'lab'; it has: earth, venus"
    with pytest.raises(ExportError, match=unknown):
        export_dataset(home, "lab", "priority", tmp_path / "y.csv", predictions=predictions,
                       options={"cluster": "mars"})
    without_text_id = tmp_path / "p.parquet"  # venus/x-9 unpredicted: the written ids would all be digits
    pl.DataFrame(PREDICTIONS).filter(pl.col("job_id") != "x-9").write_parquet(without_text_id)
    with pytest.raises(ExportError, match="ids of digits, but jobs without one \\(e.g. 'x-9'\\) do not"):
        export_dataset(home, "lab", "priority", tmp_path / "z.csv", predictions=without_text_id,
                       options={"cluster": "venus"})
    assert not any((tmp_path / name).exists() for name in ("x.csv", "y.csv", "z.csv"))


def test_the_synthetic_sample_with_a_prediction_for_every_job(tmp_path: Path) -> None:
    from ddlx.analysis.context import open_trace
    from ddlx.datasets.synthetic import home_with_jobs_or_sample

    with open_trace(home_with_jobs_or_sample(tmp_path / "empty", "helios", use_sample=True), "helios") as ctx:
        jobs = ctx.query(f"SELECT cluster, job_id, num_gpus FROM {ctx.jobs} WHERE cluster = 'Venus'")
    predictions = tmp_path / "p.parquet"
    jobs.select("cluster", "job_id", pl.lit(60.0).alias("pred_s")).write_parquet(predictions)
    out = tmp_path / "venus.csv"
    result = export_dataset(tmp_path / "empty", "helios", "priority", out, use_sample=True, predictions=predictions,
                            options={"cluster": "Venus"})
    read = _read_like_pandas(out)
    assert result.synthetic and result.rows == jobs.height == len(read) > 10
    assert set(read.values()) == {60}
    assert {str(k) for k in read} == set(jobs["job_id"].to_list())
