"""Every fast path of `ddlx.analysis.fast` against its reference query, on generated inputs, on both
sides of each of its size thresholds.

Inputs (hypothesis, derandomized: the same examples on every run; a failure prints the smallest
input it found): small traces of up to 14 jobs over up to three clusters (and a job without one)
and two VCs, with fractional GPU requests that are not exact in binary (0.1, 0.3, 0.7), times on a
coarse grid (many ties: a job starting when another ends, several at one instant) with or without
microseconds, jobs that never start, jobs without an end (held to the trace end, or left out as
unlogged ends), zero and negative durations, negative queueing; capacity per cluster or VC, for
the whole trace or before and from an instant; intervals for the sweep with negative, zero and NULL
weights, keys far apart, zero-length intervals. Each threshold is set just below or just at the
input's size (drawn), so that the fast path runs or declines, and the test asserts which.

Every comparison is exact: the fast paths promise the reference's rows to the bit (DOUBLEs are
compared as their 64 bits). DuckDB runs on one thread (`one_thread`), as wherever two runs are
compared to the bit: its sums of DOUBLEs over rows it joins on several threads come in no fixed
order, and differ in the last bit from run to run.

Capacity rows of one group whose intervals cross (a cluster's VCs changing on different days, or
at the level of all clusters, clusters whose capacities change at different instants) become
pieces that overlap (`allocation._capacity_cte` sums only rows of the same interval): the piece a
step falls in is then not one, and the fast lookup and the ASOF join may take different ones. The
generated capacities change at one instant for every row, so that pieces never overlap.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from ddlx.analysis import allocation, sweeps
from ddlx.analysis.allocation import Window
from ddlx.analysis.connection import CatalogConnection
from ddlx.analysis.context import TraceContext
from ddlx.analysis.fast import PLAIN_ENV, Speedups, speedups
from ddlx.analysis.fast import bins as fast_bins
from ddlx.analysis.fast import cdf as fast_cdf
from ddlx.analysis.fast import load as fast_load
from ddlx.analysis.fast import steps as fast_steps
from ddlx.analysis.fast import sweep as fast_sweep
from ddlx.analysis.queueing import _looked_up_sql
from ddlx.analysis.sql import CDF_PROBABILITIES, _cdf_table_sql, allocated_jobs_where
from ddlx.errors import UsageError

# hypothesis's own caches go to the system's temporary folder, not the checkout
set_hypothesis_home_dir(str(Path(tempfile.gettempdir()) / "ddlx-hypothesis"))

#: Derandomized, bounded: the same examples every run, the whole file within about a minute.
CHECKS = settings(max_examples=60, derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Microseconds since the epoch of the generated traces' time 0 (2023-11-14 22:13:20 UTC).
EPOCH_US = 1_700_000_000 * 1_000_000

#: GPU requests: whole, fractional and not exact in binary; 0 (a CPU job) holds none.
GPUS = (0.0, 0.1, 0.25, 0.3, 0.5, 0.7, 1.0, 2.0, 2.5, 3.0, 8.0)

GROUPINGS = st.sampled_from([(), ("cluster",), ("cluster", "vc")])


@pytest.fixture(scope="module", autouse=True)
def fast_paths_on() -> Iterator[None]:
    """The fast paths on (`DDLX_PLAIN` unset), also when the suite runs with `DDLX_PLAIN=1`
    (module-scoped: hypothesis reruns a test body without its function-scoped fixtures)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(PLAIN_ENV, raising=False)
        yield


@st.composite
def instants(draw: st.DrawFn) -> int:
    """Microseconds after time 0: on a grid of 10 minutes (ties), or anywhere to the microsecond."""
    if draw(st.booleans()):
        return draw(st.integers(0, 24)) * 600_000_000
    return draw(st.integers(0, 4 * 3600 * 1_000_000))


@st.composite
def jobs(draw: st.DrawFn) -> dict:
    submit = draw(instants())
    start = None if draw(st.integers(0, 5)) == 0 else submit + draw(st.sampled_from([0, 0, 1, 60_000_000])) * (
        -1 if draw(st.integers(0, 9)) == 0 else 1)  # mostly after the submission; rarely before it
    start = None if start is None else (draw(instants()) if draw(st.booleans()) else start)
    end = None
    if start is not None and draw(st.integers(0, 4)) > 0:
        end = draw(st.sampled_from([start, draw(instants()), start + draw(st.integers(1, 3 * 3600 * 1_000_000))]))
    return {"cluster": draw(st.sampled_from(["a", "a", "b", "c", None])), "vc": draw(st.sampled_from(["v1", "v2"])),
            "gpu_type": draw(st.sampled_from(["T4", None])), "submit_us": submit, "start_us": start, "end_us": end,
            "num_gpus": draw(st.sampled_from(GPUS))}


