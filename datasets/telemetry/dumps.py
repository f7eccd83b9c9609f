"""Read DCGM exporter samples from a CSV or Parquet dump: one sample per row.

Accepted shape (the column names are exact, lower case for the three required ones):

| column   | meaning                                                                              |
|----------|--------------------------------------------------------------------------------------|
| `time`   | the sample instant: RFC 3339 text with an offset (`2024-05-01T12:00:00Z`,            |
|          | `2024-05-01 14:00:00.5+02:00`) or Unix seconds (`1714564800`, `1714564800.25`); in     |
|          | Parquet also a timestamp column (one without a time zone is read as UTC)              |
| `metric` | the DCGM metric (`DCGM_FI_DEV_GPU_UTIL`) or ddlx's short name (`gpu_util`)            |
| `value`  | the value, a number in the field's unit (`NaN`/`inf` are read, then dropped and       |
|          | counted by the importer)                                                              |
| others   | labels, named as the exporter names them: `Hostname`, `gpu`, `UUID`, `modelName`,     |
|          | `pod`, `namespace`, `container`, the job-id label (`--job-label`), any other label    |
|          | (kept in `labels` as JSON); an empty cell is an absent label                          |

A CSV has a header line, commas, double quotes; it may be compressed (`.csv.gz`). It is read
with every column as text, so a bad cell is reported by its line (the header is line 1; a line
number counts one row per line, so it is off where quoted cells hold line breaks). A time that is
neither RFC 3339 with an offset nor Unix seconds, and an empty or non-numeric value, are errors
naming the file, the line and the column. Rows of metrics ddlx does not read are counted by name
and skipped. Both formats are streamed in batches of rows, in file order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ddlx.datasets.telemetry.model import FIELDS, LABEL_COLUMNS, SCRAPE_LABELS
from ddlx.datasets.telemetry.store import SAMPLE_SCHEMA
from ddlx.errors import InputError

REQUIRED = ("time", "metric", "value")
_TIME_HELP = "expected RFC 3339 with an offset (2024-05-01T12:00:00Z) or Unix seconds"


def is_parquet(path: Path) -> bool:
    return Path(path).name.lower().endswith((".parquet", ".pq"))


def is_csv(path: Path) -> bool:
    return Path(path).name.lower().endswith((".csv", ".csv.gz"))


def _columns(path: Path, con) -> list[str]:
    import duckdb

    reader = "read_parquet" if is_parquet(path) else "read_csv"
    options = "" if is_parquet(path) else ", header = true, all_varchar = true"
    try:
        return [row[0] for row in con.execute(
            f"DESCRIBE SELECT * FROM {reader}(?{options})", [str(path)]).fetchall()]
    except duckdb.Error as exc:
        raise InputError(path, f"cannot be read ({str(exc).splitlines()[0]})") from None


def _bad(path: Path, position: int, field: str, problem: str) -> InputError:
    """A bad cell: by line in a CSV (the header is line 1), by row (from 1) in Parquet."""
    if is_parquet(path):
        return InputError(path, f"row {position}: {problem}", field=field)
    return InputError(path, problem, line=position, field=field)


def _parse_time(batch: pl.DataFrame, path: Path, first_line: int) -> pl.Series:
    """The `time` column as microseconds since 1970 UTC (Int64), or an `InputError` at the first bad cell."""
    column = batch["time"]
    if column.dtype == pl.Datetime or isinstance(column.dtype, pl.Datetime):
        zone = column.dtype.time_zone  # type: ignore[union-attr]
        column = column.dt.convert_time_zone("UTC") if zone else column.dt.replace_time_zone("UTC")
        parsed = column.dt.cast_time_unit("us").dt.epoch("us")
        bad = column.is_null()
    elif column.dtype.is_numeric():
        seconds = column.cast(pl.Float64)
        bad = seconds.is_null() | ~seconds.is_finite()
        parsed = (seconds * 1_000_000).round().cast(pl.Int64, strict=False)
    else:
        text = column.cast(pl.String).str.strip_chars()
        seconds = text.cast(pl.Float64, strict=False)
        seconds = pl.select(pl.when(seconds.is_finite()).then(seconds)).to_series()
        stamp = (text.str.replace(r"[zZ]$", "+00:00").str.replace(r"^(\d{4}-\d\d-\d\d)[ tT]", "${1}T")
                 .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_zone="UTC"))
        parsed = pl.select(pl.coalesce((seconds * 1_000_000).round().cast(pl.Int64, strict=False),
                                       stamp.dt.epoch("us"))).to_series()
        bad = parsed.is_null()
    if bad.any():
        index = int(bad.arg_true()[0])
        raise _bad(path, first_line + index, "time", f"{_TIME_HELP}, got {batch['time'][index]!r}")
    return parsed


def _parse_value(batch: pl.DataFrame, path: Path, first_line: int) -> pl.Series:
    column = batch["value"]
    values = column.cast(pl.Float64, strict=False) if column.dtype.is_numeric() else \
        column.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    bad = values.is_null()
    if bad.any():
        index = int(bad.arg_true()[0])
        raise _bad(path, first_line + index, "value", f"expected a number, got {column[index]!r}")
    return values


def _canonical(batch: pl.DataFrame, path: Path, first_line: int, fields: dict[str, str], job_label: str,
               unknown: Counter[str] | None) -> pl.DataFrame:
    """One batch of dump rows (line numbers from `first_line`) as stored samples of the wanted fields."""
    by_name = {**{f.name: f.metric for f in FIELDS.values()}, **{m: m for m in FIELDS}}
    metric = batch["metric"].cast(pl.String).str.strip_chars()
    dcgm = metric.replace_strict(by_name, default=None, return_dtype=pl.String)
    if unknown is not None:
        for name, count in metric.filter(dcgm.is_null()).value_counts().iter_rows():
            unknown["" if name is None else name] += count
    field = dcgm.replace_strict(fields, default=None, return_dtype=pl.String)
    keep = field.is_not_null()
    time_us = _parse_time(batch, path, first_line)
    value = _parse_value(batch, path, first_line)
    frame = batch.with_columns(_field=field, _time=time_us, _value=value).filter(keep)
    labels = [c for c in frame.columns if c not in (*REQUIRED, "_field", "_time", "_value")]

    def label(name: str) -> pl.Expr:
        if name not in frame.columns:
            return pl.lit(None, pl.String)
        text = pl.col(name).cast(pl.String).str.strip_chars()
        return pl.when(text != "").then(text)

    by_column = {column: exporter for exporter, column in LABEL_COLUMNS.items()}
    others = [c for c in labels if c not in LABEL_COLUMNS and c != job_label and c not in SCRAPE_LABELS]
    rest = pl.lit("{}") if not others else \
        pl.struct([label(c).alias(c) for c in sorted(others)]).map_elements(
            lambda row: _json({k: v for k, v in row.items() if v is not None}), return_dtype=pl.String)
    gpu = label(by_column["gpu"])
    out = frame.select(
        label(by_column["host"]).alias("host"),
        pl.when(gpu.str.contains(r"^\d+$")).then(gpu).cast(pl.Int32, strict=False).alias("gpu"),
        label(by_column["uuid"]).alias("uuid"), label(by_column["model"]).alias("model"),
        pl.col("_time").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("time"),
        pl.col("_field").alias("field"), pl.col("_value").alias("value"),
        label(by_column["pod"]).alias("pod"), label(by_column["namespace"]).alias("namespace"),
        label(by_column["container"]).alias("container"), label(job_label).alias("hpc_job"),
        rest.alias("labels"),
    )
    return out.select([pl.col(name).cast(dtype) for name, dtype in SAMPLE_SCHEMA.items()])


def _json(labels: dict[str, str]) -> str:
    import json

    return json.dumps(labels, sort_keys=True, ensure_ascii=False)


def read_dump(path: Path, fields: dict[str, str], job_label: str = "hpc_job",
              unknown: Counter[str] | None = None, batch_rows: int = 200_000) -> Iterator[pl.DataFrame]:
    """Yield the samples of the CSV or Parquet dump `path` whose metric is one of `fields` (DCGM
    metric -> short name to store), in file order, as frames of the stored columns. Rows of metrics
    ddlx does not read are counted by name in `unknown`."""
    import duckdb

    path = Path(path)
    con = duckdb.connect()
    try:
        columns = _columns(path, con)
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            raise InputError(path, f"no column {', '.join(repr(c) for c in missing)}; expected columns time, metric, "
                             "value and label columns (Hostname, gpu, UUID, modelName, pod, ...)",
                             line=None if is_parquet(path) else 1)
        if is_parquet(path):
            relation = con.sql("SELECT * FROM read_parquet(?)", params=[str(path)])  # type: ignore[call-arg]
        else:
            spec = ", ".join(f"'{c.replace(chr(39), chr(39) * 2)}': 'VARCHAR'" for c in columns)
            relation = con.sql(f"SELECT * FROM read_csv(?, header = true, auto_detect = false, delim = ',', "
                               f"quote = '\"', columns = {{{spec}}})", params=[str(path)])  # type: ignore[call-arg]
        first_line = 1 if is_parquet(path) else 2
        try:
            for batch in relation.to_arrow_reader(batch_rows):
                frame = pl.from_arrow(batch)
                assert isinstance(frame, pl.DataFrame)
                if frame.height:
                    yield _canonical(frame, path, first_line, fields, job_label, unknown)
                first_line += frame.height
        except duckdb.Error as exc:
            raise InputError(path, f"cannot be read as CSV ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()
