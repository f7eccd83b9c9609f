"""The estimate list: the prediction table of `ddlx predict apply` as `job_id,estimate`.

Input: the prediction table (`artifacts.TABLE_COLUMNS`, Parquet or CSV). `estimate-csv` is
`job_id,estimate`, estimate = pred_s (seconds), every row; job ids must be present and unique
among the exported rows (a trace whose ids repeat across clusters is exported one cluster at a
time, `cluster=`).

The simulators' own formats (a release simulator's job CSV, a priority list, SWF's requested
time, ...) are written from the dataset with the predictions carried along:
`ddlx datasets export NAME --format F --predictions FILE` (`ddlx.datasets.export`); `MOVED` names
them so the command can say so.
"""

from __future__ import annotations

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
    """A prediction table written by `ddlx predict apply` (.parquet or .csv)."""
    path = Path(path)
    if not path.is_file():
        raise PredictError(f"{path}: no such prediction file (write one with `ddlx predict apply`)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix != ".csv":
            raise PredictError(f"{path}: expected a .parquet or .csv prediction table")
        frame = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise PredictError(f"{path}: cannot read the prediction table ({str(exc).splitlines()[0]})") from None
    casts = []
    for name in frame.columns:
        if name in _NUMBERS:
            casts.append(pl.col(name).cast(pl.Float64, strict=False))
        elif name == "submit_time":
            casts.append(pl.col(name).str.to_datetime(time_zone="UTC", strict=False))
    converted = frame.with_columns(casts)
    for name in [n for n in frame.columns if n in _NUMBERS or n == "submit_time"]:
        bad = converted.get_column(name).is_null() & frame.get_column(name).is_not_null()
        if bad.any():
            line = int(bad.arg_max()) + 2
            raise PredictError(f"{path}, line {line}, field '{name}': expected "
                               f"{'a date-time' if name == 'submit_time' else 'a number'}, "
                               f"got {frame.get_column(name)[line - 2]!r}")
    return converted


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
    out = Path(out)
    check_format(fmt)
    if out.suffix.lower() != ".csv":
        raise PredictError(f"{out}: exports are CSV files; name the output *.csv")
    table = read_predictions(predictions)
    frame, left_out = export_frame(table, fmt, str(predictions), cluster)
    write_table(frame, out)
    return ExportResult(path=out, format=fmt, rows=frame.height, left_out=left_out,
                        synthetic=is_synthetic(table))

