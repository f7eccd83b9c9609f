"""Utilisation: measured GPU utilisation (PAI sensors and machine metrics, Philly per-minute
logs) and, for PAI, what tasks request against what they use; with, from
`ddlx.analysis.allocation`, GPUs allocated to jobs over time against the capacity the trace
documents and the hour-of-week profile of allocation.

The module `utilization` writes both parts: `analyze` adds allocation's tables and findings first
(`allocation.analyze_allocation`), then those of measured utilisation and of requests against
usage. Measured values are percent of one GPU (or of one core, GB for memory) as the traces log
them; shares of a request are fractions.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack

import polars as pl

from ddlx.analysis import allocation
from ddlx.analysis.allocation import materialized, registered
from ddlx.analysis.capacity import CAPACITY_DEFINITIONS
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import (
    CDF_PROBABILITIES,
    GPU_BUCKET_SQL,
    cdf_table,
    double_list_sql,
    quantile_columns_sql,
    quantiles_from_counts_sql,
    sort_buckets,
)
from ddlx.datasets.sqltext import sql_string

#: Resources compared in PAI's request-versus-usage: name -> (request column of the task table,
#: usage column of the sensor table, unit of both).
PAI_RESOURCES: dict[str, tuple[str, str, str]] = {
    "cpu": ("plan_cpu", "cpu_usage", "percent of one core"),
    "gpu": ("plan_gpu", "gpu_wrk_util", "percent of one GPU"),
    "mem_avg": ("plan_mem", "avg_mem", "GB"),
    "mem_max": ("plan_mem", "max_mem", "GB"),
}

PHILLY_GPU_COLUMNS: tuple[str, ...] = tuple(f"gpu{k}_util" for k in range(8))

DEFINITIONS: tuple[Definition, ...] = (
    # Capacity and allocation: ddlx.analysis.capacity and ddlx.analysis.allocation are not analysis
    # modules of their own (their results are this module's), so `registry()` finds them here.
    *CAPACITY_DEFINITIONS,
    *allocation.DEFINITIONS,
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
# Measured utilisation
# ---------------------------------------------------------------------------------------------

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
    allocation.analyze_allocation(ctx, result)
    _measured(ctx, result)
    _requests(ctx, result)
    return result
