"""Allocation: GPUs held by jobs over time against the GPU capacity the trace documents.

What it computes, from the canonical jobs (`jobs`) and `ddlx.analysis.capacity`:
- the GPU capacity of the trace by source (`gpu_capacity`);
- allocated GPUs per time bin of a cluster, VC or GPU type (`allocation_series`): exact
  time-weighted mean and peak, and both as a share of the preferred capacity source;
- allocated GPUs over the whole trace against every capacity source (`allocation_vs_capacity`);
- the hour-of-week profile of allocated GPUs in the trace's local time (`hour_of_week_profile`).

Allocation is an event sweep over the jobs (`ddlx.analysis.sql.allocation_events_sql`): the step
function of allocated GPUs is integrated exactly (each step carries the cumulative GPU count and
the cumulative GPU-seconds moment; an ASOF join reads the integral at any instant), so
time-weighted means never come from sampling.

Definitions (declared here, registered through `ddlx.analysis.utilization`, which writes the
results; the ids keep that module's prefix): `utilization.allocated_gpus`,
`utilization.allocated_gpus_binned`, `utilization.allocated_share_of_capacity`,
`utilization.allocated_hour_of_week`; capacities are `capacity.<source>`.

Units: GPUs (fractions as requested), shares of capacity as fractions, times as Unix seconds
inside the queries (`Window`, `x`: seconds since the window start) and UTC timestamps in results
(`bin_start`, `window_start`, `window_end`), bin steps (`resolution_s`) in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from ddlx.analysis.capacity import capacity_sources, gpu_capacity, gpu_capacity_sql
from ddlx.analysis.context import NO_WALL_CLOCK, TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.fast import bins as fast_bins
from ddlx.analysis.fast import steps as fast_steps
from ddlx.analysis.model import ModuleResult, held_to_end_text
from ddlx.analysis.options import DEFAULT_RESOLUTION_S
from ddlx.analysis.sql import MICRO, allocated_jobs_where, allocation_events_sql, local_time_sql, trace_end_sql

if TYPE_CHECKING:
    from ddlx.analysis.engines import Engine


#: Largest allocation series written at the chosen step (groups x bins); a finer series is written
#: at a coarser step, and the module says so (`skip`).
MAX_SERIES_ROWS = 2_000_000

#: Steps a too-large series is coarsened to, in seconds (the first multiple of the chosen step
#: among them that fits).
COARSER_STEPS_S: tuple[int, ...] = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)

#: Why allocation figures of a dataset without start times are demand, said beside each of them.
NO_STARTS = ("no start times recorded: each job is taken to start at its submission, so these are GPUs "
             "demanded assuming no queueing, not GPUs a scheduler allocated")

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "utilization.allocated_gpus", "Allocated GPUs", "GPUs",
        "GPUs held by jobs at an instant t: the sum of gpu_request.job_total over the jobs with "
        "start_time <= t < end_time. A job that started and has no end (still running) holds its "
        "GPUs to the trace end, except in a trace whose started jobs without an end are ends that "
        "were not logged: there such jobs are left out (their number and GPUs are a finding). A job "
        "that never started holds none, nor does one whose end precedes its start; fractions count "
        "as requested. {derivations}.",
    ),
    Definition(
        "utilization.allocated_gpus_binned", "Allocated GPUs per time bin", "GPUs",
        "The observation window runs from the earliest submission or start of any job of the trace "
        "to the trace end (its latest submission, start or end); with the option window = active, "
        "it is the active window instead: from the 0.5th to the 99.5th percentile of the submission "
        "times, the span holding 99 % of the submissions. Bins are [k * resolution_s, "
        "(k+1) * resolution_s) of Unix time (aligned on the epoch, UTC), cut to the window "
        "(covered_s: seconds of the bin inside it). mean_gpus is the exact time-weighted mean of "
        "utilization.allocated_gpus over the covered part (the integral of the step function in "
        "GPU-seconds divided by covered_s, no sampling); peak_gpus the largest value it takes "
        "there for any time. Per bin it is computed from partial results that merge exactly "
        "(engine.reduction): in whole microseconds and millionths of a GPU, the "
        "bin's net change, the sum of each change times the time from it to the bin's end, and the "
        "largest running sum of its changes; the level at a bin's start is the sum of the net "
        "changes of the bins before it. Over the whole trace: the same over the whole window.",
    ),
    Definition(
        "utilization.allocated_share_of_capacity", "Allocated GPUs as a share of capacity", "fraction",
        "utilization.allocated_gpus divided by the GPU capacity valid at the same time for the same "
        "scope, from the trace's preferred capacity source (capacity.<source>: the source of "
        "preference 1 in its gpu_capacity view; any other source is reported beside it). A cluster's "
        "capacity is the sum over its VCs or GPU types; a VC or a GPU type has one only where the "
        "source gives that dimension. Per bin: mean_share = mean_gpus / capacity valid at the bin's "
        "start, peak_share = peak_gpus / that capacity. Over the trace: mean_share is the "
        "time-weighted mean of allocated / capacity over the part of the window with a known "
        "capacity, peak_share its largest value. Above 1 when jobs hold more GPUs than documented.",
    ),
    Definition(
        "utilization.allocated_hour_of_week", "Allocated GPUs by hour of the week", "GPUs",
        "For each hour of the week in the trace's local time (0 = Monday 00:00-01:00, 167 = Sunday "
        "23:00-24:00), the time-weighted mean of utilization.allocated_gpus over every such hour "
        "inside the observation window (GPU-seconds over seconds; observed_h: hours counted). Each "
        "UTC hour of the trace takes the local hour-of-week of its start, which is exact for zones "
        "whose offset is a whole number of hours (every trace ddlx knows).",
    ),
)



# ---------------------------------------------------------------------------------------------
# The step function of allocated GPUs and its integral
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """The observation window, Unix seconds: from the first instant any job of the trace records
    (submission or start) to the trace end (`trace_end_sql`)."""

    lo: float
    hi: float

    def cte(self) -> str:
        """CTE `win` (lo, hi) for the queries below."""
        return f"win AS (SELECT {_double(self.lo)} AS lo, {_double(self.hi)} AS hi)"


def _double(value: float) -> str:
    """A DOUBLE literal (DuckDB reads `1.5` as a DECIMAL)."""
    return f"CAST({float(value)!r} AS DOUBLE)"


def trace_start_sql(ctx: TraceContext) -> str:
    """A scalar subquery: the trace start, the first instant any job of the trace records (UTC)."""
    return f"(SELECT min(least(submit_time, start_time)) FROM {ctx.jobs})"


#: Share of submissions the active window holds: it runs from the (1 - ACTIVE_SHARE) / 2 quantile
#: of the submission times to the (1 + ACTIVE_SHARE) / 2 quantile.
ACTIVE_SHARE = 0.99



def trace_window(ctx: TraceContext) -> Window | None:
    """The whole trace: from its first instant to its end; None when no job has a time."""
    row = ctx.one_row(f"SELECT epoch({trace_start_sql(ctx)}) AS lo, epoch({trace_end_sql(ctx)}) AS hi")
    return None if row["lo"] is None or row["hi"] is None else Window(float(row["lo"]), float(row["hi"]))


def active_window(ctx: TraceContext) -> Window | None:
    """The active window: the span of submission times holding `ACTIVE_SHARE` of the submissions,
    from the 0.5th to the 99.5th percentile (discrete: both ends are real submissions); None when
    the trace has fewer than two distinct submission times."""
    low, high = (1 - ACTIVE_SHARE) / 2, (1 + ACTIVE_SHARE) / 2
    row = ctx.one_row(f"""SELECT quantile_disc(epoch(submit_time), {low!r}) AS lo,
                                 quantile_disc(epoch(submit_time), {high!r}) AS hi FROM {ctx.jobs}""")
    if row["lo"] is None or row["hi"] is None or row["hi"] <= row["lo"]:
        return None
    return Window(float(row["lo"]), float(row["hi"]))


def observation_window(ctx: TraceContext) -> Window | None:
    """The window allocation figures are taken over: the whole trace, or with the option
    `window` = `active` its active window; None when no job has a time."""
    return active_window(ctx) if ctx.options.window == "active" else trace_window(ctx)


def _select_groups(groups: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return "".join(f"{prefix}{g}, " for g in groups)


def _same_groups(left: str, right: str, groups: Sequence[str]) -> str:
    """Join condition on the group columns (NULL matches NULL); TRUE without groups."""
    return " AND ".join([f"{left}.{g} IS NOT DISTINCT FROM {right}.{g}" for g in groups] or ["TRUE"])


def _step_changes_sql(ctx: TraceContext, groups: Sequence[str], window: Window,
                      sums: str = "sum(delta_gpus) AS delta", with_ended: bool = False) -> str:
    """A FROM item: the net change of allocated GPUs per group and instant, `delta` (DOUBLE, the sum
    of `allocation_events_sql`'s changes at `ts`), with `ts` (Unix seconds, changes before the
    window start moved to it) and `x` (seconds since the window start). `sums` replaces `delta` by
    other aggregates of the changes, which may read their `ended` when `with_ended`."""
    lo = _double(window.lo)
    return f"""(SELECT {_select_groups(groups)}greatest(epoch(t), {lo}) AS ts, greatest(epoch(t), {lo}) - {lo} AS x,
                       {sums}
                FROM {allocation_events_sql(ctx, groups, with_ended=with_ended)} GROUP BY ALL)"""


def integrable_steps_sql(ctx: TraceContext, groups: Sequence[str], window: Window) -> str:
    """A query: allocated GPUs as a step function per group, ready to integrate.

    Rows: the `groups` columns, `ts` (Unix seconds of a change), `x` (seconds since the window
    start), `gpus` (allocated from `ts` until the group's next row) and `moment` (the sum of
    delta_gpus * x over the changes so far). The GPU-seconds allocated from the window start to
    any X at or after a row (and before the next) are `gpus * X - moment`: the integral is read
    with one ASOF join, never by sampling. Built on `allocation_events_sql`. The running sums are
    exact (DECIMAL: each change in millionths of a GPU, each change x time in millionths of a
    GPU-second), so sums of fractional requests return to exact values. Changes before the window
    start count at the start (a window inside the trace begins with what was allocated then), so
    the integral covers the window only. This text defines the rows; the run reads them as a
    product (`shared_steps`), found faster by `ddlx.analysis.fast.steps`.
    """
    partition = f"PARTITION BY {', '.join(groups)} " if groups else ""
    return f"""
    SELECT {_select_groups(groups)}ts, x,
           CAST(sum(delta) OVER w AS DOUBLE) AS gpus, CAST(sum(delta_x) OVER w AS DOUBLE) AS moment
    FROM ({step_changes_sql(ctx, groups, window)})
    WINDOW w AS ({partition}ORDER BY x ROWS UNBOUNDED PRECEDING)"""


def step_changes_sql(ctx: TraceContext, groups: Sequence[str], window: Window) -> str:
    """A query: the changes whose running sums are the steps of `integrable_steps_sql`: the
    `groups` columns, `ts`, `x`, `delta` DECIMAL(18, 6) and `delta_x` DECIMAL(38, 6)."""
    return (f"SELECT {_select_groups(groups)}ts, x, {_decimal_change_sql('delta')} "
            f"FROM {_step_changes_sql(ctx, groups, window)}")


def both_ways_changes_sql(ctx: TraceContext, groups: Sequence[str], window: Window) -> str:
    """A query for a trace that leaves out its started jobs without an end: per group and instant,
    the changes of `step_changes_sql` both ways from one pass over the jobs: as the trace counts
    them (`ended_delta`, `ended_delta_x`, the sums of the `ended_changes` changes of jobs with an
    end: a job without an end adds only its start) and with those jobs held to the end (`delta`,
    `delta_x`, `TraceContext.holding_open`), each summed in the order `_step_changes_sql` sums them."""
    with ctx.holding_open("job"):
        changes = _step_changes_sql(ctx, groups, window, with_ended=True, sums=(
            "count(*) FILTER (WHERE ended) AS ended_changes, sum(delta_gpus) FILTER (WHERE ended) AS ended_sum, "
            "sum(delta_gpus) AS every_sum"))
    return f"""SELECT {_select_groups(groups)}ts, x, ended_changes, {_decimal_change_sql("ended_sum", "ended_")},
                      {_decimal_change_sql("every_sum")} FROM {changes}"""


#: Millionths: the scale of the DECIMAL sums of `integrable_steps_sql`.
_SCALE = 6


def _decimal_change_sql(change: str, prefix: str = "") -> str:
    """Select items: the change `change` and `change` x `x` as the DECIMALs whose running sums are
    the steps, `{prefix}delta` DECIMAL(18, 6) and `{prefix}delta_x` DECIMAL(38, 6)."""
    return (f"CAST({change} AS DECIMAL(18, {_SCALE})) AS {prefix}delta, "
            f"CAST({change} * x AS DECIMAL(38, {_SCALE})) AS {prefix}delta_x")


def shared_steps(ctx: TraceContext, groups: Sequence[str], window: Window) -> str:
    """`integrable_steps_sql` of `groups` over `window` as a product of the run
    (`CatalogConnection.product`), which the allocation and the load at submission read; returns its
    name. Its rows are found faster by `ddlx.analysis.fast.steps`: summed in memory; for a trace
    that leaves out its started jobs without an end, together with the steps that hold them to the
    end; for the whole trace, those of its one cluster."""
    sql = integrable_steps_sql(ctx, groups, window)
    jobs, changes = allocated_jobs_where(ctx), step_changes_sql(ctx, groups, window)
    cluster = None if groups else shared_steps(ctx, ("cluster",), window)  # declared: its rows may serve
    held = held_jobs = both_ways = None
    if not ctx.holds_open("job"):
        with ctx.holding_open("job"):
            held, held_jobs = shared_steps(ctx, groups, window), allocated_jobs_where(ctx)
        both_ways = both_ways_changes_sql(ctx, groups, window)

    def fast() -> pa.Table | str | None:
        whole_trace = fast_steps.one_cluster_steps(ctx, cluster, jobs) if cluster else None
        if whole_trace is not None:
            return whole_trace
        if held is None or held_jobs is None or both_ways is None:
            return fast_steps.summed_steps(ctx, groups, changes, jobs)
        return fast_steps.summed_both_ways(ctx, groups, changes, held, both_ways, held_jobs)

    return ctx.catalog.product(sql, "ddlx_steps_" + ("_".join(groups) or "all"), fast)


def materialized(ctx: TraceContext, sql: str, stem: str) -> AbstractContextManager[str]:
    """The catalog query `sql` as a temporary table for the duration of the block (several results
    read it; `TraceContext.materialized`); yields its name."""
    return ctx.materialized(sql, f"ddlx_utilization_{stem}")


def registered(ctx: TraceContext, frame: pl.DataFrame | pa.Table, stem: str) -> AbstractContextManager[str]:
    """`frame` as a view of the connection for the duration of the block (`TraceContext.registered`);
    yields its name."""
    return ctx.registered(frame, f"ddlx_utilization_{stem}")


def _keys_sql(groups: Sequence[str]) -> str:
    return f"SELECT DISTINCT {', '.join(groups)} FROM steps" if groups else "SELECT 1 AS all_jobs"


def _integral_sql(point: str, step: str = "s") -> str:
    """GPU-seconds allocated from the window start to `point` (seconds since lo), given the ASOF step."""
    return f"coalesce({step}.gpus * {point} - {step}.moment, 0)"


def _capacity_cte(ctx: TraceContext, groups: Sequence[str], sources: Sequence[str]) -> str:
    """CTE `cap`: per group and source, capacity pieces [a, b) (seconds since lo, cut to the
    window) with the capacity valid in them, summed over the rows of finer dimensions."""
    not_null = " AND ".join([f"{g} IS NOT NULL" for g in groups] or ["TRUE"])
    return f"""cap AS (
    SELECT * FROM (
        SELECT {_select_groups(groups)}source,
               greatest(coalesce(epoch(valid_from) - lo, 0), 0) AS a,
               least(coalesce(epoch(valid_to) - lo, hi - lo), hi - lo) AS b,
               CAST(sum(gpus) AS DOUBLE) AS capacity
        FROM {gpu_capacity_sql(ctx, list(sources))}, win
        WHERE {not_null} GROUP BY ALL)
    WHERE a < b AND capacity > 0)"""


def preferred_capacity_source(ctx: TraceContext) -> str | None:
    """The capacity source shares are taken against (the trace's preferred one), if any."""
    sources = capacity_sources(ctx)
    return sources[0] if sources else None


# ---------------------------------------------------------------------------------------------
# The per-bin sweep, on an engine: partial results that merge exactly
# ---------------------------------------------------------------------------------------------

#: Microseconds in a second: the sweep runs on whole microseconds and millionths of a GPU.
_MICRO = MICRO


def job_intervals_sql(ctx: TraceContext, groups: Sequence[str]) -> str:
    """A query on the catalog: the input of the sweep, one row per job that holds GPUs
    (`allocated_jobs_where`). Columns: the `groups` columns, `start_us` and `end_us` (Unix
    microseconds; `end_us` NULL: held to the end) and `gpus_micro` (GPUs requested in millionths)."""
    return f"""SELECT {_select_groups(groups)}epoch_us(start_time) AS start_us, epoch_us(end_time) AS end_us,
                      CAST(round(num_gpus * {_MICRO}) AS BIGINT) AS gpus_micro
               FROM {ctx.jobs} WHERE {allocated_jobs_where(ctx)}"""


def allocation_partials_sql(intervals: str, groups: Sequence[str], lo_us: int, hi_us: int, resolution_us: int) -> str:
    """The sweep's partial results per group and bin k ([k * resolution_us, (k+1) * resolution_us)
    of Unix microseconds), over `intervals` (`job_intervals_sql` rows) inside the window
    [lo_us, hi_us]: SQL written once (DuckDB's dialect; `ddlx.analysis.engines` runs it on Spark).

    Changes before the window count at its start; changes after it are left out. Rows: the `groups`
    columns, `k`, `delta` (the net change of allocated GPUs in the bin, millionths of a GPU),
    `moment` (the sum over the bin's changes of change x microseconds from it to the bin's end
    inside the window), `peak_level` (the largest running sum of changes within the bin, at a change
    before hi_us; NULL if none) and `first_us` (its first change). Every column is a sum, maximum or
    minimum of whole numbers over the changes of one bin, grouped by bin: the result does not
    depend on how the input is partitioned. `merge_allocation_partials` carries the level across
    bins."""
    g = _select_groups(groups)
    partition = ", ".join([*groups, "k"])
    return f"""
WITH events AS (
    SELECT {g}GREATEST(start_us, {lo_us}) AS t_us, gpus_micro AS d FROM {intervals} WHERE start_us <= {hi_us}
    UNION ALL
    SELECT {g}GREATEST(end_us, {lo_us}) AS t_us, -gpus_micro AS d FROM {intervals}
    WHERE end_us IS NOT NULL AND end_us <= {hi_us}),
changes AS (SELECT {g}t_us, CAST(SUM(d) AS BIGINT) AS d FROM events GROUP BY {g}t_us),
binned AS (SELECT *, t_us // {resolution_us} AS k FROM changes),
levels AS (
    SELECT *, CAST(SUM(d) OVER (PARTITION BY {partition} ORDER BY t_us
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS level
    FROM binned)
SELECT {g}k, CAST(SUM(d) AS BIGINT) AS delta,
       SUM(CAST(d AS DECIMAL(38, 0)) * (LEAST((k + 1) * {resolution_us}, {hi_us}) - t_us)) AS moment,
       MAX(CASE WHEN t_us < {hi_us} THEN level END) AS peak_level, MIN(t_us) AS first_us
FROM levels GROUP BY {g}k"""


def merge_allocation_partials(partials: str, keys: str, groups: Sequence[str], resolution_s: int,
                              window: Window) -> str:
    """A FROM item: allocated GPUs per group and bin of the window from the sweep's `partials`
    (`allocation_partials_sql` rows, merged) for every group of `keys` (a FROM item of the `groups`
    columns). The level at a bin's start is the sum of the deltas of the bins before it (the sweep's
    state carried across bins); the GPU-seconds in the bin are that level x its span plus its
    moment, exactly (whole numbers); the peak is the largest level the bin holds for any time.
    Rows: the `groups` columns, `k`, `a` (seconds from the window start to the bin's start),
    `covered_s`, `mean_gpus`, `peak_gpus`."""
    res, res_us = _double(resolution_s), resolution_s * _MICRO
    lo_us, hi_us = round(window.lo * _MICRO), round(window.hi * _MICRO)
    first_k, end_k = lo_us // res_us, -(-hi_us // res_us)
    partition = f"PARTITION BY {', '.join(groups)} " if groups else ""
    return f"""(
WITH {window.cte()},
bins AS (
    SELECT k, greatest(k * {res}, lo) - lo AS a, least((k + 1) * {res}, hi) - lo AS b,
           greatest(k * {res_us}, {lo_us}) AS a_us, least((k + 1) * {res_us}, {hi_us}) AS b_us
    FROM win, range({first_k}, {end_k}) AS r(k)),
joined AS (
    SELECT {_select_groups(groups, 'keys')}bins.*, p.delta, p.moment, p.peak_level, p.first_us
    FROM (SELECT * FROM {keys}) AS keys CROSS JOIN bins
    LEFT JOIN {partials} AS p ON {_same_groups('keys', 'p', groups)} AND p.k = bins.k),
carried AS (
    SELECT *, coalesce(sum(delta) OVER ({partition}ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                       0) AS start_level
    FROM joined)
SELECT {_select_groups(groups)}k, a, b - a AS covered_s,
       CAST(start_level * (b_us - a_us) + coalesce(moment, 0) AS DOUBLE) / {_MICRO} / nullif(b_us - a_us, 0)
           AS mean_gpus,
       CAST(greatest(CASE WHEN first_us IS NULL OR first_us > a_us THEN start_level END,
                     start_level + peak_level) AS DOUBLE) / {_MICRO} AS peak_gpus
FROM carried)"""


def allocation_bins(ctx: TraceContext, groups: Sequence[str], resolution_s: int, window: Window,
                    engine: Engine | None = None) -> pl.DataFrame:
    """Allocated GPUs per group and bin (`merge_allocation_partials` columns), the sweep's partials
    computed on `engine` (default: DuckDB on the catalog's connection) and merged here. On DuckDB,
    the local engine, the partials are reduced in memory where they fit (`ddlx.analysis.fast.bins`,
    the same rows). DuckDB's partials are kept between runs (another engine's are not: the report names
    the engine that ran)."""
    from ddlx.analysis.engines import DuckDBEngine

    lo_us, hi_us = round(window.lo * _MICRO), round(window.hi * _MICRO)
    own = engine is None
    engine = DuckDBEngine(ctx.con) if engine is None else engine
    name = "ddlx_job_intervals_" + ("_".join(groups) or "all")
    intervals = job_intervals_sql(ctx, groups)
    partials_sql = allocation_partials_sql(name, groups, lo_us, hi_us, resolution_s * _MICRO)

    def reduce() -> pl.DataFrame:
        in_memory = (fast_bins.partials(ctx, intervals, groups, lo_us, hi_us, resolution_s * _MICRO)
                     if engine.name == DuckDBEngine.name else None)
        if in_memory is not None:
            return in_memory
        engine.register_local(name, ctx.con, intervals)
        return pl.from_arrow(engine.query(partials_sql, "allocation sweep"))  # type: ignore[return-value]

    try:
        parts = (ctx.kept.cache.frames("allocation_partials", [intervals, partials_sql], reduce)
                 if engine.name == DuckDBEngine.name else reduce())
    finally:
        if own:
            engine.close()
    keys = (f"(SELECT DISTINCT {', '.join(groups)} FROM ({job_intervals_sql(ctx, groups)}))" if groups
            else "(SELECT 1 AS all_jobs)")
    with registered(ctx, parts, "partials") as partials:
        merged = merge_allocation_partials(partials, keys, groups, resolution_s, window)
        return ctx.query(f"SELECT * FROM {merged}")


# ---------------------------------------------------------------------------------------------
# Allocated GPUs over time
# ---------------------------------------------------------------------------------------------

def fitting_resolution(ctx: TraceContext, groups: Sequence[str], resolution_s: int, window: Window,
                       max_rows: int | None = None) -> int:
    """`resolution_s`, or the first coarser step of `COARSER_STEPS_S` (a multiple of it) whose
    series over `window` has at most `max_rows` (default `MAX_SERIES_ROWS`) rows (groups x bins)."""
    max_rows = MAX_SERIES_ROWS if max_rows is None else max_rows
    keys = f"count(DISTINCT ({', '.join(groups)}))" if groups else "1"
    groups_n = ctx.one_row(f"SELECT {keys} AS n FROM {ctx.jobs} WHERE start_time IS NOT NULL AND num_gpus > 0")["n"]

    def rows(step: int) -> int:
        return int(groups_n or 0) * (math.ceil(window.hi / step) - math.floor(window.lo / step))

    if rows(resolution_s) <= max_rows:
        return resolution_s
    for step in COARSER_STEPS_S:
        if step > resolution_s and step % resolution_s == 0 and rows(step) <= max_rows:
            return step
    return max(COARSER_STEPS_S[-1], resolution_s)


def allocation_series(ctx: TraceContext, groups: Sequence[str] = ("cluster",),
                      resolution_s: int = DEFAULT_RESOLUTION_S, with_capacity: bool = True,
                      window: Window | None = None, engine: Engine | None = None) -> pl.DataFrame:
    """Allocated GPUs per time bin and group (definitions `utilization.allocated_gpus_binned`,
    `utilization.allocated_share_of_capacity`).

    Rows: the `groups` columns (of the canonical jobs: cluster, vc, gpu_type), `bin_start`
    (TIMESTAMPTZ, aligned on multiples of `resolution_s` from the epoch), `covered_s` (seconds
    of the bin inside the observation window), `mean_gpus`, `peak_gpus`, and against the
    preferred capacity source `capacity_gpus`, `mean_share`, `peak_share` (NULL without one).
    Groups are those with a GPU job that started; each has every bin of the window. `window` is
    computed when not given; the sweep runs on `engine` (`allocation_bins`).
    """
    window = window or observation_window(ctx)
    if window is None:
        return _empty_series(groups)
    bins = allocation_bins(ctx, groups, resolution_s, window, engine)
    with registered(ctx, bins, "bins") as binned:
        sql = allocation_series_sql(ctx, groups, resolution_s, window, binned, with_capacity)
        return ctx.query(f"SELECT * FROM {sql} ORDER BY {', '.join([*groups, 'bin_start'])}")


def _empty_series(groups: Sequence[str]) -> pl.DataFrame:
    return pl.DataFrame(schema={**{g: pl.String for g in groups}, "bin_start": pl.Datetime("us", "UTC"),
                                "covered_s": pl.Float64, "mean_gpus": pl.Float64, "peak_gpus": pl.Float64,
                                "capacity_gpus": pl.Float64, "mean_share": pl.Float64, "peak_share": pl.Float64})


def allocation_series_sql(ctx: TraceContext, groups: Sequence[str], resolution_s: int, window: Window,
                          binned: str, with_capacity: bool = True) -> str:
    """The query of `allocation_series` as a FROM item (unordered), over `binned` (the
    `allocation_bins` of the same groups, window and resolution)."""
    res = _double(resolution_s)
    source = preferred_capacity_source(ctx) if with_capacity else None
    return f"""(
WITH {window.cte()},
{_capacity_cte(ctx, groups, [source] if source else [])},
with_capacity AS (
    SELECT {_select_groups(groups, 'b')}to_timestamp(b.k * {res}) AS bin_start, b.covered_s, b.mean_gpus,
           b.peak_gpus, CASE WHEN b.a < c.b THEN c.capacity END AS capacity_gpus
    FROM {binned} b ASOF LEFT JOIN cap c ON {_same_groups('b', 'c', groups)} AND c.a <= b.a)
SELECT *, mean_gpus / capacity_gpus AS mean_share, peak_gpus / capacity_gpus AS peak_share
FROM with_capacity)"""


def allocation_vs_capacity(ctx: TraceContext, groups: Sequence[str] = ("cluster",),
                           window: Window | None = None) -> pl.DataFrame:
    """Allocated GPUs over the whole observation window per group, against every capacity
    source of the trace (`utilization.allocated_gpus_binned`, `utilization.allocated_share_of_capacity`).

    Rows: the `groups` columns, `capacity_source` (NULL when the trace has none), `window_start`,
    `window_end`, `mean_gpus`, `peak_gpus`, `end_gpus` (still allocated at the trace end: held by
    jobs without an end), `capacity_gpus` (time-weighted mean capacity over the
    part of the window it covers, `capacity_covered_s`), `mean_share`, `peak_share`. Exact for
    capacities that change over time: the integral is read at every capacity change, and the
    peak share is taken at every allocation change and every capacity change. Kept between runs.
    The steps are a product of the run (`shared_steps`), read by ASOF joins; where they fit in
    memory, the step in force at each instant is looked up there (`ddlx.analysis.fast.steps.looked_up`).
    """
    window = window or observation_window(ctx)
    if window is None:
        return pl.DataFrame()

    def compute() -> pl.DataFrame:
        steps = shared_steps(ctx, groups, window)
        capacity = f"WITH {window.cte()}, {_capacity_cte(ctx, groups, capacity_sources(ctx))} SELECT * FROM cap"
        looked_up = fast_steps.looked_up(ctx, groups, steps, window.hi - window.lo, capacity)
        if looked_up is None:
            return ctx.query(_allocation_vs_capacity_sql(ctx, groups, window, f"(SELECT * FROM {steps})"))
        last, pieces = looked_up
        with registered(ctx, last, "last_steps") as last_name, registered(ctx, pieces, "pieces") as pieces_name:
            return ctx.query(_allocation_vs_capacity_sql(ctx, groups, window, f"(SELECT * FROM {steps})",
                                                         (last_name, pieces_name)))

    described = _allocation_vs_capacity_sql(ctx, groups, window, integrable_steps_sql(ctx, groups, window))
    return ctx.kept.cache.frames("allocation_vs_capacity", [described], compute)


def _allocation_vs_capacity_sql(ctx: TraceContext, groups: Sequence[str], window: Window, steps: str,
                                looked_up: tuple[str, str] | None = None) -> str:
    """The query of `allocation_vs_capacity` over `steps` (`integrable_steps_sql`, or a table of
    it); with `looked_up`, the names of `fast.steps.looked_up`'s two frames, the steps in force at each
    instant are read from them instead of ASOF joins on `steps`."""
    if looked_up is None:
        lookups = f"""
last_steps AS (
    SELECT {_select_groups(groups)}arg_max(gpus, x) AS gpus, arg_max(moment, x) AS moment
    FROM steps, win WHERE x <= hi - lo GROUP BY ALL),
peaks AS (
    SELECT {_select_groups(groups)}max(gpus) AS peak_gpus FROM steps, win WHERE x < hi - lo GROUP BY ALL),
piece_start AS (
    SELECT c.*, coalesce(s.gpus, 0) AS gpus_at_a, {_integral_sql('c.a')} AS gs_a
    FROM cap c ASOF LEFT JOIN steps s ON {_same_groups('c', 's', groups)} AND s.x <= c.a),
pieces AS (
    SELECT p.*, {_integral_sql('p.b')} - p.gs_a AS gs
    FROM piece_start p ASOF LEFT JOIN steps s ON {_same_groups('p', 's', groups)} AND s.x <= p.b),
step_shares AS (
    SELECT {_select_groups(groups, 's')}c.source, max(s.gpus / c.capacity) AS share
    FROM (SELECT steps.*, src.source FROM steps, win, (SELECT DISTINCT source FROM cap) src
          WHERE steps.x < hi - lo) s
    ASOF JOIN cap c ON {_same_groups('s', 'c', groups)} AND s.source = c.source AND c.a <= s.x
    WHERE s.x < c.b GROUP BY ALL),"""
    else:
        last, looked_pieces = looked_up
        capacity_columns = ", ".join([*groups, "source", "a", "b", "capacity"])
        lookups = f"""
last_steps AS (SELECT {_select_groups(groups)}gpus, moment FROM {last} WHERE gpus IS NOT NULL),
peaks AS (SELECT {_select_groups(groups)}peak_gpus FROM {last} WHERE peak_gpus IS NOT NULL),
pieces AS (
    SELECT {capacity_columns}, gpus_at_a, gs_a, {_integral_sql('b', 'p')} - gs_a AS gs
    FROM (SELECT *, coalesce(gpus_a, 0) AS gpus_at_a, coalesce(gpus_a * a - moment_a, 0) AS gs_a,
                 gpus_b AS gpus, moment_b AS moment
          FROM {looked_pieces}) p),
step_shares AS (
    SELECT {_select_groups(groups)}source, max(piece_peak_gpus / capacity) AS share
    FROM {looked_pieces} WHERE piece_peak_gpus IS NOT NULL GROUP BY ALL),"""
    return f"""
WITH {window.cte()},
steps AS ({steps}),
{_capacity_cte(ctx, groups, capacity_sources(ctx))},
keys AS ({_keys_sql(groups)}),
whole AS (SELECT keys.*, hi - lo AS span FROM keys, win),{lookups}
totals AS (
    SELECT w.*, {_integral_sql('w.span')} / nullif(w.span, 0) AS mean_gpus, coalesce(s.gpus, 0) AS end_gpus
    FROM whole w LEFT JOIN last_steps s ON {_same_groups('w', 's', groups)}),
shares AS (  -- sums over a group's pieces in time order: the same DOUBLEs however the pieces were found
    SELECT {_select_groups(groups)}source, sum(b - a ORDER BY a, b) AS capacity_covered_s,
           sum(capacity * (b - a) ORDER BY a, b) / sum(b - a ORDER BY a, b) AS capacity_gpus,
           sum(gs / capacity ORDER BY a, b) / sum(b - a ORDER BY a, b) AS mean_share,
           max(gpus_at_a / capacity) AS share_at_piece_start
    FROM pieces GROUP BY ALL)
SELECT {_select_groups(groups, 't')}sh.source AS capacity_source,
       to_timestamp(win.lo) AS window_start, to_timestamp(win.hi) AS window_end,
       t.mean_gpus, coalesce(p.peak_gpus, 0) AS peak_gpus, t.end_gpus,
       sh.capacity_gpus, sh.capacity_covered_s, sh.mean_share,
       greatest(sh.share_at_piece_start, ss.share) AS peak_share
FROM totals t CROSS JOIN win
LEFT JOIN peaks p ON {_same_groups('t', 'p', groups)}
LEFT JOIN shares sh ON {_same_groups('t', 'sh', groups)}
LEFT JOIN step_shares ss ON {_same_groups('sh', 'ss', groups)} AND sh.source = ss.source
ORDER BY {_select_groups(groups, 't')}capacity_source"""


def hour_of_week_profile(ctx: TraceContext, groups: Sequence[str] = ("cluster",), window: Window | None = None,
                         hourly: pl.DataFrame | None = None, engine: Engine | None = None) -> pl.DataFrame:
    """Mean allocated GPUs per local hour of the week and group (`utilization.allocated_hour_of_week`).

    Rows: the `groups` columns, `hour_of_week` (0 = Monday 00:00 local), `weekday` (Monday...),
    `hour` (local), `mean_gpus`, `observed_h` (hours of the window counted). `hourly`, the
    3600 s `allocation_series` of the same groups, is computed when not given.
    """
    if hourly is None:
        window = window or observation_window(ctx)
        if window is None:
            return pl.DataFrame()
        hourly = allocation_series(ctx, groups, 3600, with_capacity=False, window=window, engine=engine)
    local = local_time_sql(ctx, "to_timestamp(bin_start_s)")
    # Times cross as Unix seconds: DuckDB fails on zone-aware times registered from polars.
    bins = hourly.select(*groups, pl.col("bin_start").dt.epoch("s").alias("bin_start_s"), "covered_s", "mean_gpus")
    with registered(ctx, bins, "hourly") as name:
        return ctx.query(f"""
            SELECT {_select_groups(groups)}(isodow({local}) - 1) * 24 + hour({local}) AS hour_of_week,
                   dayname({local}) AS weekday, hour({local}) AS hour,
                   sum(mean_gpus * covered_s) / sum(covered_s) AS mean_gpus, sum(covered_s) / 3600 AS observed_h
            FROM {name} GROUP BY ALL ORDER BY {_select_groups(groups)}hour_of_week""")


# ---------------------------------------------------------------------------------------------
# The allocation part of module `utilization`
# ---------------------------------------------------------------------------------------------

def _started_gpu_jobs(ctx: TraceContext) -> dict[str, int]:
    """Started GPU jobs (`jobs`), and how many of them have a `vc` and a `gpu_type`."""
    return ctx.one_row(f"""SELECT count(*) AS jobs, count(vc) AS vc, count(gpu_type) AS gpu_type FROM {ctx.jobs}
                           WHERE start_time IS NOT NULL AND num_gpus > 0""")


def analyze_allocation(ctx: TraceContext, result: ModuleResult) -> None:
    """Add capacity and allocation's tables and findings to `result` (module `utilization`), or
    record why a part does not apply. `MAX_SERIES_ROWS` bounds each allocation series (see
    `fitting_resolution`); it is read at each run, so a caller can lower it."""
    max_rows = MAX_SERIES_ROWS
    resolution = ctx.options.resolution_s
    source = preferred_capacity_source(ctx)
    cap_defs = tuple(f"capacity.{s}" for s in capacity_sources(ctx))
    base = ("utilization.allocated_gpus", "utilization.allocated_gpus_binned")
    share = ("utilization.allocated_share_of_capacity",) if source else ()
    series_defs = base + share + tuple(f"capacity.{s}" for s in [source] if s)

    if source is None:
        result.skip("GPU capacity, and allocated GPUs as a share of it",
                    "the trace documents no GPU capacity (no machine, node or VC size table)")
    else:
        result.add("capacity", gpu_capacity(ctx), cap_defs,
                   "the GPUs of a cluster (and VC, GPU type or day where the source has them) by one source")
    window = observation_window(ctx)
    started = _started_gpu_jobs(ctx)
    if window is None or not started["jobs"]:
        result.skip("allocated GPUs over time", "no GPU job of the trace has started")
        return

    in_active = ctx.options.window == "active"
    over = ("over the whole trace" if not in_active else
            f"over the active window ({(window.hi - window.lo) / 86400:,.1f} days holding {ACTIVE_SHARE:.0%} of "
            "the submissions)")
    dimensions = [d for d in ("vc", "gpu_type") if started[d]]
    clusters = ctx.one_row(f"SELECT count(DISTINCT cluster) AS n FROM {ctx.jobs}")["n"]
    engine = ctx.engine()
    series, step = _series(ctx, result, ("cluster",), resolution, window, engine, series_defs, max_rows)
    if not ctx.has_wall_clock:
        result.skip("allocated GPUs by hour of the week", NO_WALL_CLOCK)
    else:
        hourly = series if step == 3600 else None
        result.add("allocation_hour_of_week", hour_of_week_profile(ctx, ("cluster",), window, hourly, engine),
                   ("utilization.allocated_hour_of_week",), f"an hour of the week ({ctx.local_tz}) of one cluster")
    for dimension in ("vc", "gpu_type"):
        if dimension in dimensions:
            _series(ctx, result, ("cluster", dimension), resolution, window, engine, series_defs, max_rows)
        else:
            result.skip(f"allocated GPUs per {dimension}",
                        f"no GPU job of the trace that started has a {dimension}")
    provenance = engine.provenance(f"catalog jobs ({started['jobs']:,} started GPU jobs)")
    result.add("reduction", pl.DataFrame([provenance.as_dict()]), ("engine.reduction",),
               "the engine the allocation sweep ran on")
    per_cluster = allocation_vs_capacity(ctx, ("cluster",), window)
    whole, table = per_cluster, per_cluster
    if clusters > 1:
        whole = allocation_vs_capacity(ctx, (), window)
        table = pl.concat([whole.with_columns(pl.lit(None, pl.String).alias("cluster")).select(per_cluster.columns),
                           per_cluster], how="vertical_relaxed")
    result.add("allocation_vs_capacity", table, base + share + cap_defs,
               f"one cluster (NULL: all clusters together) against one capacity source, {over}")

    row = _source_row(whole, source)
    if not ctx.starts_recorded:
        result.skip("GPUs allocated as the scheduler placed them", NO_STARTS)
    if row is not None:
        scope = "all clusters" if clusters > 1 else "the cluster"
        held_gpus = "allocated GPUs"
        if not ctx.starts_recorded:
            scope += " (" + NO_STARTS + ")"
            held_gpus = "GPUs demanded assuming no queueing (no start times)"
        open_jobs = None if ctx.holds_open("job") else ctx.one_row(
            f"""SELECT count(*) AS jobs, coalesce(sum(num_gpus), 0) AS gpus FROM {ctx.jobs}
                WHERE start_time IS NOT NULL AND end_time IS NULL AND num_gpus > 0""")
        held = _held_open(ctx, window, source, open_jobs["jobs"] if open_jobs else 0)
        result.add_finding("allocated_gpus_mean", f"mean {held_gpus}", row["mean_gpus"], "GPUs",
                           "utilization.allocated_gpus_binned", f"{scope}, {over}",
                           held("mean_gpus", "GPUs"), basis=started["jobs"])
        result.add_finding("allocated_gpus_peak", f"peak {held_gpus}", row["peak_gpus"], "GPUs",
                           "utilization.allocated_gpus_binned", f"{scope}, {over}",
                           held("peak_gpus", "GPUs"), basis=started["jobs"])
        if open_jobs is None:
            result.add_finding("allocated_gpus_at_end", "GPUs still allocated at the trace end (jobs without an end)",
                               row["end_gpus"], "GPUs", "utilization.allocated_gpus",
                               f"{scope}, at the end of the {'active window' if in_active else 'trace'}")
        else:
            population = (f"{scope}: GPU jobs that started and have no end ({open_jobs['jobs']:,} jobs), "
                          "left out of allocated GPUs")
            result.add_finding("unplaced_open_job_gpus", "GPUs asked for by started jobs with no logged end",
                               open_jobs["gpus"], "GPUs", "utilization.allocated_gpus", population)
        if source and row["capacity_source"] == source:
            population = f"{scope}, against capacity.{source} ({row['capacity_gpus']:,.0f} GPUs on average)"
            result.add_finding("allocated_share_mean", "mean allocated GPUs as a share of capacity", row["mean_share"],
                               "fraction", "utilization.allocated_share_of_capacity", population,
                               held("mean_share", "fraction"), basis=started["jobs"])
            result.add_finding("allocated_share_peak", "peak allocated GPUs as a share of capacity", row["peak_share"],
                               "fraction", "utilization.allocated_share_of_capacity", population,
                               held("peak_share", "fraction"), basis=started["jobs"])
    _window_check(result, window, window if in_active else active_window(ctx))
    if source:
        bins = series.filter(pl.col("peak_share").is_not_null())
        result.add_check("allocation_above_capacity", f"more GPUs allocated than capacity.{source} gives (the "
                         "trace's jobs hold more GPUs than it documents)", bins.filter(pl.col("peak_share") > 1).height,
                         bins.height, f"time bins of {step} s with a capacity",
                         ("allocated_share_mean", "allocated_share_peak"))


def _window_check(result: ModuleResult, window: Window, active: Window | None) -> None:
    """The bound "the trace is not nearly empty over most of the window": broken when the `active`
    window covers less than half of the window the figures are taken over, so that their
    time-weighted means are diluted by empty time (the `window` option `active` restricts them)."""
    if active is None or window.hi <= window.lo:
        return
    covered = (min(active.hi, window.hi) - max(active.lo, window.lo)) / (window.hi - window.lo)
    days = (window.hi - window.lo) / 86400
    result.add_check("nearly_empty_window", f"the active window (the span holding {ACTIVE_SHARE:.0%} of the "
                     f"submissions) covers {covered:.0%} of the {days:,.1f}-day window the allocation is taken "
                     "over, so its means are diluted; ddlx analyze --window active restricts them to it",
                     int(covered < 0.5), 1, "observation windows",
                     ("allocated_gpus_mean", "allocated_share_mean"))


def _source_row(table: pl.DataFrame, source: str | None) -> dict[str, Any] | None:
    """The row of `allocation_vs_capacity` against `source` (else its first row; None when empty)."""
    candidates = table.to_dicts()
    return next((r for r in candidates if r["capacity_source"] == source), candidates[0] if candidates else None)


def _held_open(ctx: TraceContext, window: Window, source: str | None, jobs: int) -> Callable[[str, str], str]:
    """For a trace that leaves out its `jobs` started GPU jobs with no end (when there are some): a
    function giving, for a column of `allocation_vs_capacity` over all clusters, its value with
    those jobs held to the trace end, as the text beside the headline; else one giving ""."""
    if not jobs:
        return lambda column, unit: ""
    with ctx.holding_open("job"):
        row = _source_row(allocation_vs_capacity(ctx, (), window), source)
    def text(column: str, unit: str) -> str:
        if not row:
            return ""
        shown = held_to_end_text(row[column], unit, jobs, "started job")
        if unit == "fraction" and row[column] is not None and row[column] > 1:
            shown += (" (above 100 %: held open to the trace end, those jobs ask for more GPUs than the capacity, "
                      "so this reading is an upper bound, not a load the cluster ran)")
        return shown

    return text


def _series(ctx: TraceContext, result: ModuleResult, groups: tuple[str, ...], resolution: int, window: Window,
            engine: Engine, defs: tuple[str, ...], max_rows: int) -> tuple[pl.DataFrame, int]:
    """Add the allocation series of `groups`, coarsened (and said so) when it would exceed
    `max_rows` rows; returns it and its step."""
    name = f"allocation_by_{groups[-1]}"
    step = fitting_resolution(ctx, groups, resolution, window, max_rows)
    if step != resolution:
        result.skip(f"{name} at {resolution} s", f"it would exceed {max_rows:,} rows; written at {step} s")
    frame = result.add(name, allocation_series(ctx, groups, step, window=window, engine=engine), defs,
                       f"a {step} s time bin of one {' and '.join(groups)}")
    return frame, step

