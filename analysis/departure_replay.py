"""Departure replay of the sharing module: the trace's real tasks (pods) replayed on its real nodes
with their real arrivals and departures by `ddlx.placement.replay`, which holds the node
model, the policy and the fragmentation measures; this module reads the views and writes the
module's tables and findings.

Data: the canonical `gpu_nodes` view (the nodes: GPUs, GPU model, CPU, memory) and `gpu_tasks`
view (the tasks of the workload: GPUs and share asked, CPU, memory, allowed GPU models, creation,
placement and departure in seconds), as the trace publishes them (`ddlx.datasets.canonical`).
Traces that publish neither have no node list with task requests: the part is recorded as not
applicable.

Definitions (declared here, registered through `ddlx.analysis.sharing`, which writes the results):
- `sharing.fragmentation.replay`: the event replay and its placement policy (best-fit, ties to the
  first node by name);
- `sharing.fragmentation.free_gpus`: free GPU capacity after an instant, whole and partial;
- `sharing.fragmentation.unusable_gpus`: free capacity no GPU class of the workload could use
  (measure `unusable`);
- `sharing.fragmentation.expected_unusable_gpus`: Weng et al.'s (ATC'23) fragmentation measure
  (measure `expected`).

Units: GPU capacity in GPUs; times in seconds from the trace start (`t_s`), also as UTC
timestamps (`t`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.datasets.canonical import GPU_NODES, GPU_TASKS
from ddlx.placement.cluster import MILLI, tasks_from_frame
from ddlx.placement.fragmentation import DEFAULT_POPULARITY, target_workload
from ddlx.placement.replay import DEFAULT_REPLAY_POLICY, OUTCOMES, run_replay

#: Label of the row over every GPU model.
ALL = "all"
#: How the replay breaks score ties: the first node by name (`ddlx.placement.fillup.TIE_BREAKS`).
REPLAY_TIE_BREAK = "name"

_TARGET = (f"the paper's target workload of the default pods: their classes of (cpu_milli, GPU share, "
           f"num_gpu, gpu_spec), of every default pod, scheduled or not, CPU-only ones included, ranked "
           f"by pod count, the most popular kept until they cover {DEFAULT_POPULARITY:.0%} of the pods; "
           "memory is not part of a class and is not checked")

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "sharing.fragmentation.replay", "Replay of the real workload on the real nodes", "pods",
        "The tasks (pods) of the trace's gpu_tasks view, its default workload, are replayed on every "
        "node of its gpu_nodes view (GPUs, GPU model, CPU, memory; CPU-only nodes too) by ddlx's "
        "placement simulator (ddlx.placement.replay): {derivations}. A pod arrives at its "
        "scheduled_time (start_s) and leaves at its deletion_time (never-scheduled pods and pods with "
        "deletion_time <= scheduled_time are not placed; a pod without deletion_time stays). At one "
        "instant, departures come before arrivals, and arrivals go in (scheduled_time, creation_time, "
        "name) order. Placement policy, the FGD owners' best-fit: among the nodes where the pod fits "
        "(the free CPU and memory it asks for and, for a GPU pod, a GPU model its gpu_spec allows, "
        "any when NULL, and one GPU with at least its share free for num_gpu 1, else num_gpu "
        "entirely free GPUs), the node with the highest integer score int(100 (1 - s)), s = 0.5 "
        "(free milli-CPU - request) / 128,000 + 0.5 (free milli-GPU - request) / 8,000; score ties "
        "go to the first node by name. On the node a pod of one GPU takes the GPU with the least "
        "free share that still fits (then the lowest index), a pod of several GPUs the "
        "lowest-indexed entirely free GPUs. A departure gives back exactly the CPU, memory and GPU "
        "shares its placement took. A pod that fits on no node is counted as unplaced and not "
        "retried. The replay's instants are those of its events (an arrival, placed or not, or "
        "the departure of a placed pod).",
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
        "(sharing.fragmentation.free_gpus) that no GPU class of the target workload can use "
        f"(fragmentation measure 'unusable', docs/placement.md); the target workload is {_TARGET}. "
        "A class can use a GPU's free share f on a node when the node's model is allowed for it, "
        "the node has the milli-CPU it asks for free and num_gpu GPUs with at least its share of "
        "one GPU free, and f is at least that share. A GPU's free share counts as fragmented when "
        "no class can use it, because of its size, the node's free CPU or its model. Time-weighted "
        "as in sharing.fragmentation.free_gpus.",
    ),
    Definition(
        "sharing.fragmentation.expected_unusable_gpus", "Expected fragmented GPU capacity", "GPUs",
        "The fragmentation measure of Weng et al. (ATC'23, 'Beware of Fragmentation'; measure "
        "'expected', docs/placement.md) in the replay: the sum over nodes of F_n(M) = sum over the "
        "classes m of the target workload M of p_m F_n(m), p_m the class's share of the kept pods, "
        "F_n(m) the free GPU share of node n that m cannot use (all of it when m asks for no GPU or "
        "cannot run on the node for its model, CPU or GPUs; else the free share of the GPUs whose "
        f"free share is below m's share of one GPU); M is {_TARGET}. Unlike "
        "sharing.fragmentation.unusable_gpus it is above 0 even on an empty cluster, where CPU-only "
        "classes and nodes too small for some classes count.",
    ),
    Definition(
        "sharing.fragmentation.expected_unusable_gpus_gpu_pods", "Expected fragmented GPU capacity, GPU pods",
        "GPUs",
        "sharing.fragmentation.expected_unusable_gpus, taken in the same replay with M the target "
        "workload of the default pods that ask for a GPU (target pods 'gpu', docs/placement.md): "
        "their classes, weighted by their shares of those pods. The paper's M includes CPU-only "
        "pods, for which every free GPU is a fragment: on a cluster with much free capacity its "
        "value is mostly their share of the free GPUs, while this one counts only what GPU pods "
        "cannot use.",
    ),
)


@dataclass
class FragmentationReplay:
    """What the replay of the default workload found.

    `series`: one row per event instant; `by_model`: one row per GPU model and 'all';
    `pods`: one row per replay outcome of the default pods."""

    series: pl.DataFrame
    by_model: pl.DataFrame
    pods: pl.DataFrame


def replay_fragmentation(ctx: TraceContext) -> FragmentationReplay | None:
    """Replay the default workload (`gpu_tasks`) on the nodes (`gpu_nodes`) and measure free and
    fragmented GPU capacity (definitions `sharing.fragmentation.*`); None when the node list has
    no GPU node, or the default workload no pod asking for a GPU or none that ran."""
    nodes = ctx.query(f"""SELECT node, coalesce(cpu_milli, 0) AS cpu_milli, coalesce(memory_mib, 0) AS memory_mib,
                                 coalesce(gpus, 0) AS gpus, gpu_model
                          FROM {GPU_NODES.name} ORDER BY node""")
    pods = ctx.query(f"""
        SELECT task, coalesce(num_gpus, 0) AS num_gpus, gpu_milli, coalesce(cpu_milli, 0) AS cpu_milli,
               memory_mib, gpu_models, start_s AS arrive, end_s AS depart
        FROM {GPU_TASKS.name} ORDER BY start_s, submit_s, task""")
    requested = [t.total_gpu_milli for t in tasks_from_frame(pods)]
    if not (nodes["gpus"] > 0).any() or not any(requested):
        return None
    # beside the paper's measure, the same against the GPU pods' classes alone
    run = run_replay(nodes, pods, DEFAULT_REPLAY_POLICY, target=target_workload(pods), tie_break=REPLAY_TIE_BREAK,
                     also_against={"gpu_pods": target_workload(pods, from_pods="gpu")})
    if run.times.size == 0:
        return None
    frame = run.frame().rename({"t": "t_s"})
    capacity = pl.DataFrame({"gpu_model": run.models, "nodes": run.model_nodes, "gpus": run.model_gpus},
                            schema_overrides={"gpu_model": pl.String, "nodes": pl.Int64, "gpus": pl.Int64})
    outcomes = pods.select(pl.Series("outcome", run.outcomes), pl.Series("gpu_milli", requested, dtype=pl.Int64))
    return FragmentationReplay(series=_series(frame), by_model=_by_model(frame, capacity), pods=_pods(outcomes))


#: The measures of the replay under the names of the module's tables.
_MEASURE_COLUMNS = {"unusable_gpus": "fragmented_gpus", "expected_gpus": "expected_fragmented_gpus",
                    "gpu_pods_expected_gpus": "expected_fragmented_gpus_gpu_pods"}
_SUMMED = ("free_gpus", "free_whole_gpus", "fragmented_gpus", "expected_fragmented_gpus",
           "expected_fragmented_gpus_gpu_pods")


def _series(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per event instant, over the GPU nodes of the cluster."""
    totals = (frame.rename(_MEASURE_COLUMNS).group_by("t_s", maintain_order=True)
              .agg(pl.col("pods_running").first(), *(pl.col(c).sum() for c in _SUMMED)))
    return totals.with_columns(
        pl.from_epoch("t_s", time_unit="s").dt.replace_time_zone("UTC").alias("t"),
        pl.col("free_whole_gpus").cast(pl.Float64),
        (pl.col("free_gpus") - pl.col("free_whole_gpus")).alias("free_partial_gpus"),
        pl.when(pl.col("free_gpus") > 0).then(pl.col("fragmented_gpus") / pl.col("free_gpus"))
        .alias("fragmented_share_of_free"),
    ).select("t_s", "t", "pods_running", "free_gpus", "free_whole_gpus", "free_partial_gpus",
             "fragmented_gpus", "fragmented_share_of_free", "expected_fragmented_gpus",
             "expected_fragmented_gpus_gpu_pods")


