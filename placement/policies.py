"""Placement policies: which node, and which GPUs of it, a task gets.

Each policy reproduces a score plugin of the owners' simulator
(hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go) with the settings of
the paper's runs (experiments/run_scripts/generate_run_scripts.py): only nodes where the task fits
are scored (CPU, memory, GPU, model), each node gets an INTEGER score in [0, 100] (Go truncates
the float score with int64(); integer ties matter), the highest score wins, and ties go to the
lowest node index of the cluster. The owners' patched kube-scheduler `selectHost`
(vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go) takes the lexicographically
smallest node name among equal scores, the names carrying a seeded random prefix per run
(pkg/simulator/simulator.go `syncClusterResourceList`); the fill-up gives the cluster that node
order (`fillup.TIE_BREAKS`). best-fit's min-max `NormalizeScore` of integer scores in [0, 100]
keeps their order and ties, so it is left out.

Within-node GPU choice (pkg/simulator/plugin/open_gpu_share.go, `allocateGpuId`):

- whole-GPU tasks, every policy: the k lowest-indexed completely free GPUs (`AllocateExclusiveGpuId`).
- fractional tasks: `best` GPU selection (the runs' default `-gpusel best`) for dotprod,
  gpu-clustering, gpu-packing and best-fit: the GPU with the least free share that still fits,
  lowest index on ties; `random` for random: uniform among GPUs that fit; fgd: its own choice
  (the GPU whose use least increases F_n(M), lowest index on equal integer scores).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ddlx.placement.cluster import MILLI, Cluster, Task
from ddlx.placement.fragmentation import TargetWorkload, node_fragmentation

#: Normalisers of the owners' simulator (pkg/type/open-gpu-share/utils/const.go): milli-CPU and
#: milli-GPU of the largest node spec.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
MAX_SCORE = 100


class Placement(NamedTuple):
    """A chosen node (index into the cluster) and the GPU slots the task takes (empty for CPU-only)."""

    node: int
    gpus: tuple[int, ...]


def _trunc(x: np.ndarray) -> np.ndarray:
    """Go's int64(float) conversion: truncation toward zero."""
    return np.trunc(x).astype(np.int64)


class PlacementPolicy(ABC):
    """Interface: `select(cluster, task)` returns the Placement for the task on the cluster's current
    state, or None when no node fits. It never mutates the cluster (the caller places the task).
    `reset(seed)` re-seeds any randomness and drops caches."""

    name: str = ""

    def reset(self, seed: int | None = None) -> None:
        """Re-seed and clear state (default: nothing to do)."""

    def select(self, cluster: Cluster, task: Task) -> Placement | None:
        feasible = np.flatnonzero(cluster.feasible(task))
        if feasible.size == 0:
            return None
        return self.choose(cluster, task, feasible)

    @abstractmethod
    def choose(self, cluster: Cluster, task: Task, feasible: np.ndarray) -> Placement:
        """Pick among `feasible` (ascending node indices, non-empty)."""


class ScoredPolicy(PlacementPolicy):
    """A policy that gives every feasible node an integer score and uses best-fit GPU selection."""

    @abstractmethod
    def scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> np.ndarray:
        """Integer scores (higher is better) of `nodes`."""

    def choose(self, cluster: Cluster, task: Task, feasible: np.ndarray) -> Placement:
        node = int(feasible[int(np.argmax(self.scores(cluster, task, feasible)))])
        return Placement(node, best_fit_gpus(cluster, node, task))


def best_fit_gpus(cluster: Cluster, node: int, task: Task) -> tuple[int, ...]:
    """The owners' `best` GPU selection: tightest-fitting GPU for a fractional task, lowest-indexed
    free GPUs for a whole-GPU task, none for a CPU-only task."""
    kind = task.kind
    if kind == "cpu":
        return ()
    if kind == "whole":
        return cluster.exclusive_gpus(node, task.num_gpus)
    return (cluster.best_fit_gpu(node, task.gpu_milli),)


