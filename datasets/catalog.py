"""The catalog: one DuckDB database file of views over the ingested Parquet files.

A user can open `<home>/catalog.duckdb` with plain `duckdb` and query `jobs` and each trace's own tables (`<trace>_...`)
The catalog is never edited in place: every change builds a new file beside it, verifies it and
renames it over the old one, so a killed or failed ingest leaves the previous catalog as it was.
Readers hold the store versions they read (`reading`), so an ingest never deletes them underneath.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    import polars as pl

from ddlx.atomic import fsync_file, fsync_folder
from ddlx.datasets import store
from ddlx.datasets.canonical import conform_jobs_sql, empty_jobs_sql, jobs_table_name
from ddlx.datasets.sqltext import quote_identifier, sql_string
from ddlx.errors import CatalogError, StorageError, first_line, storage_error

CATALOG_FILE = "catalog.duckdb"
REGISTRY_TABLE = "ddlx_datasets"


@dataclass
class Registration:
    """One ingested trace as the catalog knows it: where its Parquet files are and what they hold."""

    trace: str
    version: str
    store_dir: Path
    tables: list[str]
    synthetic: bool
    ingested_at: str
    ddlx_version: str
    manifest: dict[str, Any] = field(default_factory=dict)

    def parquet_path(self, table: str) -> Path:
        return self.store_dir / f"{table}.parquet"


def catalog_path(home: Path) -> Path:
    return home / CATALOG_FILE


def read_registrations(home: Path) -> dict[str, Registration]:
    """The traces registered in the catalog of `home` (empty when there is no catalog yet)."""
    path = catalog_path(home)
    if not path.exists():
        return {}
    con = _open_read_only(path)
    try:
        return _registrations(con, path)
    finally:
        con.close()


def registered_dataset(home: Path, name: str, remedy: str | None = None, lacking: str = "dataset") -> Registration:
    """The registration of the dataset `name` in the catalog of `home`: the one check every command
    that names a dataset makes before it writes anything. `CatalogError` (exit code 1) otherwise,
    saying `no <lacking> '<name>' in <home>`, what the catalog holds, the remedy (default: ingest
    the trace `name`, or import the dataset) and the closest known name."""
    from ddlx.datasets.plugins import TRACES
    from ddlx.errors import did_you_mean

    registrations = read_registrations(home)
    registration = registrations.get(name)
    if registration is None:
        if remedy is None:
            remedy = (f"the trace '{name}' is not ingested: ddlx datasets download {name}, then ddlx datasets "
                      f"ingest {name} --from DIR" if name in TRACES else
                      f"expected a trace ({', '.join(TRACES)}) or a dataset of the catalog: ingest the trace, "
                      f"or import the dataset first (ddlx datasets import {name} --from FILE)")
        listed = f" (it holds: {', '.join(sorted(registrations))})" if registrations else " (it holds no dataset yet)"
        raise CatalogError(f"no {lacking} '{name}' in {home}{listed}; {remedy}"
                           f"{did_you_mean(name, [*registrations, *TRACES])}")
    return registration


def _open_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise storage_error(exc, path, "opening the catalog") or \
            CatalogError(f"{path}: cannot open the catalog: {first_line(exc)}") from None
    except OSError as exc:
        raise storage_error(exc, path, "opening the catalog") from None


def _registrations(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, Registration]:
    try:
        rows = con.sql(
            f"SELECT trace, version, store_dir, tables, synthetic, ingested_at, ddlx_version, manifest "
            f"FROM {REGISTRY_TABLE} ORDER BY trace"
        ).fetchall()
    except duckdb.Error as exc:
        raise CatalogError(f"{path}: not a ddlx catalog ({first_line(exc)}); move it aside and ingest "
                           "again") from None
    return {
        row[0]: Registration(
            trace=row[0], version=row[1], store_dir=Path(row[2]), tables=list(row[3]),
            synthetic=bool(row[4]), ingested_at=row[5], ddlx_version=row[6],
            manifest=json.loads(row[7]),
        )
        for row in rows
    }


def write_catalog(home: Path, registrations: dict[str, Registration]) -> Path:
    """Build the catalog for `registrations` in a new file, verify it, and rename it over the old one.

    The new file is checkpointed (so a failed write, e.g. a full disk, raises here instead of
    staying in DuckDB's write-ahead log), flushed, opened again and checked to hold every
    registration and view before it replaces the old catalog. Any failure leaves the old catalog
    as it was and raises `StorageError` (a system condition) or `CatalogError`.
    """
    home.mkdir(parents=True, exist_ok=True)
    final = catalog_path(home)
    tmp = home / f".catalog-{uuid.uuid4().hex}.duckdb"
    wal = Path(str(tmp) + ".wal")
    try:
        con = duckdb.connect(str(tmp))
        try:
            expected_views = _build(con, registrations)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        if wal.exists() and wal.stat().st_size > 0:
            raise StorageError(f"{tmp}: the new catalog was not written completely (its write-ahead log "
                               "was left behind); check free disk space and run again")
        _verify(tmp, registrations, expected_views)
        fsync_file(tmp)
        os.replace(tmp, final)
        fsync_folder(home)
    except (duckdb.Error, OSError, MemoryError) as exc:
        raise storage_error(exc, final, "writing the catalog") or \
            CatalogError(f"{final}: cannot write the catalog: {first_line(exc)}") from None
    finally:
        for leftover in (tmp, wal):
            leftover.unlink(missing_ok=True)
    return final


def _build(con: duckdb.DuckDBPyConnection, registrations: dict[str, Registration]) -> set[str]:
    """Create the registry table and every view in `con`; returns the names of the views."""
    con.execute(
        f"CREATE TABLE {REGISTRY_TABLE} (trace VARCHAR PRIMARY KEY, version VARCHAR, "
        "store_dir VARCHAR, tables VARCHAR[], synthetic BOOLEAN, ingested_at VARCHAR, "
        "ddlx_version VARCHAR, manifest VARCHAR)"
    )
    created = set()
    job_sources = []
    for reg in sorted(registrations.values(), key=lambda r: r.trace):
        con.execute(
            f"INSERT INTO {REGISTRY_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [reg.trace, reg.version, str(reg.store_dir), reg.tables, reg.synthetic,
             reg.ingested_at, reg.ddlx_version, json.dumps(reg.manifest)],
        )
        views = reg.manifest.get("views", {})
        for table in reg.tables:
            if table not in views:
                con.execute(f"CREATE VIEW {quote_identifier(table)} AS SELECT * FROM "
                            f"read_parquet({sql_string(str(reg.parquet_path(table)))})")
                created.add(table)
        for name, select in views.items():
            con.execute(f"CREATE VIEW {quote_identifier(name)} AS {select}")
            created.add(name)
        if jobs_table_name(reg.trace) in reg.tables:
            job_sources.append(conform_jobs_sql(quote_identifier(jobs_table_name(reg.trace))))
    jobs_sql = " UNION ALL ".join(job_sources) if job_sources else empty_jobs_sql()
    con.execute(f"CREATE VIEW jobs AS {jobs_sql}")
    return created | {"jobs"}


def _verify(path: Path, registrations: dict[str, Registration], views: set[str]) -> None:
    """Open the new catalog file read-only and check it holds every registration and view."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        found = _registrations(con, path)
        present = {row[0] for row in con.sql(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    finally:
        con.close()
    expected = {name: reg.version for name, reg in registrations.items()}
    if {name: reg.version for name, reg in found.items()} != expected or not views <= present:
        raise StorageError(f"{path}: the new catalog does not read back as written "
                           f"({len(found)} of {len(expected)} datasets, {len(views & present)} of "
                           f"{len(views)} views); check the disk and run again")


#: How much memory one DuckDB connection of ddlx may use before it spills to disk
#: (`$DDLX_DUCKDB_MEMORY_LIMIT`, a DuckDB size such as `2GB`), for ingest and analysis alike; the default
#: leaves room for the rest of the process within 2 GB.
DUCKDB_MEMORY_LIMIT = os.environ.get("DDLX_DUCKDB_MEMORY_LIMIT", "1536MB")


def bound_memory(con: duckdb.DuckDBPyConnection, spill_dir: Path) -> None:
    """Hold `con` to `DUCKDB_MEMORY_LIMIT`, spilling sorts, joins and aggregates that outgrow it
    into `spill_dir`; without a limit DuckDB takes up to 80 % of the machine's memory."""
    con.execute(f"SET memory_limit = {sql_string(DUCKDB_MEMORY_LIMIT)}")
    con.execute(f"SET temp_directory = {sql_string(str(spill_dir))}")


def without_progress_bar(con: duckdb.DuckDBPyConnection) -> None:
    """Turn DuckDB's progress bar off on `con` where it is on (a terminal): ddlx reports its own
    progress. In a Jupyter kernel DuckDB starts with it off and refuses to set it at all unless
    ipywidgets is installed, so it is left alone there."""
    if con.execute("SELECT current_setting('enable_progress_bar')").fetchall()[0][0]:
        con.execute("SET enable_progress_bar = false")


def _remove_stale_spill(parent: Path) -> None:
    """Remove the spill folders (`<host>.<pid>.<id>`) of ddlx processes of this host that are gone:
    a run that is killed cannot remove its own. Other hosts' folders are left alone."""
    if not parent.is_dir():
        return
    host = socket.gethostname()
    for folder in parent.iterdir():
        owner, _, rest = folder.name.rpartition(".")[0].rpartition(".")
        if owner != host or not rest.isdigit() or _process_alive(int(rest)):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def spill_folder(home: Path) -> Iterator[Path]:
    """A fresh folder for DuckDB to spill into, removed at the end: in the data home (on the disk
    the data are on), else, where the home is read-only, in the system's temporary folder. Folders
    that killed runs of this host left behind are removed first."""
    try:
        parent = home / ".spill"
        _remove_stale_spill(parent)
        folder = parent / f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="ddlx-spill-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            (home / ".spill").rmdir()


@contextlib.contextmanager
def reading(home: Path) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Registration]]]:
    """A read-only connection to the catalog of `home` and its registrations, with every store
    version the catalog names held for reading (`store.ReaderPins`) until the block ends, so an
    ingest running meanwhile cannot delete the files under it. `CatalogError` when there is no
    catalog."""
    path = catalog_path(home)
    for attempt in range(8):
        if not path.exists():
            raise CatalogError(
                f"no catalog in {home}; ingest a trace first (ddlx datasets ingest TRACE --from DIR)")
        con = _open_read_only(path)
        try:
            registrations = _registrations(con, path)
            pins = store.pin_all(reg.store_dir for reg in registrations.values())
        except BaseException:
            con.close()
            raise
        if pins is None:  # an ingest replaced a version between opening and pinning: read again
            con.close()
            store.wait_briefly(attempt)
            continue
        try:
            with spill_folder(home) as spill:
                try:
                    without_progress_bar(con)
                    # the pinned store files do not change while they are read: each file's footer
                    # is parsed once, not at every query (1-2 ms a table a query, 150 queries an analysis)
                    con.execute("SET parquet_metadata_cache = true")
                    bound_memory(con, spill)
                    yield con, registrations
                finally:
                    con.close()  # before its spill folder goes
        finally:
            con.close()
            pins.release()
        return
    raise CatalogError(f"{path}: the catalog kept changing while it was opened; run again")


def query(home: Path, sql: str) -> pl.DataFrame:
    """Run one SQL query on the catalog of `home` and return its result."""
    import polars as pl  # here, not at the top: ingest and the other catalog users do without it

    with reading(home) as (con, _):
        try:
            result = con.sql(sql)
            if result is None:
                return pl.DataFrame()
            return result.pl()
        except duckdb.Error as exc:
            raise storage_error(exc, catalog_path(home), "running the query") or \
                CatalogError(f"query failed: {first_line(exc)}") from None
