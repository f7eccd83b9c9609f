"""Utilisation: GPUs allocated to jobs over time against the capacity the trace documents, the
hour-of-week profile of allocation, measured GPU utilisation (PAI sensors and machine metrics,
Philly per-minute logs) and, for PAI, what tasks request against what they use.

Allocation is an event sweep over the canonical jobs (`allocation_events_sql`): the step function
of allocated GPUs is integrated exactly (each step carries the cumulative GPU count and the
cumulative GPU-seconds moment; an ASOF join reads the integral at any instant), so time-weighted
means never come from sampling. Capacity comes from `ddlx.analysis.capacity`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass

import duckdb
import polars as pl

from ddlx.analysis.capacity import CAPACITY_DEFINITIONS, capacity_sources, gpu_capacity, gpu_capacity_sql
from ddlx.analysis.context import NO_WALL_CLOCK, TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import (
    CDF_PROBABILITIES,
    GPU_BUCKET_SQL,
    allocation_events_sql,
    cdf_table,
    double_list_sql,
    local_time_sql,
    quantile_columns_sql,
    quantiles_from_counts_sql,
    sort_buckets,
    trace_end_sql,
)
from ddlx.datasets.sqltext import sql_string
from ddlx.errors import CatalogError, DdlxError

#: Default step of the allocation time series, seconds (`ctx.options["resolution_s"]` overrides it).
DEFAULT_RESOLUTION_S = 3600

#: Largest allocation series written at the chosen step (groups x bins); a finer series is written
#: at a coarser step, and the module says so (`skip`).
MAX_SERIES_ROWS = 2_000_000

#: Steps a too-large series is coarsened to, in seconds (the first multiple of the chosen step
#: among them that fits).
COARSER_STEPS_S: tuple[int, ...] = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)

#: Resources compared in PAI's request-versus-usage: name -> (request column of the task table,
#: usage column of the sensor table, unit of both).
PAI_RESOURCES: dict[str, tuple[str, str, str]] = {
    "cpu": ("plan_cpu", "cpu_usage", "percent of one core"),
    "gpu": ("plan_gpu", "gpu_wrk_util", "percent of one GPU"),
    "mem_avg": ("plan_mem", "avg_mem", "GB"),
    "mem_max": ("plan_mem", "max_mem", "GB"),
}

PHILLY_GPU_COLUMNS: tuple[str, ...] = tuple(f"gpu{k}_util" for k in range(8))

DEFINITIONS: tuple[Definition, ...] = CAPACITY_DEFINITIONS + (
    Definition(
        "utilization.allocated_gpus", "Allocated GPUs", "GPUs",
        "GPUs held by jobs at an instant t: the sum of gpu_request.job_total over the jobs with "
        "start_time <= t < end_time. A job that started and has no end (still running) holds its "
        "GPUs to the trace end, except in PAI, where such jobs (status Running) are left out: their "
        "ends were not logged, and together they ask for several times the cluster's GPUs, so they "
        "cannot have all been running at the trace end (their number and GPUs are a finding). A job "
        "that never started holds none; fractions count as requested. "
        "PAI: from the job's first instance start to the job's end, all its requested GPUs "
        "(instances that start later or end earlier are not followed); Philly: from the first "
        "attempt's start to the last attempt's end with the GPUs of its largest attempt (gaps "
        "between attempts count as held); Helios and Acme: start_time to end_time; Alibaba v2023: "
        "scheduled_time to deletion_time; imported tables: the mapped start (else the submission) "
        "to the end.",
    ),
    Definition(
        "utilization.allocated_gpus_binned", "Allocated GPUs per time bin", "GPUs",
        "The observation window runs from the earliest submission or start of any job of the trace "
        "to the trace end (its latest submission, start or end). Bins are [k * resolution_s, "
        "(k+1) * resolution_s) of Unix time (aligned on the epoch, UTC), cut to the window "
        "(covered_s: seconds of the bin inside it). mean_gpus is the exact time-weighted mean of "
        "utilization.allocated_gpus over the covered part (the integral of the step function in "
        "GPU-seconds divided by covered_s, no sampling); peak_gpus the largest value it takes "
        "there. Over the whole trace: the same over the whole window.",
    ),
    Definition(
        "utilization.allocated_share_of_capacity", "Allocated GPUs as a share of capacity", "fraction",
        "utilization.allocated_gpus divided by the GPU capacity valid at the same time for the same "
        "scope, from the trace's preferred capacity source (capacity.helios_vc_capacity, "
        "capacity.pai_machine_spec, capacity.pai_v2023_nodes, else capacity.philly_gpu_util; "
        "Philly's machine list, capacity.philly_machine_list, is reported beside it). A cluster's "
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
    Definition(
        "utilization.pai_instance_gpu_util", "Measured GPU utilisation of a PAI instance", "percent",
        "PAI: pai_sensor_table.gpu_wrk_util of an instance (worker), the average over its lifetime "
        "in percent of one GPU (an instance using several GPUs can exceed 100), for instances of "
        "tasks with plan_gpu > 0 and a gpu_wrk_util value. One value per sensor row; it joins its "
        "job (for size and state) by job_name, the key every PAI table shares.",
    ),
    Definition(
        "utilization.pai_machine_gpu_util", "Machine GPU utilisation while a PAI instance ran", "percent",
        "PAI: pai_machine_metric.machine_gpu, the machine-level GPU utilisation averaged over one "
        "instance's lifetime (one row per instance and machine, so a busy machine counts once per "
        "instance it hosted). The owners do not state its unit; ddlx reads it as percent, like the "
        "other utilisation columns. Values above 100 are kept as written and counted (above_100).",
    ),
    Definition(
        "utilization.philly_gpu_minute_util", "Measured GPU utilisation per GPU-minute, Philly", "percent",
        "Philly: each number in the gpu0_util..gpu7_util fields of philly_gpu_util (one per GPU "
        "and minute; NA, an offline GPU, and empty fields, no such GPU, are left out), percent. "
        "Quantiles are exact (continuous quantiles from the counts of each distinct value).",
    ),
    Definition(
        "utilization.philly_job_gpu_util", "Measured GPU utilisation of a Philly job", "percent",
        "Philly: the mean of the per-minute utilisation of the GPUs a job was given (each attempt's "
        "detail: machine and gpuN) over the minutes of that attempt, start_time <= minute < "
        "end_time (an attempt still running at the trace end: to the end of the log), over all "
        "its attempts; each online GPU-minute weighs the same (gpu_minutes). Attempts without a "
        "start, or without an end that are not the last, are left out; jobs with no GPU-minute "
        "in the log have none.",
    ),
    Definition(
        "utilization.pai_task_usage_ratio", "Share of a PAI task's request it uses", "fraction",
        "PAI, per task: usage / request for each resource, where request is the task's per-instance "
        "plan (plan_cpu, plan_gpu: percent of one core or GPU; plan_mem: GB) and usage is the mean, "
        "over the task's instances that have a sensor row, of cpu_usage, gpu_wrk_util, avg_mem "
        "(mem_avg) or max_mem (mem_max), in the same units. Tasks whose request is empty or 0 are "
        "left out for that resource.",
    ),
    Definition(
        "utilization.pai_task_over_request", "PAI task that requests more than it uses", "tasks",
        "A task whose usage is below its request for a resource (utilization.pai_task_usage_ratio "
        "< 1); counted per resource over the tasks compared.",
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


def observation_window(ctx: TraceContext) -> Window | None:
    """The observation window of the trace; None when no job has a time."""
    row = ctx.one_row(f"SELECT epoch({trace_start_sql(ctx)}) AS lo, epoch({trace_end_sql(ctx)}) AS hi")
    return None if row["lo"] is None or row["hi"] is None else Window(float(row["lo"]), float(row["hi"]))


def _select_groups(groups: Sequence[str], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return "".join(f"{prefix}{g}, " for g in groups)


def _same_groups(left: str, right: str, groups: Sequence[str]) -> str:
    """Join condition on the group columns (NULL matches NULL); TRUE without groups."""
    return " AND ".join([f"{left}.{g} IS NOT DISTINCT FROM {right}.{g}" for g in groups] or ["TRUE"])


def integrable_steps_sql(ctx: TraceContext, groups: Sequence[str], window: Window) -> str:
    """A query: allocated GPUs as a step function per group, ready to integrate.

    Rows: the `groups` columns, `ts` (Unix seconds of a change), `x` (seconds since the window
    start), `gpus` (allocated from `ts` until the group's next row) and `moment` (the sum of
    delta_gpus * x over the changes so far). The GPU-seconds allocated from the window start to
    any X at or after a row (and before the next) are `gpus * X - moment`: the integral is read
    with one ASOF join, never by sampling. Built on `allocation_events_sql`. The running sums are
    exact (DECIMAL: GPUs to 1e-6, like `allocation_steps_sql`, and GPU-seconds to 1e-6), so sums of
    fractional requests return to exact values; DECIMAL sums are also faster than DOUBLE ones here.
    """
    partition = f"PARTITION BY {', '.join(groups)} " if groups else ""
    return f"""
    SELECT {_select_groups(groups)}ts, x,
           CAST(sum(delta) OVER w AS DOUBLE) AS gpus, CAST(sum(delta_x) OVER w AS DOUBLE) AS moment
    FROM (SELECT {_select_groups(groups)}ts, x, CAST(delta AS DECIMAL(18, 6)) AS delta,
                 CAST(delta * x AS DECIMAL(38, 6)) AS delta_x
          FROM (SELECT {_select_groups(groups)}epoch(t) AS ts, epoch(t) - {_double(window.lo)} AS x,
                       sum(delta_gpus) AS delta
                FROM {allocation_events_sql(ctx, groups)} GROUP BY ALL))
    WINDOW w AS ({partition}ORDER BY x ROWS UNBOUNDED PRECEDING)"""


def _execute(ctx: TraceContext, sql: str) -> None:
    try:
        ctx.con.execute(sql)
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0]
        raise CatalogError(f"{ctx.trace}: analysis query failed: {message}") from None


@contextmanager
def materialized(ctx: TraceContext, sql: str, stem: str) -> Iterator[str]:
    """The query `sql` as a temporary table for the duration of the block (several results read
    it); yields its name."""
    name = f"ddlx_utilization_{stem}"
    _execute(ctx, f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
    try:
        yield name
    finally:
        _execute(ctx, f"DROP TABLE IF EXISTS {name}")


def materialized_steps(ctx: TraceContext, groups: Sequence[str], window: Window) -> AbstractContextManager[str]:
    """`integrable_steps_sql` of `groups` as a temporary table for the duration of the block."""
    return materialized(ctx, integrable_steps_sql(ctx, groups, window), "steps_" + ("_".join(groups) or "all"))


def _steps_cte(ctx: TraceContext, groups: Sequence[str], window: Window, steps: str | None) -> str:
    """CTE `steps`: the materialized `steps` table when given, else the query itself."""
    if steps:
        return f"steps AS (SELECT * FROM {steps})"
    return f"steps AS MATERIALIZED ({integrable_steps_sql(ctx, groups, window)})"


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
    """The capacity source shares are taken against (`capacity.SOURCE_PREFERENCE`), if any."""
    sources = capacity_sources(ctx)
    return sources[0] if sources else None


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
                      window: Window | None = None, steps: str | None = None) -> pl.DataFrame:
    """Allocated GPUs per time bin and group (definitions `utilization.allocated_gpus_binned`,
    `utilization.allocated_share_of_capacity`).

    Rows: the `groups` columns (of the canonical jobs: cluster, vc, gpu_type), `bin_start`
    (TIMESTAMPTZ, aligned on multiples of `resolution_s` from the epoch), `covered_s` (seconds
    of the bin inside the observation window), `mean_gpus`, `peak_gpus`, and against the
    preferred capacity source `capacity_gpus`, `mean_share`, `peak_share` (NULL without one).
    Groups are those with a GPU job that started; each has every bin of the window. `window`
    and `steps` (a `materialized_steps` table of the same groups) are computed when not given.
    """
    window = window or observation_window(ctx)
    if window is None:
        return _empty_series(groups)
    sql = allocation_series_sql(ctx, groups, resolution_s, window, steps, with_capacity)
    return ctx.query(f"SELECT * FROM {sql} ORDER BY {', '.join([*groups, 'bin_start'])}")


def _empty_series(groups: Sequence[str]) -> pl.DataFrame:
    return pl.DataFrame(schema={**{g: pl.String for g in groups}, "bin_start": pl.Datetime("us", "UTC"),
                                "covered_s": pl.Float64, "mean_gpus": pl.Float64, "peak_gpus": pl.Float64,
                                "capacity_gpus": pl.Float64, "mean_share": pl.Float64, "peak_share": pl.Float64})


def allocation_series_sql(ctx: TraceContext, groups: Sequence[str], resolution_s: int, window: Window,
                          steps: str | None = None, with_capacity: bool = True) -> str:
    """The query of `allocation_series` as a FROM item (unordered)."""
    res = _double(resolution_s)
    source = preferred_capacity_source(ctx) if with_capacity else None
    return f"""(
WITH {window.cte()},
{_steps_cte(ctx, groups, window, steps)},
{_capacity_cte(ctx, groups, [source] if source else [])},
keys AS ({_keys_sql(groups)}),
bins AS (
    SELECT k, greatest(k * {res}, lo) - lo AS a, least((k + 1) * {res}, hi) - lo AS b
    FROM win, range(CAST(floor(lo / {res}) AS BIGINT), CAST(ceil(hi / {res}) AS BIGINT)) AS r(k)),
grid AS (SELECT * FROM keys, bins),
at_start AS (
    SELECT grid.*, coalesce(s.gpus, 0) AS gpus_at_start, {_integral_sql('grid.a')} AS gs_start
    FROM grid ASOF LEFT JOIN steps s ON {_same_groups('grid', 's', groups)} AND s.x <= grid.a),
at_end AS (
    SELECT at_start.*, {_integral_sql('at_start.b')} AS gs_end
    FROM at_start ASOF LEFT JOIN steps s ON {_same_groups('at_start', 's', groups)} AND s.x <= at_start.b),
inside AS (
    SELECT {_select_groups(groups)}CAST(floor(ts / {res}) AS BIGINT) AS k, max(gpus) AS peak
    FROM steps, win WHERE x < hi - lo GROUP BY ALL),
binned AS (
    SELECT {_select_groups(groups, 'e')}e.k, e.a, e.b - e.a AS covered_s,
           (e.gs_end - e.gs_start) / nullif(e.b - e.a, 0) AS mean_gpus,
           greatest(e.gpus_at_start, i.peak) AS peak_gpus
    FROM at_end e LEFT JOIN inside i ON {_same_groups('e', 'i', groups)} AND e.k = i.k),
with_capacity AS (
    SELECT {_select_groups(groups, 'b')}to_timestamp(b.k * {res}) AS bin_start, b.covered_s, b.mean_gpus,
           b.peak_gpus, CASE WHEN b.a < c.b THEN c.capacity END AS capacity_gpus
    FROM binned b ASOF LEFT JOIN cap c ON {_same_groups('b', 'c', groups)} AND c.a <= b.a)
SELECT *, mean_gpus / capacity_gpus AS mean_share, peak_gpus / capacity_gpus AS peak_share
FROM with_capacity)"""


def allocation_vs_capacity(ctx: TraceContext, groups: Sequence[str] = ("cluster",),
                           window: Window | None = None, steps: str | None = None) -> pl.DataFrame:
    """Allocated GPUs over the whole observation window per group, against every capacity
    source of the trace (`utilization.allocated_gpus_binned`, `utilization.allocated_share_of_capacity`).

    Rows: the `groups` columns, `capacity_source` (NULL when the trace has none), `window_start`,
    `window_end`, `mean_gpus`, `peak_gpus`, `end_gpus` (still allocated at the trace end: held by
    jobs without an end), `capacity_gpus` (time-weighted mean capacity over the
    part of the window it covers, `capacity_covered_s`), `mean_share`, `peak_share`. Exact for
    capacities that change over time: the integral is read at every capacity change, and the
    peak share is taken at every allocation change and every capacity change.
    """
    window = window or observation_window(ctx)
    if window is None:
        return pl.DataFrame()
    return ctx.query(f"""
