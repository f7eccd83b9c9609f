"""Prediction tables given to `ddlx datasets export --predictions` and `ddlx predict export`: each
broken variant of a valid table is refused with the file, the row (the line of a CSV) and the
field, and nothing is written. The line numbers are counted here from the rows written."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from tests.bad_inputs.outputs_home import World, snapshot, world
from tests.conftest import assert_clean_failure

#: The row of the valid table each value case breaks (0-based, among the data rows).
BROKEN_ROW = 3


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> World:
    return world(tmp_path_factory)


@pytest.fixture(scope="module")
def table(shared: World) -> pl.DataFrame:
    """The valid prediction table of `lab`, as `ddlx predict apply` wrote it (values as text)."""
    return pl.read_csv(shared.predictions, infer_schema=False)


def _with_value(table: pl.DataFrame, column: str, value: str | None) -> pl.DataFrame:
    return table.with_columns(pl.when(pl.int_range(pl.len()) == BROKEN_ROW).then(pl.lit(value, pl.String))
                              .otherwise(pl.col(column)).alias(column))


#: Value cases: (column, the value written at BROKEN_ROW, a needle of the error).
VALUES = {
    "NaN estimate": ("pred_s", "NaN", "'NaN'"),
    "inf estimate": ("pred_s", "inf", "'inf'"),
    "-inf estimate": ("pred_s", "-inf", "'-inf'"),
    "negative estimate": ("pred_s", "-12.5", "'-12.5'"),
    "no estimate": ("pred_s", None, "no value"),
    "text estimate": ("pred_s", "soon", "expected a number"),
    "negative p90": ("p90_s", "-1", "'-1'"),
    "NaN p50": ("p50_s", "nan", "'nan'"),
    "no job id": ("job_id", None, "no job id"),
}


def _run_both(cli, shared: World, predictions: Path, space: Path) -> list:
    """Both commands on `predictions`, each writing into `space`."""
    return [
        cli("datasets", "export", "lab", "--format", "swf", "--predictions", predictions, "--out", space / "lab.swf",
            "--data-home", shared.home),
        cli("predict", "export", "--predictions", predictions, "--format", "estimate-csv", "--out",
            space / "estimates.csv"),
    ]


def _check_refused(results: list, space: Path, home_before, shared: World, *needles: str) -> None:
    for result in results:
        assert_clean_failure(result, *needles)
    assert sorted(p.name for p in space.iterdir()) == ["predictions.csv"]
    assert snapshot(shared.home) == home_before


@pytest.mark.parametrize("case", VALUES)
def test_a_bad_value_is_refused_with_its_line_and_field(cli, shared: World, table: pl.DataFrame, tmp_path: Path,
                                                        case: str) -> None:
    column, value, needle = VALUES[case]
    space = tmp_path / "space"
    space.mkdir()
    path = space / "predictions.csv"
    _with_value(table, column, value).write_csv(path)
    line = BROKEN_ROW + 2  # the header is line 1
    before = snapshot(shared.home)
    _check_refused(_run_both(cli, shared, path, space), space, before, shared,
                   f"{path}, line {line}, field '{column}'", needle)


def test_a_bad_value_in_parquet_names_the_row(cli, shared: World, table: pl.DataFrame, tmp_path: Path) -> None:
    space = tmp_path / "space"
    space.mkdir()
    frame = table.with_columns(pl.col("pred_s").cast(pl.Float64))
    frame = frame.with_columns(pl.when(pl.int_range(pl.len()) == BROKEN_ROW).then(math.inf)
                               .otherwise(pl.col("pred_s")).alias("pred_s"))
    path = space / "predictions.parquet"
    frame.write_parquet(path)
    job = table.get_column("job_id")[BROKEN_ROW]
    for result in _run_both(cli, shared, path, space):
        assert_clean_failure(result, f"{path}, field 'pred_s'", f"row {BROKEN_ROW + 1} (job_id '{job}')", "inf")
    assert sorted(p.name for p in space.iterdir()) == ["predictions.parquet"]


def test_a_job_given_twice_is_refused_naming_both_lines(cli, shared: World, table: pl.DataFrame,
                                                        tmp_path: Path) -> None:
    space = tmp_path / "space"
    space.mkdir()
    path = space / "predictions.csv"
    repeated = table.get_column("job_id")[1]
    _with_value(table, "job_id", repeated).write_csv(path)
    before = snapshot(shared.home)
    _check_refused(_run_both(cli, shared, path, space), space, before, shared,
                   f"{path}, line {BROKEN_ROW + 2}, field 'job_id'", f"'{repeated}'", "first at line 3")


@pytest.mark.parametrize("case", ["no pred_s column", "no job_id column", "a jobs table", "empty", "not a table"])
def test_a_file_that_is_not_a_prediction_table_is_refused(cli, shared: World, table: pl.DataFrame, tmp_path: Path,
                                                          case: str) -> None:
    space = tmp_path / "space"
    space.mkdir()
    path = space / "predictions.csv"
    if case == "no pred_s column":
        table.drop("pred_s").write_csv(path)
    elif case == "no job_id column":
        table.drop("job_id").write_csv(path)
    elif case == "a jobs table":
        path.write_text("job,start,end,gpus\nj1,0,60,1\n")
    elif case == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(bytes(range(256)) * 4)
    before = snapshot(shared.home)
    _check_refused(_run_both(cli, shared, path, space), space, before, shared, str(path), "not a prediction table")


def test_the_valid_table_is_carried(cli, shared: World, table: pl.DataFrame, tmp_path: Path) -> None:
    """The clean table: every job's estimate is in the export (whole seconds in SWF field 9)."""
    space = tmp_path / "space"
    space.mkdir()
    path = space / "predictions.csv"
    table.write_csv(path)
    export, estimates = _run_both(cli, shared, path, space)
    assert export.code == 0 and estimates.code == 0, (export.err, estimates.err)
    requested = [int(line.split()[8]) for line in (space / "lab.swf").read_text().splitlines()
                 if not line.startswith(";")]
    assert sorted(requested) == sorted(round(float(v)) for v in table.get_column("pred_s").to_list())
    assert len((space / "estimates.csv").read_text().splitlines()) == table.height + 1
