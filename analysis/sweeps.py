"""Event sweeps streamed out of DuckDB: the time a running count spends at each level.

A sweep sorts +1/-1 events by key and time and keeps running sums. DuckDB's running-sum windows
over tens of millions of events cost several times the sort itself, so the sort is left to DuckDB
(in parallel, spilling past its memory limit) and the running sums are taken here, over the sorted
rows streamed in batches. Keys are sorted in groups of a bounded number of events, so the sort's
memory and the batch's stay the same whatever the number of events.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext

if TYPE_CHECKING:
    import pyarrow as pa

#: Sorted events taken from DuckDB at a time.
BATCH_ROWS = 1 << 20

#: Events sorted at a time: 20 bytes each, and DuckDB's sort takes a few times that (8 M events stay
#: well within the default memory limit).
EVENTS_PER_SORT = 1 << 23

#: Columns of `level_seconds`.
LEVEL_SECONDS_SCHEMA = pl.Schema({"key": pl.Int64, "count": pl.String, "level": pl.Int64, "seconds": pl.Float64})


def level_seconds(ctx: TraceContext, events: str, counts: Sequence[str], events_count: int | None = None,
                  batch_rows: int = BATCH_ROWS) -> pl.DataFrame:
    """Seconds each running count spends at each level above 0, per key.

    `events` is a FROM item with `key` (an integer: what the counts are kept for, e.g. a machine),
    `t` (seconds) and the `counts` columns (32-bit integers, to keep DuckDB's sort narrow: the change
    of each count at `t`). Within a key, every count's changes must sum to 0 (all that starts on a
    key ends on it), so each count is back at 0 after the key's last event. The level after an event
    lasts until the key's next event; events at one instant are taken together (the zero-length
    levels between them count nothing), so the order of ties does not matter.

    Rows: `key`, `count` (the name of the count), `level` (Int64, > 0) and `seconds` (Float64, the
    time at that level summed over the key's steps). Keys and counts never above 0 have no rows.

    `events_count`, how many events there are (about), splits the keys into groups sorted one after
    the other, each of about `EVENTS_PER_SORT` events, so that the sort's memory does not grow with
    the trace (each group reads `events` again).
    """
    names = list(counts)
    columns = ", ".join(f"CAST({name} AS INTEGER) AS {name}" for name in names)
    groups = max(1, math.ceil((events_count or 0) / EVENTS_PER_SORT))
    sums: list[pl.DataFrame] = []  # per batch: key, count, level, seconds
    for group in range(groups):
        where = f"WHERE (key % {groups} + {groups}) % {groups} = {group}" if groups > 1 else ""
        sql = f"SELECT key, CAST(t AS DOUBLE) AS t, {columns} FROM {events} {where} ORDER BY key, t"
        sums += _swept(ctx.batches(sql, batch_rows), len(names))
    if not sums:
        return pl.DataFrame(schema=LEVEL_SECONDS_SCHEMA)
    frame = pl.concat(sums).group_by("key", "count", "level").agg(pl.col("seconds").sum())
    return frame.select("key", pl.col("count").replace_strict(dict(enumerate(names)), return_dtype=pl.String),
                        "level", "seconds")


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
