"""Loading headerless trace CSVs into typed Parquet with DuckDB, reporting bad rows by line.

Every CSV is read with an explicit schema (no type guessing). Rows DuckDB cannot read are
collected with their line numbers; if there are more than the caller allows, the load fails with
one `InputError` naming the file, the line, the field and what was expected.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ddlx.datasets.ranges import ValueRange, in_range_sql, out_of_range_cells, range_counts_sql, range_screen_sql
from ddlx.errors import InputError, read_error

_CONVERT_VALUE = re.compile(r'Could not convert string "(.*?)" to')


@dataclass
class LoadResult:
    """What one CSV load produced: rows written, and rows rejected with their reasons."""

    rows: int
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


def sql_string(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def columns_struct(columns: dict[str, str]) -> str:
    """The `columns=` argument of DuckDB's read_csv for an ordered name -> type mapping."""
    return "{" + ", ".join(f"{sql_string(name)}: {sql_string(t)}" for name, t in columns.items()) + "}"


def line_ending(csv_path: Path) -> str:
    """`\\r\\n` when the first line of `csv_path` ends so (a Windows file), else `\\n`."""
    with open(csv_path, "rb") as handle:
        first = handle.readline(1 << 20)
    return "\r\n" if first.endswith(b"\r\n") else "\n"


def read_csv_sql(csv_path: Path, columns: dict[str, str], header: bool = False,
                 delimiter: str = ",", timestamp_format: str | None = None,
                 null_strings: tuple[str, ...] = ()) -> str:
    """A read_csv table function call that keeps going past bad rows and stores them as rejects.

    With `header`, the first line is skipped (line numbers in rejects still count it);
    `timestamp_format` is the strict format of TIMESTAMP columns; `null_strings` are the field
    values read as NULL (by default only an empty field).
    """
    strict = f"timestampformat={sql_string(timestamp_format)}, " if timestamp_format else ""
    if null_strings:
        strict += "nullstr=[" + ", ".join(sql_string(value) for value in null_strings) + "], "
    new_line = "'\\r\\n'" if line_ending(csv_path) == "\r\n" else "'\\n'"
    return (
        f"read_csv({sql_string(str(csv_path))}, columns={columns_struct(columns)}, "
        f"header={str(header).lower()}, auto_detect=false, delim={sql_string(delimiter)}, "
        f"quote='\"', escape='\"', new_line={new_line}, " + strict +
        "store_rejects=true, ignore_errors=true, rejects_table='ddlx_rejects', "
        "rejects_scan='ddlx_reject_scans')"
    )


def expected_value(sql_type: str, null_strings: tuple[str, ...] = ()) -> str:
    """What a field of `sql_type` may hold, as error messages say it (e.g. "a number (or 'NA' or
    nothing when missing)")."""
    if sql_type.startswith("ENUM"):
        values = re.findall(r"'([^']*)'", sql_type)
        kind = "one of " + ", ".join(values)
    elif sql_type in ("DOUBLE", "FLOAT"):
        kind = "a number"
    elif sql_type in ("BIGINT", "INTEGER"):
        kind = "a whole number"
    else:
        kind = f"a {sql_type.lower()} value"
    missing = [f"'{value}'" if value else "nothing" for value in null_strings]
    return f"{kind} (or {' or '.join(missing)} when missing)" if missing else kind


def describe_reject(display: str, columns: dict[str, str], line: int, column: str | None,
                    error_type: str, csv_line: str, message: str, delimiter: str = ",",
                    null_strings: tuple[str, ...] = ()) -> InputError:
    """Turn one DuckDB reject row into an `InputError` a user can act on."""
    names = list(columns)
    if "\ufffd" in (csv_line or "") or "unicode" in (message or "").lower():
        return InputError(display, "not valid UTF-8 text", line=line, field=column)
    if error_type in ("MISSING COLUMNS", "TOO MANY COLUMNS"):
        found = (csv_line or "").count(delimiter) + 1
        return InputError(
            display,
            f"found {found} fields; expected {len(names)} ({delimiter.join(names)})",
            line=line,
        )
    if error_type == "CAST" and column in columns:
        match = _CONVERT_VALUE.search(message or "")
        value = match.group(1) if match else "?"
        return InputError(
            display, f"cannot read {value!r}; expected {expected_value(columns[column], null_strings)}",
            line=line, field=column,
        )
    first = (message or error_type).strip().splitlines()[0]
    return InputError(display, f"unreadable row ({first})", line=line, field=column)