WITH {window.cte()},
{_steps_cte(ctx, groups, window, steps)},
{_capacity_cte(ctx, groups, capacity_sources(ctx))},
keys AS ({_keys_sql(groups)}),
whole AS (SELECT keys.*, hi - lo AS span FROM keys, win),
totals AS (
    SELECT w.*, {_integral_sql('w.span')} / nullif(w.span, 0) AS mean_gpus, coalesce(s.gpus, 0) AS end_gpus
    FROM whole w ASOF LEFT JOIN steps s ON {_same_groups('w', 's', groups)} AND s.x <= w.span),
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
    WHERE s.x < c.b GROUP BY ALL),
shares AS (
    SELECT {_select_groups(groups)}source, sum(b - a) AS capacity_covered_s,
           sum(capacity * (b - a)) / sum(b - a) AS capacity_gpus,
           sum(gs / capacity) / sum(b - a) AS mean_share,
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
ORDER BY {_select_groups(groups, 't')}capacity_source""")


def hour_of_week_profile(ctx: TraceContext, groups: Sequence[str] = ("cluster",), window: Window | None = None,
                         steps: str | None = None, hourly: pl.DataFrame | None = None) -> pl.DataFrame:
    """Mean allocated GPUs per local hour of the week and group (`utilization.allocated_hour_of_week`).

    Rows: the `groups` columns, `hour_of_week` (0 = Monday 00:00 local), `weekday` (Monday...),
    `hour` (local), `mean_gpus`, `observed_h` (hours of the window counted). `hourly`, the
    3600 s `allocation_series` of the same groups, is computed when not given.
    """
    if hourly is None:
        window = window or observation_window(ctx)
        if window is None:
            return pl.DataFrame()
        hourly = allocation_series(ctx, groups, 3600, with_capacity=False, window=window, steps=steps)
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
# Measured utilisation
# ---------------------------------------------------------------------------------------------

@contextmanager
def registered(ctx: TraceContext, frame: pl.DataFrame, stem: str) -> Iterator[str]:
    """`frame` as a view of the connection for the duration of the block; yields its name."""
    name = f"ddlx_utilization_{stem}"
    ctx.con.register(name, frame)
    try:
        yield name
    finally:
        ctx.con.unregister(name)


def pai_gpu_instances_sql(ctx: TraceContext) -> str:
    """A FROM item: sensor rows of GPU instances (task plan_gpu > 0) with a gpu_wrk_util, with
    their job's GPU-request bucket and final state."""
    return f"""(
        SELECT s.gpu_wrk_util, {GPU_BUCKET_SQL} AS gpu_bucket, j.state
        FROM pai_sensor_table s
        JOIN pai_task_table t USING (job_name, task_name)
        LEFT JOIN {ctx.jobs} j ON j.job_id = s.job_name
        WHERE t.plan_gpu > 0 AND s.gpu_wrk_util IS NOT NULL)"""


def pai_instance_gpu_util_cdf(ctx: TraceContext, instances: str | None = None) -> pl.DataFrame:
    """CDF of PAI instance GPU utilisation (`utilization.pai_instance_gpu_util`): `probability`,
    `gpu_util_pct`, `instances`; `instances` as `pai_gpu_instances_sql` gives (default: it)."""
    return cdf_table(ctx, "gpu_wrk_util", instances or pai_gpu_instances_sql(ctx)).rename(
        {"value": "gpu_util_pct", "rows": "instances"})


def pai_instance_gpu_util_by(ctx: TraceContext, column: str, instances: str | None = None) -> pl.DataFrame:
    """PAI instance GPU utilisation per `column` of the instance's job (`gpu_bucket` or `state`):
    `instances`, quantiles and mean (`..._gpu_util_pct`)."""
    frame = ctx.query(f"""
        SELECT {column}, {quantile_columns_sql('gpu_wrk_util', suffix='_gpu_util_pct')}
        FROM {instances or pai_gpu_instances_sql(ctx)} GROUP BY {column} ORDER BY {column}""")
    frame = frame.rename({"jobs_with_value": "instances"})
    return sort_buckets(frame) if column == "gpu_bucket" else frame


_PAI_MACHINE_GPU = "(SELECT machine_gpu FROM pai_machine_metric WHERE machine_gpu IS NOT NULL)"


def pai_machine_gpu_util_cdf(ctx: TraceContext) -> pl.DataFrame:
    """CDF of PAI machine GPU utilisation (`utilization.pai_machine_gpu_util`): `probability`,
    `machine_gpu_pct`, `metric_rows`."""
    return cdf_table(ctx, "machine_gpu", _PAI_MACHINE_GPU).rename(
        {"value": "machine_gpu_pct", "rows": "metric_rows"})


def cdf_from_counts(ctx: TraceContext, counts: str,
                    probabilities: Sequence[float] = CDF_PROBABILITIES) -> pl.DataFrame:
    """The CDF of a distribution given as counts: `counts` is a FROM item of (`value`, `n`: how
    many times it occurs). The rows of `cdf_table` (`probability`, `value`, `rows`) with the same
    continuous quantiles, without holding every value: for samples of hundreds of millions."""
    return ctx.query(f"""
        WITH c AS (SELECT value, sum(n) AS n FROM {counts} WHERE value IS NOT NULL GROUP BY value),
        curve AS (SELECT value, sum(n) OVER (ORDER BY value ROWS UNBOUNDED PRECEDING) AS cum FROM c),
        probs AS (
            SELECT p AS probability, rows FROM (SELECT sum(n) AS rows FROM c),
                   unnest({double_list_sql(probabilities)}) AS u(p) WHERE rows > 0),
        q AS ({quantiles_from_counts_sql("probs", "curve", (), "rows")})
        SELECT probability, quantile AS value, CAST(rows AS BIGINT) AS rows FROM q ORDER BY probability""")


def philly_gpu_minute_counts(ctx: TraceContext) -> pl.DataFrame:
    """How often each GPU-minute utilisation value occurs in philly_gpu_util: `value` (percent),
    `n` (`utilization.philly_gpu_minute_util`). One GPU column at a time: no row is unpivoted."""
    parts = [f"SELECT {c} AS value, count(*) AS n FROM philly_gpu_util WHERE {c} IS NOT NULL GROUP BY 1"
             for c in PHILLY_GPU_COLUMNS]
    return ctx.query(f"""SELECT value, CAST(sum(n) AS BIGINT) AS n FROM ({' UNION ALL '.join(parts)})
                         GROUP BY value ORDER BY value""")


def philly_gpu_minute_util_cdf(ctx: TraceContext, counts: pl.DataFrame | None = None) -> pl.DataFrame:
    """CDF of Philly GPU-minute utilisation (`utilization.philly_gpu_minute_util`):
    `probability`, `gpu_util_pct`, `gpu_minutes`; `counts` as `philly_gpu_minute_counts` gives."""
    counts = philly_gpu_minute_counts(ctx) if counts is None else counts
    with registered(ctx, counts, "gpu_minute_counts") as name:
        return cdf_from_counts(ctx, name).rename({"value": "gpu_util_pct", "rows": "gpu_minutes"})


def _masked_sum_sql(mask: str, terms: Sequence[str]) -> str:
    """The sum of `terms[k]` over the bits k set in the integer `mask`."""
    return " + ".join(f"CASE WHEN ({mask} & {1 << k}) <> 0 THEN {term} ELSE 0 END" for k, term in enumerate(terms))


def philly_job_gpu_util_sql(ctx: TraceContext) -> str:
    """A FROM item: per Philly job with GPU-minutes in the log, `job_id`, `gpu_minutes` and
    `gpu_util_pct` (`utilization.philly_job_gpu_util`).

    Each attempt's machine gets a bitmask of the GPUs it was given there. Hours an attempt covers
    entirely are read from per-machine hourly sums of the log; only the (at most two) hours it
    covers in part are joined minute by minute. The work grows with the log and the attempts,
    not with the GPU-minutes of the jobs.
    """
    hourly_sums = ", ".join(f"sum({c}) AS sum{k}, count({c}) AS n{k}" for k, c in enumerate(PHILLY_GPU_COLUMNS))
    return f"""(
    WITH log_end AS (SELECT epoch(max(time)) + 60 AS e FROM philly_gpu_util),
    detail AS (
        SELECT a.jobid, a.attempt, epoch(a.start_time) AS s,
               CASE WHEN a.end_time IS NOT NULL THEN epoch(a.end_time)
                    WHEN a.running_at_trace_end THEN (SELECT e FROM log_end) END AS e,
               unnest(j.attempts[a.attempt].detail) AS d
        FROM philly_attempts a JOIN philly_job_log j USING (jobid)
        WHERE a.start_time IS NOT NULL),
    pieces AS (
        SELECT jobid, d.ip AS machine_id, s, e,
               bit_or(coalesce(list_sum([1 << CAST(substr(g, 4) AS INTEGER) FOR g IN list_distinct(d.gpus)
                                         IF regexp_full_match(g, 'gpu[0-7]')]), 0)) AS mask
        FROM detail WHERE e > s GROUP BY jobid, attempt, d.ip, s, e),
    hours AS (
        SELECT jobid, machine_id, s, e, mask,
               unnest(range(CAST(floor(s / 3600) AS BIGINT), CAST(ceil(e / 3600) AS BIGINT))) AS h
        FROM pieces WHERE mask > 0),
    hourly AS (
        SELECT machine_id, CAST(floor(epoch(time) / 3600) AS BIGINT) AS h, {hourly_sums}
        FROM philly_gpu_util GROUP BY ALL),
    whole_hours AS (
        SELECT x.jobid,
               {_masked_sum_sql('x.mask', [f'coalesce(u.sum{k}, 0)' for k in range(8)])} AS util,
               {_masked_sum_sql('x.mask', [f'u.n{k}' for k in range(8)])} AS gpu_minutes
        FROM hours x JOIN hourly u USING (machine_id, h)
        WHERE x.h * 3600 >= x.s AND (x.h + 1) * 3600 <= x.e),
    part_hours AS (
        SELECT x.jobid,
               {_masked_sum_sql('x.mask', [f'coalesce(u.{c}, 0)' for c in PHILLY_GPU_COLUMNS])} AS util,
               {_masked_sum_sql('x.mask', [f'CAST(u.{c} IS NOT NULL AS INTEGER)' for c in PHILLY_GPU_COLUMNS])}
                   AS gpu_minutes
        FROM (SELECT * FROM hours WHERE NOT (h * 3600 >= s AND (h + 1) * 3600 <= e)) x
        JOIN (SELECT *, CAST(floor(epoch(time) / 3600) AS BIGINT) AS h FROM philly_gpu_util) u
          ON u.machine_id = x.machine_id AND u.h = x.h
        WHERE epoch(u.time) >= x.s AND epoch(u.time) < x.e)
    SELECT jobid AS job_id, CAST(sum(gpu_minutes) AS BIGINT) AS gpu_minutes,
           sum(util) / sum(gpu_minutes) AS gpu_util_pct
    FROM (SELECT * FROM whole_hours UNION ALL SELECT * FROM part_hours)
    GROUP BY jobid HAVING sum(gpu_minutes) > 0)"""


def philly_job_gpu_util(ctx: TraceContext) -> pl.DataFrame:
    """Per Philly job with GPU-minutes in the log: `job_id`, `gpu_bucket`, `state`,
    `gpu_minutes`, `gpu_util_pct` (`utilization.philly_job_gpu_util`)."""
    return ctx.query(f"""
        SELECT u.job_id, {GPU_BUCKET_SQL} AS gpu_bucket, j.state, u.gpu_minutes, u.gpu_util_pct
        FROM {philly_job_gpu_util_sql(ctx)} u LEFT JOIN {ctx.jobs} j USING (job_id)
        ORDER BY u.job_id""")


def job_util_by(ctx: TraceContext, jobs: str, column: str) -> pl.DataFrame:
    """Per `column` of the per-job FROM item `jobs` (as `philly_job_gpu_util` gives): `jobs`,
    quantiles and mean of the jobs' utilisation, its mean over GPU-minutes
    (`gpu_minute_mean_gpu_util_pct`) and the `gpu_minutes`."""
    frame = ctx.query(f"""
        SELECT {column}, {quantile_columns_sql('gpu_util_pct', suffix='_gpu_util_pct')},
               sum(gpu_util_pct * gpu_minutes) / sum(gpu_minutes) AS gpu_minute_mean_gpu_util_pct,
               CAST(sum(gpu_minutes) AS BIGINT) AS gpu_minutes
        FROM {jobs} GROUP BY {column} ORDER BY {column}""").rename({"jobs_with_value": "jobs"})
    return sort_buckets(frame) if column == "gpu_bucket" else frame


def _summary_sql(measure: str, row: str, value: str, source: str) -> str:
    return f"""SELECT {sql_string(measure)} AS measure, {sql_string(row)} AS row, count({value}) AS values,
               avg({value}) AS mean_pct, quantile_cont({value}, 0.5) AS p50_pct,
               quantile_cont({value}, 0.9) AS p90_pct, quantile_cont({value}, 0.99) AS p99_pct,
               count(*) FILTER (WHERE {value} > 100) AS above_100
        FROM {source}"""


def measured_util_summary(ctx: TraceContext, philly_counts: pl.DataFrame | None = None,
                          instances: str | None = None) -> pl.DataFrame:
    """One row per measured-utilisation series of the trace: `measure` (the name in its
    definition id), `row` (what one value is), `values`, `mean_pct`, `p50_pct`, `p90_pct`,
    `p99_pct`, `above_100` (values above 100 %). No rows when the trace measures nothing."""
    frames: list[pl.DataFrame] = []
    if ctx.has("pai_sensor_table", "pai_task_table"):
        frames.append(ctx.query(_summary_sql("pai_instance_gpu_util", "GPU instance (sensor row)",
                                             "gpu_wrk_util", instances or pai_gpu_instances_sql(ctx))))
    if ctx.has("pai_machine_metric"):
        frames.append(ctx.query(_summary_sql("pai_machine_gpu_util", "instance on a machine (machine-metric row)",
                                             "machine_gpu", _PAI_MACHINE_GPU)))
    if ctx.has("philly_gpu_util"):
        counts = philly_gpu_minute_counts(ctx) if philly_counts is None else philly_counts
        with registered(ctx, counts, "gpu_minute_counts") as name:
            quantiles = dict(cdf_from_counts(ctx, name, (0.5, 0.9, 0.99)).select("probability", "value").iter_rows())
            frames.append(ctx.query(f"""
                SELECT 'philly_gpu_minute_util' AS measure, 'GPU-minute' AS row,
                       CAST(coalesce(sum(n), 0) AS BIGINT) AS values, sum(value * n) / sum(n) AS mean_pct,
                       CAST({_sql_float(quantiles.get(0.5))} AS DOUBLE) AS p50_pct,
                       CAST({_sql_float(quantiles.get(0.9))} AS DOUBLE) AS p90_pct,
                       CAST({_sql_float(quantiles.get(0.99))} AS DOUBLE) AS p99_pct,
                       CAST(coalesce(sum(n) FILTER (WHERE value > 100), 0) AS BIGINT) AS above_100
                FROM {name}"""))
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="vertical_relaxed")


