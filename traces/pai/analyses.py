"""PAI's own science: what only PAI's records allow, declared as parts of the analysis modules
(`ddlx.analysis.trace_parts`). Reports show each table and finding of these parts as PAI's only.

- utilization, `measured`: GPU utilisation of instances (pai_sensor_table with pai_task_table)
  and of machines while an instance ran (pai_machine_metric);
- utilization, `requests`: what tasks request against what their instances use;
- sharing, `colocation`: instances running at once per machine (an event sweep over
  pai_instance_table) and the trace's own workers per machine (pai_machine_metric);
- sharing, `gpu_memory`: GPU memory used against the memory of the devices an instance occupies;
- queueing, `definitions`: PAI's readings of the wait side by side (the canonical one, the release
  notes' job-to-first-task one, and task to first instance).
"""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np
import polars as pl

from ddlx.analysis.allocation import materialized, registered
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult, held_to_end_text
from ddlx.analysis.sharing import ALL
from ddlx.analysis.sql import (
    CDF_STEP,
    GPU_BUCKET_SQL,
    SUMMARY_QUANTILES,
    cdf_table,
    quantile_columns_sql,
    quantiles_sql,
    sort_buckets,
    sql_float,
)
from ddlx.analysis.sweeps import level_seconds
from ddlx.analysis.trace_parts import TracePart
from ddlx.analysis.utilization import add_measured_summary, series_summary_sql
from ddlx.datasets.sqltext import sql_string
from ddlx.reports.chart_specs import ChartSpec
from ddlx.traces.pai import schema
from ddlx.traces.pai.reader import TASK_INSTANCES, duplicate_check_name, task_instances_item

#: The canonical queueing delay, and PAI's two other readings of it.
QUEUE = "queue_delay.submit_to_first_start"
PAI_OFFICIAL = "pai.queue_delay.submit_to_first_task_start"
PAI_TASK = "pai.queue_delay.task_to_first_instance"

#: GPU memory of the PAI GPU types, GB, with the source of each figure (MISC, a mix of models, is
#: left out: an instance's share of its memory cannot be told).
PAI_GPU_MEMORY_GB: dict[str, tuple[float, str]] = {
    model: (gb, schema.GPU_MEMORY_SOURCES[model]) for model, gb in schema.GPU_MEMORY_GB.items()}

#: Resources compared in request-versus-usage: name -> (request column of the task table, usage
#: column of the sensor table, unit of both).
PAI_RESOURCES: dict[str, tuple[str, str, str]] = {
    "cpu": ("plan_cpu", "cpu_usage", "percent of one core"),
    "gpu": ("plan_gpu", "gpu_wrk_util", "percent of one GPU"),
    "mem_avg": ("plan_mem", "avg_mem", "GB"),
    "mem_max": ("plan_mem", "max_mem", "GB"),
}


def _capacity_text() -> str:
    return "; ".join(f"{model} {gb:g} GB ({source})" for model, (gb, source) in PAI_GPU_MEMORY_GB.items())


DEFINITIONS: tuple[Definition, ...] = (
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
    Definition(
        "sharing.colocation.concurrent_instances", "Instances running at once on a machine",
        "machine-hours",
        "PAI: for each machine of pai_instance_table, the number of its instances running at "
        "each moment (an instance runs from its start_time to its end_time; one without end_time is "
        "an end that was not logged and is left out, and the headline gives the share with those "
        "held to the window end beside; rows without machine or start_time, or ending before they "
        "start, are left out). Instances of every kind count (CPU-only ones too). The window is the same "
        "for every machine: from the earliest instance start to the latest instance start or end; "
        "a machine counts from the window start even before its first instance (at 0). Weighted "
        "by time: machine-hours at each count, their share of all machine-time, and of busy "
        "machine-time (1 or more instances). Machines are grouped by pai_machine_spec gpu_type "
        "('unknown' when absent from the spec).",
    ),
    Definition(
        "sharing.colocation.machine_num_worker", "Workers on the machine (trace's own)", "workers",
        "PAI pai_machine_metric.machine_num_worker: the number of workers on the machine, as the "
        "trace averages it over the lifetime of the worker the row describes; one value per row.",
    ),
    Definition(
        "sharing.gpu_memory.capacity", "GPU device memory", "GB",
        "Memory of one GPU of a PAI model, from the model's datasheet: " + _capacity_text() + ". "
        "MISC (a mix of K40m, K80 and M60) and machines without a known model are not sized.",
    ),
    Definition(
        "sharing.gpu_memory.used_share", "GPU memory used, share of the instance's devices", "fraction",
        "PAI: max_gpu_wrk_mem (peak) or avg_gpu_wrk_mem (mean) of a pai_sensor_table row (one "
        "instance; GB) divided by the memory of the GPUs the instance occupies: the device memory "
        "(sharing.gpu_memory.capacity) of the gpu_type of the machine it ran on (pai_machine_spec) "
        "times max(1, ceil(plan_gpu / 100)) of its task. Instances whose task asks for no GPU are "
        "left out. Values above 1 are the trace's own (memory above device capacity).",
    ),
    Definition(
        "sharing.gpu_memory.over_requested_share", "Sharing instance above its share of GPU memory",
        "fraction",
        "Among PAI instances that share a GPU (plan_gpu below 100) with a sized device and a peak "
        "GPU memory, the share whose max_gpu_wrk_mem exceeds plan_gpu / 100 of the device memory "
        "(sharing.gpu_memory.capacity): they used more GPU memory than the part of the GPU they "
        "asked for.",
    ),
    Definition(
        PAI_OFFICIAL, "PAI queueing delay, official notes", "s",
        "Seconds from the job's start_time (submission) to its earliest task start_time, as the "
        "PAI release notes read job wait.",
    ),
    Definition(
        "pai.queue_delay.task_to_first_instance", "PAI task queueing delay", "s",
        "Per PAI task (a row of pai_task_table): seconds from the task's start_time to the "
        "earliest start_time of its instances (pai_instance_table rows with the same job_name and "
        "task_name). Tasks without a start time or without a started instance have none.",
    ),
)


