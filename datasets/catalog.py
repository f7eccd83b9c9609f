"""The catalog: one DuckDB database file of views over the ingested Parquet files.

A user can open `<home>/catalog.duckdb` with plain `duckdb` and query `jobs`, `pai_job_table`, ...
The catalog is never edited in place: every change builds a new file beside it and renames it over
the old one, so a killed ingest leaves the previous catalog as it was.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    import polars as pl

from ddlx.datasets.canonical import conform_jobs_sql, empty_jobs_sql, jobs_table_name
from ddlx.datasets.csvload import sql_string
from ddlx.errors import CatalogError

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
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise CatalogError(f"{path}: cannot open the catalog: {exc}") from None
    try:
        rows = con.sql(
            f"SELECT trace, version, store_dir, tables, synthetic, ingested_at, ddlx_version, manifest "
            f"FROM {REGISTRY_TABLE} ORDER BY trace"
        ).fetchall()
    except duckdb.Error as exc:
        raise CatalogError(f"{path}: not a ddlx catalog ({exc})") from None
    finally:
        con.close()
    return {
        row[0]: Registration(
            trace=row[0], version=row[1], store_dir=Path(row[2]), tables=list(row[3]),
            synthetic=bool(row[4]), ingested_at=row[5], ddlx_version=row[6],
            manifest=json.loads(row[7]),
        )
        for row in rows
    }


def write_catalog(home: Path, registrations: dict[str, Registration]) -> Path:
    """Build the catalog for `registrations` in a new file and rename it over the old one."""
    home.mkdir(parents=True, exist_ok=True)
    final = catalog_path(home)
    tmp = home / f".catalog-{uuid.uuid4().hex}.duckdb"
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(
                f"CREATE TABLE {REGISTRY_TABLE} (trace VARCHAR PRIMARY KEY, version VARCHAR, "
                "store_dir VARCHAR, tables VARCHAR[], synthetic BOOLEAN, ingested_at VARCHAR, "
                "ddlx_version VARCHAR, manifest VARCHAR)"
            )
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
                        con.execute(
                            f'CREATE VIEW "{table}" AS SELECT * FROM '
                            f"read_parquet({sql_string(str(reg.parquet_path(table)))})"
                        )
                for name, select in views.items():
                    con.execute(f'CREATE VIEW "{name}" AS {select}')
                if jobs_table_name(reg.trace) in reg.tables:
                    job_sources.append(conform_jobs_sql(f'"{jobs_table_name(reg.trace)}"'))
            jobs_sql = " UNION ALL ".join(job_sources) if job_sources else empty_jobs_sql()
            con.execute(f"CREATE VIEW jobs AS {jobs_sql}")
        finally:
            con.close()
        os.replace(tmp, final)
    finally:
        for leftover in (tmp, Path(str(tmp) + ".wal")):
            leftover.unlink(missing_ok=True)
    return final


def connect(home: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the catalog of `home`; `CatalogError` when there is none."""
    path = catalog_path(home)
    if not path.exists():
        raise CatalogError(
            f"no catalog in {home}; ingest a trace first (ddlx datasets ingest pai --from DIR)"
        )
    con = duckdb.connect(str(path), read_only=True)
    con.execute("SET enable_progress_bar = false")
    return con


def query(home: Path, sql: str) -> pl.DataFrame:
    """Run one SQL query on the catalog of `home` and return its result."""
    import polars as pl  # here, not at the top: ingest and the other catalog users do without it

    con = connect(home)
    try:
        result = con.sql(sql)
        if result is None:
            return pl.DataFrame()
        return result.pl()
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0]
        raise CatalogError(f"query failed: {message}") from None
    finally:
        con.close()
