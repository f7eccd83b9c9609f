"""The paper's fill-up experiment (Weng et al., ATC 2023, Sec. 6.1), with the rules of the owners'
simulator (hkust-adsl/kubernetes-scheduler-simulator, run with `--shuffle-pod=true -tune 1.3
-tuneseed <seed>`; experiments/run_scripts/generate_run_scripts.py).

Arrivals (`arrival_order`; owners: pkg/simulator/simulator.go `SortClusterPods`,
`TunePodsByNodeTotalResource`, `tuneUpPods`, `tuneDownPods`). The pod list is shuffled with the
seed, every pod once. The list is then tuned to `fill_to` x the cluster's GPU capacity (default 1.3):

- when it asks for fewer GPUs, pods drawn from the list uniformly with replacement are appended for
  as long as the GPUs requested so far plus the drawn pod's share of one GPU (`gpu_milli`, 1000 for
  whole-GPU pods, 0 for CPU-only ones) stay within the target; the first drawn pod that would pass
  it ends the list and is not added;
- when it asks for more, pods picked uniformly at random are removed until the GPUs requested are
  within the target.

Pods arrive one by one and never leave. A pod that fits nowhere fails and is dropped; its request
still counts as arrived (the owners' `arrPodGpuMilli` counts every created pod).

Ties (`TIE_BREAKS`). Every scored policy takes the first node, in the cluster's node order, among
the best scores. With `random` (the default) that order is a seeded random permutation of the nodes
per seed: the owners' `syncClusterResourceList` sorts the nodes by name and prefixes each with a
4-digit number from `rand.Perm` seeded with the run's seed, and their kube-scheduler `selectHost`
takes the smallest name among the best scores. With `name` it is the order of the node names.

Reading a curve (`READINGS`, `summary_at`). One row per arrival. `bin-mean` (the default, the
owners' experiments/analysis/merge_alloc_discrete.py and merge_frag_discrete.py) gives the value at
a whole percent p of capacity as the mean over the arrivals whose arrived workload, rounded to a
whole percent (half to even), is p; when there is none, over those rounded to p - 1, p or p + 1.
`first-reach` gives the value at the first arrival whose arrived workload reaches the level.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import polars as pl

from ddlx.errors import UsageError
from ddlx.placement.cluster import MILLI, Cluster, Task, tasks_from_frame
from ddlx.placement.fragmentation import FragmentationTracker, TargetWorkload, target_workload
from ddlx.placement.policies import PlacementPolicy, make_policy
from ddlx.progress import Progress, step

#: Columns of a fill-up table (one row per arrival). Shares are of the cluster's GPU capacity.
FILL_UP_COLUMNS = {
    "step": "arrival number, 1-based",
    "arrived_pods": "pods arrived so far (placed or failed)",
    "arrived_workload": "GPUs requested by arrived pods / GPU capacity",
    "arrived_percent": "arrived workload in percent of GPU capacity, rounded to a whole percent (half to even)",
    "allocated_gpus": "GPUs allocated (sum of allocated milli-GPU / 1000)",
    "unallocated_share": "1 - allocated GPUs / GPU capacity",
    "fragmented_gpus": "cluster fragmentation: sum over nodes of F_n(M), GPUs",
    "fragmented_share": "fragmented GPUs / GPU capacity",
    "failed": "placements failed so far",
}

#: How score ties between nodes are broken: the order of the nodes a policy takes the first of.
TIE_BREAKS: dict[str, str] = {
    "random": "a seeded random order of the nodes per seed (as the owners' simulator: nodes renamed with a "
              "random prefix, the smallest name among the best scores)",
    "name": "the order of the node names",
}
DEFAULT_TIE_BREAK = "random"

#: How a curve is read at a workload level (a whole percent of capacity for bin-mean).
READINGS: dict[str, str] = {
    "bin-mean": "mean over the arrivals whose arrived workload rounds to the level's whole percent (else to "
                "the percents beside it), as the owners' analysis scripts read their logs",
    "first-reach": "the first arrival whose arrived workload reaches the level",
}
DEFAULT_READING = "bin-mean"

#: The multiple of the GPU capacity the arrivals ask for (the owners' `-tune 1.3`), and the largest allowed.
DEFAULT_FILL_TO = 1.3
MAX_FILL_TO = 10.0


class PlacementOptionError(UsageError):
    """A fill-up setting that is not one ddlx knows (a command-line mistake: exit code 2)."""


def check_placement_settings(fill_to: float = DEFAULT_FILL_TO, tie_break: str = DEFAULT_TIE_BREAK,
                             reading: str = DEFAULT_READING) -> tuple[float, str, str]:
    """The settings when each is valid, else `PlacementOptionError`: `fill_to` a finite multiple of
    the GPU capacity above 0 and at most `MAX_FILL_TO`, `tie_break` one of `TIE_BREAKS`, `reading`
    one of `READINGS`."""
    try:
        value = float(fill_to)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_FILL_TO):
        raise PlacementOptionError(f"fill-to: expected a multiple of the cluster's GPU capacity above 0 and at most "
                                   f"{MAX_FILL_TO:g} (the owners' experiment: 1.3), got '{fill_to}'")
    if tie_break not in TIE_BREAKS:
        raise PlacementOptionError(f"unknown tie-break '{tie_break}'; expected one of: {', '.join(TIE_BREAKS)}")
    if reading not in READINGS:
        raise PlacementOptionError(f"unknown reading '{reading}'; expected one of: {', '.join(READINGS)}")
    return value, tie_break, reading


def arrival_order(tasks: Sequence[Task], capacity_milli: int, rng: np.random.Generator,
                  fill_to: float = DEFAULT_FILL_TO) -> np.ndarray:
    """Indices into `tasks` in arrival order: a seeded permutation of the list, tuned to `fill_to` x
    `capacity_milli` GPUs requested (pods drawn with replacement appended, or random pods removed;
    the module docstring gives the rule)."""
    n = len(tasks)
    request = np.array([t.total_gpu_milli for t in tasks], dtype=np.int64)
    per_gpu = np.array([t.gpu_milli if t.kind != "cpu" else 0 for t in tasks], dtype=np.int64)
    if n == 0 or request.sum() <= 0:
        raise ValueError("the pod list requests no GPU; the fill-up would never end")
    goal = fill_to * capacity_milli
    order = rng.permutation(n)
    total = int(request.sum())
    if total > goal:
        removal = rng.permutation(n)
        left = total - np.cumsum(request[order[removal]])
        removed = int(np.argmax(left <= goal)) + 1
        keep = np.ones(n, dtype=bool)
        keep[removal[:removed]] = False
        return order[keep]
    if total == goal:
        return order
    added = [order]
    while True:
        draws = rng.integers(n, size=max(n, 16))
        cum = np.cumsum(request[draws])
        before = total + cum - request[draws]
        over = before + per_gpu[draws] > goal
        if over.any():
            added.append(draws[: int(np.argmax(over))])
            return np.concatenate(added)
        added.append(draws)
        total += int(cum[-1])


def node_order(num_nodes: int, seed: int, tie_break: str = DEFAULT_TIE_BREAK) -> np.ndarray:
    """The node order of a run of seed `seed` (the tie-break, `TIE_BREAKS`): indices into the nodes
    sorted by name, a permutation drawn from the seed for `random`, the identity for `name`."""
    if tie_break == "name":
        return np.arange(num_nodes, dtype=np.int64)
    check_placement_settings(tie_break=tie_break)
    return np.random.default_rng([seed, 2]).permutation(num_nodes)


def arrived_percent(arrived_milli: np.ndarray, capacity_milli: int) -> np.ndarray:
    """100 x arrived / capacity rounded to a whole percent, half to even (exact, in integers)."""
    quotient, remainder = np.divmod(np.asarray(arrived_milli, dtype=np.int64) * 100, capacity_milli)
    up = (2 * remainder > capacity_milli) | ((2 * remainder == capacity_milli) & (quotient % 2 == 1))
    return quotient + up


def _as_cluster(nodes: pl.DataFrame | Cluster) -> Cluster:
    return nodes.copy() if isinstance(nodes, Cluster) else Cluster.from_frames(nodes)


def prepared_run(cluster_nodes: pl.DataFrame | Cluster, policy: str | PlacementPolicy, seed: int,
                 target: TargetWorkload | None, tie_break: str = DEFAULT_TIE_BREAK) -> tuple[Cluster, PlacementPolicy]:
    """The cluster of a run of seed `seed` (a copy, its nodes in the order of the tie-break,
    `node_order`) and its policy (by name or instance; fgd needs `target`), reset with a value drawn
    from the seed. The fill-up and the replay start their runs with it."""
    cluster = _as_cluster(cluster_nodes)
    if tie_break != "name":
        cluster = cluster.reordered(node_order(cluster.num_nodes, seed, tie_break))
    if isinstance(policy, str):
        policy = make_policy(policy, target, seed)
    policy.reset(int(np.random.default_rng([seed, 1]).integers(2**63 - 1)))
    return cluster, policy


def fill_up(cluster_nodes: pl.DataFrame | Cluster, pods: pl.DataFrame, policy: str | PlacementPolicy, seed: int,
            *, target: TargetWorkload | None = None, fill_to: float = DEFAULT_FILL_TO,
            tie_break: str = DEFAULT_TIE_BREAK, track_fragmentation: bool = True,
            return_cluster: bool = False) -> pl.DataFrame | tuple[pl.DataFrame, Cluster]:
    """Run one fill-up: nodes (frame for `Cluster.from_frames`, or a Cluster, which is copied), pods
    (frame with num_gpus, gpu_milli, cpu_milli, memory_mib, gpu_models), a policy (name or
    instance) and a seed (arrival order, node order of the `random` tie-break, and the random
    policy's generator), filled to `fill_to` x the GPU capacity. The target workload defaults to
    the pod list's. Returns one row per arrival (columns `FILL_UP_COLUMNS`)."""
    fill_to, tie_break, _ = check_placement_settings(fill_to, tie_break)
    tasks = tasks_from_frame(pods)
    target = target if target is not None else target_workload(tasks)
    cluster, policy = prepared_run(cluster_nodes, policy, seed, target, tie_break)
    order = arrival_order(tasks, cluster.gpu_capacity_milli, np.random.default_rng(seed), fill_to)
    tracker = FragmentationTracker(cluster, target) if track_fragmentation else None

    steps = order.size
    arrived = np.empty(steps, dtype=np.int64)
    allocated = np.empty(steps, dtype=np.int64)
    frag = np.full(steps, np.nan)
    failed = np.empty(steps, dtype=np.int64)
    arrived_milli = 0
    n_failed = 0
    for i, t in enumerate(order.tolist()):
        task = tasks[t]
        arrived_milli += task.total_gpu_milli
        choice = policy.select(cluster, task)
        if choice is None:
            n_failed += 1
        else:
            cluster.place(choice.node, choice.gpus, task)
            if tracker is not None:
                tracker.update(choice.node)
        arrived[i] = arrived_milli
        allocated[i] = cluster.allocated_milli
        failed[i] = n_failed
        if tracker is not None:
            frag[i] = tracker.node_frag.sum()
    cap = cluster.gpu_capacity_milli
    table = pl.DataFrame({
        "step": np.arange(1, steps + 1, dtype=np.int64),
        "arrived_pods": np.arange(1, steps + 1, dtype=np.int64),
        "arrived_workload": arrived / cap,
        "arrived_percent": arrived_percent(arrived, cap),
        "allocated_gpus": allocated / MILLI,
        "unallocated_share": 1.0 - allocated / cap,
        "fragmented_gpus": frag / MILLI,
        "fragmented_share": frag / cap,
        "failed": failed,
    })
    return (table, cluster) if return_cluster else table


def _run_one(args: tuple) -> pl.DataFrame:
    nodes, pods, policy, seed, target, fill_to, tie_break = args
    start = time.perf_counter()
    table = fill_up(nodes, pods, policy, seed, target=target, fill_to=fill_to, tie_break=tie_break)
    seconds = time.perf_counter() - start
    return table.with_columns(pl.lit(policy).alias("policy"), pl.lit(seed, dtype=pl.Int64).alias("seed"),
                              pl.lit(seconds).alias("run_seconds"))


def _counted(tables: Iterable[pl.DataFrame], total: int, progress: Progress | None) -> list[pl.DataFrame]:
    """The runs' tables, a step reported as each is done."""
    done: list[pl.DataFrame] = []
    step(progress, "placement", 0, total, "runs")
    for table in tables:
        done.append(table)
        step(progress, "placement", len(done), total, "runs")
    return done


def run_experiment(nodes: pl.DataFrame | Cluster, pods: pl.DataFrame, policies: Iterable[str],
                   seeds: Iterable[int], *, workers: int = 1, fill_to: float = DEFAULT_FILL_TO,
                   tie_break: str = DEFAULT_TIE_BREAK, progress: Progress | None = None) -> pl.DataFrame:
    """Fill-ups for every policy x seed: the long table of `fill_up` rows plus policy, seed and
    run_seconds (wall seconds of that run). `workers` > 1 runs them in that many processes; `progress`
    gets a step per finished run (`ddlx.progress.step`)."""
    fill_to, tie_break, _ = check_placement_settings(fill_to, tie_break)
    cluster = nodes if isinstance(nodes, Cluster) else Cluster.from_frames(nodes)
    target = target_workload(pods)
    jobs = [(cluster, pods, p, int(s), target, fill_to, tie_break) for p in policies for s in seeds]
    if workers > 1:
        # spawn, not fork: forking after polars has started its thread pool can deadlock
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            tables = _counted(pool.map(_run_one, jobs), len(jobs), progress)
    else:
        tables = _counted(map(_run_one, jobs), len(jobs), progress)
    return pl.concat(tables).select("policy", "seed", *FILL_UP_COLUMNS, "run_seconds")


def level_percent(level: float) -> int:
    """A workload level (share of capacity) as the whole percent the bin-mean reading reads;
    ValueError for a level between two whole percents."""
    percent = round(level * 100)
    if abs(level * 100 - percent) > 1e-9:
        raise ValueError(f"the bin-mean reading reads whole percents of capacity, not {level:.2%}")
    return int(percent)


def _per_seed_first_reach(results: pl.DataFrame, level: float, column: str) -> pl.DataFrame:
    return (results.filter(pl.col("arrived_workload") >= level - 1e-12)
            .group_by("policy", "seed").agg(pl.col(column).sort_by("step").first()))


def _per_seed_bin_mean(bins: pl.DataFrame, level: float, column: str) -> pl.DataFrame:
    percent = level_percent(level)
    exact = pl.col("arrived_percent") == percent
    return (bins.filter(pl.col("arrived_percent").is_between(percent - 1, percent + 1))
            .group_by("policy", "seed")
            .agg(pl.col("total").filter(exact).sort().sum().alias("exact_total"),
                 pl.col("rows").filter(exact).sum().alias("exact_rows"),
                 pl.col("total").sort().sum().alias("near_total"), pl.col("rows").sum().alias("near_rows"))
            .select("policy", "seed", pl.when(pl.col("exact_rows") > 0)
                    .then(pl.col("exact_total") / pl.col("exact_rows"))
                    .otherwise(pl.col("near_total") / pl.col("near_rows")).alias(column)))


def summary_at(results: pl.DataFrame, levels: Sequence[float] = (0.9, 0.95, 1.0),
               column: str = "unallocated_share", reading: str = DEFAULT_READING) -> pl.DataFrame:
    """Per policy and arrived-workload level: mean, min and max over seeds of `column` (default the
    unallocated GPU share), each seed's value read by `reading` (`READINGS`; seeds without a value
    at a level are left out; `seeds` counts those kept). Every sum adds its values in sorted order,
    so that the means are the same to the bit from run to run (a group's rows come in no fixed order)."""
    check_placement_settings(reading=reading)
    bins = None
    if reading == "bin-mean":
        bins = results.group_by("policy", "seed", "arrived_percent").agg(
            pl.col(column).sort().sum().alias("total"), pl.len().alias("rows"))
    rows = []
    for level in levels:
        per_seed = (_per_seed_bin_mean(bins, level, column) if bins is not None
                    else _per_seed_first_reach(results, level, column))
        rows.append(per_seed.group_by("policy").agg(
            pl.lit(level).alias("level"),
            pl.col(column).sort().mean().alias("mean"),
            pl.col(column).min().alias("min"),
            pl.col(column).max().alias("max"),
            pl.len().alias("seeds"),
        ))
    return pl.concat(rows).sort("policy", "level")
