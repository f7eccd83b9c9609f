"""Data-quality checks run at ingest; their counts form the validation report.

An adapter declares its checks; a check either counts rows of one table matching a condition
(all such checks of a table share one scan) or runs its own counting query (joins, orphans).
Figures are the report's other numbers (e.g. GPU capacity as two sources see it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import duckdb

from ddlx.datasets.sqltext import quote_identifier


@dataclass(frozen=True)
class Check:
    """One check: `condition` is a WHERE clause on `table`, or `query` is a full counting SELECT.

    `screen`, with `query`: a cheap counting SELECT that returns 0 only when `query` would (e.g.
    one filter per column, which Parquet statistics answer without reading the rows); `query` then
    runs only when the screen finds something.
    """

    table: str
    name: str
    condition: str | None = None
    query: str | None = None
    screen: str | None = None


def run_checks(con: duckdb.DuckDBPyConnection, checks: list[Check],
               rows: dict[str, int]) -> list[dict[str, Any]]:
    """Count the rows each check finds; tables are referred to by name in `con`.

    Returns report rows: table, check, rows found, rows of the table, share.
    """
    counts: dict[tuple[str, str], int] = {}
    by_table: dict[str, list[Check]] = defaultdict(list)
    for check in checks:
        if check.condition is not None:
            by_table[check.table].append(check)
        elif check.screen is not None and int(con.execute(check.screen).fetchall()[0][0]) == 0:
            counts[(check.table, check.name)] = 0
        else:
            counts[(check.table, check.name)] = int(con.execute(check.query).fetchall()[0][0])
    for table, table_checks in by_table.items():
        filters = ", ".join(f"count(*) FILTER (WHERE {c.condition})" for c in table_checks)
        found = con.execute(f'SELECT {filters} FROM {quote_identifier(table)}').fetchall()[0]
        for check, count in zip(table_checks, found):
            counts[(table, check.name)] = int(count)
    report = []
    for check in checks:
        count, total = counts[(check.table, check.name)], rows.get(check.table, 0)
        report.append({"table": check.table, "check": check.name, "rows": count, "of_rows": total,
                       "share": (count / total) if total else None})
    return report


def duplicate_key_check(table: str, keys: tuple[str, ...], name: str) -> Check:
    """Rows beyond the first of each key value (0 when every key is unique).

    Screened by the keys' 64-bit hashes: when every row's hash differs, every key differs, and the
    count is 0 without holding the keys themselves (text keys take several times the memory and
    time of their hashes); rows with equal hashes, duplicates or a rare collision, are counted on
    the keys."""
    columns = ", ".join(keys)
    return Check(table, name,
                 query=(f"SELECT (SELECT count(*) FROM {table}) - "
                        f"(SELECT count(*) FROM (SELECT DISTINCT {columns} FROM {table}))"),
                 screen=f"SELECT count(*) - count(DISTINCT hash({columns})) FROM {table}")


@dataclass(frozen=True)
class Figure:
    """A number of the validation report that is not a row count: `query` returns one value."""

    table: str
    name: str
    query: str
    unit: str


def run_figures(con: duckdb.DuckDBPyConnection, figures: list[Figure]) -> list[dict[str, Any]]:
    """Compute each figure; report rows: table, figure, value, unit. A figure that is not a finite
    number (an overflowing sum) is stored as null, so the manifest stays valid JSON."""
    report = []
    for figure in figures:
        value = con.execute(figure.query).fetchall()[0][0]
        number = float(value) if value is not None else None
        report.append({"table": figure.table, "figure": figure.name,
                       "value": number if number is not None and math.isfinite(number) else None,
                       "unit": figure.unit})
    return report
