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
    assert result.code == 2 and "need --engine spark" in result.err
    result = cli("analyze", "dataset", "fleet", "--engine", "flink", "--data-home", fleet)
    assert result.code == 2 and "expected duckdb or spark" in result.err


def test_duckdb_engine_failure_is_an_engine_error(tmp_path: Path) -> None:
    engine = DuckDBEngine()
    try:
        with pytest.raises(EngineError, match="DuckDB failed at stage 'summary'"):
            engine.query("SELECT missing_column FROM range(3)", "summary")
    finally:
        engine.close()
