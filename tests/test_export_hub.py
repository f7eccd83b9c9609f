"""What every export shares: the jobs it starts from (order, ids, row ids of an import without an id
column), the predictions it carries, the format's options, and how numbers are written.

Expected values are worked out by hand from the small tables below.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.context import open_trace
from ddlx.datasets.catalog import query
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.plugins import TRACES
from ddlx.errors import InputError, UsageError
from ddlx.formats.export import FORMATS, export_dataset, parse_options
from ddlx.formats.jobs import export_jobs, write_table
from ddlx.formats.model import ExportError, LossReport

NO_IDS = """submit,duration,gpus
30,100,1
10,50,2
10,50,1
20,5,4
"""


def _swf_jobs(path: Path) -> list[list[int]]:
    return [[int(v) for v in line.split()] for line in path.read_text().splitlines() if not line.startswith(";")]


def test_rows_without_an_id_column_get_stable_row_ids(tmp_path: Path) -> None:
    """Row ids follow submission, then the row's values: the same rows in another order get the same ids."""
    (tmp_path / "a.csv").write_text(NO_IDS)
    lines = NO_IDS.splitlines()
    (tmp_path / "b.csv").write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")
    mapping = "submit=submit,duration=duration,gpus=gpus"
    ids = []
    for name in ("a", "b"):
        home = tmp_path / f"home_{name}"
        import_dataset("lab", tmp_path / f"{name}.csv", home, mapping=mapping)
        ids.append(query(home, "SELECT job_id, epoch(submit_time) AS s, num_gpus FROM jobs ORDER BY job_id").rows())
    # submit 10 (1 GPU) < submit 10 (2 GPUs: '2.0' > '1.0' as text) < submit 20 < submit 30
    assert ids[0] == ids[1] == [("1", 10.0, 1.0), ("2", 10.0, 2.0), ("3", 20.0, 4.0), ("4", 30.0, 1.0)]
    out = tmp_path / "lab.swf"
    result = export_dataset(tmp_path / "home_a", "lab", "swf", out)
    assert result.rows == 4
    assert (tmp_path / "lab.swf.ids.csv").read_text().splitlines()[1:] == ["1,1,lab", "2,2,lab", "3,3,lab", "4,4,lab"]


