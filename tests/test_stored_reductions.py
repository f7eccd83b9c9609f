"""`ddlx datasets reduce`: the reductions that grow with the data, kept in the catalog as tables of
the dataset with their provenance. The stored tables must be the module's tables exactly (read back
through `ddlx sql`), the same from Spark as from DuckDB, and a reduce that fails (Spark, or the
catalog swap) leaves the data home byte for byte as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets import catalog
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
from tests.conftest import assert_clean_failure, tree_digest
from tests.test_engines import MASTER, _needs_spark  # noqa: F401  (the skip-or-fail rule for marked tests)

STORED = {"utilization": {"allocation_by_cluster", "allocation_by_vc", "allocation_by_gpu_type"},
          "durations": {"run_time_by_gpu_bucket", "run_time_by_state"},
          "gpu_efficiency": {"gpu_job_efficiency", "gpu_hourly_efficiency"}}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SYNTHETIC Slurm cluster of 16 GPUs over one day at 5 minutes (accounting and samples)."""
    root = tmp_path_factory.mktemp("reduce")
    write_synthetic_cluster(ClusterSpec(gpus=16, days=1, step=300, seed=5, job_label=False, format="parquet"),
                            root / "gen")
    return root / "gen"


@pytest.fixture
def fleet(generated: Path, tmp_path: Path) -> Path:
    """A fresh data home with the cluster imported (accounting and telemetry)."""
    home = tmp_path / "home"
    import_dataset("fleet", generated / "sacct.txt", home, preset="slurm", tz="Europe/Berlin")
    import_metrics(home, "fleet", generated / "dcgm.parquet")
    return home


def _stored(home: Path, table: str) -> pl.DataFrame:
    return catalog.query(home, f'SELECT * FROM "{table}"')


def test_reduce_keeps_the_module_tables_in_the_catalog(fleet: Path, cli) -> None:
    result = cli("datasets", "reduce", "fleet", "--data-home", fleet)
    assert result.code == 0, result.err
    modules = {m.module: m for m in run_analysis(fleet, "fleet", list(STORED)).modules}
    provenance = _stored(fleet, "fleet_reductions")
    assert set(provenance["table"]) == {f"fleet_{t}" for tables in STORED.values() for t in tables}
    for row in provenance.iter_rows(named=True):
        stored = _stored(fleet, row["table"])
        expected = modules[row["module"]].table(row["module_table"])
        assert stored.height == row["rows"] == expected.height > 0, row["table"]
        assert stored.equals(expected), row["table"]
        assert row["engine"] == "duckdb" and row["partitions"] == 1 and row["reduced_at"]
        assert row["table"] in result.out
    gpu = provenance.filter(pl.col("module") == "gpu_efficiency").row(0, named=True)
    assert gpu["location"].endswith("telemetry/fleet/gpu_samples")
    assert "gpu_efficiency.idle_gpu_hours" in gpu["definitions"]
    # the dataset's own tables and its analysis are untouched by the tables beside them
    assert run_analysis(fleet, "fleet", ["overview"]).module("overview").findings
    # `ddlx sql` reads them like any table
    shown = cli("sql", "SELECT count(*) AS n FROM fleet_gpu_job_efficiency", "--data-home", fleet)
    assert shown.code == 0 and str(modules["gpu_efficiency"].table("jobs").height) in shown.out


def test_a_later_import_drops_the_stored_tables(fleet: Path, generated: Path, tmp_path: Path, cli) -> None:
    assert cli("datasets", "reduce", "fleet", "-m", "durations", "--data-home", fleet).code == 0
    assert set(_stored(fleet, "fleet_reductions")["module"]) == {"durations"}
    changed = tmp_path / "sacct.txt"
    shutil.copy(generated / "sacct.txt", changed)  # the same rows from another file: a new import
    import_dataset("fleet", changed, fleet, preset="slurm", tz="Europe/Berlin")
    registration = catalog.read_registrations(fleet)["fleet"]
    assert not [t for t in registration.tables if t.startswith("fleet_run_time") or t == "fleet_reductions"]
    assert "derived" not in registration.manifest


def test_a_failed_catalog_swap_leaves_the_home_as_it_was(fleet: Path, cli, monkeypatch) -> None:
    before = tree_digest(fleet)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(catalog, "write_catalog", full_disk)
    result = cli("datasets", "reduce", "fleet", "-m", "utilization", "--data-home", fleet)
    assert_clean_failure(result, "No space left")
    assert tree_digest(fleet) == before


def test_reduce_refuses_a_module_that_keeps_nothing(fleet: Path, cli) -> None:
    result = cli("datasets", "reduce", "fleet", "-m", "users", "--data-home", fleet)
    assert_clean_failure(result, "'users' keeps no table in the catalog", code=2)
    result = cli("datasets", "reduce", "nosuch", "--data-home", fleet)
    assert result.code == 1 and "nosuch" in result.err and "Traceback" not in result.err


@pytest.mark.spark
@pytest.mark.slow
def test_reduce_on_spark_stores_the_same_tables(fleet: Path, tmp_path: Path, cli) -> None:
    duck_home = tmp_path / "duck"
    shutil.copytree(fleet, duck_home)
    assert cli("datasets", "reduce", "fleet", "--data-home", duck_home).code == 0
    result = cli("datasets", "reduce", "fleet", "--engine", "spark", "--spark-master", MASTER, "--partitions", "3",
                 "--spark-conf", "spark.sql.ansi.enabled=true", "--data-home", fleet)
    assert result.code == 0, result.err
    provenance = _stored(fleet, "fleet_reductions")
    assert set(provenance["engine"]) == {"spark"} and set(provenance["partitions"]) == {3}
    assert json.loads(provenance["options"][0])["spark_conf_keys"] == ["spark.sql.ansi.enabled"]
    for table in provenance["table"]:
        spark, duck = _stored(fleet, table), _stored(duck_home, table)
        assert spark.equals(duck), table


@pytest.mark.spark
def test_a_failed_spark_reduce_changes_nothing(fleet: Path, tmp_path: Path, cli) -> None:
    before = tree_digest(fleet)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    pl.DataFrame({"x": [1, 2]}).write_parquet(wrong / "part.parquet")
    result = cli("datasets", "reduce", "fleet", "--engine", "spark", "--spark-master", MASTER,
                 "--samples-location", wrong, "--data-home", fleet)
    assert_clean_failure(result, "Spark failed at stage 'summary'")
    assert tree_digest(fleet) == before


@pytest.mark.spark
@pytest.mark.slow
def test_an_interrupted_spark_reduce_changes_nothing(fleet: Path) -> None:
    """Ctrl-C while Spark runs the second module: `Error: interrupted`, exit 130, no traceback, the
    command ends promptly, and the data home is byte for byte as it was."""
    import os
    import signal
    import subprocess
    import sys
    import time

    def as_from_a_terminal() -> None:
        # Ctrl-C reaches a command started from a terminal; one started from a shell's background
        # job inherits SIGINT ignored (and so would every test run launched that way), so the child
        # gets the default disposition, whatever the test run was started with
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    before = tree_digest(fleet)
    log = fleet.parent / "reduce.err"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "ddlx", "datasets", "reduce", "fleet", "--engine", "spark",
                                 "--spark-master", MASTER, "--data-home", str(fleet)],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                preexec_fn=as_from_a_terminal, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + 120
        while "fleet: durations" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    lines = log.read_text().strip().splitlines()
    assert code == 130 and lines[-1] == "Error: interrupted", lines[-5:]
    assert not any("Traceback" in line for line in lines)
    assert tree_digest(fleet) == before
