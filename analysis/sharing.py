"""Sharing: fractional GPU requests, co-location of instances on machines, GPU memory used against
the device's capacity, and fragmentation of the Alibaba v2023 cluster under its real pods.

Parts and the traces they apply to:
- fractional requests (PAI `plan_gpu`, v2023 `gpu_milli`, imported jobs with a fractional GPU
  count): share of GPU jobs and of GPU-time that share a GPU, per GPU type, and the distribution of
  the GPUs asked per instance;
- co-location (PAI `pai_instance_table`, `pai_machine_metric`): instances running at once on a
  machine, time-weighted, from an event sweep; the trace's own `machine_num_worker`;
- GPU memory (PAI `pai_sensor_table`): peak and mean GPU memory of an instance against the memory
  of the GPUs it occupies (`PAI_GPU_MEMORY_GB` below);
- fragmentation (v2023 `pai_v2023_nodes`, `pai_v2023_pods`): a replay of the default workload on
  the real node list, computed by `ddlx.analysis.placement` (`replay_fragmentation`), whose
  definitions this module declares with its own and whose results it writes.
Every other trace records each part it lacks as not applicable, with the reason.
"""

from __future__ import annotations

import polars as pl

from ddlx.analysis import placement
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import GPU_HOURS_SQL, SUMMARY_QUANTILES, cdf_table
from ddlx.datasets.traces.pai import schema as pai_schema

#: GPU memory of the PAI GPU types, GB, with the source of each figure (MISC, a mix of models, is
#: left out: an instance's share of its memory cannot be told).
PAI_GPU_MEMORY_GB: dict[str, tuple[float, str]] = {
    model: (gb, pai_schema.GPU_MEMORY_SOURCES[model]) for model, gb in pai_schema.GPU_MEMORY_GB.items()}

#: Label of jobs whose GPU type the trace leaves open (no constraint, or several models allowed).
UNSPECIFIED_GPU_TYPE = "unspecified"
#: Label of the row over every group.
ALL = "all"

#: Traces whose records tell a part of a GPU from a whole one.
FRACTION_TRACES = ("pai", "pai-v2023")


def _capacity_text() -> str:
    return "; ".join(f"{model} {gb:g} GB ({source})" for model, (gb, source) in PAI_GPU_MEMORY_GB.items())


DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "sharing.fractional_share", "Share of GPU jobs and GPU-time that share a GPU", "fraction",
        "Among GPU jobs (gpu_job.requests_gpu), the share that are fractional-GPU jobs "
        "(gpu_request.fractional), and the share of GPU-time (gpu_time.request_x_runtime) that "
        "fractional-GPU jobs requested; per canonical gpu_type (jobs without one are grouped as "
        "'unspecified': PAI tasks without a GPU model, v2023 pods that allow any or several "
        "models) and over all jobs ('all'). Applies to PAI, Alibaba v2023 and imported tables "
        "with a fractional GPU count; the other traces record whole GPUs only.",
    ),
    Definition(
        "sharing.gpus_per_instance", "GPUs asked per instance", "GPUs",
        "The GPUs one instance asks for, rounded to 4 decimals: PAI plan_gpu / 100 of the task "
        "(each of its inst_num instances asks for it; tasks without plan_gpu or with 0 are not GPU "
        "instances); Alibaba v2023 gpu_milli / 1000 of a pod with num_gpu 1, else num_gpu; other "
        "traces: num_gpus of a job of one instance (jobs of several instances are left out). An "
        "instance shares a GPU when it asks for a part of one (PAI: plan_gpu not a multiple of "
        "100; v2023: num_gpu 1 and gpu_milli below 1000). Counted: instances, and jobs with at "
        "least one such instance.",
    ),
    Definition(
        "sharing.colocation.concurrent_instances", "Instances running at once on a machine",
        "machine-hours",
        "PAI: for each machine of pai_instance_table, the number of its instances running at "
        "each moment (an instance runs from its start_time to its end_time; one without end_time "
        "runs to the window end; rows without machine or start_time, or ending before they start, "
        "are left out). Instances of every kind count (CPU-only ones too). The window is the same "
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
    # The fragmentation replay's definitions: ddlx.analysis.placement is not an analysis module of
    # its own (its results are this module's), so `registry()` finds them here.
    *placement.DEFINITIONS,
)


