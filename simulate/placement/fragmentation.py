"""GPU fragmentation against a target workload (Weng et al., ATC 2023, Sec. 4), exactly as the
owners' simulator computes it (hkust-adsl/kubernetes-scheduler-simulator, pkg/utils/frag.go:
`NodeGpuShareFragAmount`, `GetNodePodFrag`, `GetTypicalPods`).

Target workload M. Tasks of the pod list are grouped into classes by the request fields
(milli-CPU, milli-GPU per GPU, number of GPUs, allowed GPU models); memory is NOT part of a class
(the owners' `PodResource` has no memory). Classes are ranked by pod count (ties: larger CPU, then
GPU share, GPU count, model string first) and the most popular ones are kept until they cover at
least `popularity` (default 95 %, the owners' setting) of the pods; CPU-only tasks are included.
A kept class m has popularity p_m = its count / the kept classes' total count.

Node fragmentation F_n(M) = sum over classes m of p_m * F_n(m), in milli-GPU, where F_n(m) is the
free GPU share of node n that class m cannot use. Let U = total free milli-GPU of the node:

- CPU-only task class (no GPU request): F_n(m) = U -- every free GPU share counts as fragment
  whether or not the class's CPU fits (the owners' "xl_satisfied"/"xr_lack_cpu" cases are both
  summed into the fragment amount).
- the task cannot run on the node because of its GPU model constraint ("no_access"): F_n(m) = U.
- the task cannot run on the node for lack of GPU (fewer than k GPUs with free share >= its
  per-GPU request) or lack of CPU (free milli-CPU < request): F_n(m) = U.
- the task can run (GPU and CPU fit): F_n(m) = sum of the free shares of the GPUs whose free share
  is below the class's per-GPU request. For a fractional class that is every GPU with less free
  share than it asks for; for a whole-GPU class (1000 per GPU) it is every partially used GPU.

Memory is not checked by the measure (only by feasibility). Cluster fragmentation is the sum of
F_n(M) over nodes; functions here return it in GPUs (milli-GPU / 1000) where stated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from ddlx.simulate.placement.cluster import MILLI, Cluster, Task, tasks_from_frame

#: Share of pods the kept task classes must cover (the owners' `podPopularityThreshold`, 95 %).
DEFAULT_POPULARITY = 0.95


@dataclass(frozen=True)
class TaskClass:
    """A class of identical requests: milli-CPU, milli-GPU per GPU (0 = CPU-only), GPUs, models."""

    cpu_milli: int
    gpu_milli: int
    num_gpus: int
    gpu_models: str | None

    @classmethod
    def of(cls, task: Task) -> TaskClass:
        return cls(task.cpu_milli, task.gpu_milli, task.num_gpus, task.gpu_models)


@dataclass
class TargetWorkload:
    """The target workload M: kept task classes and their popularity (weights sum to 1)."""

    classes: list[TaskClass]
    weight: np.ndarray
    counts: np.ndarray
    covered: float  # share of all pods in the kept classes
    _access: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, repr=False)

    @cached_property
    def cpu_milli(self) -> np.ndarray:
        return np.array([c.cpu_milli for c in self.classes], dtype=np.int64)

    @cached_property
    def gpu_milli(self) -> np.ndarray:
        return np.array([c.gpu_milli for c in self.classes], dtype=np.int64)

    @cached_property
    def num_gpus(self) -> np.ndarray:
        return np.array([c.num_gpus for c in self.classes], dtype=np.int64)

    def access(self, models: list[str]) -> np.ndarray:
        """Boolean (M+1, K): row i tells which classes may use a node of model `models[i]`; the last
        row is for CPU-only nodes (only unconstrained classes)."""
        key = tuple(models)
        table = self._access.get(key)
        if table is None:
            table = np.ones((len(models) + 1, len(self.classes)), dtype=bool)
            for k, c in enumerate(self.classes):
                if c.gpu_models is not None:
                    allowed = set(c.gpu_models.split("|"))
                    table[:, k] = [m in allowed for m in models] + [False]
            self._access[key] = table
        return table

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame({
            "cpu_milli": self.cpu_milli, "gpu_milli": self.gpu_milli, "num_gpus": self.num_gpus,
            "gpu_models": [c.gpu_models for c in self.classes], "count": self.counts, "popularity": self.weight,
        })


def _class_order_key(item: tuple[TaskClass, int]) -> tuple:
    c, n = item
    return (-n, -c.cpu_milli, -c.gpu_milli, -c.num_gpus, tuple(-ord(ch) for ch in (c.gpu_models or "")))


def target_workload(pods: pl.DataFrame | list[Task], popularity: float = DEFAULT_POPULARITY) -> TargetWorkload:
    """The target workload of a pod list (frame with the task columns of `tasks_from_frame`, or tasks)."""
    tasks = tasks_from_frame(pods) if isinstance(pods, pl.DataFrame) else pods
    counts: dict[TaskClass, int] = {}
    for t in tasks:
        key = TaskClass.of(t)
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=_class_order_key)
    total = len(tasks)
    kept: list[tuple[TaskClass, int]] = []
    cum = 0
    for item in ranked:
        if cum >= popularity * total:
            break
        kept.append(item)
        cum += item[1]
    n = np.array([c for _, c in kept], dtype=np.float64)
    return TargetWorkload([c for c, _ in kept], n / n.sum(), n.astype(np.int64), cum / max(total, 1))


def node_fragmentation(cpu_free: np.ndarray, gpu_free: np.ndarray, model_idx: np.ndarray,
                       target: TargetWorkload, models: list[str]) -> np.ndarray:
    """F_n(M) in milli-GPU for B node states: `cpu_free` (B,), `gpu_free` (B, G) free milli-GPU per
    GPU (0 for absent slots), `model_idx` (B,) index into `models` (-1 = CPU-only node)."""
    access = target.access(models)
    m = target.gpu_milli
    k = target.num_gpus
    c = target.cpu_milli
    gpu_free = np.asarray(gpu_free)
    total = gpu_free.sum(axis=1).astype(np.float64)  # (B,)
    fits = gpu_free[:, None, :] >= m[None, :, None]  # (B, K, G)
    gpu_ok = fits.sum(axis=2) >= k[None, :]
    below = np.where(fits, 0, gpu_free[:, None, :]).sum(axis=2)  # free share of GPUs below the request
    runnable = gpu_ok & (np.asarray(cpu_free)[:, None] >= c[None, :]) & access[np.asarray(model_idx)] & (m > 0)[None, :]
    per_class = np.where(runnable, below, total[:, None])
    return per_class @ target.weight


class FragmentationTracker:
    """Per-node F_n(M) of a cluster, kept current by `update(node)` after each placement."""

    def __init__(self, cluster: Cluster, target: TargetWorkload) -> None:
        self.cluster = cluster
        self.target = target
        self.node_frag = node_fragmentation(cluster.cpu_free, cluster.gpu_free, cluster.model_idx, target,
                                            cluster.models)

    def update(self, node: int) -> None:
        cl = self.cluster
        self.node_frag[node] = node_fragmentation(cl.cpu_free[node:node + 1], cl.gpu_free[node:node + 1],
                                                  cl.model_idx[node:node + 1], self.target, cl.models)[0]

    @property
    def total_gpus(self) -> float:
        """Cluster fragmentation in GPUs."""
        return float(self.node_frag.sum()) / MILLI


def cluster_fragmentation(cluster: Cluster, target: TargetWorkload) -> float:
    """Cluster fragmentation (sum of F_n(M) over nodes) in GPUs."""
    frag = node_fragmentation(cluster.cpu_free, cluster.gpu_free, cluster.model_idx, target, cluster.models)
    return float(frag.sum()) / MILLI