# ---------------------------------------------------------------------------------------------
# Measured utilisation
# ---------------------------------------------------------------------------------------------

def pai_gpu_instances_sql(ctx: TraceContext) -> str:
    """A FROM item: sensor rows of GPU instances (task plan_gpu > 0) with a gpu_wrk_util, with
    their job's GPU-request bucket and final state; each sensor row once, whatever rows its task has."""
    return f"""(
        SELECT s.gpu_wrk_util, {GPU_BUCKET_SQL} AS gpu_bucket, j.state
        FROM pai_sensor_table s
        JOIN {_gpu_tasks_sql(ctx)} t USING (job_name, task_name)
        LEFT JOIN {ctx.jobs} j ON j.job_id = s.job_name
        WHERE s.gpu_wrk_util IS NOT NULL)"""


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



# ---------------------------------------------------------------------------------------------
# Requests against usage
# ---------------------------------------------------------------------------------------------

def pai_task_usage_sql(ctx: TraceContext) -> str:
    """A FROM item: per task and resource, `resource`, `request`, `usage`, `usage_ratio`
    (`utilization.pai_task_usage_ratio`). The sensor rows are averaged per task before they meet
    the tasks, so the join holds one row per task rather than one per sensor row."""
    usage = ", ".join(f"avg({used}) AS used_{name}" for name, (_, used, _) in PAI_RESOURCES.items())
    per_resource = " UNION ALL ".join(
        f"SELECT {sql_string(name)} AS resource, {request} AS request, used_{name} AS usage FROM task_usage"
        for name, (request, _, _) in PAI_RESOURCES.items())
    requests = _one_row_per_task_sql(ctx, {request: "any_value" for request, _, _ in PAI_RESOURCES.values()})
    return f"""(
    WITH task_usage AS (
        SELECT * FROM {requests} t
        JOIN (SELECT job_name, task_name, {usage} FROM pai_sensor_table GROUP BY job_name, task_name) s
        USING (job_name, task_name))
    SELECT resource, request, usage, usage / request AS usage_ratio
    FROM ({per_resource}) WHERE request > 0 AND usage IS NOT NULL)"""


def _one_row_per_task_sql(ctx: TraceContext, columns: dict[str, str], where: str = "TRUE") -> str:
    """A FROM item: job_name, task_name and `columns` (column -> the aggregate that takes one value
    of a task's rows) of the rows of pai_task_table satisfying `where`, one row per task: the rows
    as they are when the ingest's validation found no task repeated, else grouped per task."""
    if ctx.validated_rows("pai_task_table", duplicate_check_name("pai_task_table")) == 0:
        return f"(SELECT job_name, task_name, {', '.join(columns)} FROM pai_task_table WHERE {where})"
    taken = ", ".join(f"{aggregate}({column}) AS {column}" for column, aggregate in columns.items())
    return f"(SELECT job_name, task_name, {taken} FROM pai_task_table WHERE {where} GROUP BY job_name, task_name)"


