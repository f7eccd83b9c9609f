"""Ingest: a trace's files -> typed zstd Parquet in a new store version -> catalog swap.

The trace's adapter (`ddlx.datasets.adapter`) says where the rows are and how to read them;
this module does the rest the same way for every trace.

Guarantees:
- atomic: tables are written into a staging folder; only when every table, the canonical jobs
  and the validation report are done and flushed to disk is the folder renamed into place and a
  new, verified catalog renamed over the old one. A failed (disk full, no permission) or killed
  ingest leaves the previous catalog and its files as they were.
- readers first: the superseded version is deleted only when no reader holds it
  (`ddlx.datasets.store`); otherwise a later ingest deletes it.
- idempotent: when every input file has the size and modification time recorded by the last
  ingest (and the ingest format is unchanged) nothing is redone.
- streaming: DuckDB reads the CSVs and writes Parquet under a memory limit, spilling to disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from ddlx import __version__
from ddlx.atomic import folder_lock, fsync_tree
from ddlx.datasets import catalog, store
from ddlx.datasets.adapter import LocalPart, SourcePart, TraceAdapter, require_folder_or_archive
from ddlx.datasets.archives import extract_members, hash_and_scan
from ddlx.datasets.download import read_first_seen
from ddlx.datasets.home import store_dir
from ddlx.datasets.sqltext import PARQUET_ZSTD_LEVEL, copy_to_parquet, quote_identifier, sql_string
from ddlx.datasets.validation import run_checks, run_figures
from ddlx.errors import (
    DdlxError,
    InputError,
    UnknownDatasetError,
    first_line,
    os_error_remedy,
    storage_error,
    storage_errors,
)
from ddlx.progress import step

#: Bump when the stored tables or the manifest change shape, or stored values change (3: a tie
#: rule for a canonical column of one trace; 4: a trace's derived roll-up of its instances per
#: task), so unchanged inputs are ingested again.
INGEST_FORMAT = 4

#: Marker file that ddlx's generator writes beside synthetic release files.
SYNTHETIC_MARKER = "SYNTHETIC.json"

Progress = Callable[[str], None]


@dataclass
class IngestResult:
    trace: str
    store_dir: Path
    tables: dict[str, int]
    skipped: bool
    synthetic: bool


def _fingerprint(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"path": str(path.resolve()), "size_bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _file_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(entry.get(k) for k in ("path", "member", "size_bytes", "mtime_ns"))


def _is_up_to_date(previous: catalog.Registration, adapter: TraceAdapter,
                   parts: dict[str, list[SourcePart]]) -> bool:
    manifest = previous.manifest
    if manifest.get("ingest_format") != INGEST_FORMAT:
        return False
    if manifest.get("adapter_options", {}) != json.loads(json.dumps(adapter.options)):
        return False
    recorded = manifest.get("inputs", {})
    for table, table_parts in parts.items():
        old = recorded.get(table)
        if old is None or not previous.parquet_path(table).exists():
            return False
        now = [_file_key({**_fingerprint(p.path), "member": p.member}) for p in table_parts]
        if [_file_key(f) for f in old.get("files", [])] != now:
            return False
    return True


@contextlib.contextmanager
def _ingest_lock(home: Path) -> Iterator[None]:
    """Hold an exclusive lock on the data home for the length of an ingest (POSIX only)."""
    with contextlib.ExitStack() as held:
        with storage_errors(home, "preparing the data home", (OSError,)):
            home.mkdir(parents=True, exist_ok=True)
            held.enter_context(folder_lock(home / ".ingest.lock"))
        yield


def _connect(workdir: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    catalog.bound_memory(con, workdir / "spill")
    con.execute("SET preserve_insertion_order = false")
    catalog.without_progress_bar(con)
    return con


class _Stopped(Exception):
    """An extraction that was not started because the ingest stopped first."""


def input_bytes(parts: list[SourcePart]) -> int:
    """Bytes of the distinct input files (plain files or whole archives) of one table's `parts`."""
    return sum(path.stat().st_size for path in dict.fromkeys(p.path for p in parts))


