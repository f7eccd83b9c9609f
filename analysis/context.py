"""What an analysis module reads: one trace of the catalog, through a read-only DuckDB connection.

Modules never open raw files, and never ask which trace they read: they query the catalog's
canonical `jobs` view (restricted to the trace) and the canonical views the trace publishes
(`gpu_capacity`, `attempts`, ...: `ddlx.datasets.canonical.VIEWS`), opened under those names on
the connection, and ask whether a view is present (`has_view`). Science that only one trace's
records allow is declared by that trace (`ddlx.analysis.trace_parts`).

`TraceContext` is what the trace is, and the parts of the run, each in its own module: the
connection (`ddlx.analysis.connection`), the results computed once and kept (`ddlx.analysis.kept`),
the reduction engine (`ddlx.analysis.engines.RunEngine`) and the options (`ddlx.analysis.options`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from ddlx.analysis.cache import ResultCache
from ddlx.analysis.connection import CatalogConnection
from ddlx.analysis.engines import Engine, RunEngine
from ddlx.analysis.kept import KeptResults
from ddlx.analysis.options import AnalysisOptions
from ddlx.datasets import catalog
from ddlx.datasets.canonical import VIEWS, jobs_table_name
from ddlx.datasets.importers import has_wall_clock, starts_recorded
from ddlx.datasets.plugins import TRACES, trace_plugin
from ddlx.datasets.sqltext import sql_string
from ddlx.datasets.trace_info import TraceInfo
from ddlx.errors import CatalogError, did_you_mean, first_line

if TYPE_CHECKING:
    import pyarrow as pa

    from ddlx.analysis.options import AnalysisOptions


#: The zone used for hours and weekdays when a trace has none (its times are offsets from an undisclosed start).
FALLBACK_TZ = "UTC"

#: Why hour-of-day and weekday results are skipped on a trace without a wall clock.
NO_WALL_CLOCK = "the trace's times are offsets from an undisclosed start: they have no time of day or weekday"


def _default_options() -> AnalysisOptions:
    """Every option at its default."""
    return AnalysisOptions()


@dataclass
class TraceContext:
    """One trace of one catalog, open for the analysis modules: what the trace is (the fields), and
    the parts of the run a module uses, each its own concern:

    - `catalog` (`CatalogConnection`): the connection, its queries, temporary tables, registered
      frames and the run's products; `query`, `one_row`, `execute`, `arrow`, `registered`,
      `materialized` and `con` here are the catalog's;
    - `kept` (`KeptResults`): results computed once per run (`kept.once`) and kept between runs
      (`kept.cache`);
    - `engine()` (`RunEngine`): where the reductions that grow with the data run;
    - `options` (`AnalysisOptions`): the caller's settings, typed, with their defaults.

    `tables` are the catalog's tables and views of this trace; `source_tz` the IANA zone of its
    local wall clock; `has_wall_clock` False when its times are offsets from an undisclosed start
    (see `TraceInfo.wall_clock`), so that hours of day and weekdays mean nothing; `has_calendar_dates`
    False also when only the dates are not real (`TraceInfo.calendar_dates`). `unlogged_ends`: the
    kinds of record whose started records without an end are ends that were not logged, so they
    are left out (`holds_open`; `TraceInfo.unlogged_ends`). `info` the release facts of a
    registered trace (None for an imported dataset).
    """

    home: Path
    trace: str
    catalog: CatalogConnection
    tables: set[str]
    synthetic: bool
    source_tz: str | None
    has_wall_clock: bool = True
    has_calendar_dates: bool = True
    #: False for an imported dataset without start times: its jobs are taken to start at submission.
    starts_recorded: bool = True
    unlogged_ends: set[str] = field(default_factory=set)
    provenance: dict[str, Any] = field(default_factory=dict)
    info: TraceInfo | None = None
    options: AnalysisOptions = field(default_factory=_default_options)
    #: How an imported dataset was read (the manifest's `adapter_options`): its canonical views.
    import_options: dict[str, Any] = field(default_factory=dict)
    #: False while the modules run in two lanes (`ddlx.analysis.runner`): a lane's sorts in memory
    #: stay on its own thread, the other lane keeping the other core busy.
    sorts_in_parallel: bool = True
    #: Closes the connection and lets go of the store versions it holds (`catalog.reading`).
    held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    #: The reduction engine of this connection, opened when a module asks for it (`engine`).
    _engine: RunEngine = field(default_factory=RunEngine, repr=False)
    #: False for a `second_connection`, which shares the results computed once with this context.
    _opened_trace: bool = field(default=True, repr=False)

    @property
    def kept(self) -> KeptResults:
        """The run's results computed once and kept between runs (shared by its connections)."""
        return self.catalog.kept

    def engine(self) -> Engine:
        """The engine the reductions run on (`ddlx.analysis.engines.engine_for` the options): DuckDB
        on this connection by default. Opened at the first call and shared by every module of the
        run (one Spark session), closed with the context."""
        return self._engine.get(self.options, self.con)

    # -- what the trace is -----------------------------------------------------------------------

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
        return all(view in self.catalog.views for view in views)

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

    # -- the catalog's, as most modules use them ---------------------------------------------------

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection of `catalog`."""
        return self.catalog.con

    def query(self, sql: str, keep: str | None = None) -> pl.DataFrame:
        """`CatalogConnection.query`: the result of `sql`, kept under `keep` or its text."""
        return self.catalog.query(sql, keep)

    def one_row(self, sql: str, keep: str | None = None) -> dict[str, Any]:
        """`CatalogConnection.one_row`: the first row of `sql` as a dict."""
        return self.catalog.one_row(sql, keep)

    def execute(self, sql: str) -> None:
        """`CatalogConnection.execute`: a statement that returns nothing to keep."""
        self.catalog.execute(sql)

    def arrow(self, sql: str) -> pa.Table:
        """`CatalogConnection.arrow`: the whole result of `sql` as an Arrow table, never kept."""
        return self.catalog.arrow(sql)

    def registered(self, frame: pl.DataFrame | pa.Table, name: str) -> contextlib.AbstractContextManager[str]:
        """`CatalogConnection.registered`: `frame` as the view `name` within the block."""
        return self.catalog.registered(frame, name)

    def materialized(self, sql: str, name: str) -> contextlib.AbstractContextManager[str]:
        """`CatalogConnection.materialized`: the catalog query `sql` as the temporary table `name`."""
        return self.catalog.materialized(sql, name)

    # -- the run's end -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the engine and the connection; the context that opened the trace (not a
        `second_connection`) also lets go of the run's results computed once and products' rows,
        which the products' fast functions (closures over the context) would otherwise hold until
        a garbage collection."""
        try:
            self._engine.close()
        finally:
            if self._opened_trace:
                self.kept.end_run()
            self.catalog.close()
            self.held.close()

    @contextlib.contextmanager
    def second_connection(self) -> Iterator[TraceContext]:
        """This trace on a second connection to the same catalog, for modules run at the same time
        as this context's (`ddlx.analysis.runner`): its own temporary tables, registered frames,
        engine and holding of open records; the same results computed once and kept (`kept`: among
        them the rows of the run's products), options and memory limit (one DuckDB database holds
        both connections). Closed at the end of the block, keeping nothing itself (this context
        keeps the results at its end)."""
        cursor = self.con.cursor()
        try:
            prepare_connection(cursor)
            views = (_open_views(cursor, self.trace, self.tables, self.home, self.import_options)
                     if self.catalog.views else set())
        except BaseException:
            cursor.close()
            raise
        other = dataclasses.replace(self, catalog=CatalogConnection(cursor, self.trace, views, self.kept),
                                    held=contextlib.ExitStack(), _engine=RunEngine(), _opened_trace=False,
                                    unlogged_ends=set(self.unlogged_ends))
        try:
            yield other
        finally:
            other.close()

    def __enter__(self) -> "TraceContext":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        """Close; when the block succeeded, keep the results it computed (`KeptResults.commit`)."""
        try:
            if exc_type is None:
                self.kept.commit()
        finally:
            self.close()


