"""The estimate list: the prediction table of `ddlx predict apply` as `job_id,estimate`.

Input: the prediction table (`artifacts.TABLE_COLUMNS`, Parquet or CSV). `estimate-csv` is
`job_id,estimate`, estimate = pred_s (seconds), every row; job ids must be present and unique
among the exported rows (a trace whose ids repeat across clusters is exported one cluster at a
time, `cluster=`).

The simulators' own formats (a release simulator's job CSV, a priority list, SWF's requested
time, ...) are written from the dataset with the predictions carried along:
`ddlx datasets export NAME --format F --predictions FILE` (`ddlx.formats.export`); `MOVED` names
them so the command can say so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ddlx.predict.artifacts import is_synthetic, write_table
from ddlx.predict.features import PredictError

EXPORT_FORMATS: tuple[str, ...] = ("estimate-csv",)
#: Formats written from the dataset by `ddlx datasets export ... --predictions FILE`.
MOVED: tuple[str, ...] = ("pai-sim", "priority")
#: Columns of the prediction table each format reads.
NEEDS: dict[str, tuple[str, ...]] = {"estimate-csv": ("job_id", "pred_s")}
#: Columns every prediction table has: the job and its estimate.
REQUIRED: tuple[str, ...] = ("job_id", "pred_s")
#: Columns holding estimates (seconds): each value must be a finite number of 0 or more.
ESTIMATES: tuple[str, ...] = ("pred_s", "p50_s", "p90_s")
_NUMBERS = ("pred_s", "p50_s", "p90_s", "num_gpus", "num_cpus", "num_instances", "run_s", "user_median_s",
            "group_median_s")


@dataclass
class ExportResult:
    """An export written: where, its format, rows written, and rows left out by reason."""

    path: Path
    format: str
    rows: int
    left_out: dict[str, int] = field(default_factory=dict)
    synthetic: bool = False  # the prediction table says its predictions come from generated data


def read_predictions(path: Path) -> pl.DataFrame:
    """A prediction table written by `ddlx predict apply` (.parquet or .csv), checked before any use.

    `InputError` naming the file, the row (the line of a CSV, the header being line 1) and the
    field for: a file that cannot be read as a table, no `job_id` or `pred_s` column (`REQUIRED`),
    a number or date-time column holding another value, an estimate (`ESTIMATES`: pred_s, p50_s,
    p90_s) that is missing, NaN, infinite or negative, a missing job id, and a job id given twice
    (within one cluster, where the table has a `cluster` column)."""
    from ddlx.errors import InputError, first_line

    path = Path(path)
    if not path.is_file():
        raise PredictError(f"{path}: no such prediction file (write one with `ddlx predict apply`)")
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise PredictError(f"{path}: expected a .parquet or .csv prediction table")
    try:
        frame = pl.read_parquet(path) if suffix == ".parquet" else pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        kind = "Parquet" if suffix == ".parquet" else "CSV"
        raise InputError(path, f"not a prediction table: cannot read it as {kind} ({first_line(exc)}); expected "
                               "the table `ddlx predict apply` writes") from None
    missing = [name for name in REQUIRED if name not in frame.columns]
    if missing:
        raise InputError(path, f"not a prediction table: no column(s) {', '.join(missing)}; expected the table "
                               f"`ddlx predict apply` writes (at least {' and '.join(REQUIRED)})")
    where = _row_locator(frame, suffix == ".csv")

    def refuse(index: int, field: str, problem: str) -> InputError:
        line, row = where(index)
        job = frame.get_column("job_id")[index]
        job_text = f" (job_id {job!r})" if job is not None and field != "job_id" else ""
        return InputError(path, f"{row}{job_text}: {problem}" if row else f"{problem}{job_text}",
                          line=line, field=field)

    casts = []
    for name in frame.columns:
        if name in _NUMBERS:
            casts.append(pl.col(name).cast(pl.Float64, strict=False))
        elif name == "submit_time" and frame.schema[name] == pl.String:
            casts.append(pl.col(name).str.to_datetime(time_zone="UTC", strict=False))
        elif name == "job_id" and frame.schema[name] != pl.String:
            casts.append(pl.col(name).cast(pl.String))
    converted = frame.with_columns(casts)
    for name in [n for n in frame.columns if n in _NUMBERS or n == "submit_time"]:
        bad = converted.get_column(name).is_null() & frame.get_column(name).is_not_null()
        if bad.any():
            index = int(bad.arg_max())
            raise refuse(index, name, f"expected {'a date-time' if name == 'submit_time' else 'a number'}, "
                                      f"got {frame.get_column(name)[index]!r}")
    for name in [n for n in ESTIMATES if n in converted.columns]:
        values = converted.get_column(name)
        unusable = values.is_null() | ~values.is_finite() | (values < 0)
        if unusable.any():
            index = int(unusable.fill_null(True).arg_max())
            value = values[index]
            got = "no value" if value is None else repr(frame.get_column(name)[index])
            raise refuse(index, name, f"expected an estimate in seconds, a finite number of 0 or more, got {got}")
    ids = converted.get_column("job_id")
    if ids.null_count():
        raise refuse(int(ids.is_null().arg_max()), "job_id", "no job id; every prediction names its job")
    keys = [name for name in ("cluster", "job_id") if name in converted.columns]
    rows = converted.select(keys).with_row_index("index")
    repeated = rows.filter(~pl.struct(keys).is_first_distinct())
    if repeated.height:
        second = repeated.row(0, named=True)
        first = int(rows.filter(*[pl.col(k).eq_missing(second[k]) for k in keys]).get_column("index")[0])
        line, row = where(first)
        within = f" of cluster {second['cluster']!r}" if second.get("cluster") is not None else ""
        raise refuse(int(second["index"]), "job_id", f"job id {second['job_id']!r}{within} given a second time "
                                                     f"(first at {row or f'line {line}'}); expected one prediction "
                                                     "per job")
    return converted


def _row_locator(frame: pl.DataFrame, is_csv: bool) -> Callable[[int], tuple[int | None, str]]:
    """`index -> (line, row text)` of a row of a table read from a file: the line of a CSV (the
    header is line 1) and no row text, or no line and `row N` (1-based) of Parquet, or of a CSV
    whose quoted values hold line breaks (where lines and rows part)."""
    breaks = is_csv and any(frame.get_column(name).str.contains("\n", literal=True).any()
                            for name, dtype in frame.schema.items() if dtype == pl.String)
    if is_csv and not breaks:
        return lambda index: (index + 2, "")
    return lambda index: (None, f"row {index + 1}")


def check_format(fmt: str) -> None:
    """Refuse a format this command does not write, naming the command that writes it."""
    if fmt in MOVED:
        raise PredictError(f"the {fmt} format is written from the dataset, with the predictions carried along: "
                           f"ddlx datasets export NAME --format {fmt} --predictions FILE --out PATH")
    if fmt not in EXPORT_FORMATS:
        raise PredictError(f"unknown export format '{fmt}'; expected one of {', '.join(EXPORT_FORMATS)}")


def export_frame(table: pl.DataFrame, fmt: str, source: str = "predictions",
                 cluster: str | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """The rows of format `fmt` from the prediction `table`, and the rows left out by reason."""
    check_format(fmt)
    missing = [c for c in NEEDS[fmt] if c not in table.columns]
    if missing:
        raise PredictError(f"{source}: no column(s) {', '.join(missing)}; the {fmt} format needs "
                           f"{', '.join(NEEDS[fmt])} (the table `ddlx predict apply` writes)")
    if cluster is not None:
        if "cluster" not in table.columns:
            raise PredictError(f"{source}: no column 'cluster' to select cluster '{cluster}' by")
        clusters = sorted(c for c in table.get_column("cluster").unique().to_list() if c is not None)
        table = table.filter(pl.col("cluster") == cluster)
        if table.height == 0:
            raise PredictError(f"{source}: no job of cluster '{cluster}'; the table has {', '.join(clusters)}")
    _check_ids(table, source)
    return table.select(pl.col("job_id"), pl.col("pred_s").alias("estimate")), {}


def _check_ids(table: pl.DataFrame, source: str) -> None:
    ids = table.get_column("job_id")
    if ids.null_count():
        raise PredictError(f"{source}: {ids.null_count():,} job(s) have no job_id; simulators match jobs by id "
                           f"(import the dataset with --map job_id=COLUMN)")
    repeated = table.height - ids.n_unique()
    if repeated:
        hint = (" (ids repeat across clusters: export one cluster at a time with --cluster)"
                if "cluster" in table.columns and table.get_column("cluster").n_unique() > 1 else "")
        raise PredictError(f"{source}: {repeated:,} job_id value(s) repeat; ids must be unique{hint}")


def export_predictions(predictions: Path, fmt: str, out: Path, cluster: str | None = None) -> ExportResult:
    """Write the prediction table `predictions` as format `fmt` (`EXPORT_FORMATS`) to the CSV `out`."""
    from ddlx.outputs import check_output_file

    out = Path(out)
    check_format(fmt)
    if out.suffix.lower() != ".csv":
        raise PredictError(f"{out}: exports are CSV files; name the output *.csv")
    check_output_file(out, "writing the estimate list")
    table = read_predictions(predictions)
    frame, left_out = export_frame(table, fmt, str(predictions), cluster)
    write_table(frame, out)
    return ExportResult(path=out, format=fmt, rows=frame.height, left_out=left_out,
                        synthetic=is_synthetic(table))

