"""Ingest: official trace files -> typed zstd Parquet in a new store version -> catalog swap.

Guarantees:
- atomic: tables are written into a staging folder; only when every table, the canonical jobs
  and the validation report are done is the folder renamed into place and a new catalog renamed
  over the old one. A failed or killed ingest leaves the previous catalog as it was.
- idempotent: when every input file has the size and modification time recorded by the last
  ingest (and the ingest format is unchanged) nothing is redone.
- streaming: DuckDB reads the CSVs and writes Parquet under a memory limit, spilling to disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from ddlx import __version__
from ddlx.datasets import catalog, pai
from ddlx.datasets.archives import extract_member, sha256_file
from ddlx.datasets.csvload import load_csv_to_parquet, sql_string
from ddlx.datasets.home import store_dir
from ddlx.datasets.registry import TraceInfo, get_trace
from ddlx.datasets.validation import run_checks
from ddlx.errors import InputError

#: Bump when the stored tables change shape, so unchanged inputs are ingested again.
INGEST_FORMAT = 1

#: Marker file that ddlx's generator writes beside synthetic release files.
SYNTHETIC_MARKER = "SYNTHETIC.json"

Progress = Callable[[str], None]

DUCKDB_MEMORY_LIMIT = os.environ.get("DDLX_DUCKDB_MEMORY_LIMIT", "2GB")


@dataclass
class IngestResult:
    trace: str
    store_dir: Path
    tables: dict[str, int]
    skipped: bool
    synthetic: bool


def locate_inputs(trace: TraceInfo, source: Path, tables: Sequence[str]) -> dict[str, Path]:
    """Find each table's file in `source`: the extracted `<table>.csv`, else the official archive."""
    if not source.is_dir():
        raise InputError(str(source), "not a folder; expected the folder holding the release files")
    found: dict[str, Path] = {}
    missing = []
    for table in tables:
        release_file = trace.file_for(table)
        candidates = [source / (release_file.member or ""), source / release_file.filename]
        path = next((c for c in candidates if c.is_file()), None)
        if path is None:
            missing.append(f"{release_file.member} or {release_file.filename}")
        else:
            found[table] = path
    if missing:
        raise InputError(str(source), "missing table files: " + "; ".join(missing))
    return found


