"""What ingest needs to know about one trace: the adapter interface.

Each trace has one reader (`traces/<trace>/reader.py`) that declares its file format
at the top and defines a `TraceAdapter` subclass. `ingest` drives every adapter the same way:

1. `locate(source, tables)`: which files (or archive members) hold the rows of each stored table;
2. ingest extracts archive members into a staging folder (one pass per archive, in the
   background) and hashes every input file, noting whether it holds a NUL byte;
3. `load_table(...)`, table by table, smallest input first: the table's parts -> one typed zstd
   Parquet file (the default reads CSVs with the explicit schema of `csv_format`);
4. `derived_tables(paths)`: SELECTs (or builds in several steps) over the stored Parquet files
   that build further tables, the canonical `<trace>_jobs` among them;
5. `validation_checks(present)` and `figures(present)`: the validation report.

`value_ranges(table)` declares the accepted range of each numeric and time column of a stored
table (`ddlx.datasets.ranges`); the default `load_table` refuses values outside them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ddlx.datasets.canonical import jobs_table_name
from ddlx.datasets.csvload import SOURCE, CsvSource, LoadResult, check_header, load_csv_sources
from ddlx.datasets.ranges import ValueRange
from ddlx.datasets.sqltext import quote_identifier, sql_string
from ddlx.datasets.trace_info import TraceInfo
from ddlx.datasets.validation import Check, Figure
from ddlx.errors import InputError

#: File name endings of the archives ingest can read members from.
TAR_SUFFIXES = (".tar.gz", ".tgz")
ZIP_SUFFIXES = (".zip",)


def is_archive(path: Path) -> bool:
    return path.name.endswith(TAR_SUFFIXES + ZIP_SUFFIXES)


@dataclass(frozen=True)
class SourcePart:
    """One input holding rows of a stored table: a plain file, or one member of an archive.

    `labels` are constant columns added to every row of this part (e.g. the cluster name of a
    per-cluster file); `official_sha256` is the published checksum of `path`, when there is one.
    """

    path: Path
    member: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    official_sha256: str | None = None

    @property
    def display(self) -> str:
        """How messages name this input: `archive:member` or the file path."""
        return f"{self.path}:{self.member}" if self.member else str(self.path)

    def labels_sql(self) -> str:
        """`'Venus' AS "cluster", ` for each label: to put in front of a SELECT list."""
        return "".join(f'{sql_string(value)} AS {quote_identifier(name)}, ' for name, value in self.labels)


@dataclass(frozen=True)
class LocalPart:
    """A `SourcePart` made readable: `local_path` is a plain file (the member extracted, or the file).

    `holds_nul`, when given, tells (waiting for the scan to end) whether the file holds a NUL byte."""

    part: SourcePart
    local_path: Path
    holds_nul: Callable[[], bool] | None = None


@dataclass(frozen=True)
class CsvFormat:
    """How to read one CSV: columns in file order with DuckDB types, and the SELECT applied.

    `select` reads `FROM ddlx_source` (`csvload.SOURCE`); `header` means the first line holds column names: it must read
    `expected_header` (default: the column names) and is skipped, since the schema is declared,
    never guessed. `timestamp_format` (strptime codes) makes TIMESTAMP columns strict: without it
    DuckDB accepts a date alone and drops a zone offset.
    """

    columns: dict[str, str]
    select: str = f"SELECT * FROM {SOURCE}"
    header: bool = False
    delimiter: str = ","
    expected_header: tuple[str, ...] | None = None
    timestamp_format: str | None = None


#: A derived table built in several steps: `build(con, out_path, scratch)` writes the table at
#: `out_path` (scratch files go under the folder `scratch`, removed after) and returns its rows.
DerivedBuild = Callable[[duckdb.DuckDBPyConnection, Path, Path], int]

#: A derived table: one SELECT over the stored tables, or a `DerivedBuild`.
DerivedTable = str | DerivedBuild


@dataclass
class TraceAdapter:
    """Base class of the per-trace adapters; subclasses override what their format needs.

    `tables` lists the stored raw tables in load order. `source_tz` is the IANA zone in which the
    trace's local times are read.
    """

    name: str
    source_tz: str
    tables: tuple[str, ...]
    info: TraceInfo | None = None
    title: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def jobs_table(self) -> str:
        return jobs_table_name(self.name)

    @classmethod
    def for_trace(cls, info: TraceInfo) -> "TraceAdapter":
        """The adapter of a registered trace, named and zoned as its registry entry says."""
        return cls(name=info.name, source_tz=info.source_tz, tables=tuple(info.tables), info=info,
                   title=info.title)

    # -- locating inputs -------------------------------------------------------------------

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        """The parts holding each of `tables` under `source`; `InputError` naming what is missing."""
        raise NotImplementedError

    # -- loading ---------------------------------------------------------------------------

    def csv_format(self, table: str, part: SourcePart) -> CsvFormat:
        """The CSV format of `part` of `table` (used by the default `load_table`)."""
        raise NotImplementedError

    def value_ranges(self, table: str) -> dict[str, ValueRange]:
        """Stored column -> accepted range, for every numeric and time column of `table`."""
        return {}

    def load_table(self, con: duckdb.DuckDBPyConnection, table: str, parts: list[LocalPart],
                   out_path: Path, max_rejected_rows: int) -> LoadResult:
        """Read the parts of `table` into one zstd Parquet file at `out_path`."""
        return load_csv_parts(con, parts, out_path, max_rejected_rows,
                              lambda part: self.csv_format(table, part), self.value_ranges(table))

    # -- derived tables and validation -------------------------------------------------------

    def derived_tables(self, folder: Path, present: set[str]) -> dict[str, DerivedTable]:
        """SELECTs building further tables, in order, from the stored tables `present` in `folder`
        (each `<table>.parquet`; see `parquet_sql`), or builds that write one in several steps
        (`DerivedBuild`). A derived table may read earlier ones.

        Only tables whose inputs are all present are returned.
        """
        return {}

    def derived_views(self, present: set[str]) -> dict[str, str]:
        """SELECTs over the stored tables (by name) that the catalog keeps as views, in order.

        For tables that are a plain projection of one stored table (the canonical jobs of most
        traces): a view costs nothing at ingest and reads as fast as a copy would.
        """
        return {}

    def validation_tables(self, present: set[str]) -> dict[str, str]:
        """Reductions of the stored tables that checks and figures read (name -> SELECT over the
        tables in `present`), made as temporary tables while the validation runs: a table that many
        checks read is scanned once instead of once per check."""
        return {}

    def validation_checks(self, present: set[str]) -> list[Check]:
        """Data-quality checks on the tables in `present` (referred to by name)."""
        return []

    def figures(self, present: set[str]) -> list[Figure]:
        """Figures of the validation report that are not row counts (capacities, spans)."""
        return []


def load_csv_parts(con: duckdb.DuckDBPyConnection, parts: list[LocalPart], out_path: Path,
                   max_rejected_rows: int, format_of: Any,
                   ranges: dict[str, ValueRange] | None = None) -> LoadResult:
    """Load the CSV parts, each with its format (headers checked first), into one Parquet file;
    values outside `ranges` are refused (see `csvload.check_values`)."""
    sources = []
    for local in parts:
        fmt: CsvFormat = format_of(local.part)
        if fmt.header and local.local_path.stat().st_size > 0:
            check_header(local.local_path, local.part.display,
                         fmt.expected_header or tuple(fmt.columns), fmt.delimiter)
        sources.append(CsvSource(local.local_path, local.part.display, fmt.columns, fmt.select,
                                 fmt.header, fmt.delimiter, fmt.timestamp_format, holds_nul=local.holds_nul))
    return load_csv_sources(con, sources, out_path, max_rejected_rows, ranges)


def merge_results(total: LoadResult, part: LoadResult) -> None:
    """Add the counts of `part` into `total`."""
    total.rows += part.rows
    total.rejected += part.rejected
    for reason, count in part.reasons.items():
        total.reasons[reason] = total.reasons.get(reason, 0) + count
    total.examples = (total.examples + part.examples)[:5]


def parquet_sql(folder: Path, table: str) -> str:
    """`read_parquet(...)` of the stored `table` in `folder`."""
    return f"read_parquet({sql_string(str(folder / f'{table}.parquet'))})"


def is_input_file(path: Path) -> bool:
    """True for a regular file (or a link to one) at `path`, False when nothing is there;
    `InputError` when something else stands where an input file is expected (a folder, a FIFO,
    a device, a socket), so it is never silently taken for a missing file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror or exc}); expected a file") from None
    if stat.S_ISREG(mode):
        return True
    kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket")
    raise InputError(str(path), f"is {kind}; expected a file")


def find_file(source: Path, names: Sequence[str]) -> Path | None:
    """The first of `names` found in `source` or in one of its subfolders (sorted), else None."""
    folders = [source] + sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
    for folder in folders:
        for name in names:
            candidate = folder / name
            if is_input_file(candidate):
                return candidate
    return None


def require_folder_or_archive(source: Path) -> None:
    """`InputError` unless `source` is a folder or an archive file."""
    if source.is_dir() or (source.is_file() and is_archive(source)):
        return
    if not os.path.exists(source):
        raise InputError(str(source), "does not exist; expected the folder holding the release files")
    raise InputError(str(source), "not a folder or a .tar.gz/.zip archive; expected the release files")


def missing_error(source: Path, missing: list[str]) -> InputError:
    return InputError(str(source), "missing table files: " + "; ".join(missing))
