"""The step function of allocated GPUs taken in memory (`ddlx.analysis.fast.steps`) against its
definition, DuckDB's exact DECIMAL window (`allocation.integrable_steps_sql`), to the bit; the
DOUBLE conversion of DECIMAL digits against DuckDB's own cast; and one steps product per run read
by both the allocation and the load at submission.

The references are DuckDB's: its cast of each DECIMAL, its window over the same changes. The
dataset holds GPU requests that are not exact in binary (0.1, 0.3, 0.7), times with microseconds,
two clusters and a job still running, so the running sums only agree where they are exact.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from ddlx.analysis import allocation, queueing
from ddlx.analysis.context import open_trace
from ddlx.analysis.fast import load as fast_load
from ddlx.analysis.fast import steps as fast_steps
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset

#   j1..j6 on cluster a, j7..j9 on cluster b; j4 never ends (held to the trace end when held open);
#   j9 never starts. Changes at one instant (j2's end and j3's start) add up before they step.
STEPS_CSV = """id,cluster,sub,st,en,g
j1,a,2024-03-01 00:00:00,2024-03-01 00:00:10.5,2024-03-01 03:00:00.25,0.1
j2,a,2024-03-01 00:05:00,2024-03-01 00:06:00,2024-03-01 01:00:00,0.3
j3,a,2024-03-01 00:30:00,2024-03-01 01:00:00,2024-03-01 02:00:00.000001,0.7
j4,a,2024-03-01 01:30:00,2024-03-01 01:45:00,,2.5
j5,a,2024-03-01 02:00:00,2024-03-01 02:10:00,2024-03-01 02:50:00,0.1
j6,a,2024-03-01 02:15:00,2024-03-01 02:20:00.333333,2024-03-01 04:00:00,3
j7,b,2024-03-01 00:01:00,2024-03-01 00:02:00,2024-03-01 05:00:00,0.3
j8,b,2024-03-01 03:00:00,2024-03-01 03:00:00,2024-03-01 03:30:00,8
j9,b,2024-03-01 04:00:00,,,1
"""
STEPS_MAP = "job_id=id,cluster=cluster,submit=sub,start=st,end=en,gpus=g"

pytestmark = pytest.mark.usefixtures("speedups_on")  # the fast paths are what these tests test


@pytest.fixture(scope="module")
def steps_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("steps")
    (base / "lab.csv").write_text(STEPS_CSV)
    import_dataset("lab", base / "lab.csv", base / "home", mapping=STEPS_MAP, time_unit="datetime", tz="UTC")
    return base / "home"


def test_decimal_digits_become_the_doubles_duckdb_casts_them_to() -> None:
    rng = np.random.default_rng(7)
    edges = np.array([2 ** 53, 2 ** 53 + 1, -(2 ** 53), -(2 ** 53) - 1, 0, 1, -1, 999_999, -999_999], dtype=np.int64)
    digits = np.concatenate([rng.integers(-2 ** 62, 2 ** 62, 20_000), rng.integers(-2 ** 54, 2 ** 54, 20_000),
                             rng.integers(-10 ** 9, 10 ** 9, 20_000), *(edges + k for k in range(-40, 40))])
    con = duckdb.connect()
    con.register("digits", pa.table({"v": digits}))
    cast = con.sql("""SELECT CAST(CAST(v AS DECIMAL(38, 0)) * CAST(0.000001 AS DECIMAL(18, 6)) AS DOUBLE) AS d
                      FROM digits""").to_arrow_table()["d"].to_numpy()
    ours = fast_steps.duckdb_decimal_double(digits, 6)
    assert (ours.view(np.uint64) == cast.view(np.uint64)).all()
    exact = (digits >= -(2 ** 53)) & (digits <= 2 ** 53)  # all exact in a DOUBLE: one division each
    assert 0 < exact.sum() < len(digits)
    assert (fast_steps.duckdb_decimal_double(digits[exact], 6).view(np.uint64) == cast[exact].view(np.uint64)).all()
    assert len(fast_steps.duckdb_decimal_double(digits[:0], 6)) == 0
    # A product with the reciprocal is not the cast: 5.15 GPUs would become 5.1499999999999995.
    assert (digits * 1e-6 != cast).any()


def _one_cluster_home(tmp_path: Path, *more_jobs: str) -> Path:
    """A data home of the jobs of cluster a (and `more_jobs`, rows of STEPS_CSV), as trace "one"."""
    rows = [line for line in STEPS_CSV.splitlines() if ",b," not in line]
    (tmp_path / "one.csv").write_text("\n".join([*rows, *more_jobs]) + "\n")
    import_dataset("one", tmp_path / "one.csv", tmp_path / "home", mapping=STEPS_MAP, time_unit="datetime", tz="UTC")
    return tmp_path / "home"


def _bits(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`frame` sorted by `keys`, its DOUBLEs as their 64 bits."""
    return frame.sort(keys).with_columns(pl.col(pl.Float64).cast(pl.Float64).map_batches(
        lambda s: pl.Series(s.name, s.to_numpy().view(np.uint64))))