# ---------------------------------------------------------------------------------------------
# Fractional requests
# ---------------------------------------------------------------------------------------------


def records_fractions(ctx: TraceContext) -> bool:
    """True when the trace tells a part of a GPU from a whole one: PAI, v2023, or a table with a
    fractional GPU count."""
    if ctx.trace in FRACTION_TRACES:
        return True
    return bool(ctx.one_row(f"SELECT coalesce(bool_or(fractional_gpu), false) AS any FROM {ctx.jobs}")["any"])


def fractional_by_gpu_type(ctx: TraceContext) -> pl.DataFrame:
    """Per GPU type and over all ('all'): GPU jobs, the jobs and GPU-hours of those that share a
    GPU, and their shares (definition `sharing.fractional_share`)."""
    return ctx.query(f"""
        WITH gpu_jobs AS (
            SELECT coalesce(gpu_type, '{UNSPECIFIED_GPU_TYPE}') AS gpu_type, fractional_gpu,
                   {GPU_HOURS_SQL} AS gpu_hours
            FROM {ctx.jobs} WHERE num_gpus > 0)
        SELECT CASE WHEN grouping(gpu_type) = 1 THEN '{ALL}' ELSE gpu_type END AS gpu_type,
               count(*) AS gpu_jobs,
               count(*) FILTER (WHERE fractional_gpu) AS sharing_jobs,
               count(*) FILTER (WHERE fractional_gpu) / count(*) AS sharing_job_share,
               sum(gpu_hours) AS gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE fractional_gpu), 0) AS sharing_gpu_hours,
               coalesce(sum(gpu_hours) FILTER (WHERE fractional_gpu), 0) / nullif(sum(gpu_hours), 0)
                   AS sharing_gpu_hours_share
        FROM gpu_jobs GROUP BY GROUPING SETS ((gpu_type), ())
        ORDER BY grouping(gpu_type) DESC, gpu_jobs DESC, gpu_type""")


def fraction_distribution(ctx: TraceContext) -> pl.DataFrame:
    """Per amount of GPU asked by one instance: instances, their share, jobs asking for it, and
    whether it shares a GPU (definition `sharing.gpus_per_instance`)."""
    if ctx.trace == "pai" and ctx.has("pai_task_table"):
        source = """(SELECT round(plan_gpu / 100, 4) AS gpus_per_instance, plan_gpu % 100 <> 0 AS shares_gpu,
                            inst_num AS instances, job_name AS job
                     FROM pai_task_table WHERE plan_gpu > 0 AND inst_num > 0)"""
    else:
        source = f"""(SELECT round(num_gpus, 4) AS gpus_per_instance, fractional_gpu AS shares_gpu,
                             1 AS instances, cluster || '/' || job_id AS job
                      FROM {ctx.jobs} WHERE num_gpus > 0 AND coalesce(num_instances, 1) = 1)"""
    return ctx.query(f"""
        SELECT gpus_per_instance, bool_or(shares_gpu) AS shares_gpu,
               sum(instances)::BIGINT AS instances,
               sum(instances) / sum(sum(instances)) OVER () AS instance_share,
               count(DISTINCT job) AS jobs
        FROM {source} GROUP BY gpus_per_instance ORDER BY gpus_per_instance""")


# ---------------------------------------------------------------------------------------------
# Co-location
# ---------------------------------------------------------------------------------------------


#: Partitions of the co-location sweep (see `machine_instance_steps_sql`).
SWEEP_PARTITIONS = 4

#: Instances of pai_instance_table that enter the co-location sweep.
_SWEPT_INSTANCES = ("machine IS NOT NULL AND start_time IS NOT NULL "
                    "AND (end_time IS NULL OR end_time >= start_time)")