def _sql_float(value: float | None) -> str:
    return "NULL" if value is None else repr(float(value))


# ---------------------------------------------------------------------------------------------
# Requests against usage (PAI)
# ---------------------------------------------------------------------------------------------

def pai_task_usage_sql() -> str:
    """A FROM item: per task and resource, `resource`, `request`, `usage`, `usage_ratio`
    (`utilization.pai_task_usage_ratio`)."""
    usage = ", ".join(f"avg(s.{used}) AS used_{name}" for name, (_, used, _) in PAI_RESOURCES.items())
    per_resource = " UNION ALL ".join(
        f"SELECT {sql_string(name)} AS resource, {request} AS request, used_{name} AS usage FROM task_usage"
        for name, (request, _, _) in PAI_RESOURCES.items())
    return f"""(
    WITH task_usage AS (
        SELECT t.job_name, t.task_name, any_value(t.plan_cpu) AS plan_cpu, any_value(t.plan_gpu) AS plan_gpu,
               any_value(t.plan_mem) AS plan_mem, {usage}
        FROM pai_task_table t JOIN pai_sensor_table s USING (job_name, task_name)
        GROUP BY t.job_name, t.task_name)
    SELECT resource, request, usage, usage / request AS usage_ratio
    FROM ({per_resource}) WHERE request > 0 AND usage IS NOT NULL)"""