@pytest.mark.parametrize("groups", [(), ("cluster",)])
@pytest.mark.parametrize("order", [("left out", "held"), ("held", "left out"), ("held",)])
@pytest.mark.parametrize("window_name", ["trace", "active"])
def test_steps_summed_in_memory_are_the_decimal_window_to_the_bit(steps_home: Path, groups: tuple[str, ...],
                                                                  order: tuple[str, ...], window_name: str) -> None:
    """Both ways of counting j4 (left out, as a trace whose open jobs are unlogged ends counts it,
    and held to the end), whichever is asked for first: the steps table is its definition's rows.
    Asked for first, the steps leaving j4 out are made in one pass with those holding it."""
    with open_trace(steps_home, "lab", cache=False) as ctx:
        ctx.unlogged_ends.add("job")
        window = allocation.trace_window(ctx) if window_name == "trace" else allocation.active_window(ctx)
        assert window is not None
        found = {}
        for way in order:
            with ctx.holding_open("job") if way == "held" else contextlib.nullcontext():
                defined = ctx.con.sql(allocation.integrable_steps_sql(ctx, groups, window)).pl()
                name = allocation.shared_steps(ctx, groups, window)
                stored = ctx.query(f"SELECT * FROM {name}")
            with ctx.holding_open("job"):
                held_name = allocation.shared_steps(ctx, groups, window)
            found[way] = (defined, stored, ctx.catalog.product_computed(held_name))
    for way, (defined, stored, held_made) in found.items():
        assert stored.schema == defined.schema
        keys = [*groups, "x"]
        assert _bits(stored, keys).equals(_bits(defined, keys)), way
        # Not trivially equal: some running sums of 0.1, 0.3 and 0.7 are not their DOUBLE sums.
        assert defined.height >= 10
        assert held_made
    if "left out" in found:  # j4's start is a step of the held table alone
        assert found["held"][0].height == found["left out"][0].height + 1


@pytest.mark.parametrize("limit", [fast_steps.STEPS_SUMMED_IN_MEMORY, 0])
def test_the_steps_of_a_trace_of_one_cluster_are_its_clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              limit: int) -> None:
    """Cluster a alone: the whole trace's steps, read from the cluster's table, are the rows its
    definition gives, to the bit (summed in memory, or by DuckDB's window)."""
    monkeypatch.setattr(fast_steps, "STEPS_SUMMED_IN_MEMORY", limit)
    with open_trace(_one_cluster_home(tmp_path), "one", cache=False) as ctx:
        window = allocation.trace_window(ctx)
        assert window is not None and fast_steps.one_cluster(ctx, f"(SELECT cluster FROM {ctx.jobs})")
        defined = ctx.con.sql(allocation.integrable_steps_sql(ctx, (), window)).pl()
        name = allocation.shared_steps(ctx, (), window)
        stored = ctx.query(f"SELECT * FROM {name}")
        tables = ctx.query("SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'ddlx_steps_%'")
        views = ctx.query("SELECT view_name FROM duckdb_views() WHERE view_name LIKE 'ddlx_steps_%'")
    assert stored.schema == defined.schema and defined.height >= 8
    assert _bits(stored, ["x"]).equals(_bits(defined, ["x"]))
    # the steps are held once, the cluster's (a table, or rows in memory registered as a view); the
    # whole trace's are a view of them
    held = [*tables["table_name"], *views["view_name"]]
    assert sorted(name.rsplit("_", 1)[0] for name in held) == ["ddlx_steps_all", "ddlx_steps_cluster"]
    assert [name.rsplit("_", 1)[0] for name in tables["table_name"]] == (["ddlx_steps_cluster"] if limit == 0 else [])


