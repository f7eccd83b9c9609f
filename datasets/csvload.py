"""Loading headerless trace CSVs into typed Parquet with DuckDB, reporting bad rows by line.

Every CSV is read with an explicit schema (no type guessing). Rows DuckDB cannot read are
collected with their line numbers; if there are more than the caller allows, the load fails with
one `InputError` naming the file, the line, the field and what was expected.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ddlx.datasets.ranges import (
    ValueRange,
    in_range_sql,
    nul_screen_sql,
    range_counts_sql,
    range_screen_sql,
    refused_fields,
)
from ddlx.datasets.sqltext import copy_to_parquet, sql_string
from ddlx.errors import InputError, read_error

_CONVERT_VALUE = re.compile(r'Could not convert string "(.*?)" to')
#: The problem of text that is not UTF-8.
NOT_UTF8 = "not valid UTF-8 text; expected a file in UTF-8"


#: The name under which a CSV file's rows are read in a source SELECT (`SELECT ... FROM ddlx_source`).
SOURCE = "ddlx_source"


@dataclass
class LoadResult:
    """What one CSV load produced: rows written, and rows rejected with their reasons."""

    rows: int
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


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
    elif sql_type == "TIMESTAMP":
        kind = "a time written YYYY-MM-DD HH:MM:SS, seconds included"
    elif sql_type == "DATE":
        kind = "a date written YYYY-MM-DD"
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
        return InputError(display, NOT_UTF8, line=line, field=column)
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
    """The column names on the first line of `csv_path` (read as CSV: a quoted name may hold the
    delimiter or quotes), stripped of spaces."""
    with open(csv_path, "rb") as handle:
        first = handle.readline(1 << 20)
    try:
        text = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise InputError(display, NOT_UTF8, line=1) from None
    return [name.strip() for name in next(csv.reader([text], delimiter=delimiter), [])]


def check_header(csv_path: Path, display: str, expected: Sequence[str], delimiter: str = ",") -> None:
    """`InputError` unless the first line of `csv_path` names exactly the `expected` columns."""
    found = read_header(csv_path, display, delimiter)
    if found != list(expected):
        raise InputError(display, f"header is {delimiter.join(found)!r}; expected "
                         f"{delimiter.join(expected)!r}", line=1)


@dataclass(frozen=True)
class CsvSource:
    """One CSV file to load: its schema and the SELECT applied to its rows (read FROM `SOURCE`).

    `display` is the name used in messages (e.g. `<archive>.tar.gz:<member>.csv`); `holds_nul`, when
    given, tells whether the file holds a NUL byte (when it does not, no stored value can hold one).
    """

    path: Path
    display: str
    columns: dict[str, str]
    select: str = f"SELECT * FROM {SOURCE}"
    header: bool = False
    delimiter: str = ","
    timestamp_format: str | None = None
    null_strings: tuple[str, ...] = ()
    holds_nul: Callable[[], bool] | None = None

    def may_hold_nul(self) -> bool:
        """Whether a value read from this file may hold a NUL character (True unless scanned)."""
        return self.holds_nul is None or self.holds_nul()

    def query(self) -> str:
        """`select` over the file's rows, which it reads as the table `SOURCE` (a named subquery, so
        no text of the file, such as a column name, is ever substituted into the SQL)."""
        read = read_csv_sql(self.path, self.columns, self.header, self.delimiter, self.timestamp_format,
                            self.null_strings)
        return f"WITH {SOURCE} AS (SELECT * FROM {read}) {self.select}"


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
    `ranges` (stored column -> `ValueRange`) and the text columns are then checked by
    `check_values`. Raises `InputError` for a file without rows (empty, or a header alone), for
    text that is not UTF-8, or when more than `max_rejected_rows` rows (over all the files) are
    bad, unreadable, out of range or hold a NUL character; the Parquet file is then removed.
    """
    for source in sources:
        require_rows(source)
    con.execute("DROP TABLE IF EXISTS ddlx_rejects; DROP TABLE IF EXISTS ddlx_reject_scans")
    query = " UNION ALL BY NAME ".join(f"({source.query()})" for source in sources)
    try:
        rows = copy_to_parquet(con, query, out_path)
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
        if "unicode" in str(exc).lower():
            for source in sources:
                invalid = invalid_utf8_error(source)
                if invalid is not None:
                    raise invalid from None
        raise read_error(exc, sources[0].display, "cannot be read as CSV", out_path) from None
    by_path = {str(source.path): source for source in sources}
    first_per_line: dict[tuple[str, int], tuple] = {}
    for row in reject_rows:
        first_per_line.setdefault((row[0], row[1]), row)
    result = LoadResult(rows=int(rows), rejected=len(first_per_line))
    if not first_per_line:
        check_values(con, sources, out_path, ranges or {}, result, max_rejected_rows)
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
    check_values(con, sources, out_path, ranges or {}, result, max_rejected_rows)
    return result


def require_rows(source: CsvSource) -> None:
    """`InputError` unless `source` holds a data row: an empty file, a header alone or blank lines
    are no table. Reads the header and the next bytes only."""
    fields = f"{len(source.columns)} fields ({source.delimiter.join(source.columns)})"
    if source.path.stat().st_size == 0:
        kind = "a header line and CSV rows" if source.header else "headerless CSV rows"
        raise InputError(source.display, f"file is empty; expected {kind} of {fields}")
    with open(source.path, "rb") as handle:
        if source.header:
            handle.readline()
        while chunk := handle.read(1 << 16):
            if chunk.strip():
                return
    if source.header:
        raise InputError(source.display, f"has a header but no rows; expected at least one row of {fields}")
    raise InputError(source.display, f"holds no rows, only blank lines; expected at least one row of {fields}")


