"""Intermediate results kept between analyses of the same data.

Re-running `ddlx analyze` on an unchanged catalog would recompute the same sweeps and joins. The
heaviest of them (the co-location sweep, allocated GPUs against capacity, the load each job met at
submission, the readings of the wait, ...) are kept as Parquet files in the cache folder
(`ddlx.datasets.home.default_cache_dir`, `$DDLX_CACHE_DIR`), never in the data home:

    <cache>/analysis/<trace>-<store version>-<hash of its folder>/<code fingerprint>/<name>-<key>.parquet

and read back by the next run instead of being computed again. A kept result is found only under
the key of everything it depends on, so it is always the one the run would compute:
- the data: the trace's store version folder, which never changes once written (every ingest or
  import makes a new one);
- ddlx itself: a fingerprint of every source file of the installed package and of the versions of
  DuckDB, polars, NumPy and PyArrow (an upgrade or an edit of ddlx computes everything anew);
- the result: the full text of its query, or, for a result computed in Python, its name and
  parameters (`TraceContext.once`).

Beyond the results kept by name, every query of the catalog alone (`TraceContext.query`) whose
result has at most `SMALL_RESULT_ROWS` rows is kept under its text (`small_result`): the tables,
quantiles and CDFs of the modules, so that a run with other options recomputes only what they change.
A query run while a kept result is being computed is not kept on its own (that result is kept whole).

Modules running at the same time on two connections (`ddlx.analysis.runner`) share one
`ResultCache`: what one computes the other reads, and each thread counts its own results being
computed.

Kept results are a cache, never data. They are written when the run's analysis has succeeded (a
failed run keeps nothing); a result that cannot be written (a read-only or full disk) or read (a
damaged or vanished file) is computed as if it had never been kept. A run that writes also removes
the kept results of store versions that no longer exist (a trace ingested again, a data home
deleted) and of other fingerprints. `ddlx analyze --no-cache` neither reads nor writes kept
results; deleting the cache folder at any time is safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from ddlx.atomic import atomic_file, write_parquet_file

Frames = TypeVar("Frames", pl.DataFrame, tuple[pl.DataFrame, ...])

#: Below the cache folder: one folder per store version of a trace, then per code fingerprint.
ANALYSIS_FOLDER = "analysis"

#: In a store version's folder: the path of the store version it holds results of.
STORE_FILE = "store.txt"

#: Temporary files and unfinished folders older than this (seconds) were left by a killed run.
STALE_S = 3600

#: Largest result of a query kept without a name (`ResultCache.small_result`), rows: tables of
#: figures, not per-job frames, whose writing would cost more than it saves.
SMALL_RESULT_ROWS = 100_000

#: The name kept query results go under (`ResultCache.small_result`).
QUERY_RESULT = "query"


@functools.cache
def code_fingerprint() -> str:
    """A short hash of every source file of the installed ddlx package (tests and benchmarks aside)
    and of the versions of the libraries that compute results."""
    import duckdb
    import numpy
    import pyarrow

    import ddlx

    return source_fingerprint(Path(ddlx.__file__).parent, (duckdb, pl, numpy, pyarrow))


def source_fingerprint(root: Path, libraries: Sequence[Any] = ()) -> str:
    """A short hash of the `.py` files of the package at `root` (`_source_files`) and of the
    versions of the modules `libraries`."""
    digest = hashlib.sha256()
    for path in _source_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for library in libraries:
        digest.update(f"{library.__name__}={library.__version__}\0".encode())
    return digest.hexdigest()[:16]


def _source_files(root: Path) -> list[Path]:
    """The `.py` files of the package at `root` and of its subpackages (folders with an
    `__init__.py`; tests and benchmarks aside), in a fixed order."""
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(name for name in subfolders if (here / name / "__init__.py").is_file()
                               and not (here == root and name in ("tests", "benchmarks")))
        files.extend(here / name for name in sorted(names) if name.endswith(".py"))
    return files


def analysis_cache_folder(cache_dir: Path | None = None) -> Path:
    """The folder of kept analysis results in `cache_dir` (default: `default_cache_dir()`)."""
    from ddlx.datasets.home import default_cache_dir

    return (cache_dir or default_cache_dir()) / ANALYSIS_FOLDER


@dataclass
class ResultCache:
    """Kept results of one trace's store version (`folder`), or none (`folder` None: nothing is
    read or written). `read` counts the results read this run, `written` those kept for later runs;
    results computed this run wait in `pending` until `commit`. Safe to share between threads."""

    folder: Path | None
    #: The store version folder the results are computed from.
    store_dir: Path | None = None
    written: int = 0
    pending: list[tuple[str, pl.DataFrame | tuple[pl.DataFrame, ...]]] = field(default_factory=list)
    #: Results read or computed this run, by file stem: asked for again, they are not read twice.
    this_run: dict[str, pl.DataFrame | tuple[pl.DataFrame, ...]] = field(default_factory=dict)
    #: The stems of the results read from earlier runs.
    read_stems: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: Per thread, how many kept results it is computing (nested): its queries meanwhile are not kept alone.
    _threads: threading.local = field(default_factory=threading.local, repr=False)

    @property
    def read(self) -> int:
        """How many kept results this run read from earlier runs (each counted once)."""
        return len(self.read_stems)

    @property
    def computing(self) -> int:
        """How many kept results the calling thread is computing (nested)."""
        return getattr(self._threads, "computing", 0)

    @computing.setter
    def computing(self, value: int) -> None:
        self._threads.computing = value

    @classmethod
    def open(cls, trace: str, store_dir: Path, enabled: bool = True, cache_dir: Path | None = None) -> ResultCache:
        """The kept results of `trace` whose store version is the folder `store_dir`."""
        if not enabled:
            return cls(None)
        store_dir = Path(os.path.abspath(store_dir))
        place = hashlib.sha256(str(store_dir).encode()).hexdigest()[:12]
        entry = analysis_cache_folder(cache_dir) / f"{trace}-{store_dir.name}-{place}"
        return cls(entry / code_fingerprint(), store_dir)

    def summary(self) -> dict[str, Any]:
        """What this run read and kept, for the report: `folder` (None when nothing is kept), `read`
        (results read from earlier runs), `kept` (results computed and kept for later ones)."""
        return {"folder": str(self.folder) if self.folder else None, "read": self.read, "kept": self.written}

    def frames(self, name: str, key: Sequence[Any], compute: Callable[[], Frames]) -> Frames:
        """The result `name` under `key` (what it depends on beyond the data and ddlx: a query's
        text, parameters): read when kept, else `compute()`d and kept at `commit`. A DataFrame or
        a tuple of them."""
        if self.folder is None:
            return compute()
        stem = self._stem(name, key)
        kept = self._kept(stem)
        if kept is not None:
            return kept  # type: ignore[return-value]
        self.computing += 1
        try:
            result = compute()
        finally:
            self.computing -= 1
        self._keep(stem, result)
        return result

    @property
    def keeping(self) -> bool:
        """True when a result computed now would be kept on its own: there is a cache, and no kept
        result is being computed (that one is kept whole)."""
        return self.folder is not None and not self.computing

    def small_result(self, key: Sequence[str], compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """The result of a catalog query, under `key` (its text, and those of the tables it reads):
        read when kept, else `compute()`d and, when it has at most `SMALL_RESULT_ROWS` rows, kept at
        `commit`; computed alone while another kept result is being computed (that one is kept
        whole) or without a cache."""
        if not self.keeping:
            return compute()
        stem = self._stem(QUERY_RESULT, key)
        kept = self._kept(stem)
        if isinstance(kept, pl.DataFrame):
            return kept
        result = compute()
        if result.height <= SMALL_RESULT_ROWS:
            self._keep(stem, result)
        return result

    def _kept(self, stem: str) -> pl.DataFrame | tuple[pl.DataFrame, ...] | None:
        """The result under `stem` when this run has it or an earlier run kept it (counted in `read`
        once per run), else None."""
        if stem in self.this_run:
            return self.this_run[stem]
        kept = self._read(stem)
        if kept is not None:
            with self._lock:
                self.read_stems.add(stem)
                self.this_run.setdefault(stem, kept)
        return kept

    @staticmethod
    def _stem(name: str, key: Sequence[Any]) -> str:
        """The file name (without suffix) of the result `name` under `key`."""
        digest = hashlib.sha256(json.dumps([name, list(key)], default=str).encode()).hexdigest()[:24]
        return f"{name}-{digest}"

    def _keep(self, stem: str, result: pl.DataFrame | tuple[pl.DataFrame, ...]) -> None:
        """Keep `result` under `stem` at `commit`; asked for again this run, it is not computed again
        (computed at the same time by two threads, it is kept once)."""
        with self._lock:
            if stem in self.this_run:
                return
            self.this_run[stem] = result
            self.pending.append((stem, result))

    def commit(self) -> None:
        """Keep the results computed so far (the run succeeded); any failure stops keeping."""
        with self._lock:
            pending, self.pending = self.pending, []
        if self.folder is None or not pending:
            return
        try:
            self._tidy()
            self.folder.mkdir(parents=True, exist_ok=True)
            store_file = self.folder.parent / STORE_FILE
            if not store_file.exists():
                with atomic_file(store_file, durable=False) as tmp:
                    tmp.write_text(str(self.store_dir))
            for stem, result in pending:
                self._write(stem, result)
                self.written += 1
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache
            self.folder = None

    def _read(self, stem: str) -> pl.DataFrame | tuple[pl.DataFrame, ...] | None:
        """The frame or tuple of frames kept under `stem`; None when not (all) kept or unreadable."""
        assert self.folder is not None
        single = self.folder / f"{stem}.parquet"
        try:
            if single.exists():
                return pl.read_parquet(single)
            parts = sorted(self.folder.glob(f"{stem}.*.parquet"), key=lambda p: int(p.suffixes[-2][1:]))
            count_file = self.folder / f"{stem}.parts"
            if not parts or not count_file.exists() or int(count_file.read_text()) != len(parts):
                return None
            return tuple(pl.read_parquet(part) for part in parts)
        except Exception:  # noqa: BLE001 - a damaged or vanished file is a result not kept
            return None

    def _write(self, stem: str, result: pl.DataFrame | tuple[pl.DataFrame, ...]) -> None:
        """Keep `result` under `stem`, each file whole or absent."""
        assert self.folder is not None
        if isinstance(result, pl.DataFrame):
            with atomic_file(self.folder / f"{stem}.parquet", durable=False) as tmp:
                write_parquet_file(result, tmp)
            return
        for index, frame in enumerate(result):
            with atomic_file(self.folder / f"{stem}.{index}.parquet", durable=False) as tmp:
                write_parquet_file(frame, tmp)
        with atomic_file(self.folder / f"{stem}.parts", durable=False) as tmp:
            tmp.write_text(str(len(result)))

    def _tidy(self) -> None:
        """Remove the kept results of store versions that no longer exist, of other code
        fingerprints, and what killed runs left (temporary files, folders without their store)."""
        assert self.folder is not None
        entry = self.folder.parent
        now = time.time()
        for other in (entry.parent.iterdir() if entry.parent.is_dir() else []):
            if other == entry or not other.is_dir():
                continue
            with contextlib.suppress(OSError):
                store_file = other / STORE_FILE
                gone = (not Path(store_file.read_text()).is_dir() if store_file.exists()
                        else now - other.stat().st_mtime > STALE_S)
                if gone:
                    shutil.rmtree(other, ignore_errors=True)
        for other in (entry.iterdir() if entry.is_dir() else []):
            if other.is_dir() and other != self.folder:
                shutil.rmtree(other, ignore_errors=True)
        for leftover in (self.folder.glob(".*.tmp-*") if self.folder.is_dir() else []):
            with contextlib.suppress(OSError):
                if now - leftover.stat().st_mtime > STALE_S:
                    leftover.unlink()
