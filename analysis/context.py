"""What an analysis module reads: one trace of the catalog, through a read-only DuckDB connection.

Modules never open raw files, and never ask which trace they read: they query the catalog's
canonical `jobs` view (restricted to the trace) and the canonical views the trace publishes
(`gpu_capacity`, `attempts`, ...: `ddlx.datasets.canonical.VIEWS`), opened under those names on
the connection, and ask whether a view is present (`has_view`). Science that only one trace's
records allow is declared by that trace (`ddlx.analysis.trace_parts`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import polars as pl

from ddlx.analysis.cache import ResultCache
from ddlx.analysis.fast import fast_paths
from ddlx.datasets import catalog
from ddlx.datasets.canonical import VIEWS, jobs_table_name
from ddlx.datasets.importers import has_wall_clock, starts_recorded
from ddlx.datasets.sqltext import sql_string
from ddlx.datasets.trace_info import TraceInfo
from ddlx.datasets.traces import TRACES, trace_part
from ddlx.errors import CatalogError, did_you_mean, first_line

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")


class OnceResults:
    """Results computed once per run (`TraceContext.once`), shared by the run's connections: a
    result another thread is computing is waited for, never computed twice at once. Should that
    thread fail, a waiting one computes it itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, Any] = {}
        self._computing: dict[str, threading.Event] = {}

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The result under `key`, from `compute()` at the first call."""
        while True:
            with self._lock:
                if key in self._results:
                    return self._results[key]
                computing = self._computing.get(key)
                if computing is None:
                    computing = self._computing[key] = threading.Event()
                    break
            computing.wait()
        try:
            value = compute()
            with self._lock:
                self._results[key] = value
            return value
        finally:
            with self._lock:
                del self._computing[key]
            computing.set()

    def clear(self) -> None:
        """Let go of every result held (a run that ended)."""
        with self._lock:
            self._results.clear()

    def holds(self, key: str) -> bool:
        """True when a result is held under `key`."""
        with self._lock:
            return key in self._results

    def offer(self, key: str, value: Any) -> None:
        """Hold `value` under `key` unless a result is held or being computed there (one pass that
        computes two results offers the second)."""
        with self._lock:
            if key not in self._results and key not in self._computing:
                self._results[key] = value

#: The zone used for hours and weekdays when a trace has none (its times are offsets from an undisclosed start).
FALLBACK_TZ = "UTC"

#: Why hour-of-day and weekday results are skipped on a trace without a wall clock.
NO_WALL_CLOCK = "the trace's times are offsets from an undisclosed start: they have no time of day or weekday"


@dataclass
class TraceContext:
    """One trace of one catalog, open for queries.

    `tables` are the catalog's tables and views of this trace; `source_tz` the IANA zone of its
    local wall clock; `has_wall_clock` False when its times are offsets from an undisclosed start
    (see `TraceInfo.wall_clock`), so that hours of day and weekdays mean nothing; `has_calendar_dates`
    False also when only the dates are not real (`TraceInfo.calendar_dates`). `unlogged_ends`: the
    kinds of record whose started records without an end are ends that were not logged, so they
    are left out (`holds_open`; `TraceInfo.unlogged_ends`).
    `views` are the canonical views the trace publishes, open under their names; `info` the release
    facts of a registered trace (None for an imported dataset). `options` are the caller's settings
    for the modules (e.g. `resolution_s`, the step of utilisation time series).
    """

    home: Path
    trace: str
    con: duckdb.DuckDBPyConnection
    tables: set[str]
    synthetic: bool
    source_tz: str | None
    has_wall_clock: bool = True
    has_calendar_dates: bool = True
    #: False for an imported dataset without start times: its jobs are taken to start at submission.
    starts_recorded: bool = True
    unlogged_ends: set[str] = field(default_factory=set)
    provenance: dict[str, Any] = field(default_factory=dict)
    views: set[str] = field(default_factory=set)
    info: TraceInfo | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: How an imported dataset was read (the manifest's `adapter_options`): its canonical views.
    import_options: dict[str, Any] = field(default_factory=dict)
    #: False while the modules run in two lanes (`ddlx.analysis.runner`): a lane's sorts in memory
    #: stay on its own thread, the other lane keeping the other core busy.
    sorts_in_parallel: bool = True
    #: Closes the connection and lets go of the store versions it holds (`catalog.reading`).
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    #: The reduction engine, once a module asked for it (`engine`).
    _engine: Any = field(default=None, repr=False)
    #: Results computed once per run and read by several parts (`once`), on either connection.
    _computed: OnceResults = field(default_factory=OnceResults, repr=False)
    #: Results kept between runs on this store version (`query(keep=...)`, `once(keep=True)`).
    cache: ResultCache = field(default_factory=lambda: ResultCache(None), repr=False)
    #: Temporary tables of catalog queries (`materialized`) and the run's products (`product`):
    #: name -> its query.
    _materialized: dict[str, str] = field(default_factory=dict, repr=False)
    #: Those of them made on the connection so far.
    _made: set[str] = field(default_factory=set, repr=False)
    #: The products declared on this connection: name -> how its rows are found faster (`product`'s `fast`).
    _products: dict[str, Callable[[], Any] | None] = field(default_factory=dict, repr=False)
    #: False for a `second_connection`, which shares the results computed once with this context.
    _opened_trace: bool = field(default=True, repr=False)

    def engine(self) -> Any:
        """The engine the reductions run on (`ddlx.analysis.engines.engine_for` of `options`): DuckDB
        on this connection by default. Opened at the first call and shared by every module of the
        run (one Spark session), closed with the context."""
        if self._engine is None:
            from ddlx.analysis.engines import engine_for

            self._engine = engine_for(self.options, self.con)
        return self._engine

    @property
    def jobs(self) -> str:
        """A FROM item: the canonical jobs of this trace."""
        return f"(SELECT * FROM jobs WHERE trace = {sql_string(self.trace)})"

    @property
    def local_tz(self) -> str:
        """The zone hours of day and weekdays are read in (`source_tz`, else UTC)."""
        return self.source_tz or FALLBACK_TZ

    def has(self, *tables: str) -> bool:
        """True when every one of `tables` is in the catalog for this trace."""
        return all(table in self.tables for table in tables)

    @property
    def samples_location(self) -> str | None:
        """The folder of the Parquet files (partitioned by day) behind `gpu_samples`, where a reduction
        engine reads them (`ddlx.analysis.engines`); None without telemetry."""
        from ddlx.datasets.telemetry import store

        return str(store.samples_folder(self.home, self.trace)) if store.has_samples(self.home, self.trace) else None

    def validated_rows(self, table: str, check: str) -> int | None:
        """The rows of `table` that the ingest's validation counted for `check` (a name of the
        trace's `validation_checks`), from the report stored with this store version; None when the
        report has no such check. A count of 0 is a fact of the stored data that a query may rely
        on: a key without duplicates, a child without orphans."""
        for row in self.provenance.get("validation", []):
            if row.get("table") == table and row.get("check") == check:
                return int(row["rows"])
        return None

    def has_view(self, *views: str) -> bool:
        """True when the trace publishes every one of the canonical `views` (names of `VIEWS`)."""
        return all(view in self.views for view in views)

    def holds_open(self, kind: str) -> bool:
        """True when started records of `kind` (job, instance, ...) without an end are held to the
        trace end; False when they are ends that were not logged, left out."""
        return kind not in self.unlogged_ends

    @contextlib.contextmanager
    def holding_open(self, kind: str) -> Iterator[None]:
        """Within the block, records of `kind` without an end are held to the trace end (to give
        the alternative value beside a headline that leaves them out)."""
        left_out = kind in self.unlogged_ends
        self.unlogged_ends.discard(kind)
        try:
            yield
        finally:
            if left_out:
                self.unlogged_ends.add(kind)

    @property
    def label(self) -> str:
        """How prose names the trace (its release label; an imported dataset by its name)."""
        return (self.info.label if self.info else "") or self.trace

    def query(self, sql: str, keep: str | None = None) -> pl.DataFrame:
        """Run `sql` on the catalog; `CatalogError` with DuckDB's first line when it fails.

        `keep` names a result worth keeping between runs (`ddlx.analysis.cache`), found again by
        its text: `sql` must then read only the catalog's tables and views (and tables of catalog
        queries, `materialized`), never another temporary table or frame of the run (`ValueError`,
        a bug in the caller). Without `keep`, such a query with a small result is kept under its
        text (`ResultCache.small_result`); one that reads the run's own tables or frames is not."""
        return self.computed(sql, lambda: self._run(sql), keep)

    def computed(self, sql: str, compute: Callable[[], pl.DataFrame], keep: str | None = None) -> pl.DataFrame:
        """The result of the catalog query `sql`, computed by `compute()`: a faster way to the same
        rows, which `sql` still defines and names when the result is kept (under `keep` as `query`
        keeps it, else as `query` keeps a small result of the catalog); the queries `compute` runs
        are not kept on their own."""
        if keep:
            key = self._catalog_key(sql)
            if key is None:
                used = [name for name in self._run_objects_in(sql) if name not in self._materialized]
                raise ValueError(f"a kept query cannot read {', '.join(used)}: not the catalog's")
            return self.cache.frames(keep, key, compute)

        def run() -> pl.DataFrame:
            self.cache.computing += 1
            try:
                return compute()
            finally:
                self.cache.computing -= 1

        if self.cache.keeping:
            key = self._catalog_key(sql)
            if key is not None:
                return self.cache.small_result(key, run)
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
        return self._computed.holds(f"product {name}")

    def offer_product(self, name: str, rows: pa.Table) -> None:
        """`rows` as the fast rows of the product `name` (`product`), found by another product's
        `fast` in the same pass; kept unless the run has them or is computing them."""
        self._computed.offer(f"product {name}", rows)

    def _make_product(self, name: str) -> None:
        """Make the product `name` on this connection: its fast rows (computed once for the run),
        else a temporary table of its query."""
        fast = self._products[name]
        rows = self._computed.get(f"product {name}", fast) if fast is not None and fast_paths() else None
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

    def once(self, key: str, compute: Callable[[], T], keep: bool = False) -> T:
        """`compute()`, run at the first call with `key` in this run and kept for the later ones:
        for a result several parts read (a paper's figures taken from one table), on either of the
        run's connections (`second_connection`; one computing it, the other waits). The key must name
        everything the result depends on beyond the catalog and ddlx's code (e.g. which records are
        held open). With `keep`, the result (a DataFrame or a tuple of them) is also kept between
        runs (`ddlx.analysis.cache`)."""
        return self._computed.get(key, (lambda: self.cache.frames(key, [key], compute)) if keep else compute)  # type: ignore

    def _run_objects_in(self, sql: str) -> list[str]:
        """The temporary tables, views and registered frames of this run that `sql` names, other
        than the canonical views of the catalog; and `gpu_samples`, whose telemetry is stored apart
        from the trace's store version that names kept results."""
        rows = self.con.execute("""SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal
                                   UNION ALL SELECT table_name FROM duckdb_tables() WHERE temporary""").fetchall()
        names = ({name for name, in rows} - self.views) | {"gpu_samples"} | set(self._materialized)
        return sorted(name for name in names if _names(name, sql))

    def one_row(self, sql: str, keep: str | None = None) -> dict[str, Any]:
        """The first row of `sql` as a dict (`keep` as `query`)."""
        return self.query(sql, keep).to_dicts()[0]

    def close(self) -> None:
        """Close the connection; the context that opened the trace (not a `second_connection`) also
        lets go of the run's results computed once and products' rows, which the products' fast
        functions (closures over the context) would otherwise hold until a garbage collection."""
        try:
            if self._engine is not None:
                self._engine.close()
                self._engine = None
        finally:
            self._products.clear()
            if self._opened_trace:
                self._computed.clear()
            self.con.close()
            self.held.close()

    @contextlib.contextmanager
    def second_connection(self) -> Iterator[TraceContext]:
        """This trace on a second connection to the same catalog, for modules run at the same time
        as this context's (`ddlx.analysis.runner`): its own temporary tables, registered frames
        and holding of open records; the same results computed once (`once`) and rows of the run's
        products (`product`), kept results (`cache`), options and memory limit (one DuckDB database
        holds both connections). Closed
        at the end of the block, keeping nothing itself (this context keeps the results at its end)."""
        cursor = self.con.cursor()
        try:
            prepare_connection(cursor)
            views = (_open_views(cursor, self.trace, self.tables, self.home, self.import_options)
                     if self.views else set())
        except BaseException:
            cursor.close()
            raise
        other = dataclasses.replace(self, con=cursor, views=views, held=contextlib.ExitStack(), _engine=None,
                                    _materialized={}, _made=set(), _products={}, _opened_trace=False,
                                    unlogged_ends=set(self.unlogged_ends))
        try:
            yield other
        finally:
            other.close()

    def __enter__(self) -> "TraceContext":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        """Close; when the block succeeded, keep the results it computed (`ResultCache.commit`)."""
        try:
            if exc_type is None:
                self.cache.commit()
        finally:
            self.close()