@st.composite
def capacities(draw: st.DrawFn) -> list[dict]:
    """Capacity rows of one source, per cluster (or per VC), for the whole trace or, every row
    alike, before and from one instant: at any grouping a group's pieces then do not overlap (rows
    whose intervals cross are not summed into one piece, see the module docstring)."""
    cut = draw(st.one_of(st.none(), instants()))
    rows = []
    for cluster in draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3)):
        for vc in (["v1", "v2"] if draw(st.booleans()) else [None]):
            for from_us, to_us in ([(None, None)] if cut is None else [(None, cut), (cut, None)]):
                rows.append({"cluster": cluster, "vc": vc, "from_us": from_us, "to_us": to_us,
                             "gpus": draw(st.integers(1, 16))})
    return rows


@st.composite
def traces(draw: st.DrawFn) -> dict:
    return {"jobs": draw(st.lists(jobs(), min_size=1, max_size=14)), "capacity": draw(capacities()),
            "unlogged_ends": draw(st.booleans())}


@contextlib.contextmanager
def trace_context(trace: dict) -> Iterator[TraceContext]:
    """The generated `trace` as the canonical jobs (and `gpu_capacity`) of an in-memory catalog."""
    con = one_thread()
    columns = {"cluster": pl.String, "vc": pl.String, "gpu_type": pl.String, "submit_us": pl.Int64,
               "start_us": pl.Int64, "end_us": pl.Int64, "num_gpus": pl.Float64}
    con.register("generated", pl.DataFrame(trace["jobs"], schema=columns))
    instant = "to_timestamp(0) + to_microseconds({})"
    con.execute(f"""CREATE TABLE jobs AS
        SELECT 't' AS trace, cluster, vc, gpu_type, num_gpus, {instant.format('submit_us')} AS submit_time,
               {instant.format('start_us')} AS start_time, {instant.format('end_us')} AS end_time,
               (start_us - submit_us) / 1e6 AS queue_s, (end_us - start_us) / 1e6 AS run_s
        FROM generated""")
    views = set()
    if trace["capacity"]:
        con.register("capacity", pl.DataFrame(trace["capacity"], schema={
            "cluster": pl.String, "vc": pl.String, "from_us": pl.Int64, "to_us": pl.Int64, "gpus": pl.Int64}))
        con.execute(f"""CREATE TABLE gpu_capacity AS
            SELECT cluster, vc, NULL::VARCHAR AS gpu_type, {instant.format('from_us')} AS valid_from,
                   {instant.format('to_us')} AS valid_to, gpus, 'nodes' AS source, 1 AS preference FROM capacity""")
        views.add("gpu_capacity")
    ctx = TraceContext(home=Path("."), trace="t", catalog=CatalogConnection(con, "t", views), tables={"jobs"},
                       synthetic=True, source_tz=None, unlogged_ends={"job"} if trace["unlogged_ends"] else set())
    try:
        yield ctx
    finally:
        con.close()


def one_thread() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection on one thread."""
    con = duckdb.connect()
    con.execute("SET threads = 1")
    return con


@contextlib.contextmanager
def threshold(module: object, name: str, value: float) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, name, value)
        yield


def window_of(ctx: TraceContext, data: st.DataObject) -> Window | None:
    """The whole trace, its active window, or a window inside the trace (changes before it count at
    its start, those after it not at all)."""
    whole = allocation.trace_window(ctx)
    choice = data.draw(st.sampled_from(["trace", "active", "inside"]))
    if whole is None or choice == "trace":
        return whole
    if choice == "active":
        return allocation.active_window(ctx) or whole
    span = whole.hi - whole.lo
    return Window(whole.lo + span * data.draw(st.sampled_from([0.1, 0.25])), whole.hi - span * 0.3)


def bits(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`frame` sorted by `keys` (NULLs last), its DOUBLEs as their 64 bits."""
    return frame.sort(keys, nulls_last=True).with_columns(pl.col(pl.Float64).map_batches(
        lambda s: pl.Series(s.name, s.to_numpy().view(np.uint64))))


