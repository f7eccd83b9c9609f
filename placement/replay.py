"""Arrivals with departures: pods placed at their arrival and removed at their departure, on the one
cluster model (`Cluster`) under any policy of `POLICIES`, tracking free and fragmented GPU capacity
after every instant. The fill-up (`fillup`) is the same placement without departures.

Events. A pod with an arrival time arrives then and, when it has a departure time, leaves then; a
pod without an arrival is `never scheduled` and a pod whose departure is not after its arrival has
`zero run time`: neither is placed. At one instant the departures come first, then the arrivals in
the order of the pod list's rows. An arriving pod goes where the policy puts it, or is `unplaced`
when it fits on no node (it is not retried and its departure changes nothing). A departure gives
back exactly what the placement took: the pod's CPU and memory, and its share on each GPU it took.

Instants are the times of the events that happen (arrivals, placed or not, and departures of placed
pods); the state is measured after the last event of each instant. Runs start as the fill-up's
(`fillup.prepared_run`): the node order of the seed's tie-break, the policy reset from the seed.

Units: GPU capacity in milli-GPU inside (`MILLI` = one GPU) and in GPUs in `Replay.frame`; times in
the pods' own unit (seconds from the trace start for a trace's pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from ddlx.placement.cluster import MILLI, Cluster, tasks_from_frame
from ddlx.placement.fillup import DEFAULT_TIE_BREAK, check_placement_settings, prepared_run
from ddlx.placement.fragmentation import (
    FRAGMENTATION_MEASURES,
    FragmentationTracker,
    TargetWorkload,
    check_fragmentation_settings,
    target_workload,
)
from ddlx.placement.policies import Placement, PlacementPolicy

#: What became of a pod in the replay.
OUTCOMES: dict[str, str] = {
    "placed": "arrived and placed on a node",
    "unplaced": "arrived and fitted on no node",
    "zero run time": "its departure is not after its arrival: not placed",
    "never scheduled": "no arrival time: not placed",
}
#: The replay's default policy: the owners' best-fit (`BestFitPolicy`).
DEFAULT_REPLAY_POLICY = "best-fit"
#: Columns of `Replay.frame` (one row per instant and GPU model).
REPLAY_COLUMNS: dict[str, str] = {
    "t": "the instant (after its events), in the pods' time unit",
    "gpu_model": "the GPU model of the nodes (null: GPU nodes without a model)",
    "pods_running": "pods placed and not yet departed, over the whole cluster",
    "free_gpus": "GPU capacity not taken by placed pods, GPUs",
    "free_whole_gpus": "GPUs entirely free",
    **{f"{name}_gpus": f"fragmentation measure '{name}' summed over the nodes, GPUs"
       for name in FRAGMENTATION_MEASURES},
}

_DEPARTURE, _ARRIVAL = 0, 1


@dataclass
class Replay:
    """What a replay found. Arrays over the T instants, or instants x the C GPU-model columns
    (`models`, the models of the cluster's GPU nodes; None for GPU nodes without a model).

    `placements[i]` is the pod's (node name, GPU slots) when it was placed, else None;
    `outcomes[i]` one of `OUTCOMES`, both in the order of the pod list."""

    times: np.ndarray
    running: np.ndarray
    models: list[str | None]
    model_nodes: np.ndarray
    model_gpus: np.ndarray
    free_milli: np.ndarray
    whole_free: np.ndarray
    measured_milli: dict[str, np.ndarray]
    outcomes: list[str]
    placements: list[tuple[str, tuple[int, ...]] | None]
    policy: str
    target: TargetWorkload

    def frame(self) -> pl.DataFrame:
        """One row per instant and GPU model (columns `REPLAY_COLUMNS`, then `{name}_{measure}_gpus` for
        each target of `run_replay`'s `also_against`), in GPUs."""
        t, c = self.free_milli.shape
        return pl.DataFrame({
            "t": np.repeat(self.times, c),
            "gpu_model": self.models * t,
            "pods_running": np.repeat(self.running, c),
            "free_gpus": self.free_milli.ravel() / MILLI,
            "free_whole_gpus": self.whole_free.ravel().astype(np.int64),
            **{f"{name}_gpus": values.ravel() / MILLI for name, values in self.measured_milli.items()},
        }, schema_overrides={"gpu_model": pl.String})

    def outcome_counts(self) -> dict[str, int]:
        """Pods per outcome (every outcome of `OUTCOMES`, zero included)."""
        counts = dict.fromkeys(OUTCOMES, 0)
        for outcome in self.outcomes:
            counts[outcome] += 1
        return counts


class _ModelTotals:
    """Free milli-GPU, entirely free GPUs and each measure per GPU-model column, kept current node by
    node (`refresh` after the tracker has measured the node)."""

    def __init__(self, cluster: Cluster, measured: dict[str, np.ndarray]) -> None:
        self.cluster, self.measured = cluster, measured
        gpu_nodes = cluster.gpu_count > 0
        self.labels: list[str | None] = list(cluster.models)
        if (gpu_nodes & (cluster.model_idx < 0)).any():
            self.labels.append(None)
        # Column of each node: its model, the last column for GPU nodes without one, -1 for CPU-only nodes
        # (which hold no GPU capacity and are left out).
        self.column = np.where(gpu_nodes, np.where(cluster.model_idx >= 0, cluster.model_idx, len(cluster.models)), -1)
        kept = self.column >= 0
        width = len(self.labels)
        self.node_count = np.bincount(self.column[kept], minlength=width)
        self.gpu_count = np.bincount(self.column[kept], weights=cluster.gpu_count[kept], minlength=width).astype(
            np.int64)
        current = self._values()
        self.totals = {key: np.bincount(self.column[kept], weights=values[kept], minlength=width).astype(values.dtype)
                       for key, values in current.items()}
        self.last = {key: values.copy() for key, values in current.items()}

    def _values(self) -> dict[str, np.ndarray]:
        return {"free": self.cluster.gpu_left, "whole": self.cluster.full_gpus, **self.measured}

    def refresh(self, node: int) -> None:
        column = self.column[node]
        if column < 0:
            return
        for key, values in self._values().items():
            self.totals[key][column] += values[node] - self.last[key][node]
            self.last[key][node] = values[node]

    def now(self) -> dict[str, np.ndarray]:
        return {key: values.copy() for key, values in self.totals.items()}


def run_replay(cluster_nodes: pl.DataFrame | Cluster, pods: pl.DataFrame,
           policy: str | PlacementPolicy = DEFAULT_REPLAY_POLICY, seed: int = 0, *,
           target: TargetWorkload | None = None, tie_break: str = DEFAULT_TIE_BREAK,
           measures: tuple[str, ...] = tuple(FRAGMENTATION_MEASURES),
           also_against: Mapping[str, TargetWorkload] | None = None) -> Replay:
    """Replay `pods` on the nodes (frame for `Cluster.from_frames`, or a Cluster, which is copied)
    under `policy` (name in `POLICIES` or instance), with the module docstring's events.

    `pods`: the task columns of `tasks_from_frame` (num_gpus, gpu_milli, cpu_milli, memory_mib,
    gpu_models) and `arrive` and `depart` (integer times, null = never arrives / never leaves), in
    the order arrivals at one instant are placed. `seed` and `tie_break` as in the fill-up. `target`
    (default: the paper's target workload of `pods`, `target_workload`) is what the fragmentation
    measures (`measures`, names of `FRAGMENTATION_MEASURES`) and fgd are against. `also_against`
    names other target workloads each of `measures` is also taken against, in the same run (the
    target steers no placement but fgd's): `measured_milli[f"{name}_{measure}"]`."""
    check_placement_settings(tie_break=tie_break)
    check_fragmentation_settings(measures=measures)
    tasks = tasks_from_frame(pods)
    target = target if target is not None else target_workload(tasks)
    cluster, chosen = prepared_run(cluster_nodes, policy, seed, target, tie_break)
    trackers = {"": FragmentationTracker(cluster, target, measures),
                **{f"{name}_": FragmentationTracker(cluster, other, measures)
                   for name, other in (also_against or {}).items()}}
    measured = {prefix + measure: values for prefix, tracker in trackers.items()
                for measure, values in tracker.node_values.items()}
    totals = _ModelTotals(cluster, measured)

    outcomes = ["never scheduled"] * len(tasks)
    events: list[tuple[int, int, int]] = []
    for i, (arrive, depart) in enumerate(pods.select("arrive", "depart").rows()):
        if arrive is None:
            continue
        if depart is not None and depart <= arrive:
            outcomes[i] = "zero run time"
            continue
        events.append((int(arrive), _ARRIVAL, i))
        if depart is not None:
            events.append((int(depart), _DEPARTURE, i))
    events.sort()

    placed: dict[int, Placement] = {}
    placements: list[tuple[str, tuple[int, ...]] | None] = [None] * len(tasks)
    times: list[int] = []
    running: list[int] = []
    states: list[dict[str, np.ndarray]] = []
    touched: set[int] = set()

    def record(t: int) -> None:
        for node in touched:
            for tracker in trackers.values():
                tracker.update(node)
            totals.refresh(node)
        touched.clear()
        times.append(t)
        running.append(len(placed))
        states.append(totals.now())

    current: int | None = None
    for t, kind, i in events:
        if kind == _DEPARTURE and i not in placed:
            continue  # the departure of a pod the replay could not place changes nothing
        if current is not None and t != current:
            record(current)
        current = t
        task = tasks[i]
        if kind == _DEPARTURE:
            spot = placed.pop(i)
            cluster.release(spot.node, spot.gpus, task)
            touched.add(spot.node)
            continue
        spot = chosen.select(cluster, task)
        if spot is None:
            outcomes[i] = "unplaced"
            continue
        cluster.place(spot.node, spot.gpus, task)
        placed[i] = spot
        placements[i] = (cluster.names[spot.node], tuple(spot.gpus))
        outcomes[i] = "placed"
        touched.add(spot.node)
    if current is not None:
        record(current)

    columns = len(totals.labels)
    return Replay(
        times=np.array(times, dtype=np.int64), running=np.array(running, dtype=np.int64),
        models=totals.labels, model_nodes=totals.node_count, model_gpus=totals.gpu_count,
        free_milli=np.array([s["free"] for s in states], dtype=np.int64).reshape(-1, columns),
        whole_free=np.array([s["whole"] for s in states], dtype=np.int64).reshape(-1, columns),
        measured_milli={name: np.array([s[name] for s in states], dtype=np.float64).reshape(-1, columns)
                        for name in measured},
        outcomes=outcomes, placements=placements, policy=getattr(chosen, "name", str(policy)), target=target)