def open_trace(home: Path, trace: str, require_jobs: bool = True, cache: bool = True,
               options: AnalysisOptions | None = None) -> TraceContext:
    """A `TraceContext` for `trace` in the catalog of `home`; `CatalogError` when it has no jobs
    (with `require_jobs` False, when the catalog holds none of its tables: some figures read a
    trace's other tables alone, e.g. its machine list). `cache` False neither reads nor writes
    results kept between runs (`ddlx.analysis.cache`); `options` the modules' settings (default:
    every option at its default)."""
    held = contextlib.ExitStack()
    try:
        context = _open(home, trace, held, require_jobs, cache)
        if options is not None:
            context.options = options
        return context
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
    views = _open_views(con, trace, tables, home, import_spec) if has_jobs else set()  # views of the jobs: none without
    kept = KeptResults(ResultCache.open(trace, registration.store_dir, cache))
    return TraceContext(home=home, trace=trace, catalog=CatalogConnection(con, trace, views, kept), tables=tables,
                        synthetic=synthetic,
                        source_tz=zone, has_wall_clock=wall_clock,
                        has_calendar_dates=wall_clock and (known.calendar_dates if known else True),
                        starts_recorded=True if known else starts_recorded(import_spec),
                        unlogged_ends=set(known.unlogged_ends) if known else set(),
                        provenance=provenance, info=known, held=held, import_options=import_spec)


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

    published: dict[str, str] = dict(trace_plugin(trace).canonical_views(tables)) if trace in TRACES else {}
    if trace not in TRACES:
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
