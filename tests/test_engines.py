"""The telemetry reduction on two engines: embedded DuckDB (a slice of 6 hours at a time) and Spark
SQL in local mode with several partitions (PySpark, a real JVM), over the same Parquet files. The
per-slice partial tables must be identical row for row, and so must every table of the
gpu_efficiency module; the figures also match the generator's plan, computed while it wrote the
samples. Spark failures leave the data home as it was and name the stage.

The tests marked `spark` are skipped where PySpark or a Java runtime is missing, unless
DDLX_REQUIRE_SPARK is set (`.ci/run` sets it, after installing both).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from ddlx.analysis import gpu_efficiency
from ddlx.analysis.engines import DuckDBEngine, EngineError, SparkEngine, spark_sql
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry import store
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
from tests.conftest import tree_digest
from tests.test_gpu_efficiency import cluster_home  # noqa: F401  (a fixture: the hand-made cluster)

MASTER = "local[2]"
FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_FB_USED")


def _spark_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(autouse=True)
def _needs_spark(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("spark") and not _spark_available():
        if os.environ.get("DDLX_REQUIRE_SPARK"):
            pytest.fail("DDLX_REQUIRE_SPARK is set but PySpark or a Java runtime is missing")
        pytest.skip("PySpark or a Java runtime is missing (pip install 'ddlx[spark]'; Debian: "
                    "openjdk-17-jre-headless); set DDLX_REQUIRE_SPARK=1 to fail instead of skipping")


def test_dialect_is_translated_in_one_place() -> None:
    sql = spark_sql("SELECT epoch_us(time) // 21600000000 AS slice, count(*) FILTER (WHERE v < 5) AS n "
                    "FROM s WHERE time >= TIMESTAMPTZ '2024-05-01 00:00:00+00' GROUP BY ALL")
    assert "UNIX_MICROS(time) DIV 21600000000" in sql
    assert "EPOCH_US" not in sql.upper() and "FILTER(WHERE v < 5)" in sql


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SYNTHETIC Slurm cluster of 32 GPUs over 2 days at 5 minutes, four fields, samples without a
    job label (attributed through the allocations), imported from its Parquet dump."""
    root = tmp_path_factory.mktemp("engines")
    write_synthetic_cluster(ClusterSpec(gpus=32, days=2, step=300, seed=11, fields=FIELDS, job_label=False,
                                        format="parquet"), root / "gen")
    home = root / "home"
    import_dataset("fleet", root / "gen" / "sacct.txt", home, preset="slurm", tz="Europe/Berlin")
    import_metrics(home, "fleet", root / "gen" / "dcgm.parquet")
    return home


def _tables(home: Path, dataset: str, **options) -> dict[str, pl.DataFrame]:
    module = run_analysis(home, dataset, ["gpu_efficiency"], options=options).module("gpu_efficiency")
    return {t.name: t.frame for t in module.tables}


@pytest.mark.spark
@pytest.mark.slow
def test_module_tables_identical_on_duckdb_and_spark(fleet: Path) -> None:
    before = tree_digest(fleet)
    duck = _tables(fleet, "fleet")
    spark = _tables(fleet, "fleet", engine="spark", spark_master=MASTER, partitions=3)
    assert tree_digest(fleet) == before  # the engines only read
    assert duck.keys() == spark.keys()
    for name in duck:
        if name != "reduction":
            assert duck[name].equals(spark[name]), name
    assert duck["jobs"].height > 20 and duck["idle_share_by_hour"].height == 48
    assert spark["reduction"].row(0, named=True) | {"trace": None, "synthetic": None} == {
        "engine": "spark", "location": str(store.samples_folder(fleet, "fleet")), "partitions": 3,
        "trace": None, "synthetic": None}
    assert duck["reduction"]["engine"].to_list() == ["duckdb"]
    # and both are right: per job, allocated and idle GPU-seconds as the generator accumulated them
    plan = json.loads((fleet.parent / "gen" / "plan.json").read_text())
    expected = {j["job_id"]: (j["alloc_gpu_s"], j["idle_gpu_s"]) for j in plan["jobs"] if j["alloc_gpu_s"] > 0}
    got = {row["job_id"]: (round(row["allocated_gpu_hours"] * 3600), round(row["idle_gpu_hours"] * 3600))
           for row in spark["jobs"].iter_rows(named=True)}
    assert got == expected


