"""The streamed event sweep (`ddlx.analysis.sweeps.level_seconds`, its fast path
`ddlx.analysis.fast.sweep`) against counting by hand, one second at a time, over random intervals,
with batches small enough to cut through keys and ties."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from ddlx.analysis.connection import CatalogConnection
from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import sweep as fast_sweep
from ddlx.analysis.sweeps import level_seconds, typed_intervals_sql
from ddlx.errors import CatalogError, StorageError


def _context(scratch: Path | None = None) -> TraceContext:
    con = duckdb.connect()
    if scratch is not None:
        con.execute(f"SET temp_directory = '{scratch}'")
    return TraceContext(home=Path("."), trace="t", catalog=CatalogConnection(con, "t"), tables=set(), synthetic=False,
                        source_tz=None)


def _intervals(seed: int) -> list[tuple[int, int, int, bool]]:
    """(key, start, end, counted by the second count) with integer seconds; many ties."""
    rng = random.Random(seed)
    rows = []
    for key in rng.sample(range(1, 50), 6):
        for _ in range(rng.randint(1, 12)):
            start = rng.randint(0, 30)
            rows.append((key, start, start + rng.randint(0, 15), rng.random() < 0.6))
    return rows


def _by_hand(rows: list[tuple[int, int, int, bool]]) -> Counter:
    """(key, count, level) -> seconds, from the number of intervals covering each second."""
    seconds: Counter = Counter()
    for key in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == key]
        for second in range(min(r[1] for r in mine), max(r[2] for r in mine)):
            covering = [r for r in mine if r[1] <= second < r[2]]
            for count, level in (("every", len(covering)), ("counted", sum(r[3] for r in covering))):
                if level > 0:
                    seconds[(key, count, level)] += 1
    return seconds


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 7, 1000])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("events_per_sort", [None, 9])
def test_level_seconds_match_counting_second_by_second(seed: int, batch_rows: int, events_per_sort: int | None,
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rows = _intervals(seed)
    ctx = _context(tmp_path / "spill")
    ctx.con.register("intervals", pl.DataFrame(rows, schema=["key", "s", "e", "counted"], orient="row"))
    if events_per_sort:  # keys swept in several groups, written to scratch files and sorted one by one
        monkeypatch.setattr(fast_sweep, "EVENTS_PER_SORT", events_per_sort)
    frame = level_seconds(ctx, """(SELECT key, s AS t_start, e AS t_end, 1 AS every,
                                          CASE WHEN counted THEN 1 ELSE 0 END AS counted FROM intervals)""",
                          ("every", "counted"), intervals_count=len(rows), batch_rows=batch_rows)
    got = {(r["key"], r["count"], r["level"]): r["seconds"] for r in frame.to_dicts()}
    assert got == dict(_by_hand(rows))
    assert frame.schema == pl.Schema({"key": pl.Int64, "count": pl.Enum(["every", "counted"]), "level": pl.Int64,
                                      "seconds": pl.Float64})
    assert not list((tmp_path / "spill").glob("sweep-*"))  # the scratch files are gone


def _by_segments(rows: list[tuple[int, Fraction, Fraction, list[int | None]]]) -> dict:
    """(key, count index, level) -> seconds (exact), from the pieces between each key's distinct
    interval ends, each at the summed weights (None as 0) of the intervals covering it."""
    seconds: dict = defaultdict(Fraction)
    for key in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == key]
        ends = sorted({r[1] for r in mine} | {r[2] for r in mine})
        for a, b in zip(ends, ends[1:]):
            covering = [r for r in mine if r[1] <= a and b <= r[2]]
            for count in range(len(mine[0][3])):
                level = sum(r[3][count] or 0 for r in covering)
                if level > 0:
                    seconds[(key, count, level)] += b - a
    return dict(seconds)


@pytest.mark.parametrize("batch_rows", [1, 5, 1000])
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("events_per_sort", [None, 11])
def test_fractional_times_weights_and_far_apart_keys(seed: int, batch_rows: int, events_per_sort: int | None,
                                                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Times with milliseconds (taken to the microsecond), weights from -2 to 3 and NULL, negative
    keys and keys thousands apart: the levels and their exact seconds."""
    rng = random.Random(seed)
    rows = []
    for key in rng.sample([-7, -1, 0, 3, 1000, 5001], 4):
        for _ in range(rng.randint(1, 10)):
            start = Fraction(rng.randint(0, 20000), 1000) + 1_500_000_000
            weights = [rng.choice([-2, 0, 1, 1, 2, 3, None]) for _ in range(3)]
            rows.append((key, start, start + Fraction(rng.randint(0, 9000), 1000), weights))
    ctx = _context(tmp_path / "spill")
    ctx.con.register("intervals", pl.DataFrame(
        [(k, float(s), float(e), *w) for k, s, e, w in rows], schema=["key", "s", "e", "a", "b", "c"], orient="row"))
    if events_per_sort:
        monkeypatch.setattr(fast_sweep, "EVENTS_PER_SORT", events_per_sort)
    frame = level_seconds(ctx, "(SELECT key, s AS t_start, e AS t_end, a, b, c FROM intervals)", ("a", "b", "c"),
                          intervals_count=len(rows), batch_rows=batch_rows)
    names = ["a", "b", "c"]
    got = {(r["key"], names.index(r["count"]), r["level"]): r["seconds"] for r in frame.to_dicts()}
    expected = _by_segments(rows)
    assert got.keys() == expected.keys()
    for cell, seconds in expected.items():
        assert got[cell] == pytest.approx(float(seconds), rel=1e-12, abs=1e-9)