def test_values_beyond_64_bits_leave_the_sums_to_duckdb(tmp_path: Path) -> None:
    # A million GPUs from day 200 to day 201 of the window: the change x time is 1.7e13
    # GPU-seconds, 1.7e19 millionths, beyond 64 bits; one GPU held over the whole 201 days.
    (tmp_path / "big.csv").write_text("id,sub,st,en,g\n"
                                      "x,2024-01-01 00:00:00,2024-07-19 00:00:00,2024-07-20 00:00:00,1000000\n"
                                      "y,2024-01-01 00:00:00,2024-01-01 00:00:00,2024-07-20 00:00:00,1\n")
    import_dataset("big", tmp_path / "big.csv", tmp_path / "home", time_unit="datetime", tz="UTC",
                   mapping="job_id=id,submit=sub,start=st,end=en,gpus=g")
    with open_trace(tmp_path / "home", "big", cache=False) as ctx:
        window = allocation.trace_window(ctx)
        assert window is not None and window.hi - window.lo == 201 * 86400
        changes = ctx.arrow(f"""SELECT ts, x, CAST(delta AS DECIMAL(18, 6)) AS delta,
                                       CAST(delta * x AS DECIMAL(38, 6)) AS delta_x
                                FROM {allocation._step_changes_sql(ctx, (), window)}""")
        assert fast_steps.summed(changes, ()) is None
        frame = allocation.allocation_vs_capacity(ctx, (), window)
    assert frame["mean_gpus"][0] == pytest.approx((1e6 * 1 + 1 * 201) / 201, rel=1e-12)
    assert frame["peak_gpus"][0] == 1e6 + 1


@pytest.mark.parametrize("limit", [(fast_steps, "STEPS_SUMMED_IN_MEMORY"), (fast_load, "LOAD_LOOKUP_ROWS")])
def test_a_trace_too_large_for_memory_gives_the_same_results(steps_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                             limit: tuple[object, str]) -> None:
    modules = ["utilization", "queueing"]
    in_memory = run_analysis(steps_home, "lab", modules, cache=False)
    monkeypatch.setattr(*limit, 0)
    in_duckdb = run_analysis(steps_home, "lab", modules, cache=False)
    for module in modules:
        ours, theirs = in_memory.module(module), in_duckdb.module(module)
        assert [t.name for t in ours.tables] == [t.name for t in theirs.tables]
        for table, other in zip(ours.tables, theirs.tables):
            assert table.frame.equals(other.frame), (module, table.name)
        assert [f.value for f in ours.findings] == [f.value for f in theirs.findings]


def test_one_cluster_looks_up_the_load_at_submission_without_a_partition_per_cluster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # and one more job of cluster a that never starts: every submission and step is of a
    home = _one_cluster_home(tmp_path, "j10,a,2024-03-01 04:00:00,,,1")
    in_memory = run_analysis(home, "one", ["queueing"], cache=False).module("queueing")
    asked: list[bool] = []
    looked_up_sql = queueing._looked_up_sql
    monkeypatch.setattr(queueing, "_looked_up_sql",
                        lambda by_cluster: asked.append(by_cluster) or looked_up_sql(by_cluster))
    monkeypatch.setattr(fast_load, "LOAD_LOOKUP_ROWS", 0)
    in_duckdb = run_analysis(home, "one", ["queueing"], cache=False).module("queueing")
    assert asked == [True, False]  # the defining query names the cluster; the one run does not
    load = {t.name: t.frame for t in in_duckdb.tables}["by_load_at_submit"]
    assert load.filter((pl.col("reference") == "peak_allocation") & (pl.col("cluster") == "a"))["jobs"].sum() == 7
    for table, other in zip(in_memory.tables, in_duckdb.tables, strict=True):
        assert table.frame.equals(other.frame), table.name