def pai_request_vs_usage(ctx: TraceContext, usage: str | None = None) -> pl.DataFrame:
    """Per resource (cpu, gpu, mem_avg, mem_max): `unit` of request and usage, `tasks` compared,
    `over_requesting_tasks` (usage below request), `over_requesting_share`, and quantiles and
    mean of `usage_ratio` (`utilization.pai_task_usage_ratio`, `utilization.pai_task_over_request`);
    `usage` as `pai_task_usage_sql` gives (default: it)."""
    units = " ".join(f"WHEN {sql_string(n)} THEN {sql_string(u)}" for n, (_, _, u) in PAI_RESOURCES.items())
    order = " ".join(f"WHEN {sql_string(n)} THEN {i}" for i, n in enumerate(PAI_RESOURCES))
    return ctx.query(f"""
        SELECT resource, CASE resource {units} END AS unit,
               {quantile_columns_sql('usage_ratio', suffix='_usage_ratio')},
               count(*) FILTER (WHERE usage < request) AS over_requesting_tasks,
               count(*) FILTER (WHERE usage < request) / count(*) AS over_requesting_share
        FROM {usage or pai_task_usage_sql()} GROUP BY resource
        ORDER BY CASE resource {order} END""").rename({"jobs_with_value": "tasks"})


def pai_usage_ratio_cdf(ctx: TraceContext, usage: str | None = None) -> pl.DataFrame:
    """CDF of usage / request per resource: `resource`, `probability`, `usage_ratio`, `tasks`;
    `usage` as `pai_task_usage_sql` gives (default: it)."""
    return cdf_table(ctx, "usage_ratio", usage or pai_task_usage_sql(), groups=["resource"]).rename(
        {"value": "usage_ratio", "rows": "tasks"})