def load_order(parts: dict[str, list[SourcePart]]) -> list[str]:
    """The tables of `parts` in the order ingest loads them: smallest input first (ties in the
    adapter's order), so that the largest archive, unpacked from the start (`_Inputs`), is unpacked
    while the other tables load rather than while DuckDB waits for it."""
    return sorted(parts, key=lambda table: input_bytes(parts[table]))


def _require_current_format(adapter: TraceAdapter, parts: dict[str, list[SourcePart]], source: Path,
                            previous: catalog.Registration | None) -> None:
    """`InputError` when tables of an older store format would be kept beside newly ingested ones."""
    if previous is None:
        return
    stored_format = previous.manifest.get("ingest_format")
    kept = [t for t in previous.manifest.get("inputs", {}) if t not in parts and t in adapter.tables]
    if stored_format != INGEST_FORMAT and kept:
        raise InputError(str(source), f"{', '.join(kept)} stored by ddlx {previous.ddlx_version} are of store format "
                                      f"{stored_format}, this ddlx writes {INGEST_FORMAT}; ingest every table again "
                                      f"(without --table)")


class _Inputs:
    """Makes the parts of every table readable on background threads, in load order.

    Each archive is read once, extracting all the members wanted from it into `tmp`; plain files
    are read in place. Every input file is hashed (sha256) as it is read, and every file a table
    is read from is searched for a NUL byte as it goes by (`LocalPart.holds_nul`), so this work
    overlaps DuckDB loading the tables that are ready. The largest archive is extracted from the
    start, on a thread of its own; any other is extracted only once the table before its first
    table is being loaded (`LOOKAHEAD`). Each table's members are removed once it is loaded, so
    the disk holds the unpacked members of the largest archive and of about two other tables at
    a time, not the whole unpacked release.
    """

    #: How many tables ahead of the one being loaded an archive may be extracted.
    LOOKAHEAD = 1
    #: Threads reading inputs: one for the largest archive, one for the others in load order.
    THREADS = 2

    def __init__(self, parts: dict[str, list[SourcePart]], tmp: Path, pool: ThreadPoolExecutor):
        self.parts = parts
        self.order = {table: index for index, table in enumerate(parts)}
        self.local: dict[tuple[Path, str | None], Future[Path]] = {}
        self.holds_nul: dict[tuple[Path, str | None], Future[bool]] = {}
        self.sha256: dict[Path, Future[str]] = {}
        self.turn = threading.Condition()
        self.reached = 0  # the index of the latest table asked for (the first one from the start)
        self.stopped = False
        archives = {p.path: p.path.stat().st_size for ps in parts.values() for p in ps if p.member is not None}
        self.first = max(archives, key=lambda path: archives[path]) if archives else None
        if self.first is not None:
            self._schedule_archive(self.first, tmp, pool)
        for table_parts in parts.values():
            for part in table_parts:
                if part.path in self.sha256:
                    continue
                if part.member is None:
                    done: Future[Path] = Future()
                    done.set_result(part.path)
                    self.local[(part.path, None)] = done
                    self.holds_nul[(part.path, None)] = Future()
                    self.sha256[part.path] = pool.submit(self._scan, part.path, self.holds_nul[(part.path, None)])
                else:
                    self._schedule_archive(part.path, tmp, pool)

    @staticmethod
    def _scan(path: Path, holds_nul: Future[bool]) -> str:
        """Hash the plain file `path` and settle `holds_nul`; returns its sha256."""
        try:
            sha256, nul = hash_and_scan(path)
        except BaseException as exc:
            holds_nul.set_exception(exc)
            raise
        holds_nul.set_result(nul)
        return sha256

    def _schedule_archive(self, archive: Path, tmp: Path, pool: ThreadPoolExecutor) -> None:
        members = list(dict.fromkeys(p.member for ps in self.parts.values() for p in ps
                                     if p.path == archive and p.member is not None))
        dests = {m: tmp / f"{len(self.local) + i}-{Path(m).name}" for i, m in enumerate(members)}
        futures: dict[str, Future[Path]] = {m: Future() for m in members}
        nul: dict[str, Future[bool]] = {m: Future() for m in members}
        for member, future in futures.items():
            self.local[(archive, member)] = future
            self.holds_nul[(archive, member)] = nul[member]

        def extracted(member: str, holds_nul: bool) -> None:
            nul[member].set_result(holds_nul)
            futures[member].set_result(dests[member])

        first_table = min(self.order[table] for table, ps in self.parts.items()
                          if any(p.path == archive for p in ps))
        if archive == self.first:
            first_table = 0

        def extract() -> str:
            try:
                with self.turn:
                    self.turn.wait_for(lambda: self.stopped or self.reached + self.LOOKAHEAD >= first_table)
                    if self.stopped:
                        raise _Stopped(str(archive))
                return extract_members(archive, dests, extracted)
            except BaseException as exc:
                for future in [*futures.values(), *nul.values()]:
                    if not future.done():
                        future.set_exception(exc)
                raise

        self.sha256[archive] = pool.submit(extract)

    def ready(self, table: str) -> list[LocalPart]:
        """The parts of `table`, waiting until each is extracted (raises the extraction's error);
        lets the archives of the next tables be extracted meanwhile."""
        with self.turn:
            self.reached = max(self.reached, self.order[table])
            self.turn.notify_all()
        return [LocalPart(p, self.local[(p.path, p.member)].result(), self.holds_nul[(p.path, p.member)].result)
                for p in self.parts[table]]

    def stop(self) -> None:
        """Extract no further archive (one being extracted runs to its end)."""
        with self.turn:
            self.stopped = True
            self.turn.notify_all()

    def failure(self) -> BaseException | None:
        """The error an extraction or hashing ended with, waiting for it to end (the ingest waits for
        it anyway before it stops); a failed extraction removed its members, so its archive is the
        cause of a failure to read them. Stops further extractions first."""
        self.stop()
        for future in self.sha256.values():
            error = None if future.cancelled() else future.exception()
            if error is not None and not isinstance(error, _Stopped):
                return error
        return None

    def release(self, table: str) -> None:
        """Remove the extracted copies of `table`'s members."""
        for part in self.parts[table]:
            extracted = self.local.get((part.path, part.member))
            if part.member is not None and extracted is not None and extracted.done() \
                    and extracted.exception() is None:
                extracted.result().unlink(missing_ok=True)

    def file_entries(self, table: str) -> list[dict[str, Any]]:
        """Manifest entries of `table`'s input files, with their sha256 (waits for the hashing)."""
        entries = []
        for part in self.parts[table]:
            sha = self.sha256[part.path].result()
            first_seen = read_first_seen(part.path)
            entries.append({
                **_fingerprint(part.path), "member": part.member, "labels": dict(part.labels),
                "sha256": sha, "official_sha256": part.official_sha256,
                "matches_official_release": (sha == part.official_sha256) if part.official_sha256 else None,
                "first_seen_sha256": first_seen,
                "matches_first_seen": (sha == first_seen) if first_seen else None,
            })
        return entries