def _gpu_tasks_sql(ctx: TraceContext) -> str:
    """A FROM item: job_name, task_name, plan_gpu of the tasks that ask for GPUs (plan_gpu > 0), one
    row per task; a task of several rows takes the largest plan_gpu."""
    return _one_row_per_task_sql(ctx, {"plan_gpu": "max"}, "plan_gpu > 0")


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
        FROM {usage or pai_task_usage_sql(ctx)} GROUP BY resource
        ORDER BY CASE resource {order} END""").rename({"jobs_with_value": "tasks"})


def pai_usage_ratio_cdf(ctx: TraceContext, usage: str | None = None) -> pl.DataFrame:
    """CDF of usage / request per resource: `resource`, `probability`, `usage_ratio`, `tasks`;
    `usage` as `pai_task_usage_sql` gives (default: it)."""
    return cdf_table(ctx, "usage_ratio", usage or pai_task_usage_sql(ctx), groups=["resource"]).rename(
        {"value": "usage_ratio", "rows": "tasks"})


def pai_request_vs_usage_tables(ctx: TraceContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`pai_request_vs_usage` and `pai_usage_ratio_cdf` from one join of tasks with their sensor
    rows, computed once per run (the papers' figures read the first, the utilization module both)."""
    def compute() -> tuple[pl.DataFrame, pl.DataFrame]:
        with materialized(ctx, f"SELECT * FROM {pai_task_usage_sql(ctx)}", "pai_task_usage") as usage:
            return pai_request_vs_usage(ctx, usage), pai_usage_ratio_cdf(ctx, usage)

    return ctx.kept.once("pai_request_vs_usage_tables", compute, keep=True)


# ---------------------------------------------------------------------------------------------
# Co-location
# ---------------------------------------------------------------------------------------------


#: Instances of pai_instance_table that enter the co-location sweep.
_SWEPT_INSTANCES = ("machine IS NOT NULL AND start_time IS NOT NULL "
                    "AND (end_time IS NULL OR end_time >= start_time)")


def machine_instance_levels(ctx: TraceContext) -> pl.DataFrame:
    """PAI instances running at once on each machine: per machine, way of counting and number of
    instances running at once, the seconds spent at it in the window (`machine`, `held_open`,
    `instances`, `seconds`; only levels with time). Definition `sharing.colocation.concurrent_instances`.

    The window runs from the first instance start to the last start or end. `held_open` True holds
    instances without an end open to the window end; False leaves them out (the window and the
    machines stay those of every instance). Interval sweep (`ddlx.analysis.sweeps.level_seconds`): each
    instance counts 1 on its machine from its start to its end, one sort serving both ways of
    counting; machines are numbered first so that the sort keys are integers. A machine's time at
    0 is the rest of the window."""
    machines = ctx.query(f"""SELECT machine, (row_number() OVER (ORDER BY machine))::INTEGER AS key, count(*) AS runs,
                                    min(start_time) AS t0, greatest(max(start_time), max(end_time)) AS t1
                             FROM pai_instance_table WHERE {_SWEPT_INSTANCES} GROUP BY machine""")
    if machines.is_empty():
        return pl.DataFrame(schema={"machine": pl.String, "held_open": pl.Boolean, "instances": pl.Int64,
                                    "seconds": pl.Float64})
    t0, t1, runs = machines["t0"].min(), machines["t1"].max(), machines["runs"].sum()
    machines = machines.select("machine", "key")
    with registered(ctx, machines, "pai_machine_keys") as keys:
        runs_sql = f"""(SELECT k.key, i.start_time AS t_start, coalesce(i.end_time, {sql_float(t1)}) AS t_end,
                               1 AS held, CASE WHEN i.end_time IS NULL THEN 0 ELSE 1 END AS ended
                        FROM pai_instance_table AS i JOIN {keys} AS k USING (machine) WHERE {_SWEPT_INSTANCES})"""
        busy = level_seconds(ctx, runs_sql, ("held", "ended"), intervals_count=runs)
    names = machines.sort("key")["machine"]  # keys are 1, 2, ...: machine of key k at k - 1
    key, held_open = busy["key"].to_numpy(), (busy["count"] == "held").to_numpy()
    # per key and way of counting (index 2 key + held_open): the busy seconds, the rest of the window idle
    busy_seconds = np.bincount(2 * key + held_open, weights=busy["seconds"].to_numpy(), minlength=2 * len(names) + 2)
    idle_key = np.repeat(np.arange(1, len(names) + 1), 2)
    idle_held = np.tile([False, True], len(names))
    idle = pl.DataFrame({"key": idle_key, "held_open": idle_held, "instances": np.zeros(len(idle_key), dtype=np.int64),
                         "seconds": (t1 - t0) - busy_seconds[2 * idle_key + idle_held]})
    levels = pl.concat([pl.DataFrame({"key": key, "held_open": held_open, "instances": busy["level"],
                                      "seconds": busy["seconds"]}), idle]).filter(pl.col("seconds") > 0)
    return levels.select(names.gather(levels["key"] - 1), "held_open", "instances", "seconds")