def allocated_jobs(ctx: TraceContext) -> int:
    return ctx.one_row(f"SELECT count(*) AS n FROM {ctx.jobs} WHERE {allocated_jobs_where(ctx)}")["n"]


# -- the step function of allocated GPUs --------------------------------------------------------

@pytest.mark.slow
@CHECKS
@given(trace=traces(), data=st.data())
def test_steps_summed_in_memory_are_the_decimal_window_to_the_bit(trace: dict, data: st.DataObject) -> None:
    """`STEPS_SUMMED_IN_MEMORY` just at or below the changes (two per job holding GPUs, counted the
    way that holds the trace's open jobs, the more), and the 64-bit bound (`SUMMABLE`) crossed or
    not: the steps product is its definition's rows, whichever way made it (summed in memory, both
    ways in one pass, a whole trace's from its one cluster, or DuckDB's window)."""
    with trace_context(trace) as ctx:
        window = window_of(ctx, data)
        if window is None:
            return
        groups = data.draw(GROUPINGS)
        with ctx.holding_open("job"):
            changes = 2 * allocated_jobs(ctx)
        limit = changes if data.draw(st.booleans()) else changes - 1
        summable = data.draw(st.booleans())
        with (threshold(fast_steps, "STEPS_SUMMED_IN_MEMORY", limit),
              threshold(fast_steps, "SUMMABLE", fast_steps.SUMMABLE if summable else 1.0)):
            ways = [ctx.holds_open("job"), True]
            found = {}
            for held in dict.fromkeys(data.draw(st.permutations(ways))):
                with ctx.holding_open("job") if held else contextlib.nullcontext():
                    defined = ctx.con.sql(allocation.integrable_steps_sql(ctx, groups, window)).pl()
                    product = allocation.shared_steps(ctx, groups, window)
                    found[held] = (defined, ctx.query(f"SELECT * FROM {product}"))
                    summed = fast_steps.summed_steps(ctx, groups, allocation.step_changes_sql(ctx, groups, window),
                                                     allocated_jobs_where(ctx))
                    moved = bool((defined["gpus"] != 0).any())  # a change that does not cancel out at its instant
                    fits = 2 * allocated_jobs(ctx) <= limit
                    assert (summed is None) == (not fits or (not summable and moved))
                    if summed is not None:
                        assert bits(pl.from_arrow(summed), [*groups, "x"]).equals(bits(defined, [*groups, "x"]))
    for defined, stored in found.values():
        assert stored.schema == defined.schema
        assert bits(stored, [*groups, "x"]).equals(bits(defined, [*groups, "x"]))


@pytest.mark.slow
@CHECKS
@given(trace=traces(), data=st.data())
def test_steps_looked_up_in_memory_are_the_asof_joins(trace: dict, data: st.DataObject) -> None:
    """The steps in force at each capacity piece's ends and the peaks within the pieces, looked up
    in memory (`STEPS_SUMMED_IN_MEMORY` at or above the steps) or by the ASOF joins (just below):
    `allocation_vs_capacity` is the same to the bit."""
    with trace_context(trace) as ctx:
        window = window_of(ctx, data)
        if window is None:
            return
        groups = data.draw(GROUPINGS)
        steps = allocation.shared_steps(ctx, groups, window)
        rows = ctx.one_row(f"SELECT count(*) AS n FROM {steps}")["n"]
        in_memory = data.draw(st.booleans())
        with threshold(fast_steps, "STEPS_SUMMED_IN_MEMORY", rows if in_memory else rows - 1):
            capacity = (f"WITH {window.cte()}, "
                        f"{allocation._capacity_cte(ctx, groups, allocation.capacity_sources(ctx))} SELECT * FROM cap")
            looked_up = fast_steps.looked_up(ctx, groups, steps, window.hi - window.lo, capacity)
            assert (looked_up is None) == (not in_memory)
            fast = allocation.allocation_vs_capacity(ctx, groups, window)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(PLAIN_ENV, "fast")
            reference = allocation.allocation_vs_capacity(ctx, groups, window)
    assert fast.schema == reference.schema
    assert bits(fast, fast.columns[:len(groups) + 1]).equals(bits(reference, fast.columns[:len(groups) + 1]))


# -- the allocation sweep's partial results per bin --------------------------------------------