def _by_model(frame: pl.DataFrame, capacity: pl.DataFrame) -> pl.DataFrame:
    """Per GPU model and over all ('all'): time-weighted means (first to last event, each state
    holding until the next instant; the last state when the replay has one instant) of free and
    fragmented capacity, and the largest fragmented capacity seen."""
    frame = frame.rename(_MEASURE_COLUMNS).with_columns(
        (pl.col("free_gpus") - pl.col("free_whole_gpus")).alias("free_partial_gpus"))
    overall = frame.group_by("t_s", maintain_order=True).agg(
        pl.lit(ALL).alias("gpu_model"), *(pl.col(c).sum() for c in ("free_gpus", "free_partial_gpus",
                                                                    "fragmented_gpus", "expected_fragmented_gpus",
                                                                    "expected_fragmented_gpus_gpu_pods")))
    both = pl.concat([overall, frame.select(overall.columns)], how="vertical_relaxed")
    times = frame["t_s"].unique().sort()
    held = pl.DataFrame({"t_s": times, "held_s": (-times.diff(-1)).fill_null(0)})
    span = float(held["held_s"].sum())

    def mean(column: str) -> pl.Expr:
        if span > 0:
            return ((pl.col(column) * pl.col("held_s")).sum() / span).alias(f"mean_{column}")
        return pl.col(column).sort_by("t_s").last().alias(f"mean_{column}")

    summary = (both.join(held, on="t_s").group_by("gpu_model", maintain_order=True)
               .agg(mean("free_gpus"), mean("free_partial_gpus"), mean("fragmented_gpus"),
                    pl.col("fragmented_gpus").max().alias("max_fragmented_gpus"), mean("expected_fragmented_gpus"),
                    mean("expected_fragmented_gpus_gpu_pods"))
               .with_columns(pl.when(pl.col("mean_free_gpus") > 0)
                             .then(pl.col("mean_fragmented_gpus") / pl.col("mean_free_gpus"))
                             .alias("fragmented_share_of_free")))
    capacity = pl.concat([pl.DataFrame({"gpu_model": [ALL], "nodes": [int(capacity["nodes"].sum())],
                                        "gpus": [int(capacity["gpus"].sum())]}), capacity])
    columns = ["gpu_model", "nodes", "gpus", "mean_free_gpus", "mean_free_partial_gpus", "mean_fragmented_gpus",
               "fragmented_share_of_free", "max_fragmented_gpus", "mean_expected_fragmented_gpus",
               "mean_expected_fragmented_gpus_gpu_pods"]
    return capacity.join(summary, on="gpu_model", how="left", nulls_equal=True, maintain_order="left").select(columns)


