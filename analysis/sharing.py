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
  the real node list (`replay_fragmentation`).
Every other trace records each part it lacks as not applicable, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.sql import GPU_HOURS_SQL, SUMMARY_QUANTILES, cdf_table
from ddlx.datasets import pai_schema

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
#: Milli-GPU of one whole GPU (v2023 units).
WHOLE_GPU_MILLI = 1000


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
    Definition(
        "sharing.fragmentation.replay", "Replay of the v2023 default workload on its nodes", "pods",
        "Alibaba v2023: the pods of the default workload are placed on the node list (all_node, "
        "else gpu_node: GPUs, GPU model, CPU, memory) at their scheduled_time and leave at their "
        "deletion_time (never-scheduled pods and pods with deletion_time <= scheduled_time are not "
        "placed; a pod without deletion_time stays). At one instant, departures come before "
        "placements, and placements go in (scheduled_time, creation_time, name) order. Placement "
        "policy, best fit by GPU: the candidate nodes have the free CPU and memory the pod asks "
        "for and, for a GPU pod, a GPU model its gpu_spec allows (any when NULL) and num_gpu GPUs "
        "each with at least the pod's share free (gpu_milli for num_gpu 1, else a whole GPU); the "
        "pod goes to the candidate left with the least free GPU capacity, then the least free "
        "CPU, then the first by node name (so CPU pods go to CPU-only nodes first). On the node "
        "it takes the GPUs with the least free share that still fits, then the lowest index. A "
        "pod that finds no candidate is counted as unplaced and not retried. GPUs of nodes "
        "without a GPU model are not used. The replay's instants are those of its events (a "
        "placement, placed or not, or the departure of a placed pod).",
    ),
    Definition(
        "sharing.fragmentation.free_gpus", "Free GPU capacity", "GPUs",
        "In the replay (sharing.fragmentation.replay), after the events of an instant: GPU "
        "capacity not taken by placed pods, in GPUs; whole = GPUs entirely free, partial = the "
        "free part of GPUs that placed pods share. Time-weighted means run from the first to the "
        "last event of the replay, each state holding until the next event.",
    ),
    Definition(
        "sharing.fragmentation.unusable_gpus", "Fragmented GPU capacity", "GPUs",
        "In the replay (sharing.fragmentation.replay), the free GPU capacity "
        "(sharing.fragmentation.free_gpus) that no GPU request of the default workload could "
        "use. The requests are the distinct (num_gpu, GPU share, cpu_milli, memory_mib, gpu_spec) "
        "of every default pod that asks for a GPU, scheduled or not. A request can use a GPU's "
        "free share f on a node when the node has the CPU and memory free that it asks for, a GPU "
        "model its gpu_spec allows, f is at least its share of one GPU, and, for num_gpu above 1, "
        "the node has at least num_gpu entirely free GPUs. A GPU's free share counts as "
        "fragmented when no request can use it, because of its size, the node's free CPU or "
        "memory, or its model. Time-weighted as in sharing.fragmentation.free_gpus.",
    ),
    Definition(
        "sharing.fragmentation.expected_unusable_gpus", "Expected fragmented GPU capacity", "GPUs",
        "The fragmentation measure of Weng et al. (ATC'23, 'Beware of Fragmentation'), in the "
        "replay: for each node and each request of the default workload (as in "
        "sharing.fragmentation.unusable_gpus), the free GPU capacity of the node that this request "
        "cannot use (all of it when the request does not fit on the node); averaged over the "
        "requests weighted by how many default GPU pods ask for each; summed over nodes. Unlike "
        "sharing.fragmentation.unusable_gpus it is above 0 even on an empty cluster, where nodes "
        "too small for some requests count.",
    ),
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
# Fragmentation replay (Alibaba v2023)
# ---------------------------------------------------------------------------------------------


@dataclass
class FragmentationReplay:
    """What the replay of the v2023 default workload found.

    `series`: one row per event instant; `by_model`: one row per GPU model and 'all';
    `pods`: one row per replay outcome of the default pods."""

    series: pl.DataFrame
    by_model: pl.DataFrame
    pods: pl.DataFrame