@pytest.mark.slow
@CHECKS
@given(trace=traces(), data=st.data())
def test_partials_reduced_in_memory_are_the_query_rows(trace: dict, data: st.DataObject) -> None:
    """Bins from 1 s to a week, any window; the changes' threshold (`STEPS_SUMMED_IN_MEMORY`) at
    or below two per job, the 64-bit bound crossed or not: the rows of `allocation_partials_sql`."""
    with trace_context(trace) as ctx:
        window = window_of(ctx, data)
        if window is None:
            return
        groups = data.draw(st.sampled_from([(), ("cluster",), ("cluster", "vc"), ("cluster", "gpu_type")]))
        resolution_us = data.draw(st.sampled_from([1, 7, 600, 3600, 7 * 86400])) * 1_000_000
        lo_us, hi_us = round(window.lo * 1e6), round(window.hi * 1e6)
        intervals = allocation.job_intervals_sql(ctx, groups)
        reference = ctx.query(allocation.allocation_partials_sql(f"({intervals})", groups, lo_us, hi_us,
                                                                 resolution_us))
        changes = 2 * allocated_jobs(ctx)
        in_memory, summable = data.draw(st.booleans()), data.draw(st.booleans())
        with (threshold(fast_steps, "STEPS_SUMMED_IN_MEMORY", changes if in_memory else changes - 1),
              threshold(fast_bins, "SUMMABLE", fast_steps.SUMMABLE if summable else 1.0)):
            found = fast_bins.partials(ctx, intervals, groups, lo_us, hi_us, resolution_us)
    assert (found is None) == (not in_memory or (not summable and reference.height > 0))
    if found is not None:
        keys = [*groups, "k"]
        assert found.schema == reference.schema
        assert found.sort(keys, nulls_last=True).equals(reference.sort(keys, nulls_last=True))


# -- the allocated GPUs at each submission -------------------------------------------------------

@CHECKS
@given(trace=traces(), data=st.data())
def test_allocated_gpus_at_submission_looked_up_in_memory_are_the_asof_join(trace: dict,
                                                                            data: st.DataObject) -> None:
    """`LOAD_LOOKUP_ROWS` at or just below the submissions and steps: the allocated GPUs at each
    submission are the as-of join's on the cluster, and, with one cluster, the join without it."""
    with trace_context(trace) as ctx:
        window = allocation.trace_window(ctx)
        if window is None:
            return
        steps = f"SELECT cluster, ts, gpus FROM {allocation.shared_steps(ctx, ['cluster'], window)}"
        submitted = f"""SELECT cluster, submit_time, queue_s, start_time IS NULL AS never_started
                        FROM {ctx.jobs} WHERE num_gpus > 0 AND submit_time IS NOT NULL"""
        reference = ctx.query(f"WITH steps AS ({steps}), submitted AS ({submitted}) {_looked_up_sql(True)}")
        rows = ctx.one_row(f"SELECT (SELECT count(*) FROM ({submitted})) + (SELECT count(*) FROM ({steps})) AS n")["n"]
        in_memory = data.draw(st.booleans())
        with threshold(fast_load, "LOAD_LOOKUP_ROWS", rows if in_memory else rows - 1):
            found = fast_load.allocated_at_submission(ctx, steps, submitted)
        clusters = ctx.one_row(f"""SELECT count(DISTINCT cluster) AS n, count(*) - count(cluster) AS unnamed
                                   FROM (SELECT cluster FROM ({submitted}) UNION ALL SELECT cluster FROM ({steps}))""")
        one = clusters["n"] == 1 and clusters["unnamed"] == 0
        assert fast_load.without_the_cluster(ctx, steps, submitted) == one
        without = ctx.query(f"WITH steps AS ({steps}), submitted AS ({submitted}) {_looked_up_sql(False)}")
    keys = reference.columns
    assert (found is None) == (not in_memory)
    if found is not None:
        assert found.schema == reference.schema
        assert bits(found, keys).equals(bits(reference, keys))
    if one:
        assert bits(without, keys).equals(bits(reference, keys))


# -- CDF tables ----------------------------------------------------------------------------------

@CHECKS
@given(values=st.lists(st.tuples(st.sampled_from(["x", "y", None]), st.sampled_from([1, 2, None]),
                                 st.one_of(st.integers(-3, 3).map(float), st.floats(-1e6, 1e6), st.just(float("nan")))),
                       max_size=60),
       grouped=st.booleans(), data=st.data())
