"""Where a command writes what the user asked for: one rule for every `--out`, on top of `ddlx.atomic`.

An output **folder** (a results folder, a model folder, a synthetic release):
- a path that is a file is refused, and so is a folder that is not empty and holds none of the
  command's marker files (the file every folder of that kind holds: `summary.json` of `ddlx analyze`,
  `experiment.json` of `ddlx placement`, ...), so a mistyped `--out` never replaces a user's folder;
- `check_output_folder` makes these checks, and refuses a location where no folder can be made,
  before the long work starts; `write_output_folder` checks again, builds the new folder beside the
  old one and swaps it in whole (`ddlx.atomic.replace_folder`).

An output **file** (`ddlx reproduce --out`, `ddlx simulate --out`, ...):
- a path that is a folder is refused; `check_output_file` refuses it, and a location where no file
  can be made, before the work; `output_file` writes beside the final name and renames it into
  place (`ddlx.atomic.atomic_file`); `output_files` does so for a file and the files that go beside
  it (a sidecar, an id map), renamed together once all are written.

Every refusal is an error naming the path the user gave, never a temporary name; nothing is left
behind by a check or a failed write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from ddlx.atomic import atomic_file, fsync_folder, replace_folder
from ddlx.errors import DdlxError, StorageError, storage_errors

T = TypeVar("T")


def check_output_folder(path: Path, markers: Sequence[str], what: str = "results folder",
                        doing: str = "writing the results", error: type[DdlxError] = StorageError) -> None:
    """Refuse `path` as the output folder of a command whose folders hold one of `markers`: `error`
    (a `StorageError` by default) when it is a file, or a folder that is neither empty nor holds a
    marker; a `StorageError` when no folder can be made there (a part of the path is a file, no
    permission, a read-only file system). `what` names the kind of folder in the message."""
    path = Path(path)
    with storage_errors(path, doing):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                raise error(f"{path}: exists and is not a folder; ddlx writes a {what} here, so choose "
                            "another --out")
            if any(path.iterdir()) and not any((path / name).is_file() for name in markers):
                raise error(f"{path}: not a {what} written by ddlx (it holds no {' or '.join(markers)}); "
                            f"ddlx replaces its {what} whole, so choose an empty or new --out")
    check_can_create(path, doing)


def write_output_folder(path: Path, markers: Sequence[str], build: Callable[[Path], T],
                        what: str = "results folder", doing: str = "writing the results",
                        error: type[DdlxError] = StorageError) -> T:
    """Build the output folder `path` with `build(tmp)` (which writes into the new, empty folder
    `tmp` and must leave one of `markers` there) and swap it in whole; returns what `build`
    returned. `check_output_folder` runs first; a failure or a kill leaves the old folder whole, and
    an operating-system error is a `StorageError` naming `path`."""
    path = Path(path)
    check_output_folder(path, markers, what, doing, error)

    def build_named(tmp: Path) -> T:
        with _naming(tmp, path):
            return build(tmp)

    with storage_errors(path, doing):  # OSError, or polars' and DuckDB's reports of one
        return replace_folder(path, build_named)


def check_output_file(path: Path, doing: str = "writing it") -> None:
    """Refuse `path` as an output file: a `StorageError` when it is a folder, or when no file can be
    made there. Nothing is created."""
    path = Path(path)
    if path.is_dir():
        raise StorageError(f"{path}: is a folder; expected the path of a file to write (choose another --out)")
    check_can_create(path, doing)


@contextlib.contextmanager
def output_file(path: Path, doing: str = "writing it", mode: int | None = None,
                durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside the output file `path` (its folders made if missing); renamed
    over `path` when the block succeeds (`ddlx.atomic.atomic_file`). `check_output_file` runs first;
    an operating-system error in the block is a `StorageError` naming `path`."""
    path = Path(path)
    check_output_file(path, doing)
    with storage_errors(path, doing):
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path, mode, durable) as tmp:
            yield tmp


def write_output_text(path: Path, text: str, doing: str = "writing it") -> Path:
    """Write `text` (UTF-8) as the output file `path` (`output_file`); returns `path`."""
    with output_file(path, doing) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


@contextlib.contextmanager
def output_files(path: Path, doing: str = "writing it", last: Sequence[str] = ()) -> Iterator[Path]:
    """Yield an empty hidden folder beside the output file `path`, to write `path`'s file into under
    its own name and the files that go beside it under theirs. When the block succeeds, each file of
    that folder is renamed beside `path` (the names in `last` at the end), once none of their final
    paths is found to be a folder; on a failure before that none is, and the hidden folder is removed.

    `check_output_file` runs first; an operating-system error is a `StorageError` naming `path`."""
    path = Path(path)
    check_output_file(path, doing)
    with storage_errors(path, doing):
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        try:
            with _naming(staging, path.parent):
                yield staging
            staged = sorted(staging.iterdir(), key=lambda p: (p.name in last, p.name))
            for file in staged:
                final = path.parent / file.name
                if final.is_dir():
                    raise StorageError(f"{final}: is a folder where ddlx writes a file beside {path}; move it "
                                       "aside or choose another --out")
            for file in staged:
                os.replace(file, path.parent / file.name)
            fsync_folder(path.parent)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def check_can_create(path: Path, doing: str) -> None:
    """A `StorageError` naming `path` when nothing can be made at `path`: the nearest folder that
    exists above it is a file, or refuses a new entry. Probes with an empty folder it removes."""
    path = Path(path)
    above = Path(os.path.abspath(path)).parent
    while not above.exists() and above != above.parent:
        above = above.parent
    with storage_errors(path, doing):
        if not above.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(above))
        os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.probe-", dir=above))


@contextlib.contextmanager
def _naming(tmp: Path, final: Path) -> Iterator[None]:
    """Make a ddlx error raised in the block name `final` where it names the temporary `tmp`
    (a writer that reports the path it was given), so the user reads the path they gave."""
    try:
        yield
    except DdlxError as exc:
        text = str(exc)
        if str(tmp) in text:
            exc.args = (text.replace(str(tmp), str(final)),)
        raise