def read_header(csv_path: Path, display: str, delimiter: str = ",") -> list[str]:
    """The column names on the first line of `csv_path`, stripped of spaces."""
    with open(csv_path, "rb") as handle:
        first = handle.readline(1 << 20)
    try:
        text = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise InputError(display, "not valid UTF-8 text", line=1) from None
    return [name.strip() for name in text.split(delimiter)]


def check_header(csv_path: Path, display: str, expected: Sequence[str], delimiter: str = ",") -> None:
    """`InputError` unless the first line of `csv_path` names exactly the `expected` columns."""
    found = read_header(csv_path, display, delimiter)
    if found != list(expected):
        raise InputError(display, f"header is {delimiter.join(found)!r}; expected "
                         f"{delimiter.join(expected)!r}", line=1)


@dataclass(frozen=True)
class CsvSource:
    """One CSV file to load: its schema and the SELECT (reading FROM `{src}`) applied to its rows.

    `display` is the name used in messages (e.g. `pai_job_table.tar.gz:pai_job_table.csv`).
    """

    path: Path
    display: str
    columns: dict[str, str]
    select: str = "SELECT * FROM {src}"
    header: bool = False
    delimiter: str = ","
    timestamp_format: str | None = None
    null_strings: tuple[str, ...] = ()

    def query(self) -> str:
        return self.select.replace("{src}", read_csv_sql(
            self.path, self.columns, self.header, self.delimiter, self.timestamp_format, self.null_strings))


def load_csv_to_parquet(con: duckdb.DuckDBPyConnection, csv_path: Path, display: str,
                        columns: dict[str, str], select_sql: str, out_path: Path,
                        max_rejected_rows: int = 0, header: bool = False,
                        delimiter: str = ",", timestamp_format: str | None = None,
                        null_strings: tuple[str, ...] = (),
                        ranges: dict[str, ValueRange] | None = None) -> LoadResult:
    """Read `csv_path` with `columns`, apply `select_sql` (which reads FROM `src`), write zstd Parquet.

    See `load_csv_sources`.
    """
    source = CsvSource(csv_path, display, columns, select_sql, header, delimiter, timestamp_format,
                       null_strings)
    return load_csv_sources(con, [source], out_path, max_rejected_rows, ranges)


def load_csv_sources(con: duckdb.DuckDBPyConnection, sources: list[CsvSource], out_path: Path,
                     max_rejected_rows: int = 0, ranges: dict[str, ValueRange] | None = None) -> LoadResult:
    """Read every CSV of `sources` and write their rows (combined by column name) to one zstd
    Parquet file in a single pass.

    With `header`, a file's first line must be there and is skipped (callers check its names).
    `ranges` (stored column -> `ValueRange`) are then checked by `check_ranges`. Raises
    `InputError` for an empty file or when more than `max_rejected_rows` rows (over all the
    files) are bad, unreadable or out of range; the Parquet file is then removed.
    """
    for source in sources:
        if source.path.stat().st_size == 0:
            kind = "a header line and CSV rows" if source.header else "headerless CSV rows"
            raise InputError(source.display, f"file is empty; expected {kind} of {len(source.columns)} "
                             f"fields ({','.join(source.columns)})")
    con.execute("DROP TABLE IF EXISTS ddlx_rejects; DROP TABLE IF EXISTS ddlx_reject_scans")
    query = " UNION ALL BY NAME ".join(f"({source.query()})" for source in sources)
    try:
        rows = con.execute(
            f"COPY ({query}) TO {sql_string(str(out_path))} (FORMAT parquet, COMPRESSION zstd)"
        ).fetchall()[0][0]
        reject_rows = con.execute(
            "SELECT s.file_path, e.line, e.column_name, CAST(e.error_type AS VARCHAR), e.csv_line, "
            "e.error_message FROM ddlx_rejects AS e JOIN ddlx_reject_scans AS s USING (scan_id, file_id) "
            "ORDER BY s.file_path, e.line"
        ).fetchall()
    except duckdb.Error as exc:
        out_path.unlink(missing_ok=True)
        if len(sources) > 1:  # find out which file it is, reading them one by one
            for source in sources:
                load_csv_sources(con, [source], out_path, max_rejected_rows)
                out_path.unlink(missing_ok=True)
        raise read_error(exc, sources[0].display, "cannot be read as CSV", out_path) from None
    by_path = {str(source.path): source for source in sources}
    first_per_line: dict[tuple[str, int], tuple] = {}
    for row in reject_rows:
        first_per_line.setdefault((row[0], row[1]), row)
    result = LoadResult(rows=int(rows), rejected=len(first_per_line))
    if not first_per_line:
        if ranges:
            check_ranges(con, sources, out_path, ranges, result, max_rejected_rows)
        return result
    errors = []
    for path, line, column, error_type, csv_line, message in first_per_line.values():
        source = by_path.get(path, sources[0])
        errors.append(describe_reject(source.display, source.columns, line, column, error_type,
                                      csv_line, message, source.delimiter, source.null_strings))
    if result.rejected > max_rejected_rows:
        out_path.unlink(missing_ok=True)
        error = errors[0]
        if result.rejected > 1:
            error.args = (f"{error.args[0]} (and {result.rejected - 1} more bad rows)",)
        raise error
    for error in errors:
        reason = error.problem.split(";")[0]
        result.reasons[reason] = result.reasons.get(reason, 0) + 1
    result.examples = [str(e) for e in errors[:5]]
    if ranges:
        check_ranges(con, sources, out_path, ranges, result, max_rejected_rows)
    return result