def _instance_sweep_ctes() -> str:
    """The CTEs of the co-location sweep: `bounds` (t0, t1: the window), `machine_ids`,
    `runs` (machine_id, s, e) and `steps` (machine_id, t, instances, next_t)."""
    return f"""
        WITH bounds AS (
            SELECT min(start_time) AS t0, greatest(max(start_time), max(end_time)) AS t1
            FROM pai_instance_table WHERE {_SWEPT_INSTANCES}),
        machine_ids AS (
            SELECT machine, (row_number() OVER ())::INTEGER AS machine_id
            FROM (SELECT DISTINCT machine FROM pai_instance_table WHERE {_SWEPT_INSTANCES})),
        runs AS (
            SELECT machine_id, start_time AS s, coalesce(end_time, (SELECT t1 FROM bounds)) AS e
            FROM pai_instance_table JOIN machine_ids USING (machine) WHERE {_SWEPT_INSTANCES}),
        events AS (
            SELECT machine_id, s AS t, 1 AS delta FROM runs
            UNION ALL SELECT machine_id, e AS t, -1 AS delta FROM runs),
        steps AS (
            SELECT machine_id, t, sum(delta) OVER w AS instances, lead(t) OVER w AS next_t
            FROM events
            WINDOW w AS (PARTITION BY machine_id % {SWEEP_PARTITIONS} ORDER BY machine_id, t
                         ROWS UNBOUNDED PRECEDING))"""


def machine_instance_steps_sql() -> str:
    """A FROM item: PAI instances running at once on each machine, as a step function.

    Rows: `machine`, `t` (seconds, the trace's own clock) and `instances` (running from `t` until
    the machine's next `t`; 0 after its last one). Definition
    `sharing.colocation.concurrent_instances`.

    Event sweep: +1 at an instance's start, -1 at its end, a running sum per machine. Every
    instance adds its +1 and its -1 to the same machine, so a machine's sum is back at 0 after its
    last event; the running sum over events ordered by (machine, t) is therefore the per-machine
    count even across machines. That lets the window use a few partitions (machine id modulo
    `SWEEP_PARTITIONS`, sorted in parallel) instead of one per machine, for which DuckDB's running
    sums are several times slower. Machines are numbered first so that the sort keys are integers.
    Events at one instant give several rows at that `t`: the last one holds the count.
    """
    return f"""({_instance_sweep_ctes()}
        SELECT m.machine, s.t, s.instances FROM steps AS s JOIN machine_ids AS m USING (machine_id))"""


def machine_instance_levels_sql() -> str:
    """A FROM item: per machine and number of instances running at once, the seconds spent at it
    in the window (`machine`, `instances`, `seconds`).

    From the steps of `machine_instance_steps_sql`: a step with instances running lasts until the
    next event, which is always the same machine's (its last event brings it back to 0); the
    machine's time at 0 is the rest of the window. Summed per machine id before the names are
    joined back."""
    return f"""({_instance_sweep_ctes()},
        busy AS (
            SELECT machine_id, instances, sum(next_t - t) AS seconds
            FROM steps WHERE instances > 0 AND next_t > t GROUP BY machine_id, instances),
        levels AS (
            SELECT machine_id, instances, seconds FROM busy
            UNION ALL
            SELECT m.machine_id, 0 AS instances,
                   (SELECT t1 - t0 FROM bounds) - coalesce(sum(b.seconds), 0) AS seconds
            FROM machine_ids AS m LEFT JOIN busy AS b USING (machine_id) GROUP BY m.machine_id)
        SELECT m.machine, l.instances, l.seconds
        FROM levels AS l JOIN machine_ids AS m USING (machine_id) WHERE l.seconds > 0)"""