def test_cdf_sorted_in_memory_is_the_discrete_list_quantile(values: list, grouped: bool, data: st.DataObject) -> None:
    """Ties, NaN (above every number), NULL groups, two group columns or none; `CDF_SORTED_VALUES`
    at or just below the values: the rows of the defining discrete list quantile."""
    con = one_thread()
    con.register("generated", pl.DataFrame(values, schema={"a": pl.String, "b": pl.Int64, "v": pl.Float64},
                                           orient="row"))
    con.execute("CREATE TABLE raw_values AS SELECT * FROM generated")
    ctx = TraceContext(home=Path("."), trace="t", catalog=CatalogConnection(con, "t"), tables=set(), synthetic=True,
                       source_tz=None)
    groups = ("a", "b") if grouped else ()
    rows_sql = f"SELECT {''.join(g + ', ' for g in groups)}v AS value FROM raw_values WHERE v IS NOT NULL"
    reference = ctx.query(_cdf_table_sql(rows_sql, groups, CDF_PROBABILITIES))
    in_memory = data.draw(st.booleans())
    with threshold(fast_cdf, "CDF_SORTED_VALUES", len(values) if in_memory else len(values) - 1):
        found = fast_cdf.sorted_cdf(ctx, rows_sql, groups, CDF_PROBABILITIES)
    con.close()
    assert (found is None) == (not in_memory)
    if found is not None:
        assert found.schema == reference.schema
        assert bits(found, [*groups, "probability"]).equals(bits(reference, [*groups, "probability"]))


# -- the interval sweep --------------------------------------------------------------------------

@st.composite
def intervals(draw: st.DrawFn) -> tuple[list[tuple], int]:
    """Intervals of up to three counts: (key, start s, end s, weights...) and the number of counts."""
    counts = draw(st.integers(1, 3))
    whole = draw(st.booleans())  # every time a whole second (packed in seconds), or to the microsecond
    rows = []
    for _ in range(draw(st.integers(0, 30))):
        start = draw(st.integers(0, 40)) * 1_000_000 if whole else draw(st.integers(0, 40_000_000))
        length = draw(st.integers(0, 15)) * 1_000_000 if whole else draw(st.integers(0, 15_000_000))
        weights = [draw(st.sampled_from([-2, 0, 1, 1, 2, 3, None])) for _ in range(counts)]
        rows.append((draw(st.sampled_from([-7, -1, 0, 3, 1000, 2 ** 20])), 1.5e9 + start / 1e6,
                     1.5e9 + (start + length) / 1e6, *weights))
    return rows, counts


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ddlx-fast-paths-") as folder:
        yield Path(folder)


@pytest.mark.slow
@CHECKS
@given(generated=intervals(), data=st.data())
def test_packed_sweep_is_the_window_query_to_the_bit(generated: tuple[list[tuple], int], data: st.DataObject,
                                                     scratch: Path) -> None:
    """Keys swept in one group or several (`EVENTS_PER_SORT` below the events: scratch files),
    batches of 1 to 1000 events, events that fit the packed bits or not (`PACKED_BITS` at or just
    below what they need): the seconds at each level are the window query's, to the bit."""
    rows, counts = generated
    names = ["c0", "c1", "c2"][:counts]
    con = one_thread()
    con.execute(f"SET temp_directory = '{scratch}'")
    con.register("generated", pl.DataFrame(rows, schema={"key": pl.Int64, "t_start": pl.Float64,
                                                         "t_end": pl.Float64, **{n: pl.Int64 for n in names}},
                                           orient="row"))
    con.execute("CREATE TABLE raw_intervals AS SELECT * FROM generated")
    ctx = TraceContext(home=Path("."), trace="t", catalog=CatalogConnection(con, "t"), tables=set(), synthetic=True,
                       source_tz=None)
    typed = sweeps.typed_intervals_sql("raw_intervals", names)
    reference = ctx.query(sweeps.level_seconds_sql(typed, names))
    events_per_sort = data.draw(st.sampled_from([fast_sweep.EVENTS_PER_SORT, 2, 5]))
    batch_rows = data.draw(st.sampled_from([1, 3, 1000]))
    with threshold(fast_sweep, "EVENTS_PER_SORT", events_per_sort):
        packed = fast_sweep.level_seconds(ctx, typed, names, len(rows), batch_rows)
        needed = _packed_bits(ctx, typed, names, len(rows))
        fits = data.draw(st.booleans())
        with threshold(fast_sweep, "PACKED_BITS", needed if fits else needed - 1):
            declined = fast_sweep.level_seconds(ctx, typed, names, len(rows), batch_rows)
        public = sweeps.level_seconds(ctx, "raw_intervals", names, len(rows), batch_rows)
    con.close()
    keys = ["key", "count", "level"]
    assert packed is not None and packed.schema == reference.schema
    assert bits(packed, keys).equals(bits(reference, keys))
    assert (declined is None) == (not fits and needed > 0)
    named = reference.with_columns(pl.col("count").replace_strict(dict(enumerate(names)), return_dtype=pl.Enum(names)))
    assert public.schema == named.schema
    assert bits(public, keys).equals(bits(named, keys))