def test_rows_without_a_key_or_a_time_count_nothing() -> None:
    ctx = _context()
    rows = "(1, 0.0, 10.0, 1), (1, 5.0, 8.0, NULL), (NULL, 0.0, 4.0, 1), (1, NULL, 4.0, 1), (1, 2.0, NULL, 1)"
    frame = level_seconds(ctx, f"(SELECT * FROM (VALUES {rows}) AS v(key, t_start, t_end, n))", ("n",))
    assert frame.select("key", "level", "seconds").rows() == [(1, 1, 10.0)]


def test_keys_and_times_too_far_apart_for_one_packed_event_are_swept_by_the_reference_query() -> None:
    """Keys 2^40 apart (41 bits) and a span of 10^6 s with a fraction of a second (40 bits of
    microseconds) do not fit one 63-bit packed event: the packed sweep declines and the defining
    query sweeps them. Times beyond 64 bits of microseconds are a catalog error."""
    ctx = _context()
    far = 2 ** 40 + 1
    intervals = f"(SELECT * FROM (VALUES (1, 0.5, 1e6, 1), ({far}, 0.5, 1e6, 1)) AS v(key, t_start, t_end, n))"
    assert fast_sweep.level_seconds(ctx, typed_intervals_sql(intervals, ["n"]), ["n"]) is None
    swept = level_seconds(ctx, intervals, ("n",)).select("key", "level", "seconds").rows()
    assert swept == [(1, 1, 999_999.5), (far, 1, 999_999.5)]
    with pytest.raises(CatalogError, match="analysis query failed"):
        level_seconds(ctx, "(SELECT 1 AS key, 0.5 AS t_start, 1e13 AS t_end, 1 AS n)", ("n",))


def test_level_seconds_in_groups_reads_the_intervals_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Split into groups, the intervals are read once, by the scratch write: the groups are sorted
    from the scratch files, so the sweep works with the source gone before the first sort."""
    ctx = _context(tmp_path)
    ctx.execute("CREATE TABLE source AS SELECT range AS key, range AS t_start, 2 * range + 5 AS t_end, 1 AS n "
                "FROM range(40)")
    monkeypatch.setattr(fast_sweep, "EVENTS_PER_SORT", 4)
    sort = CatalogConnection.batches

    def drop_then_sort(self: CatalogConnection, sql: str, rows: int) -> Iterator[pa.RecordBatch]:
        self.con.execute("DROP TABLE IF EXISTS source")
        return sort(self, sql, rows)

    monkeypatch.setattr(CatalogConnection, "batches", drop_then_sort)
    frame = level_seconds(ctx, "source", ("n",), intervals_count=40)
    assert dict(zip(frame["key"], frame["seconds"])) == {key: float(key + 5) for key in range(40)}


def test_level_seconds_without_events_is_empty() -> None:
    ctx = _context()
    frame = level_seconds(ctx, "(SELECT 1 AS key, 0.0 AS t_start, 1.0 AS t_end, 1 AS n WHERE false)", ("n",))
    assert frame.is_empty() and frame.columns == ["key", "count", "level", "seconds"]


def test_a_failing_sweep_query_is_a_catalog_error() -> None:
    with pytest.raises(CatalogError, match="analysis query failed"):
        level_seconds(_context(), "no_such_table", ("n",))


def test_a_batch_stream_left_early_frees_the_connection() -> None:
    ctx = _context()
    batches = ctx.catalog.batches("SELECT * FROM range(2000000) ORDER BY range DESC", 1000)
    assert next(batches).column(0).to_pylist()[:2] == [1999999, 1999998]
    batches.close()
    assert ctx.query("SELECT 42 AS x")["x"].to_list() == [42]


@pytest.mark.usefixtures("speedups_on")  # the packed sweep's scratch files
def test_a_scratch_folder_that_cannot_be_made_is_a_storage_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    ctx = _context(blocker / "spill")
    monkeypatch.setattr(fast_sweep, "EVENTS_PER_SORT", 2)
    with pytest.raises(StorageError, match=r"file/spill: Not a directory while making the sweep's scratch folder"):
        level_seconds(ctx, "(SELECT 1 AS key, 0 AS t_start, 1 AS t_end, 1 AS n)", ("n",), intervals_count=4)


def test_event_columns_are_read_from_their_buffers_at_their_offset() -> None:
    values = list(range(-5, 20)) + [2 ** 62, -(2 ** 62)]
    column = pa.array(values, pa.int64()).slice(3, 20)  # a slice starts inside its buffer
    assert fast_sweep.int64_values(column).tolist() == values[3:23]
    with pytest.raises(CatalogError, match="expected int64 without NULLs"):
        fast_sweep.int64_values(pa.array([1, None, 3], pa.int64()))
    with pytest.raises(CatalogError, match="expected int64 without NULLs"):
        fast_sweep.int64_values(pa.array([1, 2], pa.int32()))