def _fingerprint(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"path": str(path.resolve()), "size_bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _is_up_to_date(previous: catalog.Registration, inputs: dict[str, Path]) -> bool:
    if previous.manifest.get("ingest_format") != INGEST_FORMAT:
        return False
    recorded = previous.manifest.get("inputs", {})
    for table, path in inputs.items():
        old = recorded.get(table)
        if old is None or not previous.parquet_path(table).exists():
            return False
        if {k: old.get(k) for k in ("path", "size_bytes", "mtime_ns")} != _fingerprint(path):
            return False
    return True


@contextlib.contextmanager
def _ingest_lock(home: Path) -> Iterator[None]:
    """Hold an exclusive lock on the data home for the length of an ingest (POSIX only)."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".ingest.lock", "w") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _connect(workdir: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET memory_limit = {sql_string(DUCKDB_MEMORY_LIMIT)}")
    con.execute(f"SET temp_directory = {sql_string(str(workdir / 'spill'))}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    return con


@dataclass
class _PreparedInput:
    """A table's input on its way to DuckDB: the CSV to read and the sha256 being computed."""

    table: str
    csv_path: Path
    display: str
    entry: dict[str, Any]
    sha256: Future[str]
    extracted: bool


def _prepare(trace: TraceInfo, table: str, source: Path, staging: Path,
             pool: ThreadPoolExecutor) -> _PreparedInput:
    """Start, on the background `pool`, extracting the table's CSV from its archive or hashing the
    plain CSV, so that this work overlaps DuckDB loading the previous table."""
    release_file = trace.file_for(table)
    entry = _fingerprint(source)
    if source.name.endswith((".tar.gz", ".tgz")):
        member = release_file.member or f"{table}.csv"
        csv_path = staging / "tmp" / member
        entry["official_sha256"] = release_file.sha256
        future = pool.submit(extract_member, source, member, csv_path)
        return _PreparedInput(table, csv_path, f"{source}:{member}", entry, future, extracted=True)
    entry["official_sha256"] = release_file.member_sha256
    return _PreparedInput(table, source, str(source), entry, pool.submit(sha256_file, source),
                          extracted=False)


def _load_prepared(con: duckdb.DuckDBPyConnection, prepared: _PreparedInput, staging: Path,
                   max_rejected_rows: int) -> dict[str, Any]:
    """Load one prepared input into `<table>.parquet`; return its manifest entry."""
    entry = prepared.entry
    if prepared.extracted:
        prepared.sha256.result()  # the CSV must be fully extracted before DuckDB reads it
    try:
        result = load_csv_to_parquet(
            con, prepared.csv_path, prepared.display, pai.read_columns(prepared.table),
            pai.select_sql(prepared.table), staging / f"{prepared.table}.parquet", max_rejected_rows,
        )
        entry["sha256"] = prepared.sha256.result()
    finally:
        if prepared.extracted:
            prepared.csv_path.unlink(missing_ok=True)
    entry["matches_official_release"] = (
        entry["sha256"] == entry["official_sha256"] if entry["official_sha256"] else None
    )
    entry.update(rows=result.rows, rejected_rows=result.rejected,
                 rejected_reasons=result.reasons, rejected_examples=result.examples)
    return entry


def _run_checks(con: duckdb.DuckDBPyConnection, staging: Path, present: list[str],
                rows: dict[str, int]) -> list[dict[str, Any]]:
    for table in present:
        path = sql_string(str(staging / f"{table}.parquet"))
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS SELECT * FROM read_parquet({path})')
    return run_checks(con, pai.validation_checks(set(present)), rows)


def ingest(trace_name: str, source: Path, home: Path, tables: Sequence[str] | None = None,
           max_rejected_rows: int = 0, progress: Progress | None = None) -> IngestResult:
    """Ingest `tables` (default: all) of `trace_name` from the folder `source` into `home`.

    Tables not named keep their previously ingested version. Raises `InputError` for bad input,
    leaving the catalog unchanged.
    """
    say = progress or (lambda message: None)
    trace = get_trace(trace_name)
    wanted = list(tables) if tables else trace.tables
    for table in wanted:
        trace.file_for(table)
    source = Path(source)
    inputs = locate_inputs(trace, source, wanted)
    with _ingest_lock(home):
        registrations = catalog.read_registrations(home)
        previous = registrations.get(trace.name)
        marker = _read_synthetic_marker(source)
        synthetic = marker is not None
        if previous is not None and previous.synthetic == synthetic and _is_up_to_date(previous, inputs):
            say(f"{trace.name}: inputs unchanged since the last ingest; nothing to do")
            return IngestResult(trace.name, previous.store_dir,
                                {t: previous.manifest["inputs"][t]["rows"] for t in inputs},
                                skipped=True, synthetic=previous.synthetic)
        root = store_dir(home, trace.name)
        root.mkdir(parents=True, exist_ok=True)
        for leftover in root.glob(".staging-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        staging = root / f".staging-{uuid.uuid4().hex[:12]}"
        (staging / "tmp").mkdir(parents=True)
        try:
            return _ingest_into(trace, inputs, home, root, staging, previous, registrations,
                                marker, max_rejected_rows, say)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _ingest_into(trace: TraceInfo, inputs: dict[str, Path], home: Path, root: Path, staging: Path,
                 previous: catalog.Registration | None,
                 registrations: dict[str, catalog.Registration], marker: dict[str, Any] | None,
                 max_rejected_rows: int, say: Progress) -> IngestResult:
    started = time.monotonic()
    synthetic, synthetic_details = marker is not None, marker
    manifest_inputs: dict[str, Any] = {}
    rows: dict[str, int] = {}
    if previous is not None:
        for table in previous.tables:
            if table in inputs or table == f"{trace.name}_jobs":
                continue
            _link_or_copy(previous.parquet_path(table), staging / f"{table}.parquet")
            manifest_inputs[table] = previous.manifest["inputs"][table]
            rows[table] = manifest_inputs[table]["rows"]
            # A table carried over from a synthetic ingest keeps the whole dataset synthetic.
            if previous.synthetic and not synthetic:
                synthetic, synthetic_details = True, previous.manifest.get("synthetic_details")
    con = _connect(staging)
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        pending = list(inputs.items())
        upcoming = _prepare(trace, *pending[0], staging, pool)
        for index, (table, source) in enumerate(pending):
            current = upcoming
            if index + 1 < len(pending):
                upcoming = _prepare(trace, *pending[index + 1], staging, pool)
            say(f"{trace.name}: reading {source.name}")
            manifest_inputs[table] = _load_prepared(con, current, staging, max_rejected_rows)
            rows[table] = manifest_inputs[table]["rows"]
        present = sorted(rows)
        jobs_table = f"{trace.name}_jobs"
        if all(t in rows for t in pai.JOBS_INPUTS):
            say(f"{trace.name}: building canonical jobs")
            paths = {t: staging / f"{t}.parquet" for t in present}
            out = sql_string(str(staging / f"{jobs_table}.parquet"))
            rows[jobs_table] = int(con.execute(
                f"COPY ({pai.jobs_sql(paths)}) TO {out} (FORMAT parquet, COMPRESSION zstd)"
            ).fetchall()[0][0])
            present.append(jobs_table)
        say(f"{trace.name}: validating")
        checks = _run_checks(con, staging, present, rows)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        con.close()
    version = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    manifest = {
        "trace": trace.name,
        "version": version,
        "ingest_format": INGEST_FORMAT,
        "ddlx_version": __version__,
        "synthetic": synthetic,
        "synthetic_details": synthetic_details,
        "source_tz": trace.source_tz,
        "inputs": manifest_inputs,
        "rows": rows,
        "validation": checks,
        "ingest_seconds": round(time.monotonic() - started, 3),
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
    shutil.rmtree(staging / "tmp", ignore_errors=True)
    shutil.rmtree(staging / "spill", ignore_errors=True)
    final_dir = root / version
    os.replace(staging, final_dir)
    registration = catalog.Registration(
        trace=trace.name, version=version, store_dir=final_dir, tables=present,
        synthetic=synthetic, ingested_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ddlx_version=__version__, manifest=manifest,
    )
    try:
        catalog.write_catalog(home, {**registrations, trace.name: registration})
    except BaseException:
        shutil.rmtree(final_dir, ignore_errors=True)
        raise
    if previous is not None and previous.store_dir != final_dir:
        shutil.rmtree(previous.store_dir, ignore_errors=True)
    return IngestResult(trace.name, final_dir, rows, skipped=False, synthetic=synthetic)


def _link_or_copy(source: Path, dest: Path) -> None:
    """Carry a table from the previous version into the new one without rewriting it."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def _read_synthetic_marker(source: Path) -> dict[str, Any] | None:
    """The generator's marker beside the input files (None when absent: real data)."""
    marker = source / SYNTHETIC_MARKER
    if not marker.is_file():
        return None
    try:
        return json.loads(marker.read_text())
    except (OSError, ValueError):
        return {"note": "generated by ddlx"}