@dataclass
class _Requests:
    """The distinct GPU requests of the workload (arrays over requests)."""

    num_gpu: np.ndarray      # GPUs asked
    milli: np.ndarray        # share of each GPU, thousandths
    cpu: np.ndarray          # cpu_milli
    mem: np.ndarray          # memory_mib
    allowed: np.ndarray      # [request, model index; last column: nodes without a model] bool
    weight: np.ndarray       # share of the workload's GPU pods asking for it


def _node_list(ctx: TraceContext) -> str | None:
    lists = set(ctx.query("SELECT DISTINCT node_list FROM pai_v2023_nodes")["node_list"].to_list())
    for name in ("all_node", "gpu_node"):
        if name in lists:
            return name
    return None


def _allowed_models(spec: str | None, models: list[str]) -> np.ndarray:
    """Models (by index, plus a last False column for nodes without GPUs) `spec` allows."""
    allowed = np.zeros(len(models) + 1, dtype=bool)
    if spec is None or spec.strip() == "":
        allowed[: len(models)] = True
    else:
        named = {part.strip() for part in spec.split("|")}
        for i, model in enumerate(models):
            allowed[i] = model in named
    return allowed


class _Cluster:
    """Free resources of the nodes during the replay, and their fragmentation."""

    def __init__(self, nodes: pl.DataFrame, models: list[str], requests: _Requests):
        self.gpus = nodes["gpu"].fill_null(0).to_numpy().astype(np.int64)
        width = max(1, int(self.gpus.max()) if len(self.gpus) else 1)
        slots = np.arange(width)[None, :] < self.gpus[:, None]
        self.free_milli = np.where(slots, WHOLE_GPU_MILLI, 0).astype(np.int64)
        self.free_cpu = nodes["cpu_milli"].fill_null(0).to_numpy().astype(np.int64)
        self.free_mem = nodes["memory_mib"].fill_null(0).to_numpy().astype(np.int64)
        index = {m: i for i, m in enumerate(models)}
        # Nodes without GPUs (or without a model) point at the last column: no model allowed.
        self.model = np.array([index.get(m, len(models)) if g > 0 else len(models)
                               for m, g in zip(nodes["model"].to_list(), self.gpus)], dtype=np.int64)
        self.node_free = self.free_milli.sum(axis=1)
        self.requests = requests
        self.need_whole = np.where(requests.num_gpu > 1, requests.num_gpu, 0)
        # Per node, as last measured: free milli, whole free GPUs, fragmented milli (integers) and
        # expected fragmented milli; and their sums per model column (kept up to date by `refresh`).
        self.measured = np.zeros((len(self.gpus), 3), dtype=np.int64)
        self.measured_expected = np.zeros(len(self.gpus), dtype=np.float64)
        self.totals = np.zeros((3, len(models) + 1), dtype=np.int64)
        self.totals_expected = np.zeros(len(models) + 1, dtype=np.float64)
        for n in range(len(self.gpus)):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        """Re-measure node `n` (free and fragmented milli-GPUs) and update the per-model sums."""
        g = self.gpus[n]
        free = self.free_milli[n, :g]
        whole_free = int((free >= WHOLE_GPU_MILLI).sum())
        unusable, expected = 0, 0.0
        if self.node_free[n] > 0:
            r = self.requests
            fits = (r.cpu <= self.free_cpu[n]) & (r.mem <= self.free_mem[n]) & r.allowed[:, self.model[n]]
            usable = (fits & (whole_free >= self.need_whole))[:, None] & (free[None, :] >= r.milli[:, None])
            unusable = int(free[~usable.any(axis=0)].sum())
            expected = float(r.weight @ np.where(usable, 0, free[None, :]).sum(axis=1))
        now = np.array([self.node_free[n], whole_free, unusable], dtype=np.int64)
        column = self.model[n]
        self.totals[:, column] += now - self.measured[n]
        self.totals_expected[column] += expected - self.measured_expected[n]
        self.measured[n] = now
        self.measured_expected[n] = expected

    def place(self, num_gpu: int, milli: int, cpu: int, mem: int, allowed: np.ndarray) -> tuple[int, np.ndarray] | None:
        """Best fit by GPU (definition `sharing.fragmentation.replay`): the node and GPU slots
        taken, or None when no node fits."""
        candidates = np.flatnonzero((self.free_cpu >= cpu) & (self.free_mem >= mem))
        if num_gpu > 0 and candidates.size:
            gpu_fits = allowed[self.model[candidates]] & (
                (self.free_milli[candidates] >= milli).sum(axis=1) >= num_gpu)
            candidates = candidates[gpu_fits]
        if candidates.size == 0:
            return None
        gpu_after = self.node_free[candidates] - num_gpu * milli
        cpu_after = self.free_cpu[candidates] - cpu
        node = int(candidates[np.lexsort((candidates, cpu_after, gpu_after))[0]])
        slots = np.empty(0, dtype=np.int64)
        if num_gpu > 0:
            free = self.free_milli[node]
            eligible = np.flatnonzero(free >= milli)
            slots = eligible[np.lexsort((eligible, free[eligible]))][:num_gpu]
            self.free_milli[node, slots] -= milli
            self.node_free[node] -= num_gpu * milli
        self.free_cpu[node] -= cpu
        self.free_mem[node] -= mem
        return node, slots

    def release(self, node: int, slots: np.ndarray, milli: int, cpu: int, mem: int) -> None:
        self.free_milli[node, slots] += milli
        self.node_free[node] += len(slots) * milli
        self.free_cpu[node] += cpu
        self.free_mem[node] += mem


