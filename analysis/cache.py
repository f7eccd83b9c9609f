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
  parameters (`KeptResults.once`).

Beyond the results kept by name, every query of the catalog alone (`TraceContext.query`) whose
result has at most `SMALL_RESULT_ROWS` rows is kept under its text (`small_result`): the tables,
quantiles and CDFs of the modules, so that a run with other options recomputes only what they change.
A query run while a kept result is being computed is not kept on its own (that result is kept whole).

Modules running at the same time on two connections (`ddlx.analysis.runner`) share one
`ResultCache`: what one computes the other reads, and each thread counts its own results being
computed.

Kept results are verified, never trusted. Each file carries in its Parquet key-value metadata what
produced it (`provenance`: the full hash of its name and key, the store version folder, the code
fingerprint, its part of a tuple of frames, its schema, row count and a digest of its rows), and a
read checks all of it against what the run asks for and what the file holds: a file put at another
result's path, cut short, rewritten or of another schema is refused (counted in `refused`), computed
again and replaced at `commit`, never used.

Kept results are a cache, never data. They are written when the run's analysis has succeeded (a
failed run keeps nothing); a result that cannot be written (a read-only or full disk) or read (a
damaged or vanished file) is computed as if it had never been kept. A run that writes also removes
the kept results of store versions that no longer exist (a trace ingested again, a data home
deleted) and of other fingerprints. `ddlx analyze --no-cache`, and `DDLX_PLAIN=kept` (or `1`, every
speed-up off: `ddlx.analysis.fast`), neither read nor write kept results; deleting the cache folder
at any time is safe.
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

from ddlx.analysis.fast import speedups
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

#: The prefix of the Parquet key-value metadata a kept result carries (`provenance`).
METADATA_PREFIX = "ddlx.kept."

#: The seed of the row hashes a kept result's digest is made of (`rows_digest`).
_DIGEST_SEED = 20_260_101


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
    pending: list[tuple[str, str, pl.DataFrame | tuple[pl.DataFrame, ...]]] = field(default_factory=list)
    #: Results read or computed this run, by file stem: asked for again, they are not read twice.
    this_run: dict[str, pl.DataFrame | tuple[pl.DataFrame, ...]] = field(default_factory=dict)
    #: The stems of the results read from earlier runs.
    read_stems: set[str] = field(default_factory=set)
    #: The stems of kept files refused this run (not what the run asks for, or not whole): computed again.
    refused_stems: set[str] = field(default_factory=set)
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
        """The kept results of `trace` whose store version is the folder `store_dir`; none when not
        `enabled` or when kept results are turned off (`DDLX_PLAIN`, `ddlx.analysis.fast.speedups`)."""
        if not enabled or not speedups().kept:
            return cls(None)
        store_dir = Path(os.path.abspath(store_dir))
        place = hashlib.sha256(str(store_dir).encode()).hexdigest()[:12]
        entry = analysis_cache_folder(cache_dir) / f"{trace}-{store_dir.name}-{place}"
        return cls(entry / code_fingerprint(), store_dir)

    def summary(self) -> dict[str, Any]:
        """What this run read and kept, for the report: `folder` (None when nothing is kept), `read`
        (results read from earlier runs), `refused` (kept files that failed their check and were
        computed again), `kept` (results computed and kept for later ones)."""
        return {"folder": str(self.folder) if self.folder else None, "read": self.read,
                "refused": len(self.refused_stems), "kept": self.written}

    def frames(self, name: str, key: Sequence[Any], compute: Callable[[], Frames]) -> Frames:
        """The result `name` under `key` (what it depends on beyond the data and ddlx: a query's
        text, parameters): read when kept, else `compute()`d and kept at `commit`. A DataFrame or
        a tuple of them."""
        if self.folder is None:
            return compute()
        digest = key_digest(name, key)
        stem = self._stem(name, digest)
        kept = self._kept(stem, digest)
        if kept is not None:
            return kept  # type: ignore[return-value]
        self.computing += 1
        try:
            result = compute()
        finally:
            self.computing -= 1
        self._keep(stem, result, digest)
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
        digest = key_digest(QUERY_RESULT, key)
        stem = self._stem(QUERY_RESULT, digest)
        kept = self._kept(stem, digest)
        if isinstance(kept, pl.DataFrame):
            return kept
        result = compute()
        if result.height <= SMALL_RESULT_ROWS:
            self._keep(stem, result, digest)
        return result

    def _kept(self, stem: str, digest: str) -> pl.DataFrame | tuple[pl.DataFrame, ...] | None:
        """The result under `stem` (whose full key digest is `digest`) when this run has it or an
        earlier run kept it and it passes its check (counted in `read` once per run), else None."""
        if stem in self.this_run:
            return self.this_run[stem]
        kept = self._read(stem, digest)
        if kept is not None:
            with self._lock:
                self.read_stems.add(stem)
                self.this_run.setdefault(stem, kept)
        return kept

    @staticmethod
    def _stem(name: str, digest: str) -> str:
        """The file name (without suffix) of the result `name` whose full key digest is `digest`:
        the name and the digest's first 24 hex digits (the file's metadata holds it whole)."""
        return f"{name}-{digest[:24]}"

    def _keep(self, stem: str, result: pl.DataFrame | tuple[pl.DataFrame, ...], digest: str) -> None:
        """Keep `result` under `stem` (full key digest `digest`) at `commit`; asked for again this run,
        it is not computed again (computed at the same time by two threads, it is kept once)."""
        with self._lock:
            if stem in self.this_run:
                return
            self.this_run[stem] = result
            self.pending.append((stem, digest, result))

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
            for stem, digest, result in pending:
                self._write(stem, digest, result)
                self.written += 1
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache
            self.folder = None

    def _read(self, stem: str, digest: str) -> pl.DataFrame | tuple[pl.DataFrame, ...] | None:
        """The frame or tuple of frames kept under `stem` when every file of it passes its check
        against `digest` (`verified_frame`); None when not kept, and None counted in `refused`
        when a file is there but unreadable, not whole, or not this result's."""
        assert self.folder is not None
        single = self.folder / f"{stem}.parquet"
        parts = list(self.folder.glob(f"{stem}.*.parquet"))
        if not single.exists() and not parts:
            return None
        try:
            if single.exists():
                return verified_frame(single, self._provenance(digest, 0, 1))
            frames = tuple(verified_frame(part, self._provenance(digest, index, len(parts)))
                           for index, part in enumerate(sorted(parts, key=lambda p: int(p.suffixes[-2][1:]))))
            return frames
        except Exception:  # noqa: BLE001 - a damaged, vanished or foreign file is a result not kept
            with self._lock:
                self.refused_stems.add(stem)
            return None

    def _provenance(self, digest: str, part: int, parts: int) -> dict[str, str]:
        """The metadata (`METADATA_PREFIX` keys) of part `part` of `parts` of the result whose full key
        digest is `digest`, in this store version and under this code."""
        assert self.folder is not None
        return {f"{METADATA_PREFIX}key": digest, f"{METADATA_PREFIX}store": str(self.store_dir),
                f"{METADATA_PREFIX}code": self.folder.name, f"{METADATA_PREFIX}part": f"{part}/{parts}"}

    def _write(self, stem: str, digest: str, result: pl.DataFrame | tuple[pl.DataFrame, ...]) -> None:
        """Keep `result` under `stem`, each file whole or absent, with its provenance in its metadata
        (what produced it, and its schema, rows and digest: `content_metadata`)."""
        assert self.folder is not None
        frames = (result,) if isinstance(result, pl.DataFrame) else result
        for stale in self.folder.glob(f"{stem}*.parquet"):
            stale.unlink(missing_ok=True)  # a refused file, or parts of another count
        for index, frame in enumerate(frames):
            path = self.folder / (f"{stem}.parquet" if isinstance(result, pl.DataFrame) else f"{stem}.{index}.parquet")
            metadata = {**self._provenance(digest, index, len(frames)), **content_metadata(frame)}
            with atomic_file(path, durable=False) as tmp:
                write_parquet_file(frame, tmp, metadata=metadata)

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


