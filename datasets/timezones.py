"""Wall-clock times to UTC instants in SQL, exactly and without a per-row zone lookup where possible.

One convention for every trace and import: a wall-clock time in the repeated hour of a fall-back
change (e.g. 01:30 on 2017-11-05 in America/Los_Angeles) is read as its **first occurrence**, the
earlier instant (daylight time), as Python's `fold=0` reads it; DuckDB alone would take the later
one. A reader that knows better from context (an attempt's end that would precede its start) may
take the second occurrence and says so.

DuckDB's `timezone(zone, ts)` looks the zone up (ICU) for every value, which costs a large share of
a trace load. A time whose UTC offset is known (a `PDT` suffix, or a zone that has kept one offset
since some date) is converted by integer arithmetic on microseconds instead; every other time
still goes through `timezone()`, so the result is the same instant either way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from ddlx.datasets.sqltext import sql_string


def utc_offset_pattern(colon: str = ":", minutes_optional: bool = False) -> str:
    """A regular expression (Python and DuckDB) of a UTC offset that a real zone has: -12:00 to
    +14:00 with minutes 00, 15, 30 or 45. `colon` is the separator pattern (`:` or `:?`)."""
    optional = "?" if minutes_optional else ""
    minutes = f"({colon}(00|15|30|45)){optional}"
    whole = f"({colon}00){optional}"
    return f"(\\+((0\\d|1[0-3]){minutes}|14{whole})|-((0\\d|1[01]){minutes}|12{whole}))"


#: Zone rules are scanned back from here for the start of the last fixed-offset period.
_SCAN_FROM = datetime(2037, 12, 31, 12)
_SCAN_TO = datetime(1900, 1, 1, 12)


def utc_from_offset_sql(wall_clock: str, offset_seconds: str) -> str:
    """TIMESTAMPTZ of the wall-clock TIMESTAMP `wall_clock` whose UTC offset is `offset_seconds`
    (an SQL expression: seconds east of UTC, e.g. 28800 for UTC+8)."""
    return f"make_timestamptz(epoch_us({wall_clock}) - CAST({offset_seconds} AS BIGINT) * 1000000)"


@lru_cache(maxsize=None)
def fixed_offset_since(zone: str) -> tuple[datetime, int] | None:
    """(wall clock from which `zone` keeps one UTC offset, that offset in seconds), or None when
    the zone still changes offset (daylight saving) before 2038.

    The returned start is at least a day after the last change, so it is safe for any wall clock.
    """
    info = ZoneInfo(zone)

    def offset(day: datetime) -> timedelta | None:
        return day.replace(tzinfo=info).utcoffset()

    final = offset(_SCAN_FROM)
    if final is None:
        return None
    day = _SCAN_FROM
    while day > _SCAN_TO:
        previous = day - timedelta(days=1)
        if offset(previous) != final:
            if _SCAN_FROM - day < timedelta(days=366):
                return None  # changes within the last year scanned: daylight saving goes on
            return day + timedelta(days=1), int(final.total_seconds())
        day = previous
    return datetime.min, int(final.total_seconds())


def first_occurrence_utc_sql(wall_clock: str, zone: str) -> str:
    """TIMESTAMPTZ of the wall-clock TIMESTAMP `wall_clock` in the IANA `zone`, a time of a
    repeated hour (fall-back change) read as its first occurrence (the module's convention)."""
    quoted = sql_string(zone)
    reading = f"timezone({quoted}, {wall_clock})"
    earlier = f"({reading} - INTERVAL 1 HOUR)"
    return f"CASE WHEN timezone({quoted}, {earlier}) = {wall_clock} THEN {earlier} ELSE {reading} END"


def utc_from_zone_sql(wall_clock: str, zone: str) -> str:
    """TIMESTAMPTZ of the wall-clock TIMESTAMP `wall_clock` read in the IANA `zone`, a repeated
    hour read as its first occurrence (`first_occurrence_utc_sql`).

    Times in the zone's current fixed-offset period (e.g. Asia/Shanghai since 1991) take the
    arithmetic path.
    """
    fixed = fixed_offset_since(zone)
    if fixed is None:
        return first_occurrence_utc_sql(wall_clock, zone)
    since, seconds = fixed
    fast = utc_from_offset_sql(wall_clock, str(seconds))
    if since == datetime.min:
        return fast
    return (f"CASE WHEN {wall_clock} >= TIMESTAMP '{since:%Y-%m-%d %H:%M:%S}' THEN {fast} "
            f"ELSE {first_occurrence_utc_sql(wall_clock, zone)} END")


def wall_clock_from_utc_sql(instant: str, zone: str) -> str:
    """The wall clock (TIMESTAMP) in the IANA `zone` of the TIMESTAMPTZ `instant`.

    Same values as `instant AT TIME ZONE zone`; instants in the zone's current fixed-offset period
    take the arithmetic path.
    """
    quoted = sql_string(zone)
    fixed = fixed_offset_since(zone)
    if fixed is None:
        return f"({instant} AT TIME ZONE {quoted})"
    since, seconds = fixed
    fast = f"make_timestamp(epoch_us({instant}) + {seconds * 1_000_000})"
    if since == datetime.min:
        return fast
    since_utc = since - timedelta(seconds=seconds)
    return (f"CASE WHEN {instant} >= TIMESTAMPTZ '{since_utc:%Y-%m-%d %H:%M:%S}+00' THEN {fast} "
            f"ELSE ({instant} AT TIME ZONE {quoted}) END")
