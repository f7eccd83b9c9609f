"""The one place where values and names become SQL text: every string literal and every identifier
(table, view, column or VC name) that ddlx puts into a query goes through these two functions; and
the options every stored Parquet file is written with (`copy_to_parquet`)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def sql_string(value: str) -> str:
    """A SQL string literal: `'...'` with each quote doubled."""
    return "'" + str(value).replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """A SQL identifier: `"..."` with each double quote doubled, so any name (spaces, quotes, braces,
    SQL words) stays one name."""
    return '"' + str(name).replace('"', '""') + '"'


#: zstd level of every Parquet file ddlx stores. Level 1, not the writers' default of 3: on the
#: largest release table ddlx reads it writes a file no larger (544 MiB against 572 MiB) in about
#: 30 % less CPU, and reading it back is as fast (docs/performance.md).
PARQUET_ZSTD_LEVEL = 1

#: Parquet encodings of every file DuckDB stores: V2, i.e. DELTA_BINARY_PACKED for integers and
#: timestamps, BYTE_STREAM_SPLIT for doubles, DELTA_LENGTH_BYTE_ARRAY for text that does not fit a
#: dictionary (dictionaries as before). The values are the same; on the largest release ddlx reads,
#: against V1's PLAIN encodings, an ingest takes about 15 % less CPU, the store is 3 % smaller and
#: the analysis reads it faster (docs/performance.md). DuckDB, Arrow (pyarrow), polars and Spark
#: read these encodings; a Parquet reader that knows only V1's may not.
PARQUET_VERSION = "V2"

#: The options of every DuckDB `COPY ... TO` that writes a stored Parquet file.
PARQUET_COPY_OPTIONS = (f"FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL {PARQUET_ZSTD_LEVEL}, "
                        f"PARQUET_VERSION {PARQUET_VERSION}")


def copy_to_parquet(con: duckdb.DuckDBPyConnection, query: str, path: Path | str) -> int:
    """Write the rows of `query` to the Parquet file at `path` with the store's options
    (`PARQUET_COPY_OPTIONS`), on `con`; return how many rows it holds."""
    return int(con.execute(f"COPY ({query}) TO {sql_string(str(path))} ({PARQUET_COPY_OPTIONS})").fetchall()[0][0])


def written_decimal(value: float) -> Decimal:
    """The shortest decimal spelling of `value` (0.56, not the binary double nearest it)."""
    return Decimal(repr(float(value)))
