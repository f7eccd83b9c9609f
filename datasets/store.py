"""Store versions: the folders `<home>/store/<trace>/<version>/` that the catalog's views point to,
and the rules that keep a reader's version alive while an ingest replaces it.

Every version folder holds a lock file, `.readers.lock`. A reader (an analysis, `ddlx sql`) holds a
shared lock on it for as long as it reads; an ingest that supersedes the version marks it retired
(`.retired`) and deletes it only when it can take the lock exclusively, so no running reader ever
loses its files. A retired version that was in use is deleted by a later ingest or import.

A version is renamed into place before the catalog that names it is written, so a kill between
the two would leave an orphan: the folder carries `.pending` until the catalog names it, and a
pending folder that no catalog names is removed by the next ingest. Likewise the version being
superseded is marked retired before the catalog is written, so a kill just after the write leaves
it for the next ingest to delete rather than forgotten.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

READERS_LOCK = ".readers.lock"
PENDING_MARKER = ".pending"
RETIRED_MARKER = ".retired"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no reader locks
    fcntl = None  # type: ignore[assignment]


def mark_pending(version_dir: Path) -> None:
    """Give a version being built its reader lock and the pending marker."""
    (version_dir / READERS_LOCK).touch()
    (version_dir / PENDING_MARKER).touch()


def mark_committed(version_dir: Path) -> None:
    """The catalog names `version_dir` now: it is no longer pending."""
    (version_dir / PENDING_MARKER).unlink(missing_ok=True)


def mark_retired(home: Path, version_dir: Path) -> bool:
    """Mark a version about to be superseded retired; True if marked.

    Marked before the catalog that supersedes it is written, so a kill between the two leaves no
    version that nothing would ever delete: if the catalog still names it, `collect` lifts the mark;
    if not, `collect` deletes it. Only a version inside `home`'s own store is touched: a data home
    copied elsewhere has a catalog naming the original's versions, and those belong to the original."""
    if not version_dir.is_dir() or not is_inside(version_dir, home / "store"):
        return False
    (version_dir / RETIRED_MARKER).touch()
    return True


def unmark_retired(version_dir: Path) -> None:
    """The catalog still names `version_dir` (its successor was not written): it stays."""
    (version_dir / RETIRED_MARKER).unlink(missing_ok=True)


def delete_retired(version_dir: Path) -> bool:
    """Delete a retired version unless a reader holds it; True if deleted (else a later ingest does)."""
    return _delete_unless_read(version_dir)


def is_inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or below it (after resolving links)."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


def _delete_unless_read(version_dir: Path) -> bool:
    """Delete `version_dir` when no reader holds its lock (taken exclusively, without waiting)."""
    lock = version_dir / READERS_LOCK
    if fcntl is None or not lock.exists():
        shutil.rmtree(version_dir, ignore_errors=True)
        return True
    with open(lock, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        trash = version_dir.parent / f".trash-{version_dir.name}"
        os.replace(version_dir, trash)  # gone from its path before the lock is let go
    shutil.rmtree(trash, ignore_errors=True)
    return True


def collect(home: Path, named: Iterable[Path]) -> list[Path]:
    """Remove what killed or superseded runs left in the store of `home`: staging and trash folders,
    pending versions the catalog does not name (`named`), and retired versions no reader holds.
    Call with the ingest lock held. Returns the folders removed."""
    root = home / "store"
    if not root.is_dir():
        return []
    keep = {Path(p).resolve() for p in named}
    removed = []
    for trace_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for folder in sorted(p for p in trace_dir.iterdir() if p.is_dir()):
            if folder.name.startswith((".staging-", ".trash-")):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
            elif folder.resolve() in keep:
                mark_committed(folder)  # a kill came after the catalog named it
                unmark_retired(folder)  # a kill came before the catalog named its successor
            elif (folder / PENDING_MARKER).exists():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
            elif (folder / RETIRED_MARKER).exists() and _delete_unless_read(folder):
                removed.append(folder)
    return removed


class ReaderPins:
    """Shared locks on the version folders a reader uses; `release()` lets them go."""

    def __init__(self) -> None:
        self._handles: list = []

    def pin(self, version_dir: Path) -> bool:
        """Hold `version_dir` for reading; False when it is gone (retired and deleted meanwhile)."""
        lock = version_dir / READERS_LOCK
        if fcntl is None:
            return version_dir.is_dir()
        try:
            handle = open(lock, "rb")
        except FileNotFoundError:
            # gone, or a version written before reader locks existed: usable while it exists
            return version_dir.is_dir() and not (version_dir / RETIRED_MARKER).exists()
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            same = os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            handle.close()
            return False
        self._handles.append(handle)
        return True

    def release(self) -> None:
        for handle in self._handles:
            handle.close()
        self._handles.clear()


def pin_all(version_dirs: Iterable[Path]) -> ReaderPins | None:
    """Pins on every one of `version_dirs`, or None (nothing held) when one of them is gone."""
    pins = ReaderPins()
    for folder in version_dirs:
        if not pins.pin(Path(folder)):
            pins.release()
            return None
    return pins


def wait_briefly(attempt: int) -> None:
    """Back off before a reader's next try to read a catalog that changed under it."""
    time.sleep(min(0.05 * (2 ** attempt), 1.0))