def first_invalid_utf8(path: Path) -> tuple[int, int, bytes] | None:
    """(line, byte column, the line's bytes before it) of the first byte sequence of `path` that is
    not UTF-8, else None (error path only: reads the file)."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, exc.start + 1, line[:exc.start]
    return None


def invalid_utf8_error(source: CsvSource) -> InputError | None:
    """The `InputError` naming the line and field of the first text of `source` that is not UTF-8."""
    found = first_invalid_utf8(source.path)
    if found is None:
        return None
    line, _, before = found
    index = before.count(source.delimiter.encode())
    names = list(source.columns)
    field = names[index] if index < len(names) and not (source.header and line == 1) else None
    return InputError(source.display, NOT_UTF8, line=line, field=field)


def range_error(display: str, line: int | None, field: str, text: str, ranged: ValueRange) -> InputError:
    """The `InputError` of a value outside its declared range."""
    return InputError(display, f"value {text.strip()!r} is outside the accepted range {ranged.describe()}",
                      line=line, field=field)


#: A text value refused for its NUL character, as messages and counted reasons say it.
_NUL = "holding a NUL character (byte 0)"
_NO_CONTROL_BYTES = "expected text without control bytes"


def _numbered_rows(source: CsvSource) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the data rows of `source` (error path only: Python reads the file)."""
    with open(source.path, encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=source.delimiter, quotechar='"')
        if source.header:
            next(reader, None)
        for fields in reader:
            if fields:
                yield reader.line_num, fields


def bad_value_errors(sources: list[CsvSource], ranges: dict[str, ValueRange], nul: bool) -> Iterator[InputError]:
    """An `InputError` per out-of-range value of the `sources` (and, with `nul`, per field holding a
    NUL character), in file and line order (error path only: scans the files)."""
    for source in sources:
        names = list(source.columns)
        refused = refused_fields(names, ranges)
        for line, fields in _numbered_rows(source):
            if nul:
                for index, text in enumerate(fields):
                    if "\x00" in text:
                        yield InputError(source.display, f"text {_NUL}; {_NO_CONTROL_BYTES}", line=line,
                                         field=names[index] if index < len(names) else None)
            for column_name, text, ranged in refused(fields):
                yield range_error(source.display, line, column_name, text, ranged)


def text_columns(con: duckdb.DuckDBPyConnection, table_sql: str) -> list[str]:
    """The VARCHAR columns of `table_sql` (read from its schema, not its rows)."""
    return [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {table_sql}").fetchall() if row[1] == "VARCHAR"]


def check_values(con: duckdb.DuckDBPyConnection, sources: list[CsvSource], out_path: Path,
                 ranges: dict[str, ValueRange], result: LoadResult, max_rejected_rows: int) -> None:
    """Refuse the values of the stored table at `out_path` that lie outside `ranges`, and its text
    values holding a NUL character.

    Screens (`range_screen_sql`: each ranged column's extremes, mostly answered by the Parquet
    statistics; `nul_screen_sql`: one scan of the text columns) find whether there are any; only
    then one aggregate pass over the Parquet file counts them. Rows holding one are rejected rows:
    within `max_rejected_rows` (with the rows the reader rejected) they are dropped from the
    table and counted in `result`; beyond it the Parquet file is removed and the first one (in
    file order) raises its `InputError`.
    """
    stored = f"read_parquet({sql_string(str(out_path))})"
    texts = text_columns(con, stored) if any(source.may_hold_nul() for source in sources) else []
    screens = (([range_screen_sql(stored, ranges)] if ranges else [])
               + ([nul_screen_sql(stored, texts)] if texts else []))
    if not any(int(con.execute(screen).fetchall()[0][0]) for screen in screens):
        return
    found = con.execute(range_counts_sql(stored, ranges, texts)).fetchall()[0]
    bad_rows, counts = int(found[0]), [int(n) for n in found[1:]]
    if bad_rows == 0:
        return
    # (field, problem, reason) per condition counted by `range_counts_sql`, in its order
    kinds = [(ranged.field or column, f"outside the accepted range {ranged.describe()}",
              f"{ranged.field or column} outside the accepted range {ranged.describe()}")
             for column, ranged in ranges.items()]
    kinds += [(None, f"{_NUL}; {_NO_CONTROL_BYTES}", f"text {_NUL}")]
    examples = bad_value_errors(sources, ranges, nul=bool(texts) and counts[-1] > 0)
    if result.rejected + bad_rows > max_rejected_rows:
        out_path.unlink(missing_ok=True)
        error = next(examples, None)
        if error is None:  # the scan could not tell the line: name the field and the problem
            field, problem, _ = next(kind for kind, n in zip(kinds, counts) if n)
            error = InputError(sources[0].display, f"{sum(counts)} value(s) {problem}", field=field)
        more = result.rejected + bad_rows - 1
        if more:
            error.args = (f"{error.args[0]} (and {more} more bad rows)",)
        raise error
    kept = out_path.with_name(f"{out_path.stem}.in-range.parquet")
    result.rows = copy_to_parquet(con, f"SELECT * FROM {stored} WHERE {in_range_sql(ranges, texts)}", kept)
    kept.replace(out_path)
    result.rejected += bad_rows
    for (_, _, reason), count in zip(kinds, counts):
        if count:
            result.reasons[reason] = result.reasons.get(reason, 0) + count
    wanted = min(5 - len(result.examples), bad_rows)  # stop scanning once every bad row is named
    for error in examples:
        if wanted <= 0:
            break
        result.examples.append(str(error))
        wanted -= 1