def _pods(outcomes: pl.DataFrame) -> pl.DataFrame:
    """Default pods per replay outcome (those that occur): pods, GPU pods and GPUs asked."""
    order = {name: i for i, name in enumerate(OUTCOMES)}
    return (outcomes.group_by("outcome")
            .agg(pl.len().cast(pl.Int64).alias("pods"),
                 (pl.col("gpu_milli") > 0).sum().cast(pl.Int64).alias("gpu_pods"),
                 (pl.col("gpu_milli").sum() / MILLI).alias("gpus"))
            .sort(pl.col("outcome").replace_strict(order, return_dtype=pl.Int32)))


# ---------------------------------------------------------------------------------------------
# Results (written by the `sharing` module)
# ---------------------------------------------------------------------------------------------


def analyze_fragmentation(ctx: TraceContext, result: ModuleResult) -> None:
    """Add the replay's tables and findings to `result` (module `sharing`), or record why it does
    not apply."""
    if not ctx.has_view(GPU_NODES.name, GPU_TASKS.name):
        result.skip("fragmentation of GPU capacity (replay)",
                    f"{ctx.label} publishes no node list with task requests to replay (gpu_nodes, gpu_tasks)")
        return
    found = replay_fragmentation(ctx)
    if found is None:
        result.skip("fragmentation of GPU capacity (replay)",
                    "the node list has no GPU node, or the default workload no pod asking for a GPU "
                    "or none that ran")
        return
    series_definitions = ("sharing.fragmentation.replay", "sharing.fragmentation.free_gpus",
                          "sharing.fragmentation.unusable_gpus", "sharing.fragmentation.expected_unusable_gpus",
                          "sharing.fragmentation.expected_unusable_gpus_gpu_pods")
    result.add("fragmentation_series", found.series, series_definitions,
               "an instant of the replay (after its events), seconds from the trace start")
    by_model = result.add("fragmentation_by_model", found.by_model, series_definitions,
                          "a GPU model of the node list, or 'all'")
    pods = result.add("fragmentation_pods", found.pods, ("sharing.fragmentation.replay",),
                      "an outcome of the replay for default pods")
    overall = by_model.filter(pl.col("gpu_model") == ALL)
    population = "the replay of the default workload with its real arrivals and departures, first to last event"
    replayed = int(pods.filter(pl.col("outcome").is_in(["placed", "unplaced"]))["pods"].sum())
    result.add_finding("expected_fragmented_gpus_mean",
                       "mean fragmented GPU capacity, the FGD paper's measure (time-weighted; CPU-only pods "
                       "count every free GPU as fragmented, so it is high on an idle cluster: see the GPU pods' "
                       "alone beside it)",
                       overall["mean_expected_fragmented_gpus"][0], "GPUs",
                       "sharing.fragmentation.expected_unusable_gpus", population, basis=replayed)
    result.add_finding("expected_fragmented_gpus_gpu_pods_mean",
                       "mean fragmented GPU capacity, the FGD paper's measure against the GPU pods' classes "
                       "alone (time-weighted)",
                       overall["mean_expected_fragmented_gpus_gpu_pods"][0], "GPUs",
                       "sharing.fragmentation.expected_unusable_gpus_gpu_pods", population, basis=replayed)
    result.add_finding("fragmented_gpus_mean", "mean GPU capacity no task class could use (time-weighted)",
                       overall["mean_fragmented_gpus"][0], "GPUs", "sharing.fragmentation.unusable_gpus", population,
                       basis=replayed)
    result.add_finding("fragmented_share_of_free", "share of free GPU capacity no task class could use",
                       overall["fragmented_share_of_free"][0], "fraction", "sharing.fragmentation.unusable_gpus",
                       population, basis=replayed)
    unplaced = pods.filter(pl.col("outcome") == "unplaced")
    result.add_finding(
        "unplaced_pods", "scheduled pods the replay could not place", int(unplaced["pods"].sum()), "pods",
        "sharing.fragmentation.replay",
        f"{replayed:,} pods replayed")