@pytest.mark.spark
def test_hand_made_cluster_identical_on_spark(cluster_home: Path) -> None:  # noqa: F811
    """The hand-made cluster of test_gpu_efficiency (labels, GPUs of unknown index, a job whose
    allocation is overlapped, hosts no job names) gives the same tables on Spark, one partition per
    file and two."""
    duck = _tables(cluster_home, "mycluster")
    for partitions in (None, 2):
        spark = _tables(cluster_home, "mycluster", engine="spark", spark_master=MASTER, partitions=partitions)
        for name in duck:
            if name != "reduction":
                assert duck[name].equals(spark[name]), (name, partitions)


def _sorted(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.with_columns(pl.col("sum_micro").cast(pl.Int128), pl.col("gpu").cast(pl.Int32),
                               pl.col("first").dt.convert_time_zone("UTC"), pl.col("last").dt.convert_time_zone("UTC"))
    return frame.sort(frame.columns, nulls_last=True)


@pytest.mark.spark
@pytest.mark.slow
def test_partial_tables_identical_row_for_row(fleet: Path, tmp_path: Path) -> None:
    """partials_sql in one pass on a bare DuckDB and on Spark with 1, 4 and 7 partitions, over the
    stored Parquet files and the same timeline: the same rows (sums as exact decimals)."""
    from ddlx.analysis.context import open_trace

    with open_trace(fleet, "fleet") as ctx:  # the timeline cut at slices, as the module builds it
        gpu_efficiency.analyze(ctx)
        timeline = ctx.con.sql("SELECT * FROM ge_timeline_slices").to_arrow_table()
    location = str(store.samples_folder(fleet, "fleet"))
    sql = gpu_efficiency.partials_sql("gpu_samples", "ge_timeline_slices", "gpu_util", 5.0)
    duck = DuckDBEngine()
    try:
        duck.register_parquet("gpu_samples", location)
        duck.register_arrow("ge_timeline_slices", timeline)
        expected = _sorted(duck.query(sql))
    finally:
        duck.close()
    assert set(expected["part"]) == {"slices", "gaps", "cells", "hours"}
    samples = expected.filter(pl.col("part") == "slices")["n"].sum()
    assert samples == 4 * 32 * 2 * 288  # four fields, 32 GPUs, 2 days of 288 samples
    for partitions in (1, 4, 7):
        spark = SparkEngine(MASTER, partitions=partitions)
        try:
            assert spark.register_parquet("gpu_samples", location) == partitions
            spark.register_arrow("ge_timeline_slices", timeline)
            assert _sorted(spark.query(sql)).equals(expected), partitions
        finally:
            spark.close()


@pytest.mark.spark
def test_spark_failure_names_the_stage_and_changes_nothing(fleet: Path, tmp_path: Path, cli) -> None:
    before = tree_digest(fleet)
    missing = tmp_path / "nowhere"
    result = cli("analyze", "dataset", "fleet", "-m", "gpu_efficiency", "--engine", "spark", "--spark-master",
                 MASTER, "--samples-location", missing, "--data-home", fleet, "--out", tmp_path / "out")
    errors = [line for line in result.err.splitlines() if line.startswith("Error:")]
    assert result.code == 1 and len(errors) == 1 and errors[0].startswith(f"Error: Spark could not read {missing}")
    assert "Traceback" not in result.err
    # Parquet files without the gpu_samples columns: the first query fails, named by its stage
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    pl.DataFrame({"x": [1, 2]}).write_parquet(wrong / "part.parquet")
    result = cli("analyze", "dataset", "fleet", "-m", "gpu_efficiency", "--engine", "spark", "--spark-master",
                 MASTER, "--samples-location", wrong, "--data-home", fleet, "--out", tmp_path / "out2")
    errors = [line for line in result.err.splitlines() if line.startswith("Error:")]
    assert result.code == 1 and errors[0].startswith("Error: Spark failed at stage 'summary'"), result.err
    assert tree_digest(fleet) == before
    assert not (tmp_path / "out").exists() and not (tmp_path / "out2").exists()


def test_engine_options_need_spark(fleet: Path, tmp_path: Path, cli) -> None:
    result = cli("analyze", "dataset", "fleet", "--spark-master", MASTER, "--data-home", fleet)
    assert result.code == 2 and "needs engine spark" in result.err
    result = cli("analyze", "dataset", "fleet", "--engine", "flink", "--data-home", fleet)
    assert result.code == 2 and "engine must be duckdb or spark" in result.err


def test_duckdb_engine_failure_is_an_engine_error(tmp_path: Path) -> None:
    engine = DuckDBEngine()
    try:
        with pytest.raises(EngineError, match="DuckDB failed at stage 'summary'"):
            engine.query("SELECT missing_column FROM range(3)", "summary")
    finally:
        engine.close()


# ---------------------------------------------------------------------------------------------
# The allocation sweep over jobs
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pai_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SYNTHETIC PAI release (fractional GPU requests, several GPU types), ingested."""
    from ddlx.datasets.ingest import ingest
    from ddlx.datasets.synthetic import write_synthetic_release

    root = tmp_path_factory.mktemp("pai")
    write_synthetic_release("pai", root / "release", scale=0.005, seed=11)
    ingest("pai", root / "release", root / "home")
    return root / "home"


def _placed_jobs(home: Path, trace: str) -> pl.DataFrame:
    """The jobs that hold GPUs, read with polars from the canonical jobs (not through the sweep):
    group columns, start and end as Unix microseconds, GPUs."""
    from ddlx.analysis.context import open_trace

    with open_trace(home, trace) as ctx:
        jobs = ctx.query(f"SELECT cluster, gpu_type, num_gpus, epoch_us(start_time) AS s, epoch_us(end_time) AS e "
                         f"FROM {ctx.jobs}")
        held_open = ctx.holds_open("job")
    placed = jobs.filter(pl.col("s").is_not_null() & (pl.col("num_gpus") > 0)
                         & (pl.col("e").is_null() | (pl.col("e") >= pl.col("s"))))
    return placed if held_open else placed.filter(pl.col("e").is_not_null())


def _sweep_partials(ctx, engine, groups: tuple[str, ...], window, resolution_s: int) -> pl.DataFrame:
    from ddlx.analysis import allocation

    lo_us, hi_us = round(window.lo * 1e6), round(window.hi * 1e6)
    engine.register_local("intervals", ctx.con, allocation.job_intervals_sql(ctx, groups))
    frame = pl.from_arrow(engine.query(allocation.allocation_partials_sql(
        "intervals", groups, lo_us, hi_us, resolution_s * 1_000_000)))
    assert isinstance(frame, pl.DataFrame)
    frame = frame.with_columns(pl.col("moment").cast(pl.Int128))
    return frame.sort(frame.columns, nulls_last=True)


@pytest.mark.spark
@pytest.mark.slow
def test_allocation_partials_identical_row_for_row(pai_home: Path) -> None:
    """allocation_partials_sql on DuckDB and on Spark with 1, 4 and 7 partitions of the jobs: the
    same rows; merged, the GPU-seconds of every bin add up to those of each job inside the window,
    computed here job by job."""
    from ddlx.analysis import allocation
    from ddlx.analysis.context import open_trace

    groups = ("cluster", "gpu_type")
    with open_trace(pai_home, "pai") as ctx:
        window = allocation.observation_window(ctx)
        assert window is not None
        duck = DuckDBEngine(ctx.con)
        try:
            expected = _sweep_partials(ctx, duck, groups, window, 3600)
        finally:
            duck.close()
        for partitions in (1, 4, 7):
            spark = SparkEngine(MASTER, partitions=partitions)
            try:
                assert _sweep_partials(ctx, spark, groups, window, 3600).equals(expected), partitions
                assert spark.provenance("jobs").partitions == partitions
            finally:
                spark.close()
        bins = allocation.allocation_bins(ctx, groups, 3600, window)
    jobs = _placed_jobs(pai_home, "pai")
    assert jobs.height > 1000 and jobs["gpu_type"].n_unique() > 2 and (jobs["num_gpus"] % 1 != 0).any()
    lo, hi = round(window.lo * 1e6), round(window.hi * 1e6)
    held = jobs.with_columns(pl.col("e").fill_null(hi).clip(lo, hi).alias("e"), pl.col("s").clip(lo, hi))
    gpu_seconds = (held["num_gpus"] * (held["e"] - held["s"])).sum() / 1e6
    assert (bins["mean_gpus"] * bins["covered_s"]).sum() == pytest.approx(gpu_seconds, rel=1e-12)
    assert expected["delta"].sum() == round((jobs.filter(pl.col("e").is_null())["num_gpus"] * 1e6).sum())


@pytest.mark.spark
@pytest.mark.slow
def test_allocation_tables_identical_on_duckdb_and_spark(pai_home: Path) -> None:
    """The utilization module's allocation series (per cluster, GPU type and hour of the week) on
    Spark with 3 partitions of the jobs are the tables of the default DuckDB run."""
    before = tree_digest(pai_home)
    duck = {t.name: t.frame for t in run_analysis(pai_home, "pai", ["utilization"]).module("utilization").tables}
    spark = {t.name: t.frame for t in run_analysis(pai_home, "pai", ["utilization"], options={
        "engine": "spark", "spark_master": MASTER, "partitions": 3}).module("utilization").tables}
    assert tree_digest(pai_home) == before
    swept = {"allocation_by_cluster", "allocation_by_gpu_type", "allocation_hour_of_week"}
    assert duck.keys() == spark.keys() >= swept
    for name in swept:
        assert duck[name].equals(spark[name]), name
    for name in duck.keys() - swept - {"reduction"}:  # local on both runs: DuckDB's parallel float sums
        assert_frame_equal(duck[name], spark[name], check_exact=False, rel_tol=1e-12)  # may differ in the last bit
    assert duck["allocation_by_gpu_type"]["peak_gpus"].max() > 0
    assert spark["reduction"].select("engine", "partitions").row(0) == ("spark", 3)
    assert duck["reduction"].select("engine", "partitions").row(0) == ("duckdb", 1)


# ---------------------------------------------------------------------------------------------
# Per-group quantiles: counts of distinct run times
# ---------------------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.slow
def test_run_time_counts_identical_and_quantiles_exact(pai_home: Path) -> None:
    """The run-time counts per GPU bucket and per state on DuckDB and on Spark with 1, 4 and 7
    partitions of the jobs: the same rows; the durations tables from them are those of the default
    run, and the median run time of the jobs that ended is the one computed here from their sorted
    run times."""
    from ddlx.analysis import durations
    from ddlx.analysis.context import open_trace

    def counts(ctx, engine) -> tuple[pl.DataFrame, pl.DataFrame]:
        end = durations.trace_end_epoch_s(ctx)
        with durations.reduced_counts(ctx, end, engine) as reduced:
            frames = (ctx.query(f"SELECT * FROM {reduced.by_bucket}"), ctx.query(f"SELECT * FROM {reduced.by_state}"))
        return tuple(f.sort(f.columns, nulls_last=True) for f in frames)  # type: ignore[return-value]

    with open_trace(pai_home, "pai") as ctx:
        duck = DuckDBEngine(ctx.con)
        try:
            expected = counts(ctx, duck)
        finally:
            duck.close()
        for partitions in (1, 4, 7):
            spark = SparkEngine(MASTER, partitions=partitions)
            try:
                got = counts(ctx, spark)
            finally:
                spark.close()
            assert got[0].equals(expected[0]) and got[1].equals(expected[1]), partitions
        ended = ctx.query(f"SELECT run_s FROM {ctx.jobs} WHERE run_s IS NOT NULL AND state IS DISTINCT FROM 'running'")
    duck_tables = {t.name: t.frame for t in run_analysis(pai_home, "pai", ["durations"]).module("durations").tables}
    spark_tables = {t.name: t.frame for t in run_analysis(pai_home, "pai", ["durations"], options={
        "engine": "spark", "spark_master": MASTER, "partitions": 4}).module("durations").tables}
    assert duck_tables.keys() == spark_tables.keys()
    for name in duck_tables.keys() - {"reduction"}:  # means are local float sums: the last bit may differ
        assert_frame_equal(duck_tables[name], spark_tables[name], check_exact=False, rel_tol=1e-12)
        quantiles = [c for c in duck_tables[name].columns if c.startswith(("p", "km_p", "run_s"))]
        assert duck_tables[name].select(quantiles).equals(spark_tables[name].select(quantiles)), name
    runs = sorted(ended["run_s"].to_list())
    h = (len(runs) - 1) * 0.5
    median = runs[int(h)] + (h - int(h)) * (runs[min(int(h) + 1, len(runs) - 1)] - runs[int(h)])
    overall = duck_tables["run_time_by_gpu_bucket"].filter(pl.col("gpu_bucket") == "all")
    assert len(runs) > 1000 and overall["finished_jobs"].item() == len(runs)
    assert overall["p50_s"].item() == pytest.approx(median, rel=1e-12)


@pytest.mark.spark
@pytest.mark.slow
def test_every_stored_table_reads_the_same_in_spark(pai_home: Path) -> None:
    """The catalog's Parquet files (zstd, V2 encodings: delta-coded integers and text, split-stream
    doubles) read in Spark give DuckDB's rows: the same count, and per column the same number of
    values, the same sum of numbers (to the last bits of a float sum) and the same text lengths."""
    import duckdb

    from ddlx.datasets import catalog

    registration = catalog.read_registrations(pai_home)["pai"]
    stored = sorted(registration.store_dir.glob("*.parquet"))
    assert len(stored) >= 8  # the seven release tables and pai_jobs
    encodings = duckdb.sql(f"SELECT DISTINCT unnest(string_split(encodings, ',')) FROM parquet_metadata("
                           f"{[str(p) for p in stored]})").fetchall()
    assert {"DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"} <= {e.strip() for e, in encodings}
    spark = SparkEngine(MASTER)
    try:
        for path in stored:
            columns = duckdb.sql(f"DESCRIBE SELECT * FROM '{path}'").fetchall()
            parts = ["count(*)"]
            for name, kind, *_ in columns:
                parts.append(f'count("{name}")')
                if kind in ("DOUBLE", "BIGINT", "INTEGER"):
                    parts.append(f'sum("{name}")')
                elif kind == "VARCHAR":
                    parts.append(f'sum(length("{name}"))')
            spark.register_parquet("stored", str(path))
            got = spark.query(f"SELECT {', '.join(parts)} FROM stored").to_pylist()[0].values()
            duck = duckdb.sql(f"SELECT {', '.join(parts)} FROM '{path}'").fetchall()[0]
            for a, b in zip(got, duck, strict=True):
                assert a == b if a is None or b is None else a == pytest.approx(b, rel=1e-12), path.name
    finally:
        spark.close()