def colocation_distribution(ctx: TraceContext) -> pl.DataFrame:
    """Time-weighted distribution of instances running at once on a machine, per machine GPU type
    and over all machines (definition `sharing.colocation.concurrent_instances`), counting
    instances without an end as `ctx.holds_open("instance")` says. Both ways of counting come
    from one sweep, computed once per run."""
    both = ctx.kept.once("pai_colocation_distributions", lambda: _colocation_distributions(ctx), keep=True)
    return both.filter(pl.col("held_open") == ctx.holds_open("instance")).drop("held_open")


def _colocation_distributions(ctx: TraceContext) -> pl.DataFrame:
    spec = ("(SELECT machine, any_value(gpu_type) AS gpu_type FROM pai_machine_spec GROUP BY machine)"
            if ctx.has("pai_machine_spec") else
            "(SELECT NULL::VARCHAR AS machine, NULL::VARCHAR AS gpu_type WHERE false)")
    with registered(ctx, machine_instance_levels(ctx), "pai_machine_levels") as machine_levels:
        return ctx.query(f"""
        WITH typed AS (
            SELECT coalesce(m.gpu_type, 'unknown') AS machine_gpu_type, p.held_open, p.instances, p.seconds
            FROM {machine_levels} AS p
            LEFT JOIN {spec} AS m USING (machine)),
        levels AS (
            SELECT held_open,
                   CASE WHEN grouping(machine_gpu_type) = 1 THEN '{ALL}' ELSE machine_gpu_type END
                       AS machine_gpu_type,
                   instances, sum(seconds) AS seconds
            FROM typed GROUP BY GROUPING SETS ((held_open, machine_gpu_type, instances), (held_open, instances)))
        SELECT held_open, machine_gpu_type, instances::BIGINT AS running_instances,
               seconds / 3600.0 AS machine_hours,
               seconds / sum(seconds) OVER (PARTITION BY held_open, machine_gpu_type) AS machine_time_share,
               CASE WHEN instances > 0 THEN seconds / sum(seconds) FILTER (WHERE instances > 0)
                   OVER (PARTITION BY held_open, machine_gpu_type) END AS busy_time_share
        FROM levels
        ORDER BY held_open, machine_gpu_type = '{ALL}' DESC, machine_gpu_type, running_instances""")


def colocation_summary(distribution: pl.DataFrame) -> dict[str, float | None]:
    """Over all machines: mean instances running on a busy machine and the share of busy
    machine-time with two or more, from `colocation_distribution`."""
    busy = distribution.filter((pl.col("machine_gpu_type") == ALL) & (pl.col("running_instances") > 0))
    if busy.is_empty():
        return {"busy_mean_instances": None, "colocated_busy_share": None}
    hours = busy["machine_hours"].sum()
    return {
        "busy_mean_instances": (busy["running_instances"] * busy["machine_hours"]).sum() / hours,
        "colocated_busy_share": busy.filter(pl.col("running_instances") >= 2)["machine_hours"].sum() / hours,
    }


def machine_num_worker_cdf(ctx: TraceContext) -> pl.DataFrame:
    """CDF of `pai_machine_metric.machine_num_worker` (definition
    `sharing.colocation.machine_num_worker`)."""
    return cdf_table(ctx, "machine_num_worker", "pai_machine_metric")


# ---------------------------------------------------------------------------------------------
# GPU memory against capacity
# ---------------------------------------------------------------------------------------------


def _capacity_values_sql() -> str:
    return ", ".join(f"('{model}', {gb!r}::DOUBLE)" for model, (gb, _) in PAI_GPU_MEMORY_GB.items())


def _peak_quantiles_sql() -> str:
    """`quantile_cont(peak_share, q) AS p50_peak_share, ...` and the mean, for a SELECT list."""
    return f"{quantiles_sql('peak_share', SUMMARY_QUANTILES, '_peak_share')}, avg(peak_share) AS mean_peak_share"


