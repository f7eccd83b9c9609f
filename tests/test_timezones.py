"""Wall clock -> UTC in SQL: the arithmetic path gives the instants Python's zoneinfo gives."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import duckdb
import pytest

from ddlx.datasets.timezones import (
    fixed_offset_since,
    utc_from_offset_sql,
    utc_from_zone_sql,
    wall_clock_from_utc_sql,
)


def test_zones_with_and_without_daylight_saving() -> None:
    since, seconds = fixed_offset_since("Asia/Shanghai")
    assert seconds == 8 * 3600
    # China's last daylight-saving period ended in September 1991.
    assert datetime(1991, 9, 1) < since < datetime(1991, 10, 1)
    assert fixed_offset_since("UTC") == (datetime.min, 0)
    assert fixed_offset_since("America/Los_Angeles") is None
    assert fixed_offset_since("Europe/Berlin") is None


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "Asia/Kolkata", "UTC", "America/Los_Angeles"])
def test_instants_match_zoneinfo(zone: str) -> None:
    """Every 7 h 13 min from 1985 to 2030 (crossing Shanghai's 1991 change), read in `zone`."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rows = con.execute(f"""
        SELECT t, epoch({utc_from_zone_sql('t', zone)}) FROM (
            SELECT TIMESTAMP '1985-01-01' + INTERVAL (i * 433) MINUTE AS t FROM range(0, 54000, 7) AS r(i))
        ORDER BY t""").fetchall()
    walls, got = [r[0] for r in rows], [r[1] for r in rows]
    info = ZoneInfo(zone)
    expected = []
    for wall in walls:
        # Wall clocks that do not exist (spring forward) or repeat (fall back) are left out:
        # for those zoneinfo and DuckDB choose differently, and the arithmetic path never sees them.
        aware = wall.replace(tzinfo=info)
        if aware.astimezone(timezone.utc).astimezone(info).replace(tzinfo=None) != wall or \
                wall.replace(tzinfo=info, fold=1).utcoffset() != aware.utcoffset():
            expected.append(None)
            continue
        expected.append(aware.timestamp())
    pairs = [(g, e) for g, e in zip(got, expected) if e is not None]
    assert len(pairs) > 6_000
    assert all(g == e for g, e in pairs)


def test_offset_arithmetic() -> None:
    con = duckdb.connect()
    sql = utc_from_offset_sql("TIMESTAMP '2017-11-05 01:30:00'", "-25200")  # PDT: UTC-7
    assert con.execute(f"SELECT epoch({sql})").fetchall()[0][0] == \
        datetime(2017, 11, 5, 8, 30, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC", "America/Los_Angeles"])
def test_wall_clocks_of_instants_match_zoneinfo(zone: str) -> None:
    """Every 7 h 13 min from 1985 to 2030 as an instant, read as a wall clock in `zone`."""
    con = duckdb.connect()
    rows = con.execute(f"""
        SELECT epoch(t), {wall_clock_from_utc_sql('t', zone)} FROM (
            SELECT TIMESTAMPTZ '1985-01-01 00:00:00+00' + INTERVAL (i * 433) MINUTE AS t
            FROM range(0, 54000, 7) AS r(i))""").fetchall()
    info = ZoneInfo(zone)
    assert all(datetime.fromtimestamp(epoch, info).replace(tzinfo=None) == wall for epoch, wall in rows)