@pytest.fixture()
def two_clusters(tmp_path: Path) -> Path:
    """Two files (two clusters) whose job ids repeat: x1 in both."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "east.csv").write_text("id,submit,duration,gpus\nx1,100,10,1\nx2,50,10,2\n")
    (folder / "west.csv").write_text("id,submit,duration,gpus\nx1,75,10,4\n")
    import_dataset("two", folder, tmp_path / "home", mapping="job_id=id,submit=submit,duration=duration,gpus=gpus")
    return tmp_path / "home"


def test_the_export_jobs_are_in_submission_order_with_ids_unique_across_clusters(two_clusters: Path) -> None:
    loss = LossReport()
    with open_trace(two_clusters, "two") as ctx:
        jobs = export_jobs(ctx, loss)
    assert jobs.select("export_id", "seq", "offset_s").rows() == [("east/x2", 1, 0.0), ("west/x1", 2, 25.0),
                                                                    ("east/x1", 3, 50.0)]
    assert any(field == "job id" and "1 job ids repeat" in rule for field, rule in loss.filled)
    assert jobs["estimate_s"].null_count() == 3


def test_predictions_travel_with_the_jobs(two_clusters: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.parquet"
    pl.DataFrame({"cluster": ["east", "west"], "job_id": ["x1", "x1"], "pred_s": [12.4, 7.0],
                  "model_id": ["m1", "m1"]}).write_parquet(predictions)
    out = tmp_path / "two.swf"
    result = export_dataset(two_clusters, "two", "swf", out, predictions=predictions)
    # field 9 (requested time) is the estimate in whole seconds; east/x2 has no prediction: -1
    assert [line[8] for line in _swf_jobs(out)] == [-1, 7, 12]
    filled = dict(result.loss.filled)
    assert "pred.parquet (model m1)" in filled["estimate"] and "1 jobs have no prediction" in filled["estimate"]
    sidecar = json.loads(result.sidecar.read_text())
    assert any(f["field"] == "estimate" for f in sidecar["loss_report"]["fields_filled"])


def test_predictions_that_repeat_a_job_or_lack_columns_are_refused(two_clusters: Path, tmp_path: Path) -> None:
    repeated = tmp_path / "rep.parquet"
    pl.DataFrame({"cluster": ["east", "east"], "job_id": ["x1", "x1"], "pred_s": [1.0, 2.0]}).write_parquet(repeated)
    with pytest.raises(InputError, match="rep.parquet, field 'job_id': row 2: job id 'x1' of cluster 'east' given a "
                                         "second time .first at row 1."):
        export_dataset(two_clusters, "two", "swf", tmp_path / "a.swf", predictions=repeated)
    partial = tmp_path / "partial.parquet"
    pl.DataFrame({"job_id": ["x1"], "pred_s": [1.0]}).write_parquet(partial)
    with pytest.raises(ExportError, match="no column.s. cluster"):
        export_dataset(two_clusters, "two", "swf", tmp_path / "b.swf", predictions=partial)
    assert not (tmp_path / "a.swf").exists() and not (tmp_path / "b.swf").exists()


def test_options_are_checked_against_the_format(two_clusters: Path, tmp_path: Path) -> None:
    assert parse_options(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_options(["novalue"])
    with pytest.raises(UsageError, match="the swf format has no option 'speed'"):
        export_dataset(two_clusters, "two", "swf", tmp_path / "c.swf", options={"speed": "1"})


def test_a_format_without_an_estimate_refuses_predictions(two_clusters: Path, tmp_path: Path) -> None:
    without = [f for f in FORMATS.values() if not f.carries_estimate]
    if not without:
        pytest.skip("every format carries an estimate")
    with pytest.raises(UsageError, match="no place for a duration estimate"):
        export_dataset(two_clusters, "two", without[0].name, tmp_path / "d.out", predictions=tmp_path / "p.parquet")


def test_whole_numbers_are_written_as_integers(tmp_path: Path) -> None:
    frame = pl.DataFrame({"whole": [8.0, 0.0, None], "part": [0.5, 1.0, 2.0], "text": ["a", "b", "c"]})
    write_table(frame, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().splitlines() == ["whole,part,text", "8,0.5,a", "0,1.0,b", ",2.0,c"]


def test_the_formats_command_lists_every_format(cli) -> None:
    done = cli("datasets", "formats")
    assert done.code == 0, done.err
    listed = [line.split(":")[0] for line in done.out.splitlines() if line and not line.startswith(" ")]
    assert listed == list(FORMATS)


def test_the_docs_describe_every_format() -> None:
    """docs/export.md has a section and a table row per format, and the README names each."""
    docs = (Path(__file__).resolve().parent.parent / "docs" / "export.md").read_text()
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for name in FORMATS:
        assert f"\n## `{name}`" in docs, name
        assert f"\n| `{name}` |" in docs, name
        assert f"`{name}`" in readme, name


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("samples")


@pytest.mark.parametrize("trace", list(TRACES))
def test_every_format_writes_every_trace_or_says_what_it_needs(trace: str, sample_home: Path, tmp_path: Path) -> None:
    """Any dataset, any format: each SYNTHETIC sample is written in every format, or refused in one
    line naming what the format needs (the model's estimates, a node list)."""
    for fmt in FORMATS:
        out = tmp_path / ("openb_pod_list_x.csv" if fmt == "openb" else f"{fmt}.out")
        try:
            result = export_dataset(sample_home, trace, fmt, out, use_sample=True)
        except ExportError as refused:
            assert ("--predictions" in str(refused) and fmt == "priority") or "--option" in str(refused), refused
            assert not out.exists()
            continue
        sidecar = json.loads(result.sidecar.read_text())
        assert result.synthetic and sidecar["label"] == "SYNTHETIC" and result.rows > 0
        assert sidecar["resources"][0]["rows"] == result.rows and out.stat().st_size > 0