def _pod_share_milli(num_gpu: int | None, gpu_milli: int | None) -> tuple[int, int]:
    """(GPUs asked, thousandths of each GPU): whole GPUs when num_gpu > 1, gpu_milli of one when 1."""
    gpus = int(num_gpu or 0)
    if gpus > 1:
        return gpus, WHOLE_GPU_MILLI
    if gpus == 1 and (gpu_milli or 0) > 0:
        return 1, int(gpu_milli)
    return 0, 0


def replay_fragmentation(ctx: TraceContext) -> FragmentationReplay | None:
    """Replay the v2023 default workload on the real node list and track fragmented GPU capacity
    (definitions `sharing.fragmentation.*`); None when the node list has no GPU node, or the
    default workload no pod asking for a GPU or none that ran.

    The replay is an event loop in Python over the pods (placement and departure), with numpy
    over the nodes at each event: the default workload has about 8 k pods (about 14 k events) and
    the cluster about 1.5 k nodes, so this stays around a second. After each event only the nodes
    it touched are re-measured.
    """
    node_list = _node_list(ctx)
    if node_list is None:
        return None
    nodes = ctx.query(f"""SELECT sn, cpu_milli, memory_mib, gpu, model FROM pai_v2023_nodes
                          WHERE node_list = '{node_list}' ORDER BY sn""")
    pods = ctx.query("""
        SELECT name, num_gpu, gpu_milli, cpu_milli, memory_mib, gpu_spec,
               creation_time, scheduled_time, deletion_time
        FROM pai_v2023_pods WHERE workload = 'default'
        ORDER BY scheduled_time, creation_time, name""")
    models = sorted({m for m, g in zip(nodes["model"].to_list(), nodes["gpu"].to_list()) if m and (g or 0) > 0})
    shares = [_pod_share_milli(k, m) for k, m in zip(pods["num_gpu"].to_list(), pods["gpu_milli"].to_list())]
    pods = pods.with_columns(pl.Series("gpus_asked", [s[0] for s in shares], dtype=pl.Int64),
                             pl.Series("milli", [s[1] for s in shares], dtype=pl.Int64))
    shapes = (pods.filter(pl.col("gpus_asked") > 0)
              .group_by("gpus_asked", "milli", "cpu_milli", "memory_mib", "gpu_spec")
              .agg(pl.len().alias("pods")).sort("gpus_asked", "milli", "cpu_milli", "memory_mib", "gpu_spec"))
    if shapes.is_empty() or not models:
        return None
    spec_cache: dict[str | None, np.ndarray] = {}

    def allowed_for(spec: str | None) -> np.ndarray:
        if spec not in spec_cache:
            spec_cache[spec] = _allowed_models(spec, models)
        return spec_cache[spec]

    requests = _Requests(
        num_gpu=shapes["gpus_asked"].to_numpy().astype(np.int64),
        milli=shapes["milli"].to_numpy().astype(np.int64),
        cpu=shapes["cpu_milli"].fill_null(0).to_numpy().astype(np.int64),
        mem=shapes["memory_mib"].fill_null(0).to_numpy().astype(np.int64),
        allowed=np.array([allowed_for(s) for s in shapes["gpu_spec"].to_list()]),
        weight=(shapes["pods"] / shapes["pods"].sum()).to_numpy(),
    )
    cluster = _Cluster(nodes, models, requests)

    # Events: (time, 0 = departure / 1 = placement, pod index: the pods are in placement order).
    events: list[tuple[int, int, int]] = []
    outcome = ["never scheduled"] * pods.height
    rows = pods.select("scheduled_time", "deletion_time").rows()
    for i, (scheduled, deleted) in enumerate(rows):
        if scheduled is None:
            continue
        if deleted is not None and deleted <= scheduled:
            outcome[i] = "zero run time"
            continue
        events.append((int(scheduled), 1, i))
        if deleted is not None:
            events.append((int(deleted), 0, i))
    events.sort()

    k_col, milli_col = pods["gpus_asked"].to_list(), pods["milli"].to_list()
    cpu_col = pods["cpu_milli"].fill_null(0).to_list()
    mem_col = pods["memory_mib"].fill_null(0).to_list()
    spec_col = pods["gpu_spec"].to_list()
    placed: dict[int, tuple[int, np.ndarray]] = {}
    record_t: list[int] = []
    record_running: list[int] = []
    record_totals: list[np.ndarray] = []       # [free milli, whole GPUs, fragmented milli] x model
    record_expected: list[np.ndarray] = []     # expected fragmented milli x model
    touched: set[int] = set()

    def record(t: int) -> None:
        for n in touched:
            cluster.refresh(n)
        touched.clear()
        record_t.append(t)
        record_running.append(len(placed))
        record_totals.append(cluster.totals.copy())
        record_expected.append(cluster.totals_expected.copy())

    current: int | None = None
    for t, kind, i in events:
        if kind == 0 and i not in placed:
            continue  # the departure of a pod the replay could not place changes nothing
        if current is not None and t != current:
            record(current)
        current = t
        if kind == 0:
            node, slots = placed.pop(i)
            cluster.release(node, slots, milli_col[i], cpu_col[i], mem_col[i])
            touched.add(node)
            continue
        spot = cluster.place(k_col[i], milli_col[i], cpu_col[i], mem_col[i], allowed_for(spec_col[i]))
        if spot is None:
            outcome[i] = "unplaced"
        else:
            outcome[i] = "placed"
            placed[i] = spot
            touched.add(spot[0])
    if current is None:
        return None
    record(current)

    # Per instant and GPU model (the last column, nodes without a GPU model, is dropped), in GPUs.
    totals = np.stack(record_totals)[:, :, : len(models)].astype(np.float64)
    state = _ReplayState(
        times=np.array(record_t, dtype=np.int64), running=np.array(record_running, dtype=np.int64),
        free=totals[:, 0] / WHOLE_GPU_MILLI, whole=totals[:, 1], fragmented=totals[:, 2] / WHOLE_GPU_MILLI,
        expected=np.stack(record_expected)[:, : len(models)] / WHOLE_GPU_MILLI)
    return FragmentationReplay(series=_replay_series(state), by_model=_replay_by_model(nodes, models, state),
                               pods=_replay_pods(pods, outcome))


