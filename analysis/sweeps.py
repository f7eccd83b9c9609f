"""Interval sweeps over DuckDB results: the time a running count spends at each level.

A sweep turns intervals into +w/-w events, sorts them by key and time and keeps running sums.
Each event is packed into one 64-bit integer (the key, the time since the first event in whole
seconds, or in microseconds when some time has a fraction of a second, and the event's kind: start
or end and its weights), so the sort is one sort of integers, done here by NumPy, several times
faster than DuckDB's sort of the same events by two columns. The running sums are then taken over
the sorted integers in batches. When the events are many, the intervals are first written once to
scratch Parquet files, one per group of keys, and each group is packed and sorted on its own: the
memory stays the same whatever the number of events, and the intervals are read from the catalog
once, not once per group.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ddlx.analysis.context import TraceContext
from ddlx.analysis.sql import sql_float
from ddlx.datasets.sqltext import sql_string
from ddlx.errors import CatalogError, storage_errors

#: Sorted events summed at a time (their running sums and steps stay in the processor's cache).
BATCH_ROWS = 1 << 17

#: Packed events taken from DuckDB at a time.
FETCH_ROWS = 1 << 20

#: Events packed and sorted at a time: 8 bytes each, and as many again for the sorted copy (16 M
#: events hold 128 MiB, 256 MiB while they are sorted).
EVENTS_PER_SORT = 1 << 24

#: Bits of a packed event: a sign bit is left free.
_PACKED_BITS = 63


def level_seconds(ctx: TraceContext, intervals: str, counts: Sequence[str], intervals_count: int | None = None,
                  batch_rows: int = BATCH_ROWS) -> pl.DataFrame:
    """Seconds each running count spends at each level above 0, per key.

    `intervals` is a FROM item with `key` (an integer: what the counts are kept for, e.g. a machine),
    `t_start` and `t_end` (seconds, finite, `t_end >= t_start`) and the `counts` columns (integers:
    what the interval adds to each count while it lasts, e.g. 1, or 0 for an interval a count leaves
    out; NULL counts as 0); a row without a key or a time counts nothing. The level after a change
    lasts until the key's next change; changes at one instant are taken together (the zero-length
    levels between them count nothing), so the order of ties does not matter. Times are taken as
    they are when all are whole seconds, else to the microsecond.

    Rows (`level_seconds_schema`): `key`, `count` (the name of the count), `level` (Int64, > 0) and
    `seconds` (Float64, the time at that level summed over the key's steps). Keys and counts never
    above 0 have no rows.

    `intervals_count`, how many intervals there are (about), splits the keys into groups of about
    `EVENTS_PER_SORT` events (two per interval), written once to scratch files in DuckDB's temporary
    folder and sorted one after the other, so that the memory does not grow with the trace.
    """
    names = list(counts)
    weights = ", ".join(f"CAST(coalesce({name}, 0) AS INTEGER) AS {name}" for name in names)
    typed = (f"(SELECT CAST(key AS BIGINT) AS key, CAST(t_start AS DOUBLE) AS t_start, "
             f"CAST(t_end AS DOUBLE) AS t_end, {weights} FROM {intervals} "
             f"WHERE key IS NOT NULL AND t_start IS NOT NULL AND t_end IS NOT NULL)")
    groups = max(1, math.ceil(2 * (intervals_count or 0) / EVENTS_PER_SORT))
    swept: list[pl.DataFrame] = []  # per group of keys: key, count, level, seconds
    with _key_groups(ctx, typed, groups) as parts:
        for part in parts:
            packing = _Packing.of(ctx, part, names, groups)
            if packing is None:
                continue
            sums = _swept(packing.sorted_events(ctx, part), packing, batch_rows)
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


@dataclass(frozen=True)
class _Packing:
    """How the events of one group of keys are packed into 63-bit integers, high bits to low: the
    key's rank in the group ((key - first key) // groups: the group's keys differ by multiples of
    `groups`), the time since the first event in `ticks_per_second` ticks, and the kind (bit 0 set
    for an end, then each count's weight less the lowest, in `weight_bits[i]` bits)."""

    names: tuple[str, ...]
    first_key: int
    groups: int
    first_time: float
    ticks_per_second: float
    time_bits: int
    weight_low: tuple[int, ...]
    weight_bits: tuple[int, ...]
    intervals: int

    @property
    def kind_bits(self) -> int:
        return 1 + sum(self.weight_bits)

    @property
    def key_shift(self) -> int:
        return self.kind_bits + self.time_bits

    @classmethod
    def of(cls, ctx: TraceContext, part: str, names: list[str], groups: int) -> _Packing | None:
        """The packing of the intervals of `part`; None when it has none."""
        ranges = ", ".join(f"min({name}) AS low_{i}, max({name}) AS high_{i}" for i, name in enumerate(names))
        row = ctx.one_row(f"""SELECT count(*) AS intervals, min(key) AS first_key, max(key) AS last_key,
                                     least(min(t_start), min(t_end)) AS first_time,
                                     greatest(max(t_start), max(t_end)) AS last_time,
                                     bool_and(t_start = round(t_start) AND t_end = round(t_end)) AS whole, {ranges}
                             FROM {part}""")
        if not row["intervals"]:
            return None
        if not all(math.isfinite(row[f]) for f in ("first_time", "last_time")):
            raise CatalogError("interval sweep: a time is not a finite number of seconds")
        ticks_per_second = 1.0 if row["whole"] else 1e6
        # one tick to spare: DuckDB rounds a half tick up, Python to even
        span = round((row["last_time"] - row["first_time"]) * ticks_per_second)
        weight_low = tuple(int(row[f"low_{i}"] or 0) for i in range(len(names)))
        weight_bits = tuple(int((row[f"high_{i}"] or 0) - low).bit_length() for i, low in enumerate(weight_low))
        packing = cls(tuple(names), int(row["first_key"]), groups, float(row["first_time"]), ticks_per_second,
                      (span + 1).bit_length(), weight_low, weight_bits, int(row["intervals"]))
        key_bits = ((int(row["last_key"]) - packing.first_key) // groups).bit_length()
        if key_bits + packing.time_bits + packing.kind_bits > _PACKED_BITS:
            raise CatalogError(f"interval sweep: keys {row['first_key']}..{row['last_key']} ({key_bits} bits) and "
                               f"{span} ticks of 1/{ticks_per_second:g} s ({packing.time_bits} bits) do not fit "
                               f"one 64-bit event")
        return packing

    def sorted_events(self, ctx: TraceContext, part: str) -> np.ndarray:
        """The group's events packed and sorted (int64)."""
        weights = "".join(f" | (CAST({name} - {low} AS BIGINT) << {shift})"
                          for name, low, shift in zip(self.names, self.weight_low, self._weight_shifts()))

        def event(time: str, end: int) -> str:
            return (f"(((key - {self.first_key}) // {self.groups}) << {self.key_shift})"
                    f" | (CAST(round(({time} - CAST({sql_float(self.first_time)} AS DOUBLE))"
                    f" * CAST({sql_float(self.ticks_per_second)} AS DOUBLE)) AS BIGINT) << {self.kind_bits})"
                    f"{weights} | {end}")

        sql = f"SELECT {event('t_start', 0)} AS opens, {event('t_end', 1)} AS closes FROM {part}"
        intervals = self.intervals
        events = np.empty(2 * intervals, dtype=np.int64)  # the starts, then the ends
        filled = 0
        for batch in ctx.batches(sql, FETCH_ROWS):
            rows = batch.num_rows
            if filled + rows > intervals:
                raise CatalogError("interval sweep: the intervals changed while they were read")
            events[filled:filled + rows] = _int64_values(batch.column(0))
            events[intervals + filled:intervals + filled + rows] = _int64_values(batch.column(1))
            filled += rows
        if filled < intervals:
            raise CatalogError("interval sweep: the intervals changed while they were read")
        # Polars sorts 64-bit integers two to three times faster than NumPy (15 M events: 0.3 s
        # against 0.8-1.0 s on one thread), into a copy: the group's events are held twice at the end
        return pl.Series(events).sort(multithreaded=ctx.sorts_in_parallel).to_numpy()

    def _weight_shifts(self) -> list[int]:
        shifts, shift = [], 1
        for bits in self.weight_bits:
            shifts.append(shift)
            shift += bits
        return shifts

    def changes(self) -> np.ndarray:
        """Per count (rows) and kind of event (columns, the kind's bits as a number): what the
        event adds to the count."""
        kinds = np.arange(1 << self.kind_bits, dtype=np.int64)
        sign = 1 - 2 * (kinds & 1)
        return np.stack([sign * (((kinds >> shift) & ((1 << bits) - 1)) + low)
                         for shift, bits, low in zip(self._weight_shifts(), self.weight_bits, self.weight_low)])


@contextlib.contextmanager
def _key_groups(ctx: TraceContext, intervals: str, groups: int) -> Iterator[list[str]]:
    """FROM items holding `intervals` split into `groups` groups of keys: for one group, a
    temporary table of them (read twice, by `_Packing.of` and `sorted_events`: the query runs
    once); else one scratch Parquet folder per group (key modulo `groups`), written in one pass
    and removed at the end."""
    if groups == 1:
        table = "ddlx_sweep_intervals"
        ctx.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {intervals}")
        try:
            yield [table]
        finally:
            ctx.execute(f"DROP TABLE IF EXISTS {table}")
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


def _swept(events: np.ndarray, packing: _Packing, rows: int) -> list[pl.DataFrame]:
    """The seconds at each level above 0 per key and count (the count's index), summed per `rows`
    sorted events. After a key's last event every count is back where it was before the key's
    first, so a step at a level above 0 always ends at an event of the same key: its length is the
    difference of the packed events' key and time bits, and the key's boundaries need no test."""
    changes = packing.changes()
    running = np.zeros(len(changes), dtype=np.int64)
    kind_mask = (1 << packing.kind_bits) - 1
    sums: list[pl.DataFrame] = []
    for start in range(0, len(events) - 1, rows):
        chunk = events[start:start + rows + 1]  # and the event that ends the chunk's last step
        kind = chunk[:-1] & kind_mask
        ticks = np.diff(chunk >> packing.kind_bits)
        row, ranks = _key_rows(chunk[:-1] >> packing.key_shift)
        keys = ranks * packing.groups + packing.first_key
        for i, change in enumerate(changes):
            levels = np.cumsum(change[kind])
            levels += running[i]
            running[i] = levels[-1]
            width = int(levels.max()) + 1
            if width > 1:
                np.maximum(levels, 0, out=levels)  # levels at or below 0 fall in column 0, left out
                sums.append(_summed_steps(keys, row * width + levels, width, ticks, packing.ticks_per_second, i))
    return sums


def _key_rows(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted key ranks: each one's row in a table of the ranks between the first and the last
    (when they are about consecutive), else among the distinct ranks; and the rank of each row."""
    span = int(ranks[-1] - ranks[0]) + 1
    if span <= len(ranks):
        return ranks - ranks[0], ranks[0] + np.arange(span, dtype=ranks.dtype)
    changes = ranks[1:] != ranks[:-1]
    return (np.concatenate([[0], np.cumsum(changes)]),
            ranks[np.concatenate([[0], np.flatnonzero(changes) + 1])])


def _summed_steps(keys: np.ndarray, cell: np.ndarray, width: int, ticks: np.ndarray, ticks_per_second: float,
                  count: int) -> pl.DataFrame:
    """Seconds summed per key and level above 0 of one batch's steps, each step in `cell` (its key's
    row times `width` plus its level) lasting `ticks`."""
    sums = np.bincount(cell, weights=ticks, minlength=len(keys) * width).reshape(len(keys), width)
    sums[:, 0] = 0
    row, level = np.nonzero(sums)
    return pl.DataFrame({"key": keys[row], "count": np.full(len(row), count, dtype=np.int8),
                         "level": level.astype(np.int64), "seconds": sums[row, level] / ticks_per_second})


def _int64_values(array: pa.Array) -> np.ndarray:
    """The values of an int64 Arrow array without NULLs, read from its buffer (pyarrow's own
    conversion to NumPy imports pandas, a fifth of a second)."""
    if array.type != pa.int64() or array.null_count:
        raise CatalogError(f"interval sweep: events of type {array.type} with {array.null_count} NULLs, "
                           "expected int64 without NULLs")
    return np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array), offset=8 * array.offset)
