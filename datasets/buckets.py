"""Joins and groupings run bucket by bucket, so that no step holds a whole table.

The rows of a query are split into `count` buckets by `hash(key) % count`: all the rows of one key
value land in the same bucket, so a join or a grouping on that key gives, bucket by bucket, exactly
the rows it gives over the whole table, while each step holds only its bucket's share. At ten times
the largest release ddlx reads, the joins on text keys held in one step outgrow DuckDB's memory
limit and spill, and their time grows faster than the data; bucket by bucket it grows with the data
(docs/performance.md, "Growth with the trace").
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from ddlx.datasets.sqltext import PARQUET_COPY_OPTIONS, copy_to_parquet, sql_string

#: Rows a thread of DuckDB's partitioned writer holds per bucket before writing them. DuckDB's
#: default (524,288) makes a write in 8 buckets take two to three times a plain write; at 32,768 it
#: takes 16-28 % more (docs/performance.md).
FLUSH_THRESHOLD_ROWS = 32_768


def bucket_count(rows: int, rows_per_bucket: int) -> int:
    """Buckets of at most `rows_per_bucket` rows on average for a table of `rows` rows (at least 1)."""
    return max(1, math.ceil(rows / rows_per_bucket))


def stored_rows(path: Path) -> int:
    """Rows of the Parquet file at `path`, from its footer (no row is read)."""
    return pq.ParquetFile(path).metadata.num_rows


def write_buckets(con: duckdb.DuckDBPyConnection, select: str, key: str, folder: Path, count: int,
                  source: str = "") -> None:
    """Write the rows of `select` into `count` buckets of `hash(key) % count` under `folder`
    (`bucket_item` reads one). `source` names the writing step when buckets are appended to by
    several steps (each step's files are named after it); an empty bucket still reads, with no rows."""
    folder.mkdir(parents=True, exist_ok=True)
    append = f", APPEND, FILENAME_PATTERN {sql_string(source + '_{uuid}')}" if source else ""
    con.execute(f"SET partitioned_write_flush_threshold = {FLUSH_THRESHOLD_ROWS}")
    try:
        con.execute(f"COPY (SELECT *, hash({key}) % {count} AS bucket FROM ({select})) "
                    f"TO {sql_string(str(folder))} ({PARQUET_COPY_OPTIONS}, PARTITION_BY (bucket){append})")
    finally:
        con.execute("RESET partitioned_write_flush_threshold")
    for bucket in range(count):
        bucket_folder = folder / f"bucket={bucket}"
        if not any(bucket_folder.glob("*.parquet")):
            bucket_folder.mkdir(exist_ok=True)
            empty = bucket_folder / f"{source or 'empty'}_empty.parquet"
            copy_to_parquet(con, f"SELECT * FROM ({select}) LIMIT 0", empty)


def bucket_item(folder: Path, bucket: int) -> str:
    """A FROM item of the rows of one bucket written by `write_buckets` (without the bucket column)."""
    files = sql_string(str(folder / f"bucket={bucket}" / "*.parquet"))
    return f"read_parquet({files}, hive_partitioning = false)"