def _create_views(con: duckdb.DuckDBPyConnection, adapter: TraceAdapter, staging: Path,
                  present: list[str], rows: dict[str, int]) -> dict[str, str]:
    """Name every stored table in `con`, then create the adapter's derived views (counting their
    rows); return the views' SQL, which the catalog recreates."""
    for table in present:
        path = sql_string(str(staging / f"{table}.parquet"))
        con.execute(f'CREATE OR REPLACE VIEW {quote_identifier(table)} AS SELECT * FROM read_parquet({path})')
    views = adapter.derived_views(set(present))
    for name, select in views.items():
        try:
            con.execute(f'CREATE OR REPLACE VIEW {quote_identifier(name)} AS {select}')
            rows[name] = int(con.execute(f'SELECT count(*) FROM {quote_identifier(name)}').fetchall()[0][0])
        except duckdb.Error as exc:
            raise _build_error(adapter, name, exc, staging) from None
        present.append(name)
    return views


def _build_error(adapter: TraceAdapter, name: str, exc: duckdb.Error, staging: Path) -> DdlxError:
    """A system condition (disk full...) met while building `name`, else a failed derivation."""
    return storage_error(exc, staging.parent, f"building {name}") or DdlxError(
        f"{adapter.name}: cannot build {name} from the stored tables ({first_line(exc)})")


