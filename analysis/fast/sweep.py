"""Fast path of the interval sweep (`sweeps.level_seconds`): the seconds a running count spends at
each level, whose reference is the window query `sweeps.level_seconds_sql`.

Each event is packed into one 64-bit integer (the key, the time since the first event in whole
seconds, or in microseconds when some time has a fraction of a second, and the event's kind: start
or end and its weights), so the sort is one sort of integers, done here by Polars, several times
faster than DuckDB's sort of the same events by two columns. The running sums are then taken over
the sorted integers in batches. When the events are many, the intervals are first written once to
scratch Parquet files, one per group of keys, and each group is packed and sorted on its own: the
memory stays the same whatever the number of events, and the intervals are read from the catalog
once, not once per group. Time at a level is summed in whole ticks (exact in a DOUBLE below 2^53)
and divided by the ticks per second once, as the reference divides its sum of microseconds: the
seconds are the reference's to the bit.
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
from ddlx.analysis.fast import fast_paths
from ddlx.analysis.sql import MICRO
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
PACKED_BITS = 63

def level_seconds(ctx: TraceContext, typed: str, counts: Sequence[str], intervals_count: int | None = None,
                  batch_rows: int | None = None) -> pl.DataFrame | None:
    """The rows of `sweeps.level_seconds_sql` over `typed` (its intervals: `key` BIGINT, `start_us`
    and `end_us` BIGINT microseconds, and the `counts` columns, INTEGER weights, none NULL), by the
    packed sweep: `key`, `count` (the count's index in `counts`, Int8), `level`, `seconds`, in no
    order. None when fast paths are off, or when a group's keys and times do not fit one packed
    event (`PACKED_BITS`): the reference query then runs.

    `intervals_count`, how many intervals there are (about), splits the keys into groups of about
    `EVENTS_PER_SORT` events (two per interval), written once to scratch files in DuckDB's temporary
    folder and sorted one after the other, so that the memory does not grow with the trace.
    `batch_rows` (default `BATCH_ROWS`) sorted events are summed at a time."""
    if not fast_paths():
        return None
    names = list(counts)
    groups = max(1, math.ceil(2 * (intervals_count or 0) / EVENTS_PER_SORT))
    swept: list[pl.DataFrame] = []  # per group of keys: key, count, level, seconds
    with _key_groups(ctx, typed, groups) as parts:
        for part in parts:
            packing = _Packing.of(ctx, part, names, groups)
            if packing is None:
                continue
            if packing.bits > PACKED_BITS:
                return None
            sums = _swept(packing.sorted_events(ctx, part), packing, batch_rows or BATCH_ROWS)
            if sums:  # a key's steps may span batches, never groups
                summed = pl.concat(sums).group_by("key", "count", "level").agg(pl.col("ticks").sum())
                # NumPy's true division, as the reference divides (Polars multiplies by the reciprocal)
                seconds = summed["ticks"].to_numpy() / packing.ticks_per_second
                swept.append(summed.select("key", "count", "level", pl.Series("seconds", seconds)))
    schema = {"key": pl.Int64, "count": pl.Int8, "level": pl.Int64, "seconds": pl.Float64}
    return pl.concat(swept) if swept else pl.DataFrame(schema=schema)


@dataclass(frozen=True)
class _Packing:
    """How the events of one group of keys are packed into 63-bit integers, high bits to low: the
    key's rank in the group ((key - first key) // groups: the group's keys differ by multiples of
    `groups`), the time since the first event in ticks of `unit_us` microseconds (a second when
    every time is a whole second, else a microsecond), and the kind (bit 0 set for an end, then
    each count's weight less the lowest, in `weight_bits[i]` bits)."""

    names: tuple[str, ...]
    first_key: int
    groups: int
    first_us: int
    unit_us: int
    time_bits: int
    key_bits: int
    weight_low: tuple[int, ...]
    weight_bits: tuple[int, ...]
    intervals: int

    @property
    def ticks_per_second(self) -> float:
        return float(MICRO // self.unit_us)

    @property
    def kind_bits(self) -> int:
        return 1 + sum(self.weight_bits)

    @property
    def key_shift(self) -> int:
        return self.kind_bits + self.time_bits

    @property
    def bits(self) -> int:
        """Bits a packed event of the group takes."""
        return self.key_bits + self.time_bits + self.kind_bits

    @classmethod
    def of(cls, ctx: TraceContext, part: str, names: list[str], groups: int) -> _Packing | None:
        """The packing of the intervals of `part`; None when it has none."""
        ranges = ", ".join(f"min({name}) AS low_{i}, max({name}) AS high_{i}" for i, name in enumerate(names))
        row = ctx.one_row(f"""SELECT count(*) AS intervals, min(key) AS first_key, max(key) AS last_key,
                                     least(min(start_us), min(end_us)) AS first_us,
                                     greatest(max(start_us), max(end_us)) AS last_us,
                                     bool_and(start_us % {MICRO} = 0 AND end_us % {MICRO} = 0) AS whole, {ranges}
                             FROM {part}""")
        if not row["intervals"]:
            return None
        unit_us = MICRO if row["whole"] else 1
        weight_low = tuple(int(row[f"low_{i}"] or 0) for i in range(len(names)))
        weight_bits = tuple(int((row[f"high_{i}"] or 0) - low).bit_length() for i, low in enumerate(weight_low))
        return cls(tuple(names), int(row["first_key"]), groups, int(row["first_us"]), unit_us,
                   ((int(row["last_us"]) - int(row["first_us"])) // unit_us).bit_length(),
                   ((int(row["last_key"]) - int(row["first_key"])) // groups).bit_length(),
                   weight_low, weight_bits, int(row["intervals"]))

    def sorted_events(self, ctx: TraceContext, part: str) -> np.ndarray:
        """The group's events packed and sorted (int64)."""
        weights = "".join(f" | (CAST({name} - {low} AS BIGINT) << {shift})"
                          for name, low, shift in zip(self.names, self.weight_low, self._weight_shifts()))

        def event(time: str, end: int) -> str:
            return (f"(((key - {self.first_key}) // {self.groups}) << {self.key_shift})"
                    f" | ((({time} - {self.first_us}) // {self.unit_us}) << {self.kind_bits}){weights} | {end}")

        sql = f"SELECT {event('start_us', 0)} AS opens, {event('end_us', 1)} AS closes FROM {part}"
        intervals = self.intervals
        events = np.empty(2 * intervals, dtype=np.int64)  # the starts, then the ends
        filled = 0
        for batch in ctx.catalog.batches(sql, FETCH_ROWS):
            rows = batch.num_rows
            if filled + rows > intervals:
                raise CatalogError("interval sweep: the intervals changed while they were read")
            events[filled:filled + rows] = int64_values(batch.column(0))
            events[intervals + filled:intervals + filled + rows] = int64_values(batch.column(1))
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
    """The ticks at each level above 0 per key and count (the count's index), summed per `rows`
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
                sums.append(_tick_sums(keys, row * width + levels, width, ticks, i))
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


def _tick_sums(keys: np.ndarray, cell: np.ndarray, width: int, ticks: np.ndarray, count: int) -> pl.DataFrame:
    """Ticks summed per key and level above 0 of one batch's steps, each step in `cell` (its key's
    row times `width` plus its level) lasting `ticks`."""
    sums = np.bincount(cell, weights=ticks, minlength=len(keys) * width).reshape(len(keys), width)
    sums[:, 0] = 0
    row, level = np.nonzero(sums)
    return pl.DataFrame({"key": keys[row], "count": np.full(len(row), count, dtype=np.int8),
                         "level": level.astype(np.int64), "ticks": sums[row, level]})


def int64_values(array: pa.Array) -> np.ndarray:
    """The values of an int64 Arrow array without NULLs, read from its buffer (pyarrow's own
    conversion to NumPy imports pandas, a fifth of a second)."""
    if array.type != pa.int64() or array.null_count:
        raise CatalogError(f"interval sweep: events of type {array.type} with {array.null_count} NULLs, "
                           "expected int64 without NULLs")
    return np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array), offset=8 * array.offset)
