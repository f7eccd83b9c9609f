"""Sharing: fractional GPU requests, co-location of work on machines, GPU memory used against the
device's capacity, and fragmentation of GPU capacity under a trace's real tasks.

Parts and what they read:
- fractional requests (canonical jobs; the canonical `gpu_instance_requests` view where the trace
  publishes one): share of GPU jobs and of GPU-time that share a GPU, per GPU type, and the
  distribution of the GPUs asked per instance; on traces whose records tell a part of a GPU from
  a whole one (`TraceInfo.records_gpu_fractions`) or that hold a fractional GPU count;
- co-location and GPU memory: only some traces record where instances ran or their GPU memory;
  those traces declare these parts themselves (`ddlx.analysis.trace_parts`, slots `colocation`
  and `gpu_memory`);
- fragmentation (canonical `gpu_nodes` and `gpu_tasks` views): a replay of the tasks on the
  nodes with their real arrivals and departures by ddlx's placement simulator
  (`ddlx.placement.replay`), read and written by `ddlx.analysis.departure_replay`
  (`replay_fragmentation`), whose definitions this module declares with its own;
- the fill-up experiment of the FGD paper (canonical `gpu_nodes` and `gpu_task_lists` views): the
  real workload fills the GPU nodes without departures under each placement policy
  (`ddlx.placement`), a few seeds (option `placement_seeds`, default 3).
Every trace records each part it lacks as not applicable, with the reason.
"""

from __future__ import annotations

import polars as pl

from ddlx.analysis import departure_replay
from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.placement_inputs import inputs_from
from ddlx.analysis.sql import GPU_HOURS_SQL
from ddlx.analysis.trace_parts import run_trace_parts
from ddlx.datasets.canonical import GPU_INSTANCE_REQUESTS
from ddlx.placement.experiment import run_placement
from ddlx.placement.inputs import DEFAULT_TASK_LIST

#: Label of jobs whose GPU type the trace leaves open (no constraint, or several models allowed).
UNSPECIFIED_GPU_TYPE = "unspecified"
#: Label of the row over every group.
ALL = "all"


DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "sharing.fractional_share", "Share of GPU jobs and GPU-time that share a GPU", "fraction",
        "Among GPU jobs (gpu_job.requests_gpu), the share that are fractional-GPU jobs "
        "(gpu_request.fractional), and the share of GPU-time (gpu_time.request_x_runtime) that "
        "fractional-GPU jobs requested; per canonical gpu_type (jobs without one, which the trace "
        "leaves open, are grouped as 'unspecified') and over all jobs ('all'). Applies to traces "
        "whose records tell a part of a GPU from a whole one and to imported tables with a "
        "fractional GPU count; the other traces record whole GPUs only. {derivations}.",
    ),
    Definition(
        "sharing.gpus_per_instance", "GPUs asked per instance", "GPUs",
        "The GPUs one instance asks for, rounded to 4 decimals: from the trace's "
        "gpu_instance_requests view where it publishes one (each row a group of identical "
        "instances), else num_gpus of a job of one instance (jobs of several instances are left "
        "out). An instance shares a GPU when it asks for a part of one. {derivations}. Counted: "
        "instances, and jobs with at least one such instance.",
    ),
    Definition(
        "sharing.fill_up", "Unallocated GPUs in the fill-up experiment (FGD paper)", "fraction",
        "The fill-up experiment of Weng et al. (ATC'23), as ddlx placement runs it: the trace's real "
        "task list (gpu_task_lists 'default'), shuffled per seed and topped up with tasks drawn from "
        "it with replacement, arrives without departures on the GPU nodes (gpu_nodes with GPUs) until "
        "the GPUs requested reach 1.3 x the GPU capacity (the owners' top-up), under each placement "
        "policy (random, dotprod, gpu-clustering, gpu-packing, best-fit, fgd; docs/placement.md gives "
        "their scoring rules), score ties going to the first node of a seeded random node order. A "
        "task that fits on no node fails and stays counted as arrived. Arrived workload: GPUs "
        "requested by the arrived tasks / capacity. Unallocated share: 1 - allocated GPUs / capacity, "
        "at a whole percent of capacity the mean over the arrivals whose arrived workload rounds to "
        "it (the owners' reading); mean, min and max over the seeds. "
        "Fragmented share: the paper's cluster fragmentation (sum over nodes of F_n(M), M the "
        "popular task classes) / capacity. FGD's cut: (best other policy's mean unallocated share - "
        "FGD's) / the best other's, at the level from 50 % to 130 % where it is largest.",
    ),
    # The fragmentation replay's definitions: ddlx.analysis.departure_replay is not an analysis module of
    # its own (its results are this module's), so `registry()` finds them here.
    *departure_replay.DEFINITIONS,
)


# ---------------------------------------------------------------------------------------------
# Fractional requests
# ---------------------------------------------------------------------------------------------