def _gpu_memory_rows_sql(ctx: TraceContext) -> str:
    """A FROM item: PAI sensor rows of GPU instances with their machine's GPU type, the device
    capacity (NULL when not sized), the devices occupied and the used shares."""
    return f"""(
        WITH capacity(gpu_type, capacity_gb) AS (VALUES {_capacity_values_sql()}),
        tasks AS {_gpu_tasks_sql(ctx)},
        machines AS (SELECT machine, any_value(gpu_type) AS gpu_type FROM pai_machine_spec GROUP BY machine),
        rows AS (
            SELECT coalesce(m.gpu_type, 'unknown') AS gpu_type, t.plan_gpu,
                   greatest(1, ceil(t.plan_gpu / 100)) AS devices,
                   s.max_gpu_wrk_mem, s.avg_gpu_wrk_mem
            FROM pai_sensor_table AS s
            JOIN tasks AS t USING (job_name, task_name)
            LEFT JOIN machines AS m USING (machine)
            WHERE s.max_gpu_wrk_mem IS NOT NULL OR s.avg_gpu_wrk_mem IS NOT NULL)
        SELECT r.*, c.capacity_gb,
               r.max_gpu_wrk_mem / (c.capacity_gb * r.devices) AS peak_share,
               r.avg_gpu_wrk_mem / (c.capacity_gb * r.devices) AS mean_share
        FROM rows AS r LEFT JOIN capacity AS c USING (gpu_type))"""


def gpu_memory_summary(ctx: TraceContext, rows: str | None = None) -> pl.DataFrame:
    """Per machine GPU type (and 'all' sized ones): instances with a GPU memory reading, the
    device memory, quantiles of the peak used share, shares above half and above all of the device
    memory, and sharing instances above their requested share (definitions
    `sharing.gpu_memory.used_share`, `sharing.gpu_memory.over_requested_share`). Types that
    cannot be sized have NULL shares. `rows` as `_gpu_memory_rows_sql` gives (default: it)."""
    return ctx.query(f"""
        SELECT CASE WHEN grouping(gpu_type) = 1 THEN '{ALL}' ELSE gpu_type END AS gpu_type,
               count(*) AS instances,
               CASE WHEN grouping(gpu_type) = 0 THEN any_value(capacity_gb) END AS capacity_gb,
               count(peak_share) AS instances_sized, {_peak_quantiles_sql()},
               count(*) FILTER (WHERE peak_share > 0.5) / nullif(count(peak_share), 0) AS peak_above_half_share,
               count(*) FILTER (WHERE peak_share > 1) / nullif(count(peak_share), 0) AS peak_above_device_share,
               count(*) FILTER (WHERE plan_gpu < 100 AND capacity_gb IS NOT NULL
                                  AND max_gpu_wrk_mem IS NOT NULL) AS sharing_instances,
               count(*) FILTER (WHERE plan_gpu < 100 AND max_gpu_wrk_mem > plan_gpu / 100 * capacity_gb)
                   / nullif(count(*) FILTER (WHERE plan_gpu < 100 AND capacity_gb IS NOT NULL
                                               AND max_gpu_wrk_mem IS NOT NULL), 0)
                   AS sharing_over_requested_share
        FROM {rows or _gpu_memory_rows_sql(ctx)}
        GROUP BY GROUPING SETS ((gpu_type), ())
        HAVING grouping(gpu_type) = 0 OR count(peak_share) > 0
        ORDER BY grouping(gpu_type) DESC, gpu_type""")


def gpu_memory_cdf(ctx: TraceContext, rows: str | None = None) -> pl.DataFrame:
    """CDF of the used share of device memory, peak and mean, per sized GPU type and over all
    (definition `sharing.gpu_memory.used_share`); `rows` as `_gpu_memory_rows_sql` gives (default:
    it)."""
    shares = f"""(
        WITH r AS (SELECT * FROM {rows or _gpu_memory_rows_sql(ctx)}),
        long AS (
            SELECT gpu_type, 'peak' AS statistic, peak_share AS share FROM r
            UNION ALL SELECT gpu_type, 'mean' AS statistic, mean_share AS share FROM r)
        SELECT gpu_type, statistic, share FROM long
        UNION ALL SELECT '{ALL}' AS gpu_type, statistic, share FROM long)"""
    return cdf_table(ctx, "share", shares, ("gpu_type", "statistic"))


# ---------------------------------------------------------------------------------------------
# Queueing: PAI's readings of the wait
# ---------------------------------------------------------------------------------------------


def task_instances(ctx: TraceContext) -> str:
    """A FROM item: the instances' roll-up per task (`ddlx.traces.pai.reader.task_instances_sql`),
    stored at ingest; computed from pai_instance_table for a catalog ingested without it."""
    return task_instances_item(ctx.has(TASK_INSTANCES))