def colocation_distribution(ctx: TraceContext) -> pl.DataFrame:
    """Time-weighted distribution of instances running at once on a machine, per machine GPU type
    and over all machines (definition `sharing.colocation.concurrent_instances`)."""
    spec = ("(SELECT machine, any_value(gpu_type) AS gpu_type FROM pai_machine_spec GROUP BY machine)"
            if ctx.has("pai_machine_spec") else
            "(SELECT NULL::VARCHAR AS machine, NULL::VARCHAR AS gpu_type WHERE false)")
    return ctx.query(f"""
        WITH typed AS (
            SELECT coalesce(m.gpu_type, 'unknown') AS machine_gpu_type, p.instances, p.seconds
            FROM {machine_instance_levels_sql()} AS p LEFT JOIN {spec} AS m USING (machine)),
        levels AS (
            SELECT CASE WHEN grouping(machine_gpu_type) = 1 THEN '{ALL}' ELSE machine_gpu_type END
                       AS machine_gpu_type,
                   instances, sum(seconds) AS seconds
            FROM typed GROUP BY GROUPING SETS ((machine_gpu_type, instances), (instances)))
        SELECT machine_gpu_type, instances::BIGINT AS running_instances, seconds / 3600.0 AS machine_hours,
               seconds / sum(seconds) OVER (PARTITION BY machine_gpu_type) AS machine_time_share,
               CASE WHEN instances > 0 THEN seconds / sum(seconds) FILTER (WHERE instances > 0)
                   OVER (PARTITION BY machine_gpu_type) END AS busy_time_share
        FROM levels ORDER BY machine_gpu_type = '{ALL}' DESC, machine_gpu_type, running_instances""")


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
    parts = [f"quantile_cont(peak_share, {q}) AS {name}_peak_share" for name, q in SUMMARY_QUANTILES.items()]
    return ", ".join(parts + ["avg(peak_share) AS mean_peak_share"])


def _gpu_memory_rows_sql() -> str:
    """A FROM item: PAI sensor rows of GPU instances with their machine's GPU type, the device
    capacity (NULL when not sized), the devices occupied and the used shares."""
    return f"""(
        WITH capacity(gpu_type, capacity_gb) AS (VALUES {_capacity_values_sql()}),
        tasks AS (
            SELECT job_name, task_name, max(plan_gpu) AS plan_gpu FROM pai_task_table
            WHERE plan_gpu > 0 GROUP BY job_name, task_name),
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


def gpu_memory_summary(ctx: TraceContext) -> pl.DataFrame:
    """Per machine GPU type (and 'all' sized ones): instances with a GPU memory reading, the
    device memory, quantiles of the peak used share, shares above half and above all of the device
    memory, and sharing instances above their requested share (definitions
    `sharing.gpu_memory.used_share`, `sharing.gpu_memory.over_requested_share`). Types that
    cannot be sized have NULL shares."""
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
        FROM {_gpu_memory_rows_sql()}
        GROUP BY GROUPING SETS ((gpu_type), ())
        HAVING grouping(gpu_type) = 0 OR count(peak_share) > 0
        ORDER BY grouping(gpu_type) DESC, gpu_type""")


def gpu_memory_cdf(ctx: TraceContext) -> pl.DataFrame:
    """CDF of the used share of device memory, peak and mean, per sized GPU type and over all
    (definition `sharing.gpu_memory.used_share`)."""
    source = f"""(
        WITH r AS {_gpu_memory_rows_sql()},
        long AS (
            SELECT gpu_type, 'peak' AS statistic, peak_share AS share FROM r
            UNION ALL SELECT gpu_type, 'mean' AS statistic, mean_share AS share FROM r)
        SELECT gpu_type, statistic, share FROM long
        UNION ALL SELECT '{ALL}' AS gpu_type, statistic, share FROM long)"""
    return cdf_table(ctx, "share", source, groups=("gpu_type", "statistic"))


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# The module
# ---------------------------------------------------------------------------------------------


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("sharing")
    _analyze_fractions(ctx, result)
    _analyze_colocation(ctx, result)
    _analyze_gpu_memory(ctx, result)
    placement.analyze_fragmentation(ctx, result)
    return result