# ---------------------------------------------------------------------------------------------
# The module
# ---------------------------------------------------------------------------------------------

def _started_gpu_jobs(ctx: TraceContext) -> dict[str, int]:
    """Started GPU jobs (`jobs`), and how many of them have a `vc` and a `gpu_type`."""
    return ctx.one_row(f"""SELECT count(*) AS jobs, count(vc) AS vc, count(gpu_type) AS gpu_type FROM {ctx.jobs}
                           WHERE start_time IS NOT NULL AND num_gpus > 0""")


def _resolution(ctx: TraceContext) -> int:
    """`ctx.options["resolution_s"]` (a positive whole number of seconds), else the default."""
    value = ctx.options.get("resolution_s")
    if value is None:
        return DEFAULT_RESOLUTION_S
    try:
        resolution = int(value)
    except (TypeError, ValueError):
        resolution = 0
    if resolution <= 0 or resolution != float(value):
        raise DdlxError(f"resolution_s must be a positive whole number of seconds, not {value!r}")
    return resolution


def _allocation(ctx: TraceContext, result: ModuleResult) -> None:
    resolution = _resolution(ctx)
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

    dimensions = [d for d in ("vc", "gpu_type") if started[d]]
    clusters = ctx.one_row(f"SELECT count(DISTINCT cluster) AS n FROM {ctx.jobs}")["n"]
    with materialized_steps(ctx, ("cluster",), window) as steps:
        series, step = _series(ctx, result, ("cluster",), resolution, window, steps, series_defs)
        per_cluster = allocation_vs_capacity(ctx, ("cluster",), window, steps)
        if not ctx.has_wall_clock:
            result.skip("allocated GPUs by hour of the week", NO_WALL_CLOCK)
        else:
            hourly = series if step == 3600 else None
            result.add("allocation_hour_of_week", hour_of_week_profile(ctx, ("cluster",), window, steps, hourly),
                       ("utilization.allocated_hour_of_week",), f"an hour of the week ({ctx.local_tz}) of one cluster")
    for dimension in ("vc", "gpu_type"):
        if dimension in dimensions:
            with materialized_steps(ctx, ("cluster", dimension), window) as steps:
                _series(ctx, result, ("cluster", dimension), resolution, window, steps, series_defs)
        else:
            result.skip(f"allocated GPUs per {dimension}", f"no GPU job of the trace that started has a {dimension}")

    whole, table = per_cluster, per_cluster
    if clusters > 1:
        with materialized_steps(ctx, (), window) as steps:
            whole = allocation_vs_capacity(ctx, (), window, steps)
        table = pl.concat([whole.with_columns(pl.lit(None, pl.String).alias("cluster")).select(per_cluster.columns),
                           per_cluster], how="vertical_relaxed")
    result.add("allocation_vs_capacity", table, base + share + cap_defs,
               "one cluster (NULL: all clusters together) against one capacity source, over the whole trace")

    candidates = whole.to_dicts()
    row = next((r for r in candidates if r["capacity_source"] == source), candidates[0] if candidates else None)
    if row is not None:
        scope = "all clusters" if clusters > 1 else "the cluster"
        result.add_finding("allocated_gpus_mean", "mean allocated GPUs", row["mean_gpus"], "GPUs",
                           "utilization.allocated_gpus_binned", f"{scope}, over the whole trace")
        result.add_finding("allocated_gpus_peak", "peak allocated GPUs", row["peak_gpus"], "GPUs",
                           "utilization.allocated_gpus_binned", f"{scope}, over the whole trace")
        if ctx.open_jobs_run_to_end:
            result.add_finding("allocated_gpus_at_end", "GPUs still allocated at the trace end (jobs without an end)",
                               row["end_gpus"], "GPUs", "utilization.allocated_gpus", f"{scope}, at the trace end")
        else:
            open_jobs = ctx.one_row(f"""SELECT count(*) AS jobs, coalesce(sum(num_gpus), 0) AS gpus FROM {ctx.jobs}
                                        WHERE start_time IS NOT NULL AND end_time IS NULL AND num_gpus > 0""")
            population = (f"{scope}: GPU jobs that started and have no end ({open_jobs['jobs']:,} jobs), "
                          "left out of allocated GPUs")
            result.add_finding("unplaced_open_job_gpus", "GPUs asked for by started jobs with no logged end",
                               open_jobs["gpus"], "GPUs", "utilization.allocated_gpus", population)
        if source and row["capacity_source"] == source:
            population = f"{scope}, against capacity.{source} ({row['capacity_gpus']:,.0f} GPUs on average)"
            result.add_finding("allocated_share_mean", "mean allocated GPUs as a share of capacity", row["mean_share"],
                               "fraction", "utilization.allocated_share_of_capacity", population)
            result.add_finding("allocated_share_peak", "peak allocated GPUs as a share of capacity", row["peak_share"],
                               "fraction", "utilization.allocated_share_of_capacity", population)