def _run_checks(con: duckdb.DuckDBPyConnection, adapter: TraceAdapter,
                present: list[str], rows: dict[str, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    reductions = adapter.validation_tables(set(present))
    for name, select in reductions.items():
        con.execute(f"CREATE OR REPLACE TEMP TABLE {quote_identifier(name)} AS {select}")
    checks = run_checks(con, adapter.validation_checks(set(present)), rows)
    figures = run_figures(con, adapter.figures(set(present)))
    for name in reductions:
        con.execute(f"DROP TABLE {quote_identifier(name)}")
    return checks, figures


def ingest(trace_name: str, source: Path, home: Path, tables: Sequence[str] | None = None,
           max_rejected_rows: int = 0, progress: Progress | None = None) -> IngestResult:
    """Ingest `tables` (default: all) of the registered trace `trace_name` from `source` into `home`.

    `source` is the folder holding the release files (or one release archive). Tables not named
    keep their previously ingested version. Raises `InputError` for bad input, leaving the
    catalog unchanged.
    """
    from ddlx.datasets.plugins import get_adapter

    return ingest_with(get_adapter(trace_name), source, home, tables, max_rejected_rows, progress)


def ingest_with(adapter: TraceAdapter, source: Path, home: Path, tables: Sequence[str] | None = None,
                max_rejected_rows: int = 0, progress: Progress | None = None) -> IngestResult:
    """Ingest with an adapter object (a registered trace's, or one built for `datasets import`)."""
    say = progress or (lambda message: None)
    wanted = list(dict.fromkeys(tables)) if tables else list(adapter.tables)
    unknown = [t for t in wanted if t not in adapter.tables]
    if unknown:
        raise UnknownDatasetError(f"unknown table '{unknown[0]}' for trace '{adapter.name}'; "
                                  f"expected one of: {', '.join(adapter.tables)}")
    source = Path(source)
    require_folder_or_archive(source)
    parts = adapter.locate(source, wanted)
    with _ingest_lock(home):
        registrations = catalog.read_registrations(home)
        previous = registrations.get(adapter.name)
        marker = _read_synthetic_marker(source if source.is_dir() else source.parent)
        synthetic = marker is not None
        if previous is not None and previous.synthetic == synthetic and _is_up_to_date(previous, adapter, parts):
            say(f"{adapter.name}: inputs unchanged since the last ingest; nothing to do")
            return IngestResult(adapter.name, previous.store_dir,
                                {t: previous.manifest["inputs"][t]["rows"] for t in parts},
                                skipped=True, synthetic=previous.synthetic)
        _require_current_format(adapter, parts, source, previous)
        store.collect(home, [reg.store_dir for reg in registrations.values()])
        root = store_dir(home, adapter.name)
        staging = root / f".staging-{uuid.uuid4().hex[:12]}"
        try:
            with storage_errors(staging.parent, f"ingesting {adapter.name}", (OSError, duckdb.Error, MemoryError)):
                (staging / "tmp").mkdir(parents=True)
                with _naming_unreadable_inputs(parts):
                    return _ingest_into(adapter, parts, home, root, staging, previous, registrations,
                                        marker, max_rejected_rows, say)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            for folder in (root, root.parent):  # folders a failed first ingest made, if empty
                with contextlib.suppress(OSError):
                    folder.rmdir()


@contextlib.contextmanager
def _naming_unreadable_inputs(parts: dict[str, list[SourcePart]]) -> Iterator[None]:
    """Turn an operating-system error met opening or reading one of the input files of `parts` (a
    file the user gave: no permission, a read error of the device) into an `InputError` naming that
    file, so that it is not taken for a problem of the data home."""
    inputs = {os.path.abspath(part.path): part.path for table_parts in parts.values() for part in table_parts}
    try:
        yield
    except OSError as exc:
        named = exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else None
        found = inputs.get(os.path.abspath(os.fsdecode(named))) if named is not None else None
        if found is None:
            raise
        raise InputError(str(found), f"cannot be read: {exc.strerror or exc} ({os_error_remedy(exc)})") from None


def _ingest_into(adapter: TraceAdapter, parts: dict[str, list[SourcePart]], home: Path, root: Path,
                 staging: Path, previous: catalog.Registration | None,
                 registrations: dict[str, catalog.Registration], marker: dict[str, Any] | None,
                 max_rejected_rows: int, say: Progress) -> IngestResult:
    started = time.monotonic()
    synthetic, synthetic_details = marker is not None, marker
    manifest_inputs: dict[str, Any] = {}
    rows: dict[str, int] = {}
    steps: dict[str, float] = {}  # seconds of each step, in the order they ran (the manifest's step_seconds)
    if previous is not None:
        for table, entry in previous.manifest.get("inputs", {}).items():
            if table in parts or table not in adapter.tables:
                continue
            _link_or_copy(previous.parquet_path(table), staging / f"{table}.parquet")
            manifest_inputs[table] = entry
            rows[table] = entry["rows"]
            # A table carried over from a synthetic ingest keeps the whole dataset synthetic.
            if previous.synthetic and not synthetic:
                synthetic, synthetic_details = True, previous.manifest.get("synthetic_details")
    con = _connect(staging)
    pool = ThreadPoolExecutor(max_workers=_Inputs.THREADS)
    parts = {table: parts[table] for table in load_order(parts)}
    inputs: _Inputs | None = None
    try:
        inputs = _Inputs(parts, staging / "tmp", pool)
        for done, table in enumerate(parts):
            step(say, adapter.name, done, len(parts), "tables",
                 detail="reading " + ", ".join(sorted({p.path.name for p in parts[table]})))
            began = time.monotonic()
            try:
                result = adapter.load_table(con, table, inputs.ready(table),
                                            staging / f"{table}.parquet", max_rejected_rows)
            except Exception:
                # an extraction that failed meanwhile removed its members: the archive is the cause
                failure = inputs.failure()
                if failure is not None:
                    raise failure from None
                raise
            finally:
                inputs.release(table)
            steps[table] = round(time.monotonic() - began, 3)
            rows[table] = result.rows
            manifest_inputs[table] = {
                "rows": result.rows, "rejected_rows": result.rejected,
                "rejected_reasons": result.reasons, "rejected_examples": result.examples,
            }
        for table in parts:
            manifest_inputs[table]["files"] = inputs.file_entries(table)
        # the manifest lists the tables in the adapter's order, whatever order they were loaded in
        manifest_inputs = {t: manifest_inputs[t] for t in adapter.tables if t in manifest_inputs}
        rows = {t: rows[t] for t in adapter.tables if t in rows}
        present = list(rows)
        for name, select in adapter.derived_tables(staging, set(present)).items():
            step(say, adapter.name, len(parts), len(parts), "tables", detail=f"building {name}")
            began = time.monotonic()
            out = staging / f"{name}.parquet"
            try:
                if isinstance(select, str):
                    rows[name] = copy_to_parquet(con, select, out)
                else:
                    rows[name] = select(con, out, staging / "tmp")
            except duckdb.Error as exc:
                raise _build_error(adapter, name, exc, staging) from None
            steps[name] = round(time.monotonic() - began, 3)
            present.append(name)
        began = time.monotonic()
        views = _create_views(con, adapter, staging, present, rows)
        steps["views"] = round(time.monotonic() - began, 3)
        step(say, adapter.name, len(parts), len(parts), "tables", detail="validating")
        began = time.monotonic()
        checks, figures = _run_checks(con, adapter, present, rows)
        steps["validation"] = round(time.monotonic() - began, 3)
    finally:
        if inputs is not None:
            inputs.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        con.close()
    version = _new_version()
    manifest = {
        "trace": adapter.name,
        "title": adapter.title or (adapter.info.title if adapter.info else adapter.name),
        "version": version,
        "ingest_format": INGEST_FORMAT,
        "ddlx_version": __version__,
        "synthetic": synthetic,
        "synthetic_details": synthetic_details,
        "source_tz": adapter.source_tz,
        "adapter_options": adapter.options,
        "views": views,
        "inputs": manifest_inputs,
        "rows": rows,
        "validation": checks,
        "figures": figures,
        "ingest_seconds": round(time.monotonic() - started, 3),
        "step_seconds": steps,
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
    shutil.rmtree(staging / "tmp", ignore_errors=True)
    shutil.rmtree(staging / "spill", ignore_errors=True)
    final_dir = _commit_version(home, root, staging, previous, registrations, present, synthetic, manifest)
    return IngestResult(adapter.name, final_dir, rows, skipped=False, synthetic=synthetic)


def _new_version() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def _commit_version(home: Path, root: Path, staging: Path, previous: catalog.Registration | None,
                    registrations: dict[str, catalog.Registration], tables: list[str], synthetic: bool,
                    manifest: dict[str, Any]) -> Path:
    """Make the finished `staging` folder the dataset's new store version (`manifest["version"]`)
    and swap in a catalog naming it: flushed first, the previous version retired only once the new
    catalog is in place. Call with the ingest lock held; returns the version folder."""
    store.mark_pending(staging)
    fsync_tree(staging)  # a full disk surfaces here, before anything is replaced
    final_dir = root / manifest["version"]
    os.replace(staging, final_dir)
    registration = catalog.Registration(
        trace=manifest["trace"], version=manifest["version"], store_dir=final_dir, tables=tables,
        synthetic=synthetic, ingested_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ddlx_version=__version__, manifest=manifest,
    )
    superseded = (previous is not None and previous.store_dir != final_dir
                  and store.mark_retired(home, previous.store_dir))
    try:
        catalog.write_catalog(home, {**registrations, registration.trace: registration})
    except BaseException:
        shutil.rmtree(final_dir, ignore_errors=True)
        if superseded and previous is not None:
            store.unmark_retired(previous.store_dir)
        raise
    store.mark_committed(final_dir)
    if superseded and previous is not None:
        store.delete_retired(previous.store_dir)  # kept while a reader still holds it
    return final_dir


def store_derived_tables(home: Path, dataset: str, tables: dict[str, Any], provenance: dict[str, Any]) -> Path:
    """Store `tables` (name -> Arrow table; names must start with `<dataset>_`) as tables of the
    dataset `dataset` in the catalog, beside its own, replacing tables of the same names; the
    manifest's `derived` entry records `provenance` for each. A new store version of the dataset is
    built (its other tables carried over by hard link) and swapped in as an ingest is, so a failure
    leaves the catalog as it was. A later ingest of the dataset drops them (they were derived from
    what it replaces). Returns the new version folder."""
    import pyarrow.parquet as pq

    bad = [name for name in tables if not name.startswith(f"{dataset}_")]
    if bad:
        raise UnknownDatasetError(f"a table derived from {dataset} must be named {dataset}_..., not {bad[0]}")
    with _ingest_lock(home):
        registrations = catalog.read_registrations(home)
        previous = registrations.get(dataset)
        if previous is None:
            raise UnknownDatasetError(f"no dataset named {dataset!r} in {home}; ingest or import it first")
        store.collect(home, [reg.store_dir for reg in registrations.values()])
        root = store_dir(home, dataset)
        staging = root / f".staging-{uuid.uuid4().hex[:12]}"
        views = previous.manifest.get("views", {})
        try:
            with storage_errors(staging.parent, f"storing tables derived from {dataset}", (OSError, MemoryError)):
                staging.mkdir(parents=True)
                kept = [t for t in previous.tables if t not in tables]
                for table in kept:
                    if table not in views:
                        _link_or_copy(previous.parquet_path(table), staging / f"{table}.parquet")
                for name, table in tables.items():
                    pq.write_table(table, staging / f"{name}.parquet", compression="zstd",
                                   compression_level=PARQUET_ZSTD_LEVEL)
                manifest = {**previous.manifest, "version": _new_version(),
                            "rows": {**previous.manifest.get("rows", {}), **{n: t.num_rows for n, t in tables.items()}},
                            "derived": {**previous.manifest.get("derived", {}),
                                        **{name: provenance for name in tables}}}
                (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
                return _commit_version(home, root, staging, previous, registrations, [*kept, *tables],
                                       previous.synthetic, manifest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


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