def _packed_bits(ctx: TraceContext, typed: str, names: list[str], intervals: int) -> int:
    """The most bits a packed event of the sweep takes, over its groups of keys (0 without events)."""
    most = 0
    with threshold(fast_sweep, "PACKED_BITS", 10 ** 6):
        groups = max(1, -(-2 * intervals // fast_sweep.EVENTS_PER_SORT))
        with fast_sweep._key_groups(ctx, typed, groups) as parts:
            for part in parts:
                packing = fast_sweep._Packing.of(ctx, part, names, groups)
                most = max(most, packing.bits if packing else 0)
    return most


# -- the switch ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (None, Speedups(True, True, True)), ("", Speedups(True, True, True)), ("0", Speedups(True, True, True)),
    ("1", Speedups(False, False, False)), ("all", Speedups(False, False, False)),
    ("fast", Speedups(False, True, True)), ("lanes, kept", Speedups(True, False, False)),
    ("KEPT", Speedups(True, True, False))])
def test_ddlx_plain_turns_off_the_speedups_it_names(monkeypatch: pytest.MonkeyPatch, value: str | None,
                                                    expected: Speedups) -> None:
    if value is None:
        monkeypatch.delenv(PLAIN_ENV, raising=False)
    else:
        monkeypatch.setenv(PLAIN_ENV, value)
    assert speedups() == expected


def test_a_ddlx_plain_value_it_does_not_know_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLAIN_ENV, "fast,cache")
    with pytest.raises(UsageError, match=r"DDLX_PLAIN='fast,cache': expected 1, all, 0 or a comma list of "
                                         r"fast, lanes, kept .*, not 'cache'"):
        speedups()


def test_with_fast_paths_off_no_fast_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fast path declines when `DDLX_PLAIN` turns fast paths off, whatever the input's size."""
    trace = {"jobs": [{"cluster": "a", "vc": "v1", "gpu_type": None, "submit_us": 0, "start_us": 0,
                       "end_us": 60_000_000, "num_gpus": 1.0}], "capacity": [], "unlogged_ends": False}
    monkeypatch.setenv(PLAIN_ENV, "fast")
    with trace_context(trace) as ctx:
        window = allocation.trace_window(ctx)
        assert window is not None
        where = allocated_jobs_where(ctx)
        changes = allocation.step_changes_sql(ctx, ("cluster",), window)
        steps = allocation.shared_steps(ctx, ("cluster",), window)
        submitted = f"SELECT cluster, submit_time FROM {ctx.jobs}"
        assert fast_steps.summed_steps(ctx, ("cluster",), changes, where) is None
        assert fast_steps.summed_both_ways(ctx, ("cluster",), changes, steps, changes, where) is None
        assert fast_steps.one_cluster_steps(ctx, steps, where) is None
        assert fast_steps.looked_up(ctx, ("cluster",), steps, 60.0, "SELECT 1") is None
        assert fast_bins.partials(ctx, allocation.job_intervals_sql(ctx, ()), (), 0, 60_000_000, 10**6) is None
        assert fast_load.allocated_at_submission(ctx, f"SELECT cluster, ts, gpus FROM {steps}", submitted) is None
        assert not fast_load.without_the_cluster(ctx, f"SELECT cluster, ts, gpus FROM {steps}", submitted)
        assert fast_cdf.sorted_cdf(ctx, "SELECT 1.0 AS value", (), (0.5,)) is None
        typed = sweeps.typed_intervals_sql("(SELECT 1 AS key, 0.0 AS t_start, 1.0 AS t_end, 1 AS n)", ["n"])
        assert fast_sweep.level_seconds(ctx, typed, ["n"]) is None
        # the product is its query's temporary table
        assert ctx.query(f"SELECT count(*) AS n FROM {steps}")["n"][0] == 2
        tables = ctx.query("SELECT table_name FROM duckdb_tables() WHERE temporary")["table_name"].to_list()
        assert tables == [steps]