def _series(ctx: TraceContext, result: ModuleResult, groups: tuple[str, ...], resolution: int, window: Window,
            steps: str | None, defs: tuple[str, ...]) -> tuple[pl.DataFrame, int]:
    """Add the allocation series of `groups`, coarsened (and said so) when it would be too long;
    returns it and its step."""
    name = f"allocation_by_{groups[-1]}"
    step = fitting_resolution(ctx, groups, resolution, window)
    if step != resolution:
        result.skip(f"{name} at {resolution} s", f"it would exceed {MAX_SERIES_ROWS:,} rows; written at {step} s")
    frame = result.add(name, allocation_series(ctx, groups, step, window=window, steps=steps), defs,
                       f"a {step} s time bin of one {' and '.join(groups)}")
    return frame, step


def _measured(ctx: TraceContext, result: ModuleResult) -> None:
    has_sensor = ctx.has("pai_sensor_table", "pai_task_table")
    has_machine = ctx.has("pai_machine_metric")
    has_philly = ctx.has("philly_gpu_util")
    if not (has_sensor or has_machine or has_philly):
        result.skip("measured GPU utilisation", "the trace records no measured GPU utilisation")
        return
    philly_counts = philly_gpu_minute_counts(ctx) if has_philly else None
    with ExitStack() as stack:
        instances = stack.enter_context(materialized(ctx, f"SELECT * FROM {pai_gpu_instances_sql(ctx)}",
                                                     "pai_gpu_instances")) if has_sensor else None
        summary = measured_util_summary(ctx, philly_counts, instances)
        result.add("measured_gpu_util", summary, [f"utilization.{m}" for m in summary["measure"]],
                   "one measured-utilisation series of the trace")
        if instances:
            _pai_instances(ctx, result, instances, summary)
        elif has_machine:
            result.skip("PAI instance GPU utilisation", "pai_sensor_table or pai_task_table is not ingested")
    if has_machine:
        result.add("pai_machine_gpu_util_cdf", pai_machine_gpu_util_cdf(ctx), ("utilization.pai_machine_gpu_util",),
                   "a probability of the CDF over machine-metric rows")
        row = summary.filter(pl.col("measure") == "pai_machine_gpu_util").row(0, named=True)
        result.add_finding("pai_machine_gpu_util_p50", "median machine GPU utilisation while an instance ran",
                           row["p50_pct"], "%", "utilization.pai_machine_gpu_util",
                           f"{row['values']:,} machine-metric rows, {row['above_100']:,} of them above 100")
    elif has_sensor:
        result.skip("PAI machine GPU utilisation", "pai_machine_metric is not ingested")
    if has_philly:
        result.add("philly_gpu_minute_util_cdf", philly_gpu_minute_util_cdf(ctx, philly_counts),
                   ("utilization.philly_gpu_minute_util",), "a probability of the CDF over GPU-minutes")
        row = summary.filter(pl.col("measure") == "philly_gpu_minute_util").row(0, named=True)
        result.add_finding("philly_gpu_minute_util_p50", "median measured GPU utilisation over GPU-minutes",
                           row["p50_pct"], "%", "utilization.philly_gpu_minute_util", f"{row['values']:,} GPU-minutes")
        _philly_jobs(ctx, result)