def range_error(display: str, line: int | None, field: str, text: str, ranged: ValueRange) -> InputError:
    """The `InputError` of a value outside its declared range."""
    return InputError(display, f"value {text.strip()!r} is outside the accepted range {ranged.describe()}",
                      line=line, field=field)


def _numbered_rows(source: CsvSource) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the data rows of `source` (error path only: Python reads the file)."""
    with open(source.path, encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=source.delimiter, quotechar='"')
        if source.header:
            next(reader, None)
        for fields in reader:
            if fields:
                yield reader.line_num, fields


def out_of_range_errors(sources: list[CsvSource], ranges: dict[str, ValueRange]) -> Iterator[InputError]:
    """An `InputError` per out-of-range value of the `sources`, in file and line order (error
    path only: scans the files)."""
    for source in sources:
        cells = out_of_range_cells(_numbered_rows(source), list(source.columns), ranges)
        for line, field, text, ranged in cells:
            yield range_error(source.display, line, field, text, ranged)


def check_ranges(con: duckdb.DuckDBPyConnection, sources: list[CsvSource], out_path: Path,
                 ranges: dict[str, ValueRange], result: LoadResult, max_rejected_rows: int) -> None:
    """Refuse the values of the stored table at `out_path` that lie outside `ranges`.

    A screen on each column's extremes (`range_screen_sql`, mostly answered by the Parquet
    statistics) finds whether there are any; only then one aggregate pass over the Parquet file
    counts them. Rows holding one are rejected rows:
    within `max_rejected_rows` (with the rows the reader rejected) they are dropped from the
    table and counted in `result`; beyond it the Parquet file is removed and the first one (in
    file order) raises its `InputError`.
    """
    stored = f"read_parquet({sql_string(str(out_path))})"
    if int(con.execute(range_screen_sql(stored, ranges)).fetchall()[0][0]) == 0:
        return
    found = con.execute(range_counts_sql(stored, ranges)).fetchall()[0]
    bad_rows = int(found[0])
    if bad_rows == 0:
        return
    examples = out_of_range_errors(sources, ranges)
    if result.rejected + bad_rows > max_rejected_rows:
        out_path.unlink(missing_ok=True)
        error = next(examples, None)
        if error is None:  # the scan could not tell the line: name the field and the range
            column, ranged = next((c, r) for (c, r), n in zip(ranges.items(), found[1:]) if n)
            error = InputError(sources[0].display, f"{int(sum(found[1:]))} value(s) outside the accepted "
                               f"range {ranged.describe()}", field=ranged.field or column)
        more = result.rejected + bad_rows - 1
        if more:
            error.args = (f"{error.args[0]} (and {more} more bad rows)",)
        raise error
    kept = out_path.with_name(f"{out_path.stem}.in-range.parquet")
    result.rows = int(con.execute(f"COPY (SELECT * FROM {stored} WHERE {in_range_sql(ranges)}) TO "
                                  f"{sql_string(str(kept))} (FORMAT parquet, COMPRESSION zstd)").fetchall()[0][0])
    kept.replace(out_path)
    result.rejected += bad_rows
    for (column, ranged), count in zip(ranges.items(), found[1:]):
        if count:
            reason = f"{ranged.field or column} outside the accepted range {ranged.describe()}"
            result.reasons[reason] = result.reasons.get(reason, 0) + int(count)
    wanted = min(5 - len(result.examples), bad_rows)  # stop scanning once every bad row is named
    for error in examples:
        if wanted <= 0:
            break
        result.examples.append(str(error))
        wanted -= 1