def _names(name: str, sql: str) -> bool:
    """True when the SQL text `sql` names the object `name` (as a whole word, any case)."""
    return re.search(rf"\b{re.escape(name)}\b", sql, re.IGNORECASE) is not None


def open_trace(home: Path, trace: str, require_jobs: bool = True, cache: bool = True) -> TraceContext:
    """A `TraceContext` for `trace` in the catalog of `home`; `CatalogError` when it has no jobs
    (with `require_jobs` False, when the catalog holds none of its tables: some figures read a
    trace's other tables alone, e.g. its machine list). `cache` False neither reads nor writes
    results kept between runs (`ddlx.analysis.cache`)."""
    held = contextlib.ExitStack()
    try:
        return _open(home, trace, held, require_jobs, cache)
    except BaseException:
        held.close()
        raise


def _open(home: Path, trace: str, held: contextlib.ExitStack, require_jobs: bool, cache: bool) -> TraceContext:
    registrations: dict[str, catalog.Registration] = {}
    if catalog.catalog_path(home).exists():
        con, registrations = held.enter_context(catalog.reading(home))
    registration = registrations.get(trace)
    has_jobs = registration is not None and jobs_table_name(trace) in registration.tables
    if registration is None or (require_jobs and not has_jobs):
        raise CatalogError(f"no jobs of trace '{trace}' in {home}; ingest or import it first "
                           f"(ddlx datasets ingest|import){did_you_mean(trace, [*TRACES, *registrations])}")
    prepare_connection(con)
    tables = set(registration.tables) | set(registration.manifest.get("views", {}))
    known = TRACES.get(trace)
    zone, earliest = (known.source_tz if known else None), None
    if has_jobs:
        zone, earliest = con.execute(f"SELECT any_value(source_tz), epoch(min(submit_time)) FROM jobs "
                                     f"WHERE trace = {sql_string(trace)}").fetchall()[0]
    from ddlx.datasets.telemetry import store as telemetry_store

    telemetry_marker = telemetry_store.synthetic_marker(home, trace)
    provenance = {
        "catalog": str(catalog.catalog_path(home)),
        "store_version": registration.version,
        "ingested_at": registration.ingested_at,
        "ddlx_version_at_ingest": registration.ddlx_version,
        "source_files": {
            table: [{k: f.get(k) for k in ("path", "member", "sha256", "matches_official_release")}
                    for f in entry.get("files", [])]
            for table, entry in registration.manifest.get("inputs", {}).items()},
        "synthetic_details": registration.manifest.get("synthetic_details") or telemetry_marker,
        "rows": registration.manifest.get("rows", {}),
        "rejected_rows": {table: entry.get("rejected_rows", 0)
                          for table, entry in registration.manifest.get("inputs", {}).items()},
        "validation": registration.manifest.get("validation", []),
        "figures": registration.manifest.get("figures", []),
    }
    import_spec = registration.manifest.get("adapter_options", {})
    wall_clock = known.wall_clock if known else has_wall_clock(import_spec, earliest)
    synthetic = registration.synthetic or telemetry_marker is not None
    return TraceContext(home=home, trace=trace, con=con, tables=tables, synthetic=synthetic,
                        source_tz=zone, has_wall_clock=wall_clock,
                        has_calendar_dates=wall_clock and (known.calendar_dates if known else True),
                        starts_recorded=True if known else starts_recorded(import_spec),
                        unlogged_ends=set(known.unlogged_ends) if known else set(),
                        provenance=provenance, info=known, held=held, import_options=import_spec,
                        cache=ResultCache.open(trace, registration.store_dir, cache),
                        # the canonical views are views of the jobs: none without them
                        views=_open_views(con, trace, tables, home, import_spec) if has_jobs else set())