def _pai_instances(ctx: TraceContext, result: ModuleResult, instances: str, summary: pl.DataFrame) -> None:
    defs = ("utilization.pai_instance_gpu_util",)
    result.add("pai_instance_gpu_util_cdf", pai_instance_gpu_util_cdf(ctx, instances), defs,
               "a probability of the CDF over GPU instances")
    result.add("pai_instance_gpu_util_by_size", pai_instance_gpu_util_by(ctx, "gpu_bucket", instances),
               defs + ("gpu_request.bucket",), "a GPU-request bucket of the instances' jobs")
    result.add("pai_instance_gpu_util_by_state", pai_instance_gpu_util_by(ctx, "state", instances),
               defs + ("state.canonical",), "a final state of the instances' jobs")
    row = summary.filter(pl.col("measure") == "pai_instance_gpu_util").row(0, named=True)
    result.add_finding("pai_instance_gpu_util_p50", "median GPU utilisation of GPU instances",
                       row["p50_pct"], "%", "utilization.pai_instance_gpu_util",
                       f"{row['values']:,} GPU instances with a sensor row")


def _philly_jobs(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("philly_attempts", "philly_job_log"):
        result.skip("Philly GPU utilisation per job", "philly_job_log is not ingested")
        return
    jobs = philly_job_gpu_util(ctx)
    defs = ("utilization.philly_job_gpu_util",)
    with registered(ctx, jobs, "philly_jobs") as name:
        cdf = cdf_table(ctx, "gpu_util_pct", name).rename({"value": "gpu_util_pct", "rows": "jobs"})
        by_size = job_util_by(ctx, name, "gpu_bucket")
        by_state = job_util_by(ctx, name, "state")
    result.add("philly_job_gpu_util_cdf", cdf, defs, "a probability of the CDF over jobs with GPU-minutes")
    result.add("philly_job_gpu_util_by_size", by_size, defs + ("gpu_request.bucket",), "a GPU-request bucket")
    result.add("philly_job_gpu_util_by_state", by_state, defs + ("state.canonical",), "a final state")
    median = cdf.filter(pl.col("probability") == 0.5)["gpu_util_pct"]
    if median.len():
        result.add_finding(
            "philly_job_gpu_util_p50", "median of jobs' mean measured GPU utilisation", median.item(), "%",
            "utilization.philly_job_gpu_util", f"{jobs.height:,} jobs with GPU-minutes in the log")


def _requests(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("pai_task_table", "pai_sensor_table"):
        result.skip("requests against usage",
                    "the trace records no per-task requests beside measured usage (PAI task and sensor tables)")
        return
    defs = ("utilization.pai_task_usage_ratio", "utilization.pai_task_over_request")
    with materialized(ctx, f"SELECT * FROM {pai_task_usage_sql()}", "pai_task_usage") as usage:
        table = result.add("pai_request_vs_usage", pai_request_vs_usage(ctx, usage), defs, "a resource, over tasks")
        result.add("pai_usage_ratio_cdf", pai_usage_ratio_cdf(ctx, usage), defs,
                   "a probability of the CDF of one resource")
    for row in table.to_dicts():
        label = row["resource"].upper()
        population = f"{row['tasks']:,} tasks with a {label} request and a sensor row"
        if row["resource"] in ("gpu", "cpu"):
            result.add_finding(
                f"{row['resource']}_over_request_share", f"share of tasks using less {label} than they request",
                row["over_requesting_share"], "fraction", "utilization.pai_task_over_request", population)
        if row["resource"] == "gpu":
            result.add_finding("gpu_usage_ratio_p50", "median share of its GPU request a task uses",
                               row["p50_usage_ratio"], "fraction", "utilization.pai_task_usage_ratio", population)


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("utilization")
    _allocation(ctx, result)
    _measured(ctx, result)
    _requests(ctx, result)
    return result
