"""Interval sweeps streamed out of DuckDB: the time a running count spends at each level.

A sweep turns intervals into +w/-w events, sorts them by key and time and keeps running sums.
DuckDB's running-sum windows over tens of millions of events cost several times the sort itself,
so the sort is left to DuckDB (in parallel, spilling past its memory limit) and the running sums
are taken here, over the sorted rows streamed in batches. When the events are many, the intervals
are first written once to scratch Parquet files, one per group of keys, and each group is sorted
on its own: the sort's memory and the batch's stay the same whatever the number of events, and
the intervals are read from the catalog once, not once per group.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.datasets.sqltext import sql_string
from ddlx.errors import storage_errors

if TYPE_CHECKING:
    import pyarrow as pa

#: Sorted events taken from DuckDB at a time.
BATCH_ROWS = 1 << 20

#: Events sorted at a time: 20 bytes each, and DuckDB's sort takes a few times that (8 M events stay
#: well within the default memory limit).
EVENTS_PER_SORT = 1 << 23


def level_seconds(ctx: TraceContext, intervals: str, counts: Sequence[str], intervals_count: int | None = None,
                  batch_rows: int = BATCH_ROWS) -> pl.DataFrame:
    """Seconds each running count spends at each level above 0, per key.

    `intervals` is a FROM item with `key` (an integer: what the counts are kept for, e.g. a machine),
    `t_start` and `t_end` (seconds, `t_end >= t_start`) and the `counts` columns (integers: what the
    interval adds to each count while it lasts, e.g. 1, or 0 for an interval a count leaves out).
    The level after a change lasts until the key's next change; changes at one instant are taken
    together (the zero-length levels between them count nothing), so the order of ties does not
    matter.

    Rows (`level_seconds_schema`): `key`, `count` (the name of the count), `level` (Int64, > 0) and
    `seconds` (Float64, the time at that level summed over the key's steps). Keys and counts never
    above 0 have no rows.

    `intervals_count`, how many intervals there are (about), splits the keys into groups of about
    `EVENTS_PER_SORT` events (two per interval), written once to scratch files in DuckDB's temporary
    folder and sorted one after the other, so that the sort's memory does not grow with the trace.
    """
    names = list(counts)
    weights = ", ".join(f"CAST({name} AS INTEGER) AS {name}" for name in names)
    typed = (f"(SELECT key, CAST(t_start AS DOUBLE) AS t_start, CAST(t_end AS DOUBLE) AS t_end, {weights} "
             f"FROM {intervals})")
    groups = max(1, math.ceil(2 * (intervals_count or 0) / EVENTS_PER_SORT))
    ends = ", ".join(f"-{name}" for name in names)
    swept: list[pl.DataFrame] = []  # per group of keys: key, count, level, seconds
    with _key_groups(ctx, typed, groups) as parts:
        for part in parts:
            sql = f"""SELECT key, t_start AS t, {", ".join(names)} FROM {part}
                      UNION ALL SELECT key, t_end, {ends} FROM {part}
                      ORDER BY key, t"""
            sums = _swept(ctx.batches(sql, batch_rows), len(names))
            if sums:  # a key's steps may span batches, never groups
                swept.append(pl.concat(sums).group_by("key", "count", "level").agg(pl.col("seconds").sum()))
    schema = level_seconds_schema(names)
    if not swept:
        return pl.DataFrame(schema=schema)
    return pl.concat(swept).select(
        "key", pl.col("count").replace_strict(dict(enumerate(names)), return_dtype=schema["count"]), "level", "seconds")


def level_seconds_schema(counts: Sequence[str]) -> pl.Schema:
    """Columns of `level_seconds` (`count` an enum of the counts' names: one small integer a row)."""
    return pl.Schema({"key": pl.Int64, "count": pl.Enum(list(counts)), "level": pl.Int64, "seconds": pl.Float64})


@contextlib.contextmanager
def _key_groups(ctx: TraceContext, intervals: str, groups: int) -> Iterator[list[str]]:
    """FROM items holding `intervals` split into `groups` groups of keys: the query itself for one
    group; else one scratch Parquet folder per group (key modulo `groups`), written in one pass
    and removed at the end."""
    if groups == 1:
        yield [intervals]
        return
    scratch = Path(ctx.one_row("SELECT current_setting('temp_directory') AS folder")["folder"])
    with storage_errors(scratch, "making the sweep's scratch folder", (OSError,)):
        scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="sweep-", dir=scratch))
    try:
        ctx.execute(f"""COPY (SELECT *, (key % {groups} + {groups}) % {groups} AS key_group FROM {intervals})
                        TO {sql_string(str(folder / "groups"))} (FORMAT parquet, PARTITION_BY (key_group))""")
        written = sorted(folder.glob("groups/key_group=*"), key=lambda path: int(path.name.split("=")[1]))
        yield [f"read_parquet({sql_string(str(path / '*.parquet'))}, hive_partitioning = false)"
               for path in written]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _swept(batches: Iterator[pa.RecordBatch], counts: int) -> list[pl.DataFrame]:
    """Per batch of sorted events (`key`, `t`, then the `counts` changes): the seconds at each level
    per key and count (the count's index), summed."""
    running = np.zeros(counts, dtype=np.int64)
    pending: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # key, t, levels of the last row so far
    sums: list[pl.DataFrame] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        key = batch.column(0).to_numpy().astype(np.int64)
        t = batch.column(1).to_numpy()
        levels = np.cumsum(np.column_stack([batch.column(2 + i).to_numpy() for i in range(counts)]), axis=0)
        levels += running
        running = levels[-1].copy()
        if pending is not None:
            key = np.concatenate([pending[0], key])
            t = np.concatenate([pending[1], t])
            levels = np.concatenate([pending[2], levels])
        pending = (key[-1:], t[-1:], levels[-1:])
        seconds = t[1:] - t[:-1]
        step = (seconds > 0) & (key[1:] == key[:-1])
        for i in range(counts):
            keep = step & (levels[:-1, i] > 0)
            if keep.any():
                sums.append(_summed_steps(key[:-1][keep], levels[:-1, i][keep], seconds[keep], i))
    return sums


def _summed_steps(key: np.ndarray, level: np.ndarray, seconds: np.ndarray, count: int) -> pl.DataFrame:
    """Seconds summed per key and level of one batch's steps. The keys come sorted, so a batch
    spans few of them and a dense table of its keys x levels is small."""
    changes = key[1:] != key[:-1]
    rank = np.concatenate([[0], np.cumsum(changes)])  # index of each step's key among the batch's keys
    keys = key[np.concatenate([[0], np.flatnonzero(changes) + 1])]
    width = int(level.max()) + 1
    cells = np.bincount(rank * width + level, weights=seconds, minlength=len(keys) * width)
    cell = np.flatnonzero(cells)
    return pl.DataFrame({"key": keys[cell // width], "count": np.full(len(cell), count, dtype=np.int8),
                         "level": cell % width, "seconds": cells[cell]})
