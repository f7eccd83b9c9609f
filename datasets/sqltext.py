"""The one place where values and names become SQL text: every string literal and every identifier
(table, view, column or VC name) that ddlx puts into a query goes through these two functions."""

from __future__ import annotations


def sql_string(value: str) -> str:
    """A SQL string literal: `'...'` with each quote doubled."""
    return "'" + str(value).replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """A SQL identifier: `"..."` with each double quote doubled, so any name (spaces, quotes, braces,
    SQL words) stays one name."""
    return '"' + str(name).replace('"', '""') + '"'
