"""Writes that are whole or absent: a file or a folder is built under a hidden temporary name beside
its final one, flushed to disk, and renamed into place in one step.

- `atomic_file(path)`: a temporary path to write; renamed over `path` when the block succeeds.
- `write_text_atomic(path, text)`: the same for a text.
- `write_parquet_file(frame, path)`: a Parquet file whose write fails as an `OSError` on a full disk.
- `replace_folder(path, build)`: a folder replaced whole (old or new, never a mix) under a lock, with
  what killed runs left beside it cleaned first.

The temporary names start with `.<final name>.tmp-` (files and folders) and `.<final name>.old-`
(a folder being retired), so leftovers are recognisable and removed by the next run.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import polars as pl

T = TypeVar("T")


def fsync_file(path: Path) -> None:
    """Flush `path`'s content to the disk (so a disk-full error surfaces here, not later)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(path: Path) -> None:
    """Flush a folder's entries (a rename into it) to the disk; a no-op where folders cannot be opened."""
    if sys.platform != "win32":
        fsync_file(path)


def fsync_tree(folder: Path) -> None:
    """Flush every file below `folder`, then the folders themselves."""
    paths = sorted(folder.rglob("*"))
    for path in paths:
        if path.is_file() and not path.is_symlink():
            fsync_file(path)
    for path in [*reversed([p for p in paths if p.is_dir() and not p.is_symlink()]), folder]:
        fsync_folder(path)


@contextlib.contextmanager
def atomic_file(path: Path, mode: int | None = None, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside `path`; when the block succeeds, give it `mode` (if set),
    flush it to disk (`durable`; generated files that can be made again skip this) and rename it
    over `path`. On any failure the temporary file is removed and `path` is untouched."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        if durable:
            fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_parquet_file(frame: "pl.DataFrame", path: Path, compression: str = "zstd",
                       metadata: dict[str, str] | None = None) -> None:
    """Write `frame` to `path` as Parquet (with `metadata` as the file's key-value metadata), encoded
    in memory first: a full disk or a file-size limit is then an `OSError`, where polars writing the
    file itself may report it as a malformed file ("Invalid thrift: transport error")."""
    import io

    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression=compression, metadata=metadata)
    Path(path).write_bytes(buffer.getbuffer())


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file renamed into place."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block: a lock file (created if missing), or an
    existing folder itself, which leaves nothing behind (POSIX `flock`; elsewhere no lock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing lets go of the lock


_RENAME_EXCHANGE = 2  # Linux renameat2 flag: swap two paths in one step
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders `a` and `b` in one atomic step (Linux renameat2); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this file system cannot swap
        return False
    raise OSError(code, os.strerror(code), str(b))


def _leftovers(path: Path, kind: str) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.{kind}-*")) if path.parent.is_dir() else []


def recover_folder(path: Path) -> None:
    """Undo what a run killed in the middle of `replace_folder` left: restore a retired folder when
    `path` itself is missing, and remove unfinished and retired copies. Call under the lock."""
    retired = _leftovers(path, "old")
    if not path.exists() and retired:
        newest = max(retired, key=lambda p: p.stat().st_mtime_ns)
        os.replace(newest, path)
        retired.remove(newest)
    for leftover in retired + _leftovers(path, "tmp"):
        shutil.rmtree(leftover, ignore_errors=True)


def replace_folder(path: Path, build: Callable[[Path], T]) -> T:
    """Build a new folder with `build(tmp)` and put it at `path` in one step, replacing the old
    folder whole; returns what `build` returned.

    Runs under a lock on the parent folder, so two runs into one folder take turns; a
    failure or a kill at any moment leaves the old folder or the new one, never a mix, and the next
    run cleans what a killed one left. Where the file system cannot swap two folders in one step,
    the old folder is moved aside first and restored by `recover_folder` if a kill comes between.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(path.parent):
        recover_folder(path)
        tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            value = build(tmp)
            fsync_tree(tmp)
            if not path.exists():
                os.replace(tmp, path)
            elif _exchange(tmp, path):
                shutil.rmtree(tmp, ignore_errors=True)  # now the old folder
            else:
                old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(path, old)
                os.replace(tmp, path)
                shutil.rmtree(old, ignore_errors=True)
            fsync_folder(path.parent)
            return value
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