@dataclass
class _ReplayState:
    """The replay after each event instant: arrays over instants, or instants x GPU models (GPUs)."""

    times: np.ndarray
    running: np.ndarray
    free: np.ndarray
    whole: np.ndarray
    fragmented: np.ndarray
    expected: np.ndarray


def _replay_series(state: _ReplayState) -> pl.DataFrame:
    """One row per event instant, over the GPU nodes of the cluster."""
    free = state.free.sum(axis=1)
    whole = state.whole.sum(axis=1)
    fragmented = state.fragmented.sum(axis=1)
    return pl.DataFrame({
        "t_s": state.times,
        "pods_running": state.running,
        "free_gpus": free,
        "free_whole_gpus": whole,
        "free_partial_gpus": free - whole,
        "fragmented_gpus": fragmented,
        "fragmented_share_of_free": np.divide(fragmented, free, out=np.full_like(free, np.nan), where=free > 0),
        "expected_fragmented_gpus": state.expected.sum(axis=1),
    }, nan_to_null=True).with_columns(
        pl.from_epoch("t_s", time_unit="s").dt.replace_time_zone("UTC").alias("t"),
    ).select("t_s", "t", "pods_running", "free_gpus", "free_whole_gpus", "free_partial_gpus",
             "fragmented_gpus", "fragmented_share_of_free", "expected_fragmented_gpus")