def key_digest(name: str, key: Sequence[Any]) -> str:
    """The full sha256 (hex) of a result's name and key: what a kept file's metadata must hold."""
    return hashlib.sha256(json.dumps([name, list(key)], default=str).encode()).hexdigest()


def rows_digest(frame: pl.DataFrame) -> str:
    """A sha256 (hex) of the values of `frame`, row by row in order (polars' row hashes, stable for
    one polars version, which the code fingerprint holds): equal for the same rows however they are
    chunked, different for any other value, order or row count."""
    digest = hashlib.sha256(f"{frame.height}x{frame.width}".encode())
    if frame.width and frame.height:
        digest.update(frame.hash_rows(seed=_DIGEST_SEED).to_numpy().tobytes())
    return digest.hexdigest()


def schema_text(frame: pl.DataFrame) -> str:
    """The columns and types of `frame` as one text, e.g. `[["n", "Int64"], ...]`."""
    return json.dumps([[name, str(dtype)] for name, dtype in frame.schema.items()])


def content_metadata(frame: pl.DataFrame) -> dict[str, str]:
    """The metadata that describes what a kept file holds: schema, row count and `rows_digest`."""
    return {f"{METADATA_PREFIX}schema": schema_text(frame), f"{METADATA_PREFIX}rows": str(frame.height),
            f"{METADATA_PREFIX}digest": rows_digest(frame)}


class KeptResultMismatch(Exception):
    """A kept file that is not the result asked for, or not whole (the cache computes it again)."""


def verified_frame(path: Path, expected: dict[str, str]) -> pl.DataFrame:
    """The frame kept at `path` when its metadata holds `expected` (what produced it) and its rows
    match the schema, row count and digest it records; else `KeptResultMismatch` (or the reader's
    error for a file that is not Parquet)."""
    metadata = pl.read_parquet_metadata(path)
    wrong = sorted(key for key, value in expected.items() if metadata.get(key) != value)
    if wrong:
        raise KeptResultMismatch(f"{path}: {', '.join(wrong)} differ from the result asked for")
    frame = pl.read_parquet(path)
    found = content_metadata(frame)
    wrong = sorted(key for key, value in found.items() if metadata.get(key) != value)
    if wrong:
        raise KeptResultMismatch(f"{path}: {', '.join(wrong)} differ from the file's own record")
    return frame
