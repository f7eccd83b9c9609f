"""One DuckDB connection to the catalog, as the analysis modules query it (`CatalogConnection`):
queries and their errors, temporary tables of catalog queries, registered frames, and the run's
named products, with the results worth keeping found again by their text."""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from ddlx.analysis.fast import fast_paths
from ddlx.analysis.kept import KeptResults
from ddlx.errors import CatalogError, first_line

if TYPE_CHECKING:
    import pyarrow as pa


class CatalogConnection:
    """The connection `con` to the catalog on which one trace (`trace`, named in errors) is read,
    with the canonical views it publishes open under their names (`views`). Results are kept in
    `kept` (shared by every connection of the run): a catalog query's under its text, the rows of
    a product once for the run. Closing it drops what it made and closes `con`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, trace: str, views: set[str] | None = None,
                 kept: KeptResults | None = None) -> None:
        self.con = con
        self.trace = trace
        self.views = set(views or ())
        self.kept = kept if kept is not None else KeptResults()
        #: Temporary tables of catalog queries (`materialized`) and the run's products (`product`):
        #: name -> its query.
        self._materialized: dict[str, str] = {}
        #: Those of them made on the connection so far.
        self._made: set[str] = set()
        #: The products declared here: name -> how its rows are found faster (`product`'s `fast`).
        self._products: dict[str, Callable[[], Any] | None] = {}

    def query(self, sql: str, keep: str | None = None) -> pl.DataFrame:
        """Run `sql` on the catalog; `CatalogError` with DuckDB's first line when it fails.

        `keep` names a result worth keeping between runs (`ddlx.analysis.cache`), found again by
        its text: `sql` must then read only the catalog's tables and views (and tables of catalog
        queries, `materialized`), never another temporary table or frame of the run (`ValueError`,
        a bug in the caller). Without `keep`, such a query with a small result is kept under its
        text (`ResultCache.small_result`); one that reads the run's own tables or frames is not."""
        return self.computed(sql, lambda: self._run(sql), keep)

    def one_row(self, sql: str, keep: str | None = None) -> dict[str, Any]:
        """The first row of `sql` as a dict (`keep` as `query`)."""
        return self.query(sql, keep).to_dicts()[0]

    def computed(self, sql: str, compute: Callable[[], pl.DataFrame], keep: str | None = None) -> pl.DataFrame:
        """The result of the catalog query `sql`, computed by `compute()`: a faster way to the same
        rows, which `sql` still defines and names when the result is kept (under `keep` as `query`
        keeps it, else as `query` keeps a small result of the catalog); the queries `compute` runs
        are not kept on their own."""
        cache = self.kept.cache
        if keep:
            key = self._catalog_key(sql)
            if key is None:
                used = [name for name in self._run_objects_in(sql) if name not in self._materialized]
                raise ValueError(f"a kept query cannot read {', '.join(used)}: not the catalog's")
            return cache.frames(keep, key, compute)

        def run() -> pl.DataFrame:
            cache.computing += 1
            try:
                return compute()
            finally:
                cache.computing -= 1

        if cache.keeping:
            key = self._catalog_key(sql)
            if key is not None:
                return cache.small_result(key, run)
        return run()

    def _catalog_key(self, sql: str) -> list[str] | None:
        """What the result of `sql` depends on beyond the data and ddlx: its text and the queries of
        the `materialized` tables it reads; None when it reads another object of the run."""
        used = self._run_objects_in(sql)
        if any(name not in self._materialized for name in used):
            return None
        return [sql, *(f"{name} AS {self._materialized[name]}" for name in used)]

    @contextlib.contextmanager
    def materialized(self, sql: str, name: str) -> Iterator[str]:
        """The catalog query `sql` as the temporary table `name` within the block, for several
        results to read; yields `name`. The table is made when a statement first reads it, so a
        run whose results of it are all kept never makes it; those results are kept under their
        text and `sql`. `ValueError` when `sql` itself reads an object of the run."""
        self._declare(sql, name)
        try:
            yield name
        finally:
            del self._materialized[name]
            if name in self._made:
                self._made.discard(name)
                self.execute(f"DROP TABLE IF EXISTS {name}")

    def product(self, sql: str, stem: str, fast: Callable[[], pa.Table | str | None] | None = None) -> str:
        """A named product of the run: the rows of the catalog query `sql`, which results of several
        modules read under the returned name (`stem` and a digest of `sql`: one query, one
        product). It is made when a statement first reads it, whichever module and connection that
        is, so the modules do not depend on the order they run in. `sql` defines the rows (and
        names them in the keys of results read from them); without a faster way, each connection
        that reads the product makes it as a temporary table of `sql` (a run on two connections
        has traces small enough for `fast`).

        `fast()`, when fast paths are on (`ddlx.analysis.fast`), gives the same rows another way,
        computed once for the run and shared by its connections: an Arrow table (held in memory and
        registered on each connection that reads it), or a cheaper query with the same rows (e.g. of
        another product, a view on each connection); None leaves them to `sql`."""
        name = f"{stem}_{hashlib.sha256(sql.encode()).hexdigest()[:12]}"
        if name not in self._materialized:
            self._declare(sql, name)
            self._products[name] = fast
        return name

    def product_computed(self, name: str) -> bool:
        """True when the rows of the product `name` are computed for the run (on any connection)."""
        return self.kept.this_run.holds(f"product {name}")

    def offer_product(self, name: str, rows: pa.Table) -> None:
        """`rows` as the fast rows of the product `name` (`product`), found by another product's
        `fast` in the same pass; kept unless the run has them or is computing them."""
        self.kept.this_run.offer(f"product {name}", rows)

    @property
    def made(self) -> set[str]:
        """The temporary tables and products made on this connection so far (by name)."""
        return set(self._made)

    def _make_product(self, name: str) -> None:
        """Make the product `name` on this connection: its fast rows (computed once for the run),
        else a temporary table of its query."""
        fast = self._products[name]
        rows = self.kept.this_run.get(f"product {name}", fast) if fast is not None and fast_paths() else None
        if isinstance(rows, str):
            self.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {rows}")
        elif rows is not None:
            self.con.register(name, rows)
        else:
            self.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {self._materialized[name]}")

    def _declare(self, sql: str, name: str) -> None:
        if self._catalog_key(sql) is None:
            raise ValueError(f"{name}: a materialized query must read only the catalog")
        self._materialized[name] = sql

    def _make_read_tables(self, sql: str) -> None:
        """Make the `materialized` tables `sql` reads that are not made yet."""
        for name, query in list(self._materialized.items()):
            if name not in self._made and _names(name, sql):
                self._made.add(name)
                try:
                    if name in self._products:
                        self._make_product(name)
                    else:
                        self.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {query}")
                except BaseException:
                    self._made.discard(name)
                    raise

    def _run(self, sql: str) -> pl.DataFrame:
        """The result of `sql` on the connection; `CatalogError` when it fails."""
        self._make_read_tables(sql)
        try:
            return self.con.sql(sql).pl()
        except duckdb.Error as exc:
            raise self._failed(exc) from None

    def batches(self, sql: str, rows: int) -> Iterator[pa.RecordBatch]:
        """The rows of `sql` as Arrow record batches of up to `rows` rows, streamed (a sorted result
        is read in order without being held whole); errors as `query`."""
        self._make_read_tables(sql)
        try:
            reader = self.con.sql(sql).to_arrow_reader(rows)
        except duckdb.Error as exc:
            raise self._failed(exc) from None
        with reader:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except duckdb.Error as exc:
                    raise self._failed(exc) from None
                yield batch

    @contextlib.contextmanager
    def registered(self, frame: pl.DataFrame | pa.Table, name: str) -> Iterator[str]:
        """`frame` as the view `name` of the connection within the block (an object of the run,
        never kept); yields `name`."""
        self.con.register(name, frame)
        try:
            yield name
        finally:
            self.con.unregister(name)

    def arrow(self, sql: str) -> pa.Table:
        """The whole result of `sql` as an Arrow table, never kept (for rows taken on in memory);
        errors as `query`."""
        self._make_read_tables(sql)
        try:
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise self._failed(exc) from None

    def execute(self, sql: str) -> None:
        """Run a statement that returns nothing to keep (e.g. CREATE TEMP TABLE); errors as `query`."""
        self._make_read_tables(sql)
        try:
            self.con.execute(sql)
        except duckdb.Error as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: duckdb.Error) -> CatalogError:
        return CatalogError(f"{self.trace}: analysis query failed: {first_line(exc)}")

    def _run_objects_in(self, sql: str) -> list[str]:
        """The temporary tables, views and registered frames of this run that `sql` names, other
        than the canonical views of the catalog; and `gpu_samples`, whose telemetry is stored apart
        from the trace's store version that names kept results."""
        rows = self.con.execute("""SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal
                                   UNION ALL SELECT table_name FROM duckdb_tables() WHERE temporary""").fetchall()
        names = ({name for name, in rows} - self.views) | {"gpu_samples"} | set(self._materialized)
        return sorted(name for name in names if _names(name, sql))

    def close(self) -> None:
        """Forget the products declared here (their fast functions are closures over the run) and
        close the connection."""
        self._products.clear()
        self.con.close()


def _names(name: str, sql: str) -> bool:
    """True when the SQL text `sql` names the object `name` (as a whole word, any case)."""
    return re.search(rf"\b{re.escape(name)}\b", sql, re.IGNORECASE) is not None