def _replay_by_model(nodes: pl.DataFrame, models: list[str], state: _ReplayState) -> pl.DataFrame:
    """Per GPU model and over all ('all'): time-weighted means (first to last event, each state
    holding until the next instant) of free and fragmented capacity, and the largest fragmented
    capacity seen."""
    weights = np.diff(state.times, append=state.times[-1]).astype(np.float64)
    span = weights.sum()

    def mean(values: np.ndarray) -> np.ndarray:
        return weights @ values / span if span > 0 else values[-1]

    def summary(free: np.ndarray, whole: np.ndarray, fragmented: np.ndarray, expected: np.ndarray) -> dict:
        mean_free, mean_fragmented = mean(free), mean(fragmented)
        return {
            "mean_free_gpus": mean_free,
            "mean_free_partial_gpus": mean(free - whole),
            "mean_fragmented_gpus": mean_fragmented,
            "fragmented_share_of_free": np.divide(mean_fragmented, mean_free,
                                                  out=np.full_like(mean_free, np.nan), where=mean_free > 0),
            "max_fragmented_gpus": fragmented.max(axis=0),
            "mean_expected_fragmented_gpus": mean(expected),
        }

    capacity = (nodes.filter(pl.col("gpu") > 0).group_by("model")
                .agg(pl.len().cast(pl.Int64).alias("nodes"), pl.col("gpu").sum().cast(pl.Int64).alias("gpus")))
    per_model = pl.DataFrame({"gpu_model": models, **summary(state.free, state.whole, state.fragmented,
                                                             state.expected)}, nan_to_null=True)
    per_model = per_model.join(capacity.rename({"model": "gpu_model"}), on="gpu_model", how="left")
    overall = {k: np.atleast_1d(v) for k, v in summary(*(a.sum(axis=1) for a in (
        state.free, state.whole, state.fragmented, state.expected))).items()}
    total = pl.DataFrame({"gpu_model": [ALL], **overall, "nodes": [int(per_model["nodes"].sum())],
                          "gpus": [int(per_model["gpus"].sum())]}, nan_to_null=True)
    columns = ["gpu_model", "nodes", "gpus", "mean_free_gpus", "mean_free_partial_gpus", "mean_fragmented_gpus",
               "fragmented_share_of_free", "max_fragmented_gpus", "mean_expected_fragmented_gpus"]
    return pl.concat([total.select(columns), per_model.select(columns).cast(total.select(columns).schema)])


def _replay_pods(pods: pl.DataFrame, outcome: list[str]) -> pl.DataFrame:
    """Default pods per replay outcome: pods, GPU pods and GPUs asked."""
    order = {"placed": 0, "unplaced": 1, "zero run time": 2, "never scheduled": 3}
    frame = (pods.with_columns(pl.Series("outcome", outcome))
             .group_by("outcome")
             .agg(pl.len().alias("pods"),
                  (pl.col("gpus_asked") > 0).sum().alias("gpu_pods"),
                  (pl.col("gpus_asked") * pl.col("milli")).sum().alias("gpu_milli")))
    return (frame.with_columns((pl.col("gpu_milli") / WHOLE_GPU_MILLI).alias("gpus"))
            .sort(pl.col("outcome").replace_strict(order, return_dtype=pl.Int32))
            .select("outcome", pl.col("pods").cast(pl.Int64), pl.col("gpu_pods").cast(pl.Int64), "gpus"))


