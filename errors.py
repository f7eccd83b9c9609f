"""Typed exceptions raised by the ddlx library.

The command-line interface turns every `DdlxError` into one `Error: ...` line, with exit code 2
for a `UsageError` (a mistake in the command line) and 1 for every other (bad input files, a failed
step, a system condition); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator


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


class UsageError(DdlxError):
    """A command-line value that is malformed or names nothing ddlx knows (a trace, table, module,
    policy or dataset name). The command line prints it as one `Error:` line with exit code 2, the
    code of every command-line mistake; mistakes in files and data are exit code 1."""


class UnknownDatasetError(UsageError):
    """A trace or table name that ddlx does not know, or a dataset name it cannot take."""


class CatalogError(DdlxError):
    """The catalog is missing what a command needs, or a query on it failed."""


class StorageError(DdlxError):
    """A file or folder could not be written or read for a reason of the system, not of the data:
    disk full, a file-size limit, no permission, a read-only file system, a vanished file, a lock
    held by another process or too little memory. The message names the path and the remedy."""


#: What to do about each operating-system error, by errno name.
_REMEDIES = {
    "ENOSPC": "the disk is full; free space (or choose another --data-home/--out) and run again",
    "EDQUOT": "the disk quota is used up; free space and run again",
    "EFBIG": "a file-size limit was reached (see `ulimit -f`); raise it and run again",
    "EACCES": "permission denied; check the permissions of this path or choose another one",
    "EPERM": "operation not permitted; check the permissions of this path or choose another one",
    "EROFS": "the file system is read-only; choose a writable --data-home or --out",
    "ENOENT": "no such file or folder; check the path (it may have been removed while ddlx ran)",
    "ENOTDIR": "a part of this path is a file, not a folder; choose another path",
    "EISDIR": "this is a folder where a file was expected; name a file",
    "EEXIST": "something already exists at this path; remove it or choose another path",
    "ENOTEMPTY": "the folder is not empty; remove it or choose another path",
    "EMFILE": "too many open files; raise the limit (`ulimit -n`) and run again",
    "ENOMEM": "out of memory; close other programs or use a machine with more memory",
    "EIO": "an input/output error from the device; check the disk",
}

#: Fragments of DuckDB's messages for the same system conditions (DuckDB reports them as text).
_DUCKDB_SYSTEM_MESSAGES = {
    "no space left on device": "ENOSPC",
    "disk quota exceeded": "EDQUOT",
    "file too large": "EFBIG",
    "permission denied": "EACCES",
    "read-only file system": "EROFS",
    "could not set lock on file": "LOCKED",
    "conflicting lock is held": "LOCKED",
    "out of memory": "ENOMEM",
    "failed to allocate": "ENOMEM",
}


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the one of `known` closest to a mistyped `name`, else ``."""
    close = difflib.get_close_matches(name, sorted(set(known) - {name}), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's carry context lines after it), or the error's
    type when the message is empty."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether Ctrl-C led to `exc`: a KeyboardInterrupt among the exceptions behind it, or a library's
    report of one (DuckDB stops its query and raises InterruptException, or through Arrow a
    RuntimeError 'Query interrupted')."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt) or type(seen).__name__ == "InterruptException" or (
                isinstance(seen, RuntimeError) and str(seen).strip() == "Query interrupted"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def os_error_remedy(exc: OSError) -> str:
    """A short remedy for an operating-system error (its errno), e.g. 'the disk is full; ...'."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    return _REMEDIES.get(name, "a system error; check the path and run again")


def describe_os_error(exc: OSError, path: object = None) -> str:
    """One line for an operating-system error: the path, what happened and what to do."""
    where = path if path is not None else (exc.filename if exc.filename is not None else "")
    what = exc.strerror or str(exc)
    prefix = f"{where}: " if where != "" else ""
    return f"{prefix}{what} ({os_error_remedy(exc)})"


def system_condition(message: str) -> str | None:
    """The errno name (or 'LOCKED') of a system condition named in an error message of DuckDB or of
    a wrapped OSError, e.g. 'ENOSPC' for 'No space left on device'; None for a data error."""
    lowered = message.lower()
    for fragment, name in _DUCKDB_SYSTEM_MESSAGES.items():
        if fragment in lowered:
            return name
    return None


def storage_error(exc: BaseException, path: object, doing: str) -> "StorageError | None":
    """A `StorageError` for `exc` met while `doing` something with `path`: always for an `OSError`
    or `MemoryError`; for another error (DuckDB's) when its message names a system condition (disk
    full, permission, lock, memory); else None, as the error is about the data itself."""
    if isinstance(exc, MemoryError):
        return StorageError(f"{path}: out of memory while {doing} ({_REMEDIES['ENOMEM']})")
    if isinstance(exc, OSError):
        return StorageError(f"{path}: {exc.strerror or exc} while {doing} ({os_error_remedy(exc)})")
    condition = system_condition(str(exc))
    if condition is None:
        return None
    if condition == "LOCKED":
        return StorageError(f"{path}: locked by another process while {doing}; close the program that "
                            "holds it open for writing (a duckdb shell opened without -readonly) and run again")
    return StorageError(f"{path}: {condition_text(condition)} while {doing} ({_REMEDIES[condition]})")


def condition_text(name: str) -> str:
    """The usual wording of an errno name, e.g. 'No space left on device' for ENOSPC."""
    import errno
    import os

    code = getattr(errno, name, None)
    return os.strerror(code) if code is not None else name


@contextlib.contextmanager
def storage_errors(path: object, doing: str,
                   catch: tuple[type[BaseException], ...] = (Exception,)) -> Iterator[None]:
    """Turn an error of the kinds `catch` raised in the block into a `StorageError` when it is a
    system condition met while `doing` something with `path` (see `storage_error`); other errors,
    and ddlx's own, pass unchanged."""
    try:
        yield
    except DdlxError:
        raise
    except catch as exc:
        error = storage_error(exc, path, doing)
        if error is None:
            raise
        raise error from None


def read_error(exc: BaseException, source: str, problem: str, written: object) -> DdlxError:
    """The error to raise when reading `source` (while writing `written`) failed with `exc`: a
    `StorageError` naming `written` when the cause is the system (disk full, a file-size limit,
    permission, memory), else an `InputError` on `source` saying `problem (first line of exc)`."""
    system = storage_error(exc, written, f"reading {source}") if not isinstance(exc, OSError) else None
    if system is not None:
        return system
    return InputError(source, f"{problem} ({first_line(exc)})")