def prepare_connection(con: duckdb.DuckDBPyConnection) -> None:
    """The settings of one connection an analysis queries on."""
    catalog.without_progress_bar(con)
    # DuckDB runs an ASOF join as a nested loop when it expects a small left side, and it expects
    # generated time bins to be few: with a million bins that loop takes minutes, not a second.
    con.execute("SET asof_loop_join_threshold = 0")


def _open_views(con: duckdb.DuckDBPyConnection, trace: str, tables: set[str], home: Path,
                import_options: dict[str, Any]) -> set[str]:
    """Open the canonical views `trace` publishes over its `tables` as temporary views of `con`,
    conformed to their declared columns: a registered trace's (its folder's `views`), an imported
    dataset's (`ddlx.datasets.importers.views`: `gpu_allocations` from a Slurm node list), and
    `gpu_samples` where telemetry was imported beside it; returns their names."""
    from ddlx.datasets.telemetry import store

    module = trace_part(trace, "views")
    published: dict[str, str] = dict(module.canonical_views(tables)) if module else {}
    if module is None and trace not in TRACES:
        published.update(_import_views(con, trace, tables, import_options))
    if store.has_samples(home, trace):
        published["gpu_samples"] = store.samples_select(home, trace)
    for name, select in published.items():
        try:
            con.execute(f"CREATE TEMP VIEW {name} AS {VIEWS[name].conform_sql(select)}")
        except duckdb.Error as exc:
            raise CatalogError(f"{trace}: canonical view {name} cannot be opened: {first_line(exc)}") from None
    return set(published)


def _import_views(con: duckdb.DuckDBPyConnection, trace: str, tables: set[str],
                  options: dict[str, Any]) -> dict[str, str]:
    """The canonical views of `trace` when it is an imported dataset (its stored spec `options`, the
    manifest's `adapter_options`, carries an `import_format`), over its raw table; {} otherwise."""
    from ddlx.datasets.importers import views as import_views
    from ddlx.datasets.importers.spec import ImportSpec

    if "import_format" not in options:
        return {}
    spec = ImportSpec.from_options(trace, options)
    if spec.raw_table not in tables:
        return {}
    try:
        columns = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {spec.raw_table}").fetchall()}
    except duckdb.Error as exc:
        raise CatalogError(f"{trace}: table {spec.raw_table} cannot be read: {first_line(exc)}") from None
    return import_views.canonical_views(spec, columns)
