"""Interval sweeps over DuckDB results: the time a running count spends at each level.

Each interval adds its weight to a count of its key from its start to its end; the sweep gives,
per key and count, the seconds the count spends at each level above 0. `level_seconds_sql` is the
definition, a window query; `ddlx.analysis.fast.sweep` gives the same rows faster (one sort of
packed 64-bit events, memory bounded whatever the number of events).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import sweep as fast_sweep
from ddlx.analysis.sql import MICRO


def level_seconds(ctx: TraceContext, intervals: str, counts: Sequence[str], intervals_count: int | None = None,
                  batch_rows: int | None = None) -> pl.DataFrame:
    """Seconds each running count spends at each level above 0, per key.

    `intervals` is a FROM item with `key` (an integer: what the counts are kept for, e.g. a machine),
    `t_start` and `t_end` (seconds, `t_end >= t_start`) and the `counts` columns (integers: what the
    interval adds to each count while it lasts, e.g. 1, or 0 for an interval a count leaves out;
    NULL counts as 0); a row without a key or a time counts nothing. Times are taken to the
    microsecond (`typed_intervals_sql`). The level after a change lasts until the key's next
    change; changes at one instant are taken together (the zero-length levels between them count
    nothing), so the order of ties does not matter (`level_seconds_sql`).

    Rows (`level_seconds_schema`), sorted by key, count and level: `key`, `count` (the name of the
    count), `level` (Int64, > 0) and `seconds` (Float64, the time at that level summed over the
    key's steps). Keys and counts never above 0 have no rows. `intervals_count` (about how many
    intervals there are) and `batch_rows` tune the fast path (`ddlx.analysis.fast.sweep`).
    """
    names = list(counts)
    typed = typed_intervals_sql(intervals, names)
    found = fast_sweep.level_seconds(ctx, typed, names, intervals_count, batch_rows)
    if found is None:
        found = ctx.query(level_seconds_sql(typed, names))
    schema = level_seconds_schema(names)
    if found.is_empty():
        return pl.DataFrame(schema=schema)
    return found.sort("key", "count", "level").select(
        "key", pl.col("count").replace_strict(dict(enumerate(names)), return_dtype=schema["count"]),
        pl.col("level").cast(pl.Int64), pl.col("seconds").cast(pl.Float64))


def level_seconds_schema(counts: Sequence[str]) -> pl.Schema:
    """Columns of `level_seconds` (`count` an enum of the counts' names: one small integer a row)."""
    return pl.Schema({"key": pl.Int64, "count": pl.Enum(list(counts)), "level": pl.Int64, "seconds": pl.Float64})


def typed_intervals_sql(intervals: str, counts: Sequence[str]) -> str:
    """A FROM item: the rows of `intervals` with a key and both times, as `key` (BIGINT),
    `start_us` and `end_us` (the times in whole microseconds, rounded half away from zero, BIGINT)
    and each of the `counts` (INTEGER, NULL as 0)."""
    weights = "".join(f", CAST(coalesce({name}, 0) AS INTEGER) AS {name}" for name in counts)

    def micros(time: str) -> str:
        return f"CAST(round(CAST({time} AS DOUBLE) * {MICRO}) AS BIGINT)"

    return (f"(SELECT CAST(key AS BIGINT) AS key, {micros('t_start')} AS start_us, {micros('t_end')} AS end_us"
            f"{weights} FROM {intervals} WHERE key IS NOT NULL AND t_start IS NOT NULL AND t_end IS NOT NULL)")


def level_seconds_sql(typed: str, counts: Sequence[str]) -> str:
    """The query that defines `level_seconds` over `typed` (`typed_intervals_sql`): per key and
    count (`count`, its index in `counts`), each level above 0 and the seconds spent at it.

    Each interval adds its weight to each count at its start and takes it off at its end; a key's
    changes at one instant are summed into one; the level after a change is the sum of the key's
    changes so far and lasts until its next change. Seconds are the microseconds at a level summed
    (exactly) and divided by a million once."""
    indexes = ", ".join(str(i) for i in range(len(counts)))
    return f"""
WITH events AS (
    SELECT key, start_us AS t_us, unnest([{indexes}]) AS count, unnest([{', '.join(counts)}]) AS change FROM {typed}
    UNION ALL
    SELECT key, end_us, unnest([{indexes}]), unnest([{', '.join(f'-{c}' for c in counts)}]) FROM {typed}),
changes AS (SELECT key, count, t_us, sum(change) AS change FROM events GROUP BY key, count, t_us),
levels AS (
    SELECT key, count, sum(change) OVER w AS level, lead(t_us) OVER w - t_us AS lasting_us
    FROM changes WINDOW w AS (PARTITION BY key, count ORDER BY t_us ROWS UNBOUNDED PRECEDING))
SELECT key, CAST(count AS TINYINT) AS count, CAST(level AS BIGINT) AS level,
       CAST(sum(lasting_us) AS DOUBLE) / {MICRO} AS seconds
FROM levels WHERE level > 0 GROUP BY key, count, level"""