# ---------------------------------------------------------------------------------------------
# The module
# ---------------------------------------------------------------------------------------------


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("sharing")
    _analyze_fractions(ctx, result)
    _analyze_colocation(ctx, result)
    _analyze_gpu_memory(ctx, result)
    _analyze_fragmentation(ctx, result)
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
        result.find("sharing_gpu_time_share", "share of GPU-time of jobs that share a GPU",
                    overall["sharing_gpu_hours_share"][0], "fraction", "sharing.fractional_share",
                    f"{overall['gpu_jobs'][0]:,} GPU jobs")
    distribution = result.add("fraction_distribution", fraction_distribution(ctx), ("sharing.gpus_per_instance",),
                              "an amount of GPU asked by one instance")
    if distribution.height:
        sharing = distribution.filter(pl.col("shares_gpu"))["instances"].sum()
        total = distribution["instances"].sum()
        result.find("sharing_instance_share", "share of GPU instances asking for part of a GPU",
                    sharing / total, "fraction", "sharing.gpus_per_instance", f"{total:,} GPU instances")


def _analyze_colocation(ctx: TraceContext, result: ModuleResult) -> None:
    if ctx.has("pai_instance_table"):
        distribution = result.add("colocation_distribution", colocation_distribution(ctx),
                                  ("sharing.colocation.concurrent_instances",),
                                  "a machine GPU type (or 'all') and a number of instances running at once "
                                  "on a machine")
        summary = colocation_summary(distribution)
        result.find("colocated_busy_time_share",
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
        result.find("machine_num_worker_p50", "median machine_num_worker (workers on the machine)",
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
    result.find("gpu_memory_peak_share_p50", "median peak GPU memory, share of device memory",
                overall["p50_peak_share"][0], "fraction", "sharing.gpu_memory.used_share", population)
    result.find("sharing_instances_over_requested_memory",
                "share of GPU-sharing instances above their memory share",
                overall["sharing_over_requested_share"][0], "fraction",
                "sharing.gpu_memory.over_requested_share",
                f"{overall['sharing_instances'][0]:,} GPU-sharing instances on a sized GPU")


def _analyze_fragmentation(ctx: TraceContext, result: ModuleResult) -> None:
    if not ctx.has("pai_v2023_nodes", "pai_v2023_pods"):
        result.skip("fragmentation of GPU capacity (replay)",
                    f"{ctx.trace} has no node list with pod requests to replay; only Alibaba v2023 has")
        return
    replay = replay_fragmentation(ctx)
    if replay is None:
        result.skip("fragmentation of GPU capacity (replay)",
                    "the node list has no GPU node, or the default workload no pod asking for a GPU "
                    "or none that ran")
        return
    series_definitions = ("sharing.fragmentation.replay", "sharing.fragmentation.free_gpus",
                          "sharing.fragmentation.unusable_gpus", "sharing.fragmentation.expected_unusable_gpus")
    result.add("fragmentation_series", replay.series, series_definitions,
               "an instant of the replay (after its events), seconds from the trace start")
    by_model = result.add("fragmentation_by_model", replay.by_model, series_definitions,
                          "a GPU model of the node list, or 'all'")
    pods = result.add("fragmentation_pods", replay.pods, ("sharing.fragmentation.replay",),
                      "an outcome of the replay for default pods")
    overall = by_model.filter(pl.col("gpu_model") == ALL)
    population = "the replay of the default workload, first to last event"
    result.find("fragmented_gpus_mean", "mean fragmented GPU capacity (time-weighted)",
                overall["mean_fragmented_gpus"][0], "GPUs", "sharing.fragmentation.unusable_gpus", population)
    result.find("fragmented_share_of_free", "fragmented share of free GPU capacity",
                overall["fragmented_share_of_free"][0], "fraction", "sharing.fragmentation.unusable_gpus",
                population)
    unplaced = pods.filter(pl.col("outcome") == "unplaced")
    result.find("unplaced_pods", "scheduled pods the replay could not place",
                int(unplaced["pods"].sum()), "pods", "sharing.fragmentation.replay",
                f"{int(pods.filter(pl.col('outcome').is_in(['placed', 'unplaced']))['pods'].sum()):,} pods replayed")
