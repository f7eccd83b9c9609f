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

A dump cut short is refused, never read in part: a CSV whose last line has no line break (every
row of a CSV ddlx reads ends with one), a `.csv.gz` whose gzip stream ends early, a Parquet file
without its footer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ddlx.datasets.sqltext import quote_identifier, sql_string
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


def _check_whole(path: Path) -> None:
    """`InputError` when the plain CSV `path` does not end with a line break: it was cut short (the
    lines are counted only then, to name the last one)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        lines = 1 + sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
    raise InputError(path, "the last line has no line break: the dump is cut short; expected a complete CSV "
                     "dump, every row ending with a line break", line=lines)


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


def _select_sql(columns: list[str], fields: dict[str, str], job_label: str, parquet: bool) -> tuple[str, list[str]]:
    """The SELECT that reads a dump's rows in file order, with the labels already canonical (trimmed,
    an empty cell NULL, `gpu` an integer or NULL), `field` the short name of a wanted metric (NULL for
    other metrics, whose name stays in `metric`), `time` and `value` as in the file; and the names of
    the other label columns (selected as `_other_<i>`)."""
    by_name = {**{f.name: f.metric for f in FIELDS.values()}, **{m: m for m in FIELDS}}
    to_field = {name: fields[metric] for name, metric in by_name.items() if metric in fields}
    metric = f"trim(CAST({quote_identifier('metric')} AS VARCHAR))"
    cases = " ".join(f"WHEN {sql_string(name)} THEN {sql_string(short)}" for name, short in sorted(to_field.items()))
    field = f"CASE {metric} {cases} END" if cases else "CAST(NULL AS VARCHAR)"

    def label(name: str) -> str:
        if name not in columns:
            return "CAST(NULL AS VARCHAR)"
        return f"nullif(trim(CAST({quote_identifier(name)} AS VARCHAR)), '')"

    by_column = {column: exporter for exporter, column in LABEL_COLUMNS.items()}
    gpu = label(by_column["gpu"])
    others = sorted(c for c in columns if c not in (*REQUIRED, *LABEL_COLUMNS, job_label) and c not in SCRAPE_LABELS)
    selected = [
        f"{field} AS field", f"CASE WHEN {field} IS NULL THEN {metric} END AS metric",
        quote_identifier("time"), quote_identifier("value"), f"{label(by_column['host'])} AS host",
        f"CASE WHEN regexp_full_match({gpu}, '[0-9]+') THEN TRY_CAST({gpu} AS INTEGER) END AS gpu",
        *(f"{label(by_column[c])} AS {c}" for c in ("uuid", "model", "pod", "namespace", "container")),
        f"{label(job_label)} AS hpc_job", *(f"{label(c)} AS _other_{i}" for i, c in enumerate(others))]
    if parquet:
        source = "read_parquet(?)"
    else:
        spec = ", ".join(f"{sql_string(c)}: 'VARCHAR'" for c in columns)
        source = f"read_csv(?, header = true, auto_detect = false, delim = ',', quote = '\"', columns = {{{spec}}})"
    return f"SELECT {', '.join(selected)} FROM {source}", others


def _with_other_labels(frame: pl.DataFrame, others: list[str]) -> pl.DataFrame:
    """`frame` with `labels`: the labels without a column of their own (`_other_<i>`), as sorted JSON;
    each distinct combination is encoded once."""
    if not others:
        return frame.with_columns(labels=pl.lit("{}"))
    names = [f"_other_{i}" for i in range(len(others))]
    combos = frame.select(names).unique()
    text = [json.dumps({name: value for name, value in zip(others, row) if value is not None},
                       sort_keys=True, ensure_ascii=False) for row in combos.iter_rows()]
    combos = combos.with_columns(pl.Series("labels", text, pl.String))
    return frame.join(combos, on=names, how="left", nulls_equal=True, maintain_order="left")


def _canonical(batch: pl.DataFrame, path: Path, first_line: int, others: list[str],
               unknown: Counter[str] | None) -> pl.DataFrame:
    """One batch of rows of `_select_sql` (line numbers from `first_line`) as stored samples of the
    wanted fields; rows of other metrics are counted by name in `unknown`."""
    if unknown is not None:
        skipped = batch.filter(pl.col("field").is_null())
        for name, count in skipped["metric"].value_counts().iter_rows():
            unknown["" if name is None else name] += count
    time_us = _parse_time(batch, path, first_line)
    value = _parse_value(batch, path, first_line)
    frame = batch.with_columns(_time=time_us, _value=value).filter(pl.col("field").is_not_null())
    frame = _with_other_labels(frame, others).with_columns(
        pl.col("_time").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("time"),
        pl.col("_value").alias("value"))
    return frame.select([pl.col(name).cast(dtype) for name, dtype in SAMPLE_SCHEMA.items()])


def _gathered(reader, rows: int) -> Iterator[pl.DataFrame]:
    """The record batches of the Arrow `reader`, gathered into frames of at least `rows` rows (the
    last may be smaller), in order: the per-batch work downstream is then paid per million rows,
    not per row group."""
    import pyarrow as pa

    pending: list = []
    count = 0
    for batch in reader:
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pl.from_arrow(pa.Table.from_batches(pending))  # type: ignore[misc]
            pending, count = [], 0
    if pending:
        yield pl.from_arrow(pa.Table.from_batches(pending))  # type: ignore[misc]


def read_dump(path: Path, fields: dict[str, str], job_label: str = "hpc_job",
              unknown: Counter[str] | None = None, batch_rows: int = 1_000_000) -> Iterator[pl.DataFrame]:
    """Yield the samples of the CSV or Parquet dump `path` whose metric is one of `fields` (DCGM
    metric -> short name to store), in file order, as frames of the stored columns. Rows of metrics
    ddlx does not read are counted by name in `unknown`."""
    import duckdb

    from ddlx.datasets.catalog import without_progress_bar

    path = Path(path)
    con = duckdb.connect()
    without_progress_bar(con)
    try:
        if is_csv(path) and not path.name.lower().endswith(".gz"):
            _check_whole(path)
        columns = _columns(path, con)
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            raise InputError(path, f"no column {', '.join(repr(c) for c in missing)}; expected columns time, metric, "
                             "value and label columns (Hostname, gpu, UUID, modelName, pod, ...)",
                             line=None if is_parquet(path) else 1)
        query, others = _select_sql(columns, fields, job_label, is_parquet(path))
        relation = con.sql(query, params=[str(path)])  # type: ignore[call-arg]
        first_line = 1 if is_parquet(path) else 2
        try:
            for frame in _gathered(relation.to_arrow_reader(batch_rows), batch_rows):
                if frame.height:
                    yield _canonical(frame, path, first_line, others, unknown)
                first_line += frame.height
        except duckdb.Error as exc:
            raise InputError(path, f"cannot be read as CSV ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()