def records_fractions(ctx: TraceContext) -> bool:
    """True when the trace tells a part of a GPU from a whole one (`TraceInfo.records_gpu_fractions`),
    or holds a fractional GPU count."""
    if ctx.info is not None and ctx.info.records_gpu_fractions:
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
    if ctx.has_view(GPU_INSTANCE_REQUESTS.name):
        source = f"(SELECT gpus_per_instance, shares_gpu, instances, job FROM {GPU_INSTANCE_REQUESTS.name})"
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
# The module
# ---------------------------------------------------------------------------------------------


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("sharing")
    _analyze_fractions(ctx, result)
    run_trace_parts(ctx, result, "colocation",
                    ("instances running at once per machine",
                     "the trace records no placement of instances on machines"),
                    ("workers per machine (machine_num_worker)", "the trace has no per-machine worker counts"))
    run_trace_parts(ctx, result, "gpu_memory",
                    ("GPU memory used against device capacity",
                     "the trace records no GPU memory use per instance with its machine"))
    departure_replay.analyze_fragmentation(ctx, result)
    _analyze_fill_up(ctx, result)
    return result


#: The level of the finding on FGD: arrived tasks asking for the whole GPU capacity.
FULL_CAPACITY = 1.0


def _analyze_fill_up(ctx: TraceContext, result: ModuleResult) -> None:
    """The FGD paper's fill-up experiment on the trace's real task list (definition sharing.fill_up)."""
    if not ctx.has_view("gpu_nodes") or not (ctx.has_view("gpu_task_lists") or ctx.has_view("gpu_tasks")):
        result.skip("fill-up placement experiment (FGD paper)",
                    "the trace publishes no node list with per-task requests (gpu_nodes, gpu_task_lists)")
        return
    seeds = ctx.options.placement_seeds
    inputs = inputs_from(ctx, DEFAULT_TASK_LIST, "gpu")
    if inputs.nodes.is_empty() or inputs.tasks.is_empty():
        result.skip("fill-up placement experiment (FGD paper)", "the node list has no GPU node, or no task")
        return
    experiment = run_placement(inputs, None, seeds)
    row = (f"a placement policy and an arrived-workload level (share of GPU capacity); {seeds} seeds, "
           f"{inputs.source['nodes']:,} GPU nodes, {inputs.source['gpus']:,} GPUs")
    result.add("fill_up_curves", experiment.curves, ("sharing.fill_up",), row)
    result.add("fill_up_summary", experiment.summary, ("sharing.fill_up",), row)
    population = (f"fill-up of the real task list on {inputs.source['gpus']:,} GPUs, {seeds} seeds "
                  "(ddlx placement runs more)")
    full = experiment.summary.filter((pl.col("policy") == "fgd") & (pl.col("level") == FULL_CAPACITY))
    if full.height:
        result.add_finding("fill_up_fgd_unallocated", "GPU share left unallocated by FGD when the arrived tasks "
                           "ask for the whole capacity", full["mean"][0], "fraction", "sharing.fill_up", population)
    gain = experiment.gain
    if gain:
        result.add_finding("fill_up_fgd_cut", f"fewer GPUs left unallocated by FGD than by the best other "
                           f"policy ({gain['best_other']}), at {gain['level']:.0%} arrived workload",
                           gain["cut_share"], "fraction", "sharing.fill_up", population)


def _analyze_fractions(ctx: TraceContext, result: ModuleResult) -> None:
    if not records_fractions(ctx):
        result.skip("fractional GPU requests (GPU sharing)",
                    f"{ctx.label} records whole GPUs only: no job asks for a part of a GPU")
        return
    by_type = result.add("fractional_by_gpu_type", fractional_by_gpu_type(ctx),
                         ("sharing.fractional_share", "gpu_request.fractional", "gpu_time.request_x_runtime"),
                         "a GPU type (canonical gpu_type, 'unspecified' when none), or 'all'")
    overall = by_type.filter(pl.col("gpu_type") == ALL)
    if not overall.is_empty():
        result.add_finding("sharing_gpu_time_share", "share of GPU-time of jobs that share a GPU",
                           overall["sharing_gpu_hours_share"][0], "fraction", "sharing.fractional_share",
                           f"{overall['gpu_jobs'][0]:,} GPU jobs", basis=overall["gpu_jobs"][0])
    distribution = result.add("fraction_distribution", fraction_distribution(ctx), ("sharing.gpus_per_instance",),
                              "an amount of GPU asked by one instance")
    if distribution.height:
        sharing = distribution.filter(pl.col("shares_gpu"))["instances"].sum()
        total = distribution["instances"].sum()
        result.add_finding("sharing_instance_share", "share of GPU instances asking for part of a GPU",
                           sharing / total, "fraction", "sharing.gpus_per_instance", f"{total:,} GPU instances",
                           basis=total)