def pai_queue_definitions(ctx: TraceContext) -> pl.DataFrame:
    """PAI's readings of the wait side by side: per definition, what a row is (`per`: job or
    task), rows, rows with a value and quantiles (s). Parts whose tables are missing are left out.

    Each reading is a query of its own: in one query DuckDB holds the hash tables of both joins at
    once (at ten times PAI's release 9.6-10.3 s in one query, 6.4-6.7 s apart)."""
    quantiles = quantile_columns_sql("delay_s", suffix="_s")
    parts = [(QUEUE, "job", f"SELECT queue_s AS delay_s FROM {ctx.jobs}")]
    if ctx.has("pai_job_table", "pai_task_table"):
        parts.append((PAI_OFFICIAL, "job", """
            SELECT min(t.start_time) - j.start_time AS delay_s
            FROM pai_job_table j LEFT JOIN pai_task_table t USING (job_name) GROUP BY j.job_name, j.start_time"""))
    if ctx.has("pai_task_table", "pai_instance_table"):
        parts.append((PAI_TASK, "task", f"""
            SELECT f.first_start - t.start_time AS delay_s
            FROM pai_task_table t LEFT JOIN (
                SELECT job_name, task_name, first_start FROM {task_instances(ctx)} WHERE first_start IS NOT NULL) f
            USING (job_name, task_name)"""))
    selects = [f"SELECT '{definition}' AS definition, '{per}' AS per, count(*) AS rows, {quantiles} FROM ({rows})"
               for definition, per, rows in parts]
    frame = ctx.catalog.computed(" UNION ALL ".join(selects),
                                 lambda: pl.concat([ctx.query(select) for select in selects]),
                                 keep="pai_queue_definitions")
    return frame.rename({"jobs_with_value": "rows_with_value"})


# ---------------------------------------------------------------------------------------------
# The parts
# ---------------------------------------------------------------------------------------------


def _measured(ctx: TraceContext, result: ModuleResult) -> None:
    has_sensor = ctx.has("pai_sensor_table", "pai_task_table")
    has_machine = ctx.has("pai_machine_metric")
    if not (has_sensor or has_machine):
        result.skip("measured GPU utilisation", "the catalog lacks pai_sensor_table with pai_task_table, "
                                                "and pai_machine_metric")
        return
    frames: list[pl.DataFrame] = []
    with ExitStack() as stack:
        instances = stack.enter_context(materialized(ctx, f"SELECT * FROM {pai_gpu_instances_sql(ctx)}",
                                                     "pai_gpu_instances")) if has_sensor else None
        if has_sensor:
            frames.append(ctx.query(series_summary_sql("pai_instance_gpu_util", "GPU instance (sensor row)",
                                                       "gpu_wrk_util", instances)))
        if has_machine:
            frames.append(ctx.query(series_summary_sql(
                "pai_machine_gpu_util", "instance on a machine (machine-metric row)", "machine_gpu", _PAI_MACHINE_GPU)))
        summary = add_measured_summary(result, frames)
        if instances:
            _pai_instances(ctx, result, instances, summary)
        else:
            result.skip("PAI instance GPU utilisation", "pai_sensor_table or pai_task_table is not ingested")
    if has_machine:
        result.add("pai_machine_gpu_util_cdf", pai_machine_gpu_util_cdf(ctx),
                   ("utilization.pai_machine_gpu_util", CDF_STEP),
                   "a probability of the CDF over machine-metric rows")
        row = summary.filter(pl.col("measure") == "pai_machine_gpu_util").row(0, named=True)
        result.add_finding("pai_machine_gpu_util_p50", "median machine GPU utilisation while an instance ran",
                           row["p50_pct"], "%", "utilization.pai_machine_gpu_util",
                           f"{row['values']:,} machine-metric rows, {row['above_100']:,} of them above 100",
                           basis=row["values"])
    else:
        result.skip("PAI machine GPU utilisation", "pai_machine_metric is not ingested")


def _pai_instances(ctx: TraceContext, result: ModuleResult, instances: str, summary: pl.DataFrame) -> None:
    defs = ("utilization.pai_instance_gpu_util",)
    result.add("pai_instance_gpu_util_cdf", pai_instance_gpu_util_cdf(ctx, instances), defs + (CDF_STEP,),
               "a probability of the CDF over GPU instances")
    result.add("pai_instance_gpu_util_by_size", pai_instance_gpu_util_by(ctx, "gpu_bucket", instances),
               defs + ("gpu_request.bucket",), "a GPU-request bucket of the instances' jobs")
    result.add("pai_instance_gpu_util_by_state", pai_instance_gpu_util_by(ctx, "state", instances),
               defs + ("state.canonical",), "a final state of the instances' jobs")
    row = summary.filter(pl.col("measure") == "pai_instance_gpu_util").row(0, named=True)
    result.add_finding("pai_instance_gpu_util_p50", "median GPU utilisation of GPU instances",
                       row["p50_pct"], "%", "utilization.pai_instance_gpu_util",
                       f"{row['values']:,} GPU instances with a sensor row", basis=row["values"])


