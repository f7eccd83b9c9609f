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

Variants a user can choose, by name (the defaults are the paper's):

- the measure (`FRAGMENTATION_MEASURES`): `expected`, the paper's F_n(M); `unusable`, the free
  share of the GPUs that no GPU class of M can use (a GPU's free share counts when, for every
  class, the class cannot run on the node or the GPU's free share is below the class's request).
  `unusable` is at most `expected` on every node and ignores the CPU-only classes;
- the pods M is made of (`TARGET_PODS`): `all` (the paper's: every pod of the list, CPU-only ones
  included) or `gpu` (only the pods that ask for a GPU);
- the popularity cut-off: the share of those pods the kept classes cover (default 0.95; 1.0 keeps
  every class).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from ddlx.errors import UsageError
from ddlx.placement.cluster import MILLI, Cluster, Task, tasks_from_frame

#: Share of pods the kept task classes must cover (the owners' `podPopularityThreshold`, 95 %).
DEFAULT_POPULARITY = 0.95

#: The pods the target workload is made of.
TARGET_PODS: dict[str, str] = {
    "all": "every pod of the list, CPU-only ones included (the paper's and the owners')",
    "gpu": "only the pods that ask for a GPU",
}
DEFAULT_TARGET_PODS = "all"

#: The fragmentation measures, in milli-GPU per node (the module docstring gives the rules).
FRAGMENTATION_MEASURES: dict[str, str] = {
    "expected": "the paper's F_n(M): the free GPU share each class of M cannot use, weighted by the "
                "classes' popularity",
    "unusable": "the free GPU share that no GPU class of M can use",
}
DEFAULT_MEASURE = "expected"


class FragmentationOptionError(UsageError):
    """A fragmentation variant that is not one ddlx knows."""


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


def check_fragmentation_settings(popularity: float = DEFAULT_POPULARITY, pods: str = DEFAULT_TARGET_PODS,
                                 measures: tuple[str, ...] = (DEFAULT_MEASURE,)) -> None:
    """`FragmentationOptionError` unless `popularity` is in (0, 1], `pods` one of `TARGET_PODS` and
    every measure one of `FRAGMENTATION_MEASURES`."""
    try:
        share = float(popularity)
    except (TypeError, ValueError):
        share = math.nan
    if not (0 < share <= 1):
        raise FragmentationOptionError(f"popularity: expected a share of the pods above 0 and at most 1 "
                                       f"(the paper's: {DEFAULT_POPULARITY}), got '{popularity}'")
    if pods not in TARGET_PODS:
        raise FragmentationOptionError(f"unknown target pods '{pods}'; expected one of: {', '.join(TARGET_PODS)}")
    for name in measures:
        if name not in FRAGMENTATION_MEASURES:
            raise FragmentationOptionError(f"unknown fragmentation measure '{name}'; expected one of: "
                                           f"{', '.join(FRAGMENTATION_MEASURES)}")


def target_workload(pods: pl.DataFrame | list[Task], popularity: float = DEFAULT_POPULARITY,
                    from_pods: str = DEFAULT_TARGET_PODS) -> TargetWorkload:
    """The target workload of a pod list (frame with the task columns of `tasks_from_frame`, or tasks):
    the classes of `from_pods` (`TARGET_PODS`) kept until they cover `popularity` of those pods."""
    check_fragmentation_settings(popularity, from_pods)
    tasks = tasks_from_frame(pods) if isinstance(pods, pl.DataFrame) else pods
    if from_pods == "gpu":
        tasks = [t for t in tasks if t.kind != "cpu"]
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


def _usable(cpu_free: np.ndarray, gpu_free: np.ndarray, model_idx: np.ndarray, target: TargetWorkload,
            models: list[str]) -> np.ndarray:
    """Boolean (B, K, G): class k of the target can run on node state b and use GPU g of it (the
    class asks for a GPU, the node's model is allowed, CPU and k's GPUs fit, and g's free share is
    at least k's per-GPU request)."""
    access = target.access(models)
    m = target.gpu_milli
    fits = gpu_free[:, None, :] >= m[None, :, None]  # (B, K, G)
    runnable = ((fits.sum(axis=2) >= target.num_gpus[None, :]) & (np.asarray(cpu_free)[:, None] >= target.cpu_milli)
                & access[np.asarray(model_idx)] & (m > 0)[None, :])
    return fits & runnable[:, :, None]


def _expected(usable: np.ndarray, gpu_free: np.ndarray, target: TargetWorkload) -> np.ndarray:
    per_class = np.where(usable, 0, gpu_free[:, None, :]).sum(axis=2)  # F_n(m), (B, K)
    return per_class @ target.weight


def _unusable(usable: np.ndarray, gpu_free: np.ndarray, target: TargetWorkload) -> np.ndarray:
    return np.where(usable.any(axis=1), 0, gpu_free).sum(axis=1).astype(np.float64)


_MEASURE_FUNCTIONS = {"expected": _expected, "unusable": _unusable}


def node_measures(measures: tuple[str, ...], cpu_free: np.ndarray, gpu_free: np.ndarray, model_idx: np.ndarray,
                  target: TargetWorkload, models: list[str]) -> dict[str, np.ndarray]:
    """The fragmentation measures `measures` (names of `FRAGMENTATION_MEASURES`) of B node states,
    milli-GPU each: `cpu_free` (B,), `gpu_free` (B, G) free milli-GPU per GPU (0 for absent slots),
    `model_idx` (B,) index into `models` (-1 = CPU-only node)."""
    check_fragmentation_settings(measures=measures)
    gpu_free = np.asarray(gpu_free)
    usable = _usable(cpu_free, gpu_free, model_idx, target, models)
    return {name: _MEASURE_FUNCTIONS[name](usable, gpu_free, target) for name in measures}


def node_fragmentation(cpu_free: np.ndarray, gpu_free: np.ndarray, model_idx: np.ndarray,
                       target: TargetWorkload, models: list[str]) -> np.ndarray:
    """F_n(M) (measure `expected`) in milli-GPU for B node states (arguments as `node_measures`)."""
    gpu_free = np.asarray(gpu_free)
    return _expected(_usable(cpu_free, gpu_free, model_idx, target, models), gpu_free, target)


def node_unusable(cpu_free: np.ndarray, gpu_free: np.ndarray, model_idx: np.ndarray,
                  target: TargetWorkload, models: list[str]) -> np.ndarray:
    """Measure `unusable` in milli-GPU for B node states (arguments as `node_measures`): the free
    share of the GPUs that no class of the target can use."""
    gpu_free = np.asarray(gpu_free)
    return _unusable(_usable(cpu_free, gpu_free, model_idx, target, models), gpu_free, target)


class FragmentationTracker:
    """Per-node fragmentation of a cluster under each of `measures` (milli-GPU, `node_values[name]`),
    kept current by `update(node)` after each placement or release."""

    def __init__(self, cluster: Cluster, target: TargetWorkload, measures: tuple[str, ...] = (DEFAULT_MEASURE,)):
        self.cluster = cluster
        self.target = target
        self.measures = tuple(measures)
        self.node_values = node_measures(self.measures, cluster.cpu_free, cluster.gpu_free, cluster.model_idx,
                                         target, cluster.models)

    def update(self, node: int) -> None:
        cl = self.cluster
        rows = slice(node, node + 1)
        gpu_free = cl.gpu_free[rows]
        usable = _usable(cl.cpu_free[rows], gpu_free, cl.model_idx[rows], self.target, cl.models)
        for name in self.measures:
            self.node_values[name][node] = _MEASURE_FUNCTIONS[name](usable, gpu_free, self.target)[0]

    @property
    def node_frag(self) -> np.ndarray:
        """F_n(M) of every node (measure `expected`), milli-GPU."""
        return self.node_values["expected"]

    @property
    def total_gpus(self) -> float:
        """Cluster fragmentation (measure `expected`) in GPUs."""
        return float(self.node_frag.sum()) / MILLI


def cluster_fragmentation(cluster: Cluster, target: TargetWorkload, measure: str = DEFAULT_MEASURE) -> float:
    """Cluster fragmentation (sum over nodes of the measure, by default F_n(M)) in GPUs."""
    values = node_measures((measure,), cluster.cpu_free, cluster.gpu_free, cluster.model_idx, target, cluster.models)
    return float(values[measure].sum()) / MILLI