def test_load_at_submission_looked_up_in_memory(steps_home: Path) -> None:
    with open_trace(steps_home, "lab", cache=False) as ctx:
        load = queueing.queueing_by_load(ctx)
    peak = load.filter(pl.col("reference") == "peak_allocation")
    by_cluster = {c: peak.filter(pl.col("cluster") == c) for c in ("a", "b")}
    # Cluster b peaks at 8.3 GPUs. j7 (00:01) sees nothing yet: 0 GPUs, bin 0. j8 (03:00) sees 0.3 GPUs
    # (j7), not its own start at that instant: bin 0. j9 (04:00) sees 0.3 GPUs: bin 0.
    b = by_cluster["b"].row(0, named=True)
    assert (b["load_bin"], b["jobs"], b["min_allocated_gpus"], b["max_allocated_gpus"]) == (0, 3, 0.0, 0.3)
    # Cluster a: j1 (00:00) 0; j2 (00:05) 0.1; j3 (00:30) 0.1 + 0.3; j4 (01:30) j1 + j3 = 0.8 (j2 ended
    # at 01:00, when j3 started); j5 (02:00) j1 + j3 + j4 = 3.3, j3 ends at 02:00:00.000001; j6 (02:15)
    # j1 + j4 + j5 = 2.7. Peak 5.7 (j1 + j4 + j5 + j6 from 02:20:00.333333 to 02:50).
    assert by_cluster["a"]["jobs"].sum() == 6
    a_rows = {row["load_bin"]: row for row in by_cluster["a"].iter_rows(named=True)}
    assert a_rows[5]["jobs"] == 1 and a_rows[5]["min_allocated_gpus"] == pytest.approx(3.3)  # 3.3 / 5.7 = 0.58
    assert a_rows[4]["jobs"] == 1 and a_rows[4]["min_allocated_gpus"] == pytest.approx(2.7)  # 2.7 / 5.7 = 0.47
    assert a_rows[1]["jobs"] == 1 and a_rows[1]["min_allocated_gpus"] == pytest.approx(0.8)  # 0.14
    assert a_rows[0]["jobs"] == 3 and a_rows[0]["max_allocated_gpus"] == pytest.approx(0.4)


def test_allocation_and_load_at_submission_read_one_steps_table(steps_home: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    summed: list[int] = []
    summed_in_memory = fast_steps.summed
    monkeypatch.setattr(fast_steps, "summed", lambda changes, *args: summed.append(changes.num_rows)
                        or summed_in_memory(changes, *args))
    with open_trace(steps_home, "lab", cache=False) as ctx:
        window = allocation.trace_window(ctx)
        assert window is not None
        per_cluster = allocation.allocation_vs_capacity(ctx, ("cluster",), window)
        load = queueing.queueing_by_load(ctx)
        made = sorted(name for name in ctx.catalog.made if name.startswith("ddlx_steps_"))
    # one product, summed once: a step per cluster and instant, 14 (a: the 11 starts and ends of
    # j1..j6 at 10 instants, j2's end and j3's start at one, j4 without an end; b: j7 and j8 at 4;
    # j9 never starts)
    assert len(made) == 1 and made[0].startswith("ddlx_steps_cluster_") and summed == [14]
    # Peak allocation of cluster b: j7 (0.3) and j8 (8) overlap from 03:00 to 03:30.
    peaks = dict(zip(per_cluster["cluster"], per_cluster["peak_gpus"]))
    assert peaks["b"] == pytest.approx(8.3)
    reference = load.filter((pl.col("reference") == "peak_allocation") & (pl.col("cluster") == "b"))
    assert reference["mean_reference_gpus"].to_list() == [peaks["b"]] * reference.height
