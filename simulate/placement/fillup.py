"""The paper's fill-up experiment (Weng et al., ATC 2023, Sec. 6.1; owners' simulator
pkg/simulator/core.go + simulator.go with `--shuffle-pod=true -tune 1.3 -tuneseed <seed>`).

Arrival order, as the owners build it: the pod list is shuffled with the seed (a permutation: every
pod once), and because the pod list asks for fewer GPUs than the target, further pods are drawn from
the list uniformly WITH replacement and appended (the owners' `tuneUpPods`). Pods arrive one by one
and never leave. We stop at the first arrival after which the GPUs requested by arrived pods reach
the cluster's GPU capacity (the owners tune to 1.3 x capacity and plot up to 100 %).

A pod that fits nowhere fails and is dropped; its request still counts as arrived (as the owners'
`arrPodGpuMilli` does).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import polars as pl

from ddlx.simulate.placement.cluster import MILLI, Cluster, Task, tasks_from_frame
from ddlx.simulate.placement.fragmentation import FragmentationTracker, TargetWorkload, target_workload
from ddlx.simulate.placement.policies import PlacementPolicy, make_policy

#: Columns of a fill-up table (one row per arrival). Shares are of the cluster's GPU capacity.
FILL_UP_COLUMNS = {
    "step": "arrival number, 1-based",
    "arrived_pods": "pods arrived so far (placed or failed)",
    "arrived_workload": "GPUs requested by arrived pods / GPU capacity",
    "allocated_gpus": "GPUs allocated (sum of allocated milli-GPU / 1000)",
    "unallocated_share": "1 - allocated GPUs / GPU capacity",
    "fragmented_gpus": "cluster fragmentation: sum over nodes of F_n(M), GPUs",
    "fragmented_share": "fragmented GPUs / GPU capacity",
    "failed": "placements failed so far",
}


def arrival_order(tasks: Sequence[Task], capacity_milli: int, rng: np.random.Generator,
                  level: float = 1.0) -> np.ndarray:
    """Indices into `tasks` in arrival order: a seeded permutation, then draws with replacement, cut
    at the first arrival where cumulative requested milli-GPU >= level x capacity."""
    n = len(tasks)
    req = np.array([t.total_gpu_milli for t in tasks], dtype=np.int64)
    if n == 0 or req.sum() <= 0:
        raise ValueError("the pod list requests no GPU; the fill-up would never end")
    goal = level * capacity_milli
    order = rng.permutation(n)
    cum = np.cumsum(req[order])
    while cum[-1] < goal:
        extra = rng.integers(n, size=max(n, 16))
        order = np.concatenate([order, extra])
        cum = np.concatenate([cum, cum[-1] + np.cumsum(req[extra])])
    stop = int(np.searchsorted(cum, goal, side="left"))
    return order[: stop + 1]


def _as_cluster(nodes: pl.DataFrame | Cluster) -> Cluster:
    return nodes.copy() if isinstance(nodes, Cluster) else Cluster.from_frames(nodes)


def fill_up(cluster_nodes: pl.DataFrame | Cluster, pods: pl.DataFrame, policy: str | PlacementPolicy, seed: int,
            *, target: TargetWorkload | None = None, level: float = 1.0, track_fragmentation: bool = True,
            return_cluster: bool = False) -> pl.DataFrame | tuple[pl.DataFrame, Cluster]:
    """Run one fill-up: nodes (frame for `Cluster.from_frames`, or a Cluster, which is copied), pods
    (frame with num_gpus, gpu_milli, cpu_milli, memory_mib, gpu_models), a policy (name or
    instance) and a seed (arrival order; also the random policy's generator). The target workload
    defaults to the pod list's. Returns one row per arrival (columns `FILL_UP_COLUMNS`)."""
    cluster = _as_cluster(cluster_nodes)
    tasks = tasks_from_frame(pods)
    target = target if target is not None else target_workload(tasks)
    rng = np.random.default_rng(seed)
    if isinstance(policy, str):
        policy = make_policy(policy, target, seed)
    policy.reset(int(np.random.default_rng([seed, 1]).integers(2**63 - 1)))
    order = arrival_order(tasks, cluster.gpu_capacity_milli, rng, level)
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
        "allocated_gpus": allocated / MILLI,
        "unallocated_share": 1.0 - allocated / cap,
        "fragmented_gpus": frag / MILLI,
        "fragmented_share": frag / cap,
        "failed": failed,
    })
    return (table, cluster) if return_cluster else table


def _run_one(args: tuple) -> pl.DataFrame:
    nodes, pods, policy, seed, target = args
    start = time.perf_counter()
    table = fill_up(nodes, pods, policy, seed, target=target)
    seconds = time.perf_counter() - start
    return table.with_columns(pl.lit(policy).alias("policy"), pl.lit(seed, dtype=pl.Int64).alias("seed"),
                              pl.lit(seconds).alias("run_seconds"))


def run_experiment(nodes: pl.DataFrame | Cluster, pods: pl.DataFrame, policies: Iterable[str],
                   seeds: Iterable[int], *, workers: int = 1) -> pl.DataFrame:
    """Fill-ups for every policy x seed: the long table of `fill_up` rows plus policy, seed and
    run_seconds (wall seconds of that run). `workers` > 1 runs them in that many processes."""
    cluster = nodes if isinstance(nodes, Cluster) else Cluster.from_frames(nodes)
    target = target_workload(pods)
    jobs = [(cluster, pods, p, int(s), target) for p in policies for s in seeds]
    if workers > 1:
        # spawn, not fork: forking after polars has started its thread pool can deadlock
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            tables = list(pool.map(_run_one, jobs))
    else:
        tables = [_run_one(j) for j in jobs]
    return pl.concat(tables).select("policy", "seed", *FILL_UP_COLUMNS, "run_seconds")


def summary_at(results: pl.DataFrame, levels: Sequence[float] = (0.9, 0.95, 1.0),
               column: str = "unallocated_share") -> pl.DataFrame:
    """Per policy and arrived-workload level: mean, min and max over seeds of `column` (default the
    unallocated GPU share) at the first step whose arrived workload reaches the level (seeds that
    never reach it are left out; `seeds` counts those kept)."""
    rows = []
    for level in levels:
        first = (results.filter(pl.col("arrived_workload") >= level - 1e-12)
                 .group_by("policy", "seed").agg(pl.col(column).sort_by("step").first()))
        rows.append(first.group_by("policy").agg(
            pl.lit(level).alias("level"),
            pl.col(column).mean().alias("mean"),
            pl.col(column).min().alias("min"),
            pl.col(column).max().alias("max"),
            pl.len().alias("seeds"),
        ))
    return pl.concat(rows).sort("policy", "level")