def _requests(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("pai_task_table", "pai_sensor_table"):
        result.skip("requests against usage",
                    "the trace records no per-task requests beside measured usage (PAI task and sensor tables)")
        return
    defs = ("utilization.pai_task_usage_ratio", "utilization.pai_task_over_request")
    comparison, cdf = pai_request_vs_usage_tables(ctx)
    table = result.add("pai_request_vs_usage", comparison, defs, "a resource, over tasks")
    result.add("pai_usage_ratio_cdf", cdf, defs + (CDF_STEP,), "a probability of the CDF of one resource")
    for row in table.to_dicts():
        label = row["resource"].upper()
        population = f"{row['tasks']:,} tasks with a {label} request and a sensor row"
        if row["resource"] in ("gpu", "cpu"):
            result.add_finding(
                f"{row['resource']}_over_request_share", f"share of tasks using less {label} than they request",
                row["over_requesting_share"], "fraction", "utilization.pai_task_over_request", population,
                basis=row["tasks"])
        if row["resource"] == "gpu":
            result.add_finding("gpu_usage_ratio_p50", "median share of its GPU request a task uses",
                               row["p50_usage_ratio"], "fraction", "utilization.pai_task_usage_ratio", population,
                               basis=row["tasks"])


def _analyze_colocation(ctx: TraceContext, result: ModuleResult) -> None:
    if ctx.has("pai_instance_table"):
        distribution = result.add("colocation_distribution", colocation_distribution(ctx),
                                  ("sharing.colocation.concurrent_instances",),
                                  "a machine GPU type (or 'all') and a number of instances running at once "
                                  "on a machine")
        summary = colocation_summary(distribution)
        left_out = 0 if ctx.holds_open("instance") else ctx.one_row(
            f"SELECT count(*) AS n FROM pai_instance_table WHERE {_SWEPT_INSTANCES} AND end_time IS NULL")["n"]
        alternative = ""
        population = "machines of pai_instance_table while they run an instance"
        if left_out:
            with ctx.holding_open("instance"):
                held = colocation_summary(colocation_distribution(ctx))["colocated_busy_share"]
            alternative = held_to_end_text(held, "fraction", left_out, "instance")
            population += f" ({left_out:,} instance{'s' if left_out != 1 else ''} with no recorded end left out)"
        result.add_finding("colocated_busy_time_share",
                           "share of busy machine-time with 2+ instances at once",
                           summary["colocated_busy_share"], "fraction", "sharing.colocation.concurrent_instances",
                           population, alternative)
    else:
        result.skip("instances running at once per machine",
                    "the catalog lacks pai_instance_table")
    if ctx.has("pai_machine_metric"):
        result.add("machine_num_worker_cdf", machine_num_worker_cdf(ctx),
                   ("sharing.colocation.machine_num_worker", CDF_STEP), "a probability of the CDF")
        median = ctx.one_row("SELECT quantile_cont(machine_num_worker, 0.5) AS p50 FROM pai_machine_metric")["p50"]
        result.add_finding("machine_num_worker_p50", "median machine_num_worker (workers on the machine)",
                           median, "workers",
                           "sharing.colocation.machine_num_worker", "rows of pai_machine_metric")
    else:
        result.skip("workers per machine (machine_num_worker)",
                    "the catalog lacks pai_machine_metric")


def _analyze_gpu_memory(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("pai_sensor_table", "pai_task_table", "pai_machine_spec"):
        result.skip("GPU memory used against device capacity",
                    "the catalog lacks pai_sensor_table, pai_task_table or pai_machine_spec")
        return
    definitions = ("sharing.gpu_memory.used_share", "sharing.gpu_memory.capacity",
                   "sharing.gpu_memory.over_requested_share")
    with materialized(ctx, f"SELECT * FROM {_gpu_memory_rows_sql(ctx)}", "pai_gpu_memory") as rows:
        summary = result.add("gpu_memory_summary", gpu_memory_summary(ctx, rows), definitions,
                             "a machine GPU type, or 'all' (shares over the sized types only)")
        result.add("gpu_memory_cdf", gpu_memory_cdf(ctx, rows), definitions[:2] + (CDF_STEP,),
                   "a machine GPU type (or 'all'), a statistic (peak or mean) and a probability of the CDF")
    unsized = summary.filter((pl.col("gpu_type") != ALL) & pl.col("capacity_gb").is_null())
    for gpu_type, instances in unsized.select("gpu_type", "instances").rows():
        result.skip(f"GPU memory share on {gpu_type} machines, {instances:,} instances",
                    "MISC mixes older GPU models of different device memory"
                    if gpu_type == "MISC" else f"no device memory is known for GPU type {gpu_type}")
    overall = summary.filter(pl.col("gpu_type") == ALL)
    if overall.is_empty():
        return
    population = f"{overall['instances_sized'][0]:,} GPU instances with a peak GPU memory on a sized GPU"
    result.add_finding("gpu_memory_peak_share_p50", "median peak GPU memory, share of device memory",
                       overall["p50_peak_share"][0], "fraction", "sharing.gpu_memory.used_share", population,
                       basis=overall["instances_sized"][0])
    result.add_finding("sharing_instances_over_requested_memory",
                       "share of GPU-sharing instances above their memory share",
                       overall["sharing_over_requested_share"][0], "fraction",
                       "sharing.gpu_memory.over_requested_share",
                       f"{overall['sharing_instances'][0]:,} GPU-sharing instances on a sized GPU",
                       basis=overall["sharing_instances"][0])


def _queue_definitions(ctx: TraceContext, result: ModuleResult) -> None:
    pai = result.add("pai_definitions", pai_queue_definitions(ctx), (QUEUE, PAI_OFFICIAL, PAI_TASK),
                     "a definition of the PAI queueing delay")
    task = pai.filter(pl.col("definition") == PAI_TASK)
    if task.height:
        result.add_finding("task_queue_delay_p50", "median delay from PAI task start to its first instance",
                           task["p50_s"][0], "s", PAI_TASK,
                           f"{task['rows_with_value'][0]:,} tasks with a started instance",
                           basis=task["rows_with_value"][0])
    else:
        result.skip(f"PAI task-to-first-instance delay ({PAI_TASK})",
                    "the catalog lacks pai_task_table or pai_instance_table")


PARTS: tuple[TracePart, ...] = (
    TracePart("utilization", "measured", "GPU utilisation measured per instance and per machine",
              "sensor and machine-metric tables", _measured),
    TracePart("utilization", "requests", "requests against measured usage", "task requests beside sensor usage",
              _requests),
    TracePart("sharing", "colocation", "instances running at once per machine, and workers per machine",
              "instances with their machines", _analyze_colocation),
    TracePart("sharing", "gpu_memory", "GPU memory used against device capacity",
              "GPU memory per instance with its machine", _analyze_gpu_memory),
    TracePart("queueing", "definitions", "three readings of the queueing delay",
              "tasks and their instances", _queue_definitions),
)

#: How the tables of these parts are drawn in reports.
CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("utilization", "pai_instance_gpu_util_cdf", "cdf",
              "Measured GPU utilisation of PAI GPU instances (CDF)", "GPU utilisation (% of one GPU)",
              "share of instances at or below x (%)", (("gpu_util_pct", "instances"),), y_percent=True,
              compare_where=()),
    ChartSpec("utilization", "pai_machine_gpu_util_cdf", "cdf",
              "Machine GPU utilisation while a PAI instance ran (CDF)", "machine GPU utilisation (%)",
              "share of machine-metric rows at or below x (%)", (("machine_gpu_pct", "rows"),),
              y_percent=True, compare_where=()),
    ChartSpec("utilization", "pai_usage_ratio_cdf", "cdf",
              "Resource used over resource requested, per PAI task (CDF)",
              "usage / request (ratio, log scale)", "share of tasks at or below x (%)",
              (("usage_ratio", "tasks"),), group=("resource",), x_log=True, y_percent=True),
    ChartSpec("sharing", "colocation_distribution", "line",
              "Instances running at once on a machine (share of machine-time)", "instances running at once",
              "share of machine-time (%)", (("machine_time_share", "machine-time"),), x=("running_instances",),
              group=("machine_gpu_type",), y_percent=True, max_series=6),
    ChartSpec("sharing", "machine_num_worker_cdf", "cdf", "Workers on the machine, PAI machine metric (CDF)",
              "workers on the machine", "share of rows at or below x (%)", (("value", "rows"),), y_percent=True),
    ChartSpec("sharing", "gpu_memory_cdf", "cdf", "Peak GPU memory used, share of the device memory (CDF)",
              "peak GPU memory used (share of the instance's device memory)", "share of instances at or below x (%)",
              (("value", "instances"),), group=("gpu_type",), where=(("statistic", "peak"),),
              x_percent=True, y_percent=True),
)
