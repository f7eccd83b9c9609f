"""Where a heavy reduction runs: embedded DuckDB (the default) or Spark SQL through PySpark.

A reduction is SQL written once, in DuckDB's dialect, over named inputs: Parquet locations (a local
folder or glob, or an `s3a://` path on Spark) and small Arrow tables sent from here. `Engine.query`
runs it where the data lives and brings back only its (small) result as an Arrow table.

Dialect differences are handled in one place, `spark_sql`: SQLGlot transpiles DuckDB to Spark SQL,
and the few functions it leaves as they are get their Spark names (`EPOCH_US` -> `UNIX_MICROS`).
Spark runs with the session time zone UTC, so timestamps read from Parquet and written in SQL
literals mean the same instants on both engines.

A Spark failure (a query Spark refuses, a lost executor, an interrupted job) is an `EngineError`
naming the stage that failed; nothing is written locally by an engine, so the caller's catalog is
as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ddlx.errors import DdlxError, InputError, UsageError, caused_by_interrupt, first_line

if TYPE_CHECKING:
    from ddlx.analysis.options import AnalysisOptions

#: Engines by name (`--engine`).
ENGINES = ("duckdb", "spark")
#: Spark master when none is given: local mode on every core of this machine.
DEFAULT_SPARK_MASTER = "local[*]"


class EngineError(DdlxError):
    """A reduction failed on its engine; the message names the engine and the stage."""


_EXPECTED_PARQUET = "expected a folder, a glob or a file of Parquet files of GPU samples (the gpu_samples columns)"


def _no_parquet(location: str, pattern: str) -> str:
    """Why `location` (read as the glob `pattern`) gives no file: what is there instead."""
    if "://" in location:
        return f"no file there; {_EXPECTED_PARQUET}"
    if pattern != location:
        return f"the folder holds no .parquet file; {_EXPECTED_PARQUET}"
    if any(char in location for char in "*?["):
        return f"the glob matches no file; {_EXPECTED_PARQUET}"
    return f"no such file or folder; {_EXPECTED_PARQUET}"


@dataclass(frozen=True)
class Provenance:
    """Where a reduced table came from: the engine, its input location, and how many partitions
    the engine read it in."""

    engine: str
    location: str
    partitions: int

    def as_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "location": self.location, "partitions": self.partitions}


_SPARK_FUNCTIONS = {"EPOCH_US": "UNIX_MICROS"}


def spark_sql(sql: str) -> str:
    """`sql` (DuckDB dialect) as Spark SQL: the one place where the dialects meet."""
    import sqlglot
    from sqlglot import exp

    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.upper() in _SPARK_FUNCTIONS:
            return exp.Anonymous(this=_SPARK_FUNCTIONS[node.name.upper()], expressions=node.expressions)
        return node

    tree = sqlglot.parse_one(sql, read="duckdb").transform(rename)
    return tree.sql(dialect="spark")


class DuckDBEngine:
    """Reductions on an embedded DuckDB connection (the caller's, or a new in-memory one)."""

    name = "duckdb"

    def __init__(self, con: Any = None) -> None:
        import duckdb

        self._own = con is None
        self.con = duckdb.connect() if con is None else con
        self._views: list[str] = []
        self._tables: list[str] = []

    def register_parquet(self, name: str, location: str) -> int:
        """Make the Parquet files at `location` (a file, a glob, or a folder: every Parquet file under
        it) the input `name`; returns the number of files. `InputError` naming `location` as given
        when it names no file, or a file that is not Parquet (every file's footer is read here)."""
        import duckdb

        from ddlx.datasets.sqltext import quote_identifier, sql_string

        pattern = self._parquet_pattern(location)
        files = self.con.execute(f"SELECT count(*) FROM glob({sql_string(pattern)})").fetchall()[0][0]
        if not files:
            raise InputError(location, _no_parquet(location, pattern))
        try:
            self.con.execute(f"SELECT count(*) FROM parquet_file_metadata({sql_string(pattern)})").fetchall()
            self.con.execute(f"CREATE OR REPLACE TEMP VIEW {quote_identifier(name)} AS "
                             f"SELECT * FROM read_parquet({sql_string(pattern)}, hive_partitioning = false)")
        except duckdb.Error as exc:
            raise InputError(location, f"cannot be read as Parquet ({first_line(exc)}); {_EXPECTED_PARQUET}") \
                from None
        self._views.append(name)
        return int(files)

    @staticmethod
    def _parquet_pattern(location: str) -> str:
        """The glob DuckDB reads for `location`: every Parquet file under a folder, else `location`."""
        from pathlib import Path

        if "://" not in location and Path(location).is_dir():
            return str(Path(location) / "**" / "*.parquet")
        return location

    def register_arrow(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)
        self._tables.append(name)

    def provenance(self, location: str) -> Provenance:
        """Where a reduction on this engine read `location`: one partition (DuckDB reads in one pass)."""
        return Provenance(self.name, location, 1)

    def register_local(self, name: str, con: Any, sql: str) -> int:
        """Make the result of `sql` on the local connection `con` the input `name`: a view when `con`
        is this engine's own connection (nothing is copied), else its rows; returns 1 (one partition)."""
        from ddlx.datasets.sqltext import quote_identifier

        if con is self.con:
            self.con.execute(f"CREATE OR REPLACE TEMP VIEW {quote_identifier(name)} AS {sql}")
            self._views.append(name)
        else:
            self.register_arrow(name, con.sql(sql).to_arrow_table())
        return 1

    def query(self, sql: str, stage: str = "query") -> pa.Table:
        import duckdb

        try:
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as exc:
            raise EngineError(f"DuckDB failed at stage {stage!r}: {first_line(exc)}") from None

    def close(self) -> None:
        from ddlx.datasets.sqltext import quote_identifier

        for name in self._tables:
            self.con.unregister(name)
        for name in self._views:
            self.con.execute(f"DROP VIEW IF EXISTS {quote_identifier(name)}")
        self._tables.clear()
        self._views.clear()
        if self._own:
            self.con.close()


class SparkEngine:
    """Reductions on Spark SQL through PySpark: `master` is a Spark master URL (`local[2]`,
    `spark://host:7077`, `yarn`, ...); `conf` extra Spark settings (e.g. the `spark.hadoop.fs.s3a.*`
    settings of an object store); `partitions`, if given, is how many partitions each Parquet input
    is read in (else Spark's own split)."""

    name = "spark"

    def __init__(self, master: str = DEFAULT_SPARK_MASTER, conf: dict[str, str] | None = None,
                 partitions: int | None = None) -> None:
        if partitions is not None and partitions < 1:
            raise UsageError(f"--partitions: must be at least 1, got {partitions}")
        self.master = master
        self.conf = dict(conf or {})
        self.partitions = partitions
        self._session: Any = None
        self._partitions_read = 0
        self._interrupted = False

    @property
    def session(self) -> Any:
        if self._session is None:
            try:
                from pyspark.sql import SparkSession
            except ImportError:
                raise UsageError("--engine spark needs PySpark and a Java runtime: pip install 'ddlx[spark]' "
                                 "(and a JRE 17 or later)") from None
            builder = (SparkSession.builder.master(self.master).appName("ddlx")
                       .config("spark.sql.session.timeZone", "UTC")
                       .config("spark.ui.enabled", "false")
                       .config("spark.ui.showConsoleProgress", "false")
                       .config("spark.sql.shuffle.partitions", str(self.partitions or 8))
                       .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
            for key, value in self.conf.items():
                builder = builder.config(key, value)
            with _interrupt_deferred() as interrupted:
                try:
                    self._session = builder.getOrCreate()
                    self._session.sparkContext.setLogLevel("ERROR")
                    _quiet_pyspark_loggers()
                except KeyboardInterrupt:  # PySpark's own handler, in the moment it is installed
                    interrupted.append(True)
                except Exception as exc:
                    raise EngineError(f"Spark at {self.master} could not start: {first_line(exc)}") from None
            if interrupted:
                self._session = None
                _end_local_jvm()
                raise KeyboardInterrupt
        return self._session

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Turn anything Spark (or py4j) raises in the block into an `EngineError` saying `what`, with
        the first line of Spark's message; ddlx's own errors pass through. An interrupt (Ctrl-C), also
        one py4j reports as a failed call, stays an interrupt and marks the session for `close` to end."""
        try:
            yield
        except DdlxError:
            raise
        except KeyboardInterrupt:
            self._interrupted = True
            raise
        except Exception as exc:
            if caused_by_interrupt(exc):
                self._interrupted = True
                raise KeyboardInterrupt from None
            raise EngineError(f"{what}: {first_line(exc)}") from None

    def register_parquet(self, name: str, location: str) -> int:
        """Make the Parquet files at `location` (a folder, glob or `s3a://` path) the input `name`;
        returns the number of partitions Spark reads them in."""
        session = self.session
        with self._guard(f"Spark could not read {location}"):
            frame = session.read.parquet(location)
            if self.partitions:
                frame = frame.repartition(self.partitions)
            frame.createOrReplaceTempView(name)
            return self._read(frame)

    def register_arrow(self, name: str, table: pa.Table) -> int:
        """Send the (small) `table` to Spark as the input `name`, in `partitions` partitions when
        given; returns the number of partitions."""
        session = self.session
        with self._guard(f"Spark could not take the table {name}"):
            frame = session.createDataFrame(table)
            if self.partitions:
                frame = frame.repartition(self.partitions)
            frame.createOrReplaceTempView(name)
            return self._read(frame)

    def _read(self, frame: Any) -> int:
        """The partitions of `frame`, the latest input (what `provenance` gives)."""
        self._partitions_read = int(frame.rdd.getNumPartitions())
        return self._partitions_read

    def provenance(self, location: str) -> Provenance:
        """Where a reduction on this engine read `location`, in the partitions of the latest input."""
        return Provenance(self.name, location, self._partitions_read)

    def register_local(self, name: str, con: Any, sql: str) -> int:
        """Send the result of `sql` on the local DuckDB connection `con` to Spark as the input `name`;
        returns the number of partitions."""
        return self.register_arrow(name, con.sql(sql).to_arrow_table())

    def query(self, sql: str, stage: str = "query") -> pa.Table:
        session = self.session
        with self._guard(f"Spark failed at stage {stage!r}"):
            return session.sql(spark_sql(sql)).toArrow()

    def close(self) -> None:
        """Stop the session; after an interrupt, end Spark's JVM instead (its connection may be
        half-way through an answer, so a polite stop could wait for ever)."""
        session, self._session = self._session, None
        if session is None:
            return
        if self._interrupted:
            _end_local_jvm()
        else:
            session.stop()


def _quiet_pyspark_loggers() -> None:
    """PySpark logs every failed query, with a traceback, to the stderr of the moment it first logs;
    ddlx reports the failure itself, in one line (`SparkEngine._guard`)."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def _end_local_jvm() -> None:
    """Kill the JVM PySpark started for this process and forget it, so no Spark process outlives
    an interrupted command (and a later session starts afresh)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.kill()
        proc.wait(timeout=30)
    if gateway is not None:
        with contextlib.suppress(Exception):
            gateway.close()
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[list[bool]]:
    """Hold back Ctrl-C while Spark starts (an interrupt while PySpark launches its JVM leaves the
    JVM running): the block yields a list that holds True if one came, for the caller to act on
    once the start is over. Outside the main thread signals cannot be handled: nothing is deferred."""
    import signal
    import threading

    received: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda *_: received.append(True))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)  # also undoes PySpark's own handler, set while starting


def open_engine(name: str, con: Any = None, *, master: str | None = None, conf: dict[str, str] | None = None,
                partitions: int | None = None) -> DuckDBEngine | SparkEngine:
    """The engine called `name` (`ENGINES`): DuckDB on `con`, or Spark at `master`."""
    if name == "duckdb":
        return DuckDBEngine(con)
    if name == "spark":
        return SparkEngine(master or DEFAULT_SPARK_MASTER, conf, partitions)
    raise UsageError(f"--engine: unknown engine {name!r}; expected one of {', '.join(ENGINES)}")


def engine_for(options: AnalysisOptions, con: Any) -> DuckDBEngine | SparkEngine:
    """The engine an analysis run asks for (`options`: `engine`, `spark_master`, `spark_conf`,
    `partitions`): by default DuckDB on the catalog's own connection `con`."""
    return open_engine(options.engine, con, master=options.spark_master, conf=options.spark_conf_dict(),
                       partitions=options.partitions)


class RunEngine:
    """The reduction engine of one analysis run on one connection: opened at the first `get` (as
    `engine_for` the run's options), then shared by every module of the run (one Spark session),
    closed with the run's context."""

    def __init__(self) -> None:
        self._engine: DuckDBEngine | SparkEngine | None = None

    def get(self, options: AnalysisOptions, con: Any) -> DuckDBEngine | SparkEngine:
        """The engine, opened on the first call from `options` on the connection `con`."""
        if self._engine is None:
            self._engine = engine_for(options, con)
        return self._engine

    def close(self) -> None:
        """Close the engine if it was opened (a later `get` opens a new one)."""
        if self._engine is not None:
            engine, self._engine = self._engine, None
            engine.close()


#: An engine a reduction runs on.
Engine = DuckDBEngine | SparkEngine
