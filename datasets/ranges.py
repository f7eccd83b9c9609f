"""Declared valid ranges of numeric and time columns, and the one SQL test of them.

Each trace declares, next to its schema, a `ValueRange` for every numeric and time column it
stores (`{table: {column: ValueRange}}`). A value outside its range (NaN, inf and -inf included:
the bounds are finite) is refused where the table is read: `csvload.load_csv_sources` counts the
out-of-range values of a freshly written table in one aggregate pass over its Parquet file and,
only when that finds something, scans the input for the line to name. Values the trace's owners
document as odd but real (utilisation above 100 %, a 0 time meaning missing) lie inside the
declared range; they are counted by the trace's validation checks instead. The same pass refuses
a NUL character in a stored text column (`nul_sql`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone

from ddlx.datasets.sqltext import quote_identifier

#: Wall-clock window of traces whose times are real dates (UTC instants), as `YYYY-MM-DD`.
REAL_TIME_WINDOW: tuple[str, str] = ("2010-01-01", "2035-01-01")
#: One year of seconds: the bound of times that are seconds from a trace's own start.
ONE_YEAR_S = 31_536_000.0
#: Bound of a duration given in seconds (ten years); negative only where a trace's counted
#: findings (start before submission, end before start) produce such values.
TEN_YEARS_S = 10 * ONE_YEAR_S
#: Bound of byte and operation counters (1 PB).
COUNTER_LIMIT = 1e15
#: `ValueRange.field` of a stored column gathered from every input field no other range names
#: (e.g. the per-VC columns of a file stored long).
EVERY_OTHER_FIELD = "*"


@dataclass(frozen=True)
class ValueRange:
    """The accepted values of one column: `low` <= value <= `high`, both finite.

    Numbers are bounded by floats; time columns (stored as TIMESTAMP, TIMESTAMPTZ or DATE) by
    `YYYY-MM-DD` strings, read as UTC midnights. `unit` says what the number counts (messages and
    docs). `field` is the input field when the stored column is named otherwise; `missing` lists
    raw numbers that mean "missing" (stored as NULL, so never out of range).
    """

    low: float | str
    high: float | str
    unit: str = ""
    field: str | None = None
    missing: tuple[float, ...] = ()

    @property
    def is_time(self) -> bool:
        return isinstance(self.low, str)

    def describe(self) -> str:
        """The range as messages say it, e.g. `0..100 (percent of one GPU)`."""
        if self.is_time:
            return f"{self.low}..{self.high} UTC"
        span = f"{_number_text(float(self.low))}..{_number_text(float(self.high))}"
        return f"{span} ({self.unit})" if self.unit else span

    def outside_sql(self, column: str) -> str:
        """SQL true when `column` holds a value outside the range (NULL stays NULL: not counted).

        NaN sorts above every number in DuckDB and the bounds are finite, so NaN and +-inf are
        outside too.
        """
        if self.is_time:
            low, high = (f"TIMESTAMPTZ '{bound} 00:00:00+00'" for bound in (self.low, self.high))
        else:
            low, high = repr(float(self.low)), repr(float(self.high))
        return f"NOT ({column} BETWEEN {low} AND {high})"

    def within_sql(self, value: str) -> str:
        """SQL: the number `value` when it lies inside the range, else NULL. A conversion of it
        (to a timestamp, say) then cannot fail on an absurd value, and the raw value, stored
        beside, is refused by the range check with its line."""
        return f"CASE WHEN {value} BETWEEN {float(self.low)!r} AND {float(self.high)!r} THEN {value} END"

    def refuses_text(self, text: str) -> bool:
        """Whether the raw field `text` is a readable value outside the range (error path only:
        names the line of a value the SQL test found). Empty and unreadable text is left to the
        reader; a time is compared on its date, in its own offset when it has one."""
        text = text.strip()
        if self.is_time:
            moment = _time_of(text)
            if moment is None:
                return False
            return not (_utc_midnight(str(self.low)) <= moment <= _utc_midnight(str(self.high)))
        try:
            value = float(text.removesuffix("GB"))
        except ValueError:
            return False
        if value in self.missing:
            return False
        return math.isnan(value) or not (float(self.low) <= value <= float(self.high))


def _number_text(value: float) -> str:
    return f"{int(value):,}" if value == int(value) and abs(value) < 1e15 else f"{value:g}"


def _utc_midnight(day: str) -> datetime:
    return datetime.combine(date.fromisoformat(day), datetime.min.time(), tzinfo=timezone.utc)


def _time_of(text: str) -> datetime | None:
    """The instant of a raw time field (an offset is honoured; a trailing zone name such as `PDT`
    is dropped and the wall clock read as UTC, close enough for a window of whole years)."""
    for candidate in (text, text.rsplit(" ", 1)[0]):
        try:
            moment = datetime.fromisoformat(candidate)
        except ValueError:
            continue
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return None


def nul_sql(text_columns: Sequence[str]) -> str:
    """SQL true when one of `text_columns` holds a NUL character (never valid in a text field)."""
    return "(" + " OR ".join(f"contains({quote_identifier(column)}, chr(0))" for column in text_columns) + ")"


def range_screen_sql(table_sql: str, ranges: dict[str, ValueRange]) -> str:
    """A cheap SELECT giving 1 when some value of `table_sql` may lie outside `ranges`, else 0.

    It reads only each column's minimum and maximum, which DuckDB takes from the Parquet
    statistics when they are there (the writer leaves them out for a column holding NaN or inf,
    and the column is then scanned): NaN sorts above every number, so it shows as the maximum.
    """
    extremes = ", ".join(f"min({quote_identifier(column)}) AS low{index}, "
                         f"max({quote_identifier(column)}) AS high{index}"
                         for index, column in enumerate(ranges))
    outside = " OR ".join(f"{ranged.outside_sql(f'low{index}')} OR {ranged.outside_sql(f'high{index}')}"
                          for index, ranged in enumerate(ranges.values()))
    return f"SELECT count(*) FROM (SELECT {extremes} FROM {table_sql}) WHERE {outside}"


def nul_screen_sql(table_sql: str, text_columns: Sequence[str]) -> str:
    """A SELECT giving 1 when one of the `text_columns` of `table_sql` holds a NUL, else 0 (it
    scans only those columns, and stops at the first one found)."""
    return f"SELECT count(*) FROM (SELECT 1 FROM {table_sql} WHERE {nul_sql(text_columns)} LIMIT 1)"


def _bad_value_conditions(ranges: dict[str, ValueRange], text_columns: Sequence[str]) -> list[str]:
    """SQL conditions, one per ranged column, then one for a NUL in any text column."""
    conditions = [ranged.outside_sql(quote_identifier(column)) for column, ranged in ranges.items()]
    return conditions + ([nul_sql(text_columns)] if text_columns else [])


def range_counts_sql(table_sql: str, ranges: dict[str, ValueRange], text_columns: Sequence[str] = ()) -> str:
    """One aggregate SELECT over `table_sql`: the rows with any bad value, then the out-of-range
    values per column of `ranges` (in its order), then (with `text_columns`) the rows holding a NUL."""
    conditions = _bad_value_conditions(ranges, text_columns)
    counts = ", ".join(f"count(*) FILTER (WHERE {condition})" for condition in conditions)
    return f"SELECT count(*) FILTER (WHERE {' OR '.join(conditions)}), {counts} FROM {table_sql}"


def in_range_sql(ranges: dict[str, ValueRange], text_columns: Sequence[str] = ()) -> str:
    """SQL true for a row whose ranged values are all in range or NULL and whose text columns hold
    no NUL (the rows kept when bad rows are dropped as rejected rows)."""
    return " AND ".join(f"coalesce(NOT {condition}, true)" for condition in _bad_value_conditions(ranges, text_columns))


def raw_field(column: str, ranged: ValueRange) -> str:
    """The input field holding the stored `column`."""
    return ranged.field or column


def refused_fields(names: list[str], ranges: dict[str, ValueRange]
                   ) -> Callable[[list[str]], Iterator[tuple[str, str, ValueRange]]]:
    """A function giving (field, raw text, range) of each out-of-range field of one raw row
    whose fields are named `names` (a row of another length gives none: the reader rejects it)."""
    named = {raw_field(column, ranged): ranged for column, ranged in ranges.items()}
    wanted = [(index, name, named[name]) for index, name in enumerate(names) if name in named]
    if EVERY_OTHER_FIELD in named:
        wanted += [(index, name, named[EVERY_OTHER_FIELD]) for index, name in enumerate(names) if name not in named]

    def refused(fields: list[str]) -> Iterator[tuple[str, str, ValueRange]]:
        if len(fields) == len(names):
            for index, field, ranged in wanted:
                if ranged.refuses_text(fields[index]):
                    yield field, fields[index], ranged

    return refused