def _analyze_fractions(ctx: TraceContext, result: ModuleResult) -> None:
    if not records_fractions(ctx):
        result.skip("fractional GPU requests (GPU sharing)",
                    f"{ctx.trace} records whole GPUs only: no job asks for a part of a GPU")
        return
    by_type = result.add("fractional_by_gpu_type", fractional_by_gpu_type(ctx),
                         ("sharing.fractional_share", "gpu_request.fractional", "gpu_time.request_x_runtime"),
                         "a GPU type (canonical gpu_type, 'unspecified' when none), or 'all'")
    overall = by_type.filter(pl.col("gpu_type") == ALL)
    if not overall.is_empty():
        result.add_finding("sharing_gpu_time_share", "share of GPU-time of jobs that share a GPU",
                           overall["sharing_gpu_hours_share"][0], "fraction", "sharing.fractional_share",
                           f"{overall['gpu_jobs'][0]:,} GPU jobs")
    distribution = result.add("fraction_distribution", fraction_distribution(ctx), ("sharing.gpus_per_instance",),
                              "an amount of GPU asked by one instance")
    if distribution.height:
        sharing = distribution.filter(pl.col("shares_gpu"))["instances"].sum()
        total = distribution["instances"].sum()
        result.add_finding("sharing_instance_share", "share of GPU instances asking for part of a GPU",
                           sharing / total, "fraction", "sharing.gpus_per_instance", f"{total:,} GPU instances")


def _analyze_colocation(ctx: TraceContext, result: ModuleResult) -> None:
    if ctx.has("pai_instance_table"):
        distribution = result.add("colocation_distribution", colocation_distribution(ctx),
                                  ("sharing.colocation.concurrent_instances",),
                                  "a machine GPU type (or 'all') and a number of instances running at once "
                                  "on a machine")
        summary = colocation_summary(distribution)
        result.add_finding("colocated_busy_time_share",
                           "share of busy machine-time with 2+ instances at once",
                           summary["colocated_busy_share"], "fraction", "sharing.colocation.concurrent_instances",
                           "machines of pai_instance_table while they run an instance")
    else:
        result.skip("instances running at once per machine",
                    f"{ctx.trace} records no placement of instances on machines; "
                    "only PAI's pai_instance_table does")
    if ctx.has("pai_machine_metric"):
        cdf = result.add("machine_num_worker_cdf", machine_num_worker_cdf(ctx),
                         ("sharing.colocation.machine_num_worker",), "a probability of the CDF")
        median = cdf.filter(pl.col("probability") == 0.5)
        result.add_finding("machine_num_worker_p50", "median machine_num_worker (workers on the machine)",
                           median["value"][0] if median.height else None, "workers",
                           "sharing.colocation.machine_num_worker", "rows of pai_machine_metric")
    else:
        result.skip("workers per machine (machine_num_worker)",
                    f"{ctx.trace} has no per-machine worker counts; only PAI's pai_machine_metric has")


def _analyze_gpu_memory(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("pai_sensor_table", "pai_task_table", "pai_machine_spec"):
        result.skip("GPU memory used against device capacity",
                    f"{ctx.trace} records no GPU memory use per instance with its machine; only PAI "
                    "does, in pai_sensor_table with pai_task_table and pai_machine_spec")
        return
    definitions = ("sharing.gpu_memory.used_share", "sharing.gpu_memory.capacity",
                   "sharing.gpu_memory.over_requested_share")
    summary = result.add("gpu_memory_summary", gpu_memory_summary(ctx), definitions,
                         "a machine GPU type, or 'all' (shares over the sized types only)")
    result.add("gpu_memory_cdf", gpu_memory_cdf(ctx), definitions[:2],
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
                       overall["p50_peak_share"][0], "fraction", "sharing.gpu_memory.used_share", population)
    result.add_finding("sharing_instances_over_requested_memory",
                       "share of GPU-sharing instances above their memory share",
                       overall["sharing_over_requested_share"][0], "fraction",
                       "sharing.gpu_memory.over_requested_share",
                       f"{overall['sharing_instances'][0]:,} GPU-sharing instances on a sized GPU")
