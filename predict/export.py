"""Exporters: the prediction table of `ddlx predict apply` in the shapes simulators read.

Input: the prediction table (`artifacts.TABLE_COLUMNS`, Parquet or CSV). It carries the job
columns the formats need (cluster, submit_time, user, GPUs, CPUs, instances, run_s) and the two
history baselines, so an export reads nothing else.

Formats (CSV with a header line; times and durations in seconds):
- `estimate-csv`: `job_id,estimate`, estimate = pred_s. Every row.
- `pai-sim`: the job table of the simulator in Alibaba's PAI v2020 release:
  `job_id,user,num_gpu,num_cpu,num_inst,submit_time,duration,user_dur,user_gpu_dur,group_dur,group_gpu_dur`.
  num_gpu = GPUs of the whole job (fractions allowed), num_cpu = CPU cores, num_inst = instances;
  submit_time = seconds since the first submission among the exported jobs; duration = run_s
  (the actual run time the simulator replays); user_dur = user-history median baseline,
  group_dur = group-history median baseline, user_gpu_dur = group_gpu_dur = the model's pred_s.
  Only jobs with a run time above 0 (a simulator cannot replay the others); rows in submission
  order (ties by job_id). An unknown value is an empty field.
- `priority`: `job_id,priority` as Helios/Lucid-style schedulers read it: priority = pred_s x
  num_gpus (predicted GPU seconds; smaller runs first). Jobs without num_gpus are left out.

Job ids must be present and unique among the exported rows; a multi-cluster trace whose ids
repeat across clusters (a multi-cluster trace) is exported one cluster at a time (`cluster=`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ddlx.predict.artifacts import is_synthetic, write_table
from ddlx.predict.features import PredictError

EXPORT_FORMATS: tuple[str, ...] = ("estimate-csv", "pai-sim", "priority")
PAI_SIM_COLUMNS: tuple[str, ...] = ("job_id", "user", "num_gpu", "num_cpu", "num_inst", "submit_time", "duration",
                                    "user_dur", "user_gpu_dur", "group_dur", "group_gpu_dur")
#: Columns of the prediction table each format reads.
NEEDS: dict[str, tuple[str, ...]] = {
    "estimate-csv": ("job_id", "pred_s"),
    "pai-sim": ("job_id", "user", "num_gpus", "num_cpus", "num_instances", "submit_time", "run_s", "pred_s",
                "user_median_s", "group_median_s"),
    "priority": ("job_id", "pred_s", "num_gpus"),
}
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


def export_frame(table: pl.DataFrame, fmt: str, source: str = "predictions",
                 cluster: str | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """The rows of format `fmt` from the prediction `table`, and the rows left out by reason."""
    if fmt not in EXPORT_FORMATS:
        raise PredictError(f"unknown export format '{fmt}'; expected one of {', '.join(EXPORT_FORMATS)}")
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
    left_out: dict[str, int] = {}
    if fmt == "pai-sim":
        keep = pl.col("run_s").is_not_null() & (pl.col("run_s") > 0) & pl.col("submit_time").is_not_null()
        left_out["no_run_time"] = table.height - table.filter(keep).height
        table = table.filter(keep).sort(["submit_time", "job_id"], nulls_last=True)
    elif fmt == "priority":
        keep = pl.col("num_gpus").is_not_null()
        left_out["no_num_gpus"] = table.height - table.filter(keep).height
        table = table.filter(keep)
    _check_ids(table, source)
    if fmt == "estimate-csv":
        return table.select(pl.col("job_id"), pl.col("pred_s").alias("estimate")), left_out
    if fmt == "priority":
        return table.select(pl.col("job_id"), (pl.col("pred_s") * pl.col("num_gpus")).alias("priority")), left_out
    first = table.get_column("submit_time").min()
    return table.select(
        pl.col("job_id"), pl.col("user"), pl.col("num_gpus").alias("num_gpu"), pl.col("num_cpus").alias("num_cpu"),
        pl.col("num_instances").cast(pl.Int64).alias("num_inst"),
        ((pl.col("submit_time") - pl.lit(first)).dt.total_microseconds() / 1e6).alias("submit_time"),
        pl.col("run_s").alias("duration"), pl.col("user_median_s").alias("user_dur"),
        pl.col("pred_s").alias("user_gpu_dur"), pl.col("group_median_s").alias("group_dur"),
        pl.col("pred_s").alias("group_gpu_dur")), left_out


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
    if fmt not in EXPORT_FORMATS:
        raise PredictError(f"unknown export format '{fmt}'; expected one of {', '.join(EXPORT_FORMATS)}")
    if out.suffix.lower() != ".csv":
        raise PredictError(f"{out}: exports are CSV files; name the output *.csv")
    table = read_predictions(predictions)
    frame, left_out = export_frame(table, fmt, str(predictions), cluster)
    write_table(frame, out)
    return ExportResult(path=out, format=fmt, rows=frame.height, left_out=left_out,
                        synthetic=is_synthetic(table))