class RandomPolicy(PlacementPolicy):
    """`random` (random_score.go): a node drawn uniformly among the feasible ones (numpy generator,
    seeded); a fractional task goes to a GPU drawn uniformly among those whose free share fits it."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def choose(self, cluster: Cluster, task: Task, feasible: np.ndarray) -> Placement:
        node = int(feasible[int(self.rng.integers(feasible.size))])
        if task.kind == "fractional":
            fits = np.flatnonzero(cluster.gpu_free[node] >= task.gpu_milli)
            return Placement(node, (int(fits[int(self.rng.integers(fits.size))]),))
        return Placement(node, best_fit_gpus(cluster, node, task))


class DotProductPolicy(ScoredPolicy):
    """`dotprod` (dot_product_score.go, Tetris; run with `-dimext merge -norm max`): node vector
    (free milli-CPU / 128000, total free milli-GPU / 8000), task vector (milli-CPU / 128000, total
    milli-GPU / 8000); score = int(100 * (1 - dot / 2)), so the node whose free resources align
    least with the request wins. GPU: best-fit."""

    name = "dotprod"

    def scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> np.ndarray:
        dot = (cluster.cpu_free[nodes] / MAX_SPEC_CPU) * (task.cpu_milli / MAX_SPEC_CPU) \
            + (cluster.gpu_left[nodes] / MAX_SPEC_GPU) * (task.total_gpu_milli / MAX_SPEC_GPU)
        return _trunc(MAX_SCORE * (1 - dot / 2))


class GpuClusteringPolicy(ScoredPolicy):
    """`gpu-clustering` (gpu_clustering_score.go): tasks are tagged share-GPU or k-GPU; a node's tags are
    those of the GPU tasks on it. With L = the node's total free milli-GPU and
    base = 25 * (8000 - L) // 8000 (integer): base + 75 if the node holds only the task's tag,
    base + 50 if it holds the task's tag and others, base + 25 if it holds no GPU task, base if it
    holds only other tags. CPU-only tasks score 0 everywhere. GPU: best-fit."""

    name = "gpu-clustering"

    def scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> np.ndarray:
        tag = task.tag
        if tag < 0:
            return np.zeros(nodes.size, dtype=np.int64)
        tags = cluster.tags[nodes]
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - cluster.gpu_left[nodes]) // MAX_SPEC_GPU
        distinct = (tags > 0).sum(axis=1)
        has = tags[:, tag] > 0
        offset = np.where(has, np.where(distinct == 1, 75, 50), np.where(distinct == 0, 25, 0))
        return base + offset


class GpuPackingPolicy(ScoredPolicy):
    """`gpu-packing` (gpu_packing_score.go): with F = completely free GPUs of the node and G its GPUs:
    (3) node entirely free (F == G): max(33 - F, F); otherwise take the GPUs the task would use
    (ascending free share among those that fit); (2) if any of them is completely free:
    max(50 - (completely free GPUs used), 33); (1) else (sharing a used GPU): max(100 - S // 10, 50)
    with S = sum over used GPUs of free_milli * 100 // 1000. CPU-only tasks score 0. GPU: best-fit."""

    name = "gpu-packing"

    def scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> np.ndarray:
        kind = task.kind
        if kind == "cpu":
            return np.zeros(nodes.size, dtype=np.int64)
        free = cluster.full_gpus[nodes]
        case3 = np.maximum(33 - free, free)
        if kind == "whole":
            used_score = np.full(nodes.size, max(50 - task.num_gpus, 33), dtype=np.int64)
        else:
            rows = cluster.gpu_free[nodes]
            tight = np.where(rows >= task.gpu_milli, rows, np.iinfo(np.int64).max).min(axis=1)
            shared = np.maximum(100 - (tight * 100 // MILLI) // 10, 50)
            used_score = np.where(tight == MILLI, max(50 - 1, 33), shared)
        return np.where(free == cluster.gpu_count[nodes], case3, used_score)


class BestFitPolicy(ScoredPolicy):
    """`best-fit` (best_fit_score.go): leftover after placing, s = 0.5 * (free milli-CPU - request) /
    128000 + 0.5 * (total free milli-GPU - request) / 8000; score = int(100 * (1 - s)): the node
    left with the least weighted free CPU+GPU wins. GPU: best-fit."""

    name = "best-fit"

    def scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> np.ndarray:
        s = (cluster.cpu_free[nodes] - task.cpu_milli) / MAX_SPEC_CPU * 0.5 \
            + (cluster.gpu_left[nodes] - task.total_gpu_milli) / MAX_SPEC_GPU * 0.5
        return _trunc((1.0 - s) * MAX_SCORE)


class FGDPolicy(PlacementPolicy):
    """`fgd` (fgd_score.go): for each feasible node and each way to place the task there, the change of
    node fragmentation d = F_n(M) before - F_n(M) after (milli-GPU); score = int(100 * sigmoid(d / 1000)).
    A fractional task tries every GPU whose free share fits (best score, lowest GPU index on ties);
    a whole-GPU task takes the lowest-indexed free GPUs; a CPU-only task takes CPU only. The node
    with the highest score (the least increase of F_n(M)) wins.

    Cache: per task class (milli-CPU, milli-GPU, GPUs -- the only fields the score depends on) the
    score and GPU choice of every node, stamped with the node's placement counter; only nodes
    placed on since the class was last scored are recomputed (vectorised over nodes and GPUs)."""

    name = "fgd"

    def __init__(self, target: TargetWorkload) -> None:
        self.target = target
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        self._uid: int | None = None
        self._cache: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def choose(self, cluster: Cluster, task: Task, feasible: np.ndarray) -> Placement:
        if cluster.uid != self._uid:
            self._cache.clear()
            self._uid = cluster.uid
        key = (task.cpu_milli, task.gpu_milli, task.num_gpus)
        entry = self._cache.get(key)
        if entry is None:
            n = cluster.num_nodes
            entry = (np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
            self._cache[key] = entry
        seen, score, gpu = entry
        stale = feasible[seen[feasible] != cluster.version[feasible]]
        if stale.size:
            score[stale], gpu[stale] = self.node_scores(cluster, task, stale)
            seen[stale] = cluster.version[stale]
        node = int(feasible[int(np.argmax(score[feasible]))])
        kind = task.kind
        if kind == "cpu":
            return Placement(node, ())
        if kind == "whole":
            return Placement(node, cluster.exclusive_gpus(node, task.num_gpus))
        return Placement(node, (int(gpu[node]),))

    def node_scores(self, cluster: Cluster, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(score, fractional GPU choice) of placing the task on each of `nodes` (where it fits)."""
        cpu = cluster.cpu_free[nodes]
        rows = cluster.gpu_free[nodes]
        models = cluster.model_idx[nodes]
        before = node_fragmentation(cpu, rows, models, self.target, cluster.models)
        kind = task.kind
        if kind == "fractional":
            b, g = np.nonzero(rows >= task.gpu_milli)
            after_rows = rows[b].copy()
            after_rows[np.arange(b.size), g] -= task.gpu_milli
            after = node_fragmentation(cpu[b] - task.cpu_milli, after_rows, models[b], self.target, cluster.models)
            dense = np.full(rows.shape, -1, dtype=np.int64)
            dense[b, g] = fgd_score(before[b] - after)
            return dense.max(axis=1), dense.argmax(axis=1)
        if kind == "whole":
            full = rows == MILLI
            take = full & (np.cumsum(full, axis=1) <= task.num_gpus)
            after_rows = np.where(take, 0, rows)
        else:
            after_rows = rows
        after = node_fragmentation(cpu - task.cpu_milli, after_rows, models, self.target, cluster.models)
        return fgd_score(before - after), np.zeros(nodes.size, dtype=np.int64)


def fgd_score(decrease_milli: np.ndarray) -> np.ndarray:
    """int(100 * sigmoid(decrease / 1000)) for a fragmentation decrease in milli-GPU."""
    return _trunc(1.0 / (1.0 + np.exp(-np.asarray(decrease_milli, dtype=np.float64) / MILLI)) * MAX_SCORE)


#: Policy name -> factory(target workload, seed). fgd needs the target workload; random the seed.
POLICIES: dict[str, Callable[[TargetWorkload | None, int], PlacementPolicy]] = {
    "random": lambda target, seed: RandomPolicy(seed),
    "dotprod": lambda target, seed: DotProductPolicy(),
    "gpu-clustering": lambda target, seed: GpuClusteringPolicy(),
    "gpu-packing": lambda target, seed: GpuPackingPolicy(),
    "best-fit": lambda target, seed: BestFitPolicy(),
    "fgd": lambda target, seed: FGDPolicy(_need(target)),
}


def _need(target: TargetWorkload | None) -> TargetWorkload:
    if target is None:
        raise ValueError("the fgd policy needs a target workload")
    return target


def make_policy(name: str, target: TargetWorkload | None = None, seed: int = 0) -> PlacementPolicy:
    """A fresh policy by registry name."""
    try:
        factory = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown placement policy {name!r}; known: {', '.join(POLICIES)}") from None
    return factory(target, seed)
