"""Typed exceptions raised by the ddlx library.

The command-line interface turns every `DdlxError` into one `Error: ...` line and exit code 1;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class DdlxError(Exception):
    """Base class of every error that ddlx reports to a user as one line."""


class InputError(DdlxError):
    """A trace file or folder is missing, unreadable, or not in the expected format.

    The message names the file, the line or field, and what was expected.
    """

    def __init__(self, path: str, problem: str, line: int | None = None, field: str | None = None):
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.field = field
        where = self.path
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}")


class DownloadError(DdlxError):
    """A download failed, or its content does not match the published checksum."""


class UnknownDatasetError(DdlxError):
    """A trace or table name that ddlx does not know."""


class CatalogError(DdlxError):
    """The catalog is missing what a command needs, or a query on it failed."""
