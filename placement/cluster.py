"""Node-level cluster model for GPU placement: per-node free CPU, memory and per-GPU free share,
held in numpy arrays, and the tasks placed on it.

Units: CPU in milli-cores, memory in MiB, GPU in thousandths of one GPU ("milli-GPU"; 1000 = one
whole GPU). Every GPU of a node has the node's model; CPU-only nodes have no GPU and no model.

Task kinds (the owners' simulator's definitions):

- CPU-only: `num_gpus == 0` (its `gpu_milli` is ignored): needs CPU and memory only.
- fractional (GPU-sharing): `num_gpus == 1` and `0 < gpu_milli < 1000`: needs one GPU whose free
  share is at least `gpu_milli`.
- whole-GPU: `num_gpus >= 1` and `gpu_milli == 1000` (k = `num_gpus`): needs k completely free
  GPUs of one node.

A task's CPU, memory and GPU must all fit on the same node, and a task with a model constraint
(`gpu_models`, '|'-separated, null = any) only fits on GPU nodes of one of those models.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl

from ddlx.datasets.canonical import MILLI

#: Tags of GPU-requesting tasks used by the gpu-clustering policy (index 0 = GPU-sharing task,
#: index k = task of k whole GPUs); CPU-only tasks carry no tag.
SHARE_TAG = 0

_uids = itertools.count()


@dataclass(frozen=True)
class Task:
    """One task's request: GPUs, milli-GPU per GPU, milli-CPU, MiB, and allowed GPU models (None = any)."""

    num_gpus: int
    gpu_milli: int
    cpu_milli: int
    memory_mib: int
    gpu_models: str | None = None

    @property
    def kind(self) -> str:
        """'cpu', 'fractional' or 'whole' (see the module docstring)."""
        if self.num_gpus <= 0 or self.gpu_milli <= 0:
            return "cpu"
        if self.num_gpus == 1 and self.gpu_milli < MILLI:
            return "fractional"
        return "whole"

    @property
    def total_gpu_milli(self) -> int:
        """GPUs requested in milli-GPU (num_gpus x gpu_milli; 0 for CPU-only tasks)."""
        return 0 if self.kind == "cpu" else self.num_gpus * self.gpu_milli

    @property
    def tag(self) -> int:
        """gpu-clustering tag: -1 CPU-only, 0 GPU-sharing, k for k whole GPUs."""
        kind = self.kind
        return -1 if kind == "cpu" else (SHARE_TAG if kind == "fractional" else self.num_gpus)


def _normalise_models(spec: str | None) -> str | None:
    if spec is None:
        return None
    names = [s for s in str(spec).split("|") if s]
    return "|".join(names) if names else None


def normalise_task(num_gpus: int, gpu_milli: int, cpu_milli: int, memory_mib: int, gpu_models: str | None) -> Task:
    """A Task with the owners' normalisation: CPU-only tasks get gpu_milli 0 and no model constraint;
    gpu_milli is clipped to [0, 1000]; an empty model list means any model."""
    num_gpus = max(int(num_gpus), 0)
    gpu_milli = min(max(int(gpu_milli), 0), MILLI) if num_gpus > 0 else 0
    if gpu_milli == 0:
        num_gpus = 0
    elif num_gpus > 1:
        gpu_milli = MILLI  # a multi-GPU task always takes whole GPUs
    models = _normalise_models(gpu_models) if num_gpus > 0 else None
    return Task(num_gpus, gpu_milli, int(cpu_milli), int(memory_mib), models)


def tasks_from_frame(tasks: pl.DataFrame) -> list[Task]:
    """Tasks from a frame with columns num_gpus, gpu_milli, cpu_milli, memory_mib, gpu_models
    ('|'-separated allowed models or null)."""
    models = tasks["gpu_models"] if "gpu_models" in tasks.columns else pl.Series([None] * tasks.height)
    return [
        normalise_task(n, g, c, m, s)
        for n, g, c, m, s in zip(
            tasks["num_gpus"].to_list(), tasks["gpu_milli"].fill_null(0).to_list(), tasks["cpu_milli"].to_list(),
            tasks["memory_mib"].fill_null(0).to_list(), models.to_list(), strict=True,
        )
    ]


class Cluster:
    """Mutable node state. Arrays (N nodes, G = most GPUs on any node):

    - `cpu_free`, `mem_free` (N,): free milli-CPU and MiB; `cpu_cap`, `mem_cap` their capacities.
    - `gpu_free` (N, G): free milli-GPU of each GPU slot (slots beyond a node's `gpu_count` stay 0
      and never fit anything); `gpu_alloc` (N, G) the allocated milli-GPU; `gpu_valid` marks real GPUs.
    - `model_idx` (N,): index into `models`, -1 for CPU-only nodes.
    - derived, kept current by `place` and `release`: `gpu_left` (N,) total free milli-GPU, `full_gpus` (N,)
      completely free GPUs, `max_free` (N,) largest free share, `tags` (N, 9) counts of placed
      GPU tasks per gpu-clustering tag, `version` (N,) placements and releases made on the node.

    Nodes are kept in the given order, and policies break score ties towards the lowest index: the
    order of the nodes is the tie-break. `from_frames` sorts them by name; `reordered` puts them in
    another order (the fill-up's seeded random order, as the owners' simulator breaks ties).
    """

    #: Attributes that hold one row per node (reindexed together by `reordered`).
    _PER_NODE = ("cpu_cap", "mem_cap", "gpu_count", "model_idx", "gpu_valid", "cpu_free", "mem_free", "gpu_free",
                 "gpu_alloc", "tags", "version", "gpu_left", "full_gpus", "max_free")

    def __init__(self, names: list[str], cpu_milli: np.ndarray, memory_mib: np.ndarray, gpus: np.ndarray,
                 gpu_model: list[str | None]) -> None:
        self.names = list(names)
        n = len(self.names)
        self.cpu_cap = np.asarray(cpu_milli, dtype=np.int64).copy()
        self.mem_cap = np.asarray(memory_mib, dtype=np.int64).copy()
        self.gpu_count = np.asarray(gpus, dtype=np.int64).copy()
        self.models: list[str] = sorted({m for m, g in zip(gpu_model, self.gpu_count, strict=True) if m and g > 0})
        index = {m: i for i, m in enumerate(self.models)}
        self.model_idx = np.array([index[m] if (m and g > 0) else -1
                                   for m, g in zip(gpu_model, self.gpu_count, strict=True)], dtype=np.int64)
        width = max(int(self.gpu_count.max(initial=0)), 1)
        self.gpu_valid = np.arange(width)[None, :] < self.gpu_count[:, None]
        self.gpu_capacity_milli = int(self.gpu_count.sum()) * MILLI
        self._spec_masks: dict[str | None, np.ndarray] = {}
        self.uid = next(_uids)
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.gpu_free = np.where(self.gpu_valid, MILLI, 0).astype(np.int64)
        self.gpu_alloc = np.zeros((n, width), dtype=np.int64)
        self.tags = np.zeros((n, 9), dtype=np.int64)
        self.version = np.zeros(n, dtype=np.int64)
        self.allocated_milli = 0
        self._refresh(np.arange(n))

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_frames(cls, nodes: pl.DataFrame) -> Cluster:
        """Cluster from a frame with columns node, cpu_milli, memory_mib, gpus, gpu_model (null for
        CPU-only nodes), sorted by node name."""
        nodes = nodes.sort("node")
        return cls(nodes["node"].cast(pl.String).to_list(), nodes["cpu_milli"].to_numpy(),
                   nodes["memory_mib"].to_numpy(), nodes["gpus"].fill_null(0).to_numpy(),
                   nodes["gpu_model"].to_list())

    def copy(self) -> Cluster:
        """An independent copy of the current state (with a new `uid`)."""
        other = object.__new__(Cluster)
        for key, value in self.__dict__.items():
            setattr(other, key, value.copy() if isinstance(value, np.ndarray) else value)
        other._spec_masks = dict(self._spec_masks)
        other.uid = next(_uids)
        return other

    def reordered(self, order: np.ndarray) -> Cluster:
        """An independent copy (new `uid`) whose node i is this cluster's node `order[i]`, state included;
        `order` is a permutation of the node indices."""
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (self.num_nodes,) or not np.array_equal(np.sort(order), np.arange(self.num_nodes)):
            raise ValueError("a node order must be a permutation of the node indices")
        other = self.copy()
        other.names = [self.names[i] for i in order.tolist()]
        for key in self._PER_NODE:
            setattr(other, key, getattr(self, key)[order].copy())
        other._spec_masks = {}
        return other

    @property
    def num_nodes(self) -> int:
        return len(self.names)

    @property
    def gpu_capacity(self) -> int:
        """Whole GPUs in the cluster."""
        return int(self.gpu_count.sum())

    # -- feasibility ------------------------------------------------------------------------
    def model_mask(self, gpu_models: str | None) -> np.ndarray | None:
        """Nodes whose model is allowed by a '|'-separated model list (None = no constraint)."""
        if gpu_models is None:
            return None
        mask = self._spec_masks.get(gpu_models)
        if mask is None:
            allowed = [self.models.index(m) for m in gpu_models.split("|") if m in self.models]
            mask = np.isin(self.model_idx, np.array(allowed, dtype=np.int64)) & (self.model_idx >= 0)
            self._spec_masks[gpu_models] = mask
        return mask

    def feasible(self, task: Task) -> np.ndarray:
        """Boolean (N,): nodes where the task fits now (CPU, memory, GPU and model on one node)."""
        ok = (self.cpu_free >= task.cpu_milli) & (self.mem_free >= task.memory_mib)
        kind = task.kind
        if kind == "fractional":
            ok &= self.max_free >= task.gpu_milli
        elif kind == "whole":
            ok &= self.full_gpus >= task.num_gpus
        if kind != "cpu":
            mask = self.model_mask(task.gpu_models)
            if mask is not None:
                ok &= mask
        return ok

    def fits(self, node: int, task: Task) -> bool:
        return bool(self.feasible(task)[node])

    # -- within-node GPU choices used by several policies -----------------------------------
    def exclusive_gpus(self, node: int, count: int) -> tuple[int, ...]:
        """The `count` lowest-indexed completely free GPUs of a node (the owners' choice for
        whole-GPU tasks under every policy)."""
        free = np.flatnonzero(self.gpu_free[node] == MILLI)
        return tuple(int(i) for i in free[:count])

    def best_fit_gpu(self, node: int, gpu_milli: int) -> int:
        """The GPU with the least free share that still holds `gpu_milli` (lowest index on ties)."""
        row = self.gpu_free[node]
        return int(np.where(row >= gpu_milli, row, np.iinfo(np.int64).max).argmin())

    # -- mutation ---------------------------------------------------------------------------
    def place(self, node: int, gpus: tuple[int, ...], task: Task) -> None:
        """Allocate the task on `node` and GPU slots `gpus` (empty for CPU-only tasks)."""
        kind = task.kind
        if kind == "cpu":
            gpus = ()
        elif kind == "fractional" and len(gpus) != 1 or kind == "whole" and len(gpus) != task.num_gpus:
            raise ValueError(f"task {task} needs {task.num_gpus} GPU(s), got {gpus}")
        if self.cpu_free[node] < task.cpu_milli or self.mem_free[node] < task.memory_mib:
            raise ValueError(f"task {task} does not fit node {self.names[node]} (CPU or memory)")
        per_gpu = task.gpu_milli if kind != "cpu" else 0
        for g in gpus:
            if not self.gpu_valid[node, g] or self.gpu_free[node, g] < per_gpu:
                raise ValueError(f"GPU {g} of node {self.names[node]} cannot hold {per_gpu} milli-GPU")
        self.cpu_free[node] -= task.cpu_milli
        self.mem_free[node] -= task.memory_mib
        if gpus:
            idx = list(gpus)
            self.gpu_free[node, idx] -= per_gpu
            self.gpu_alloc[node, idx] += per_gpu
            self.allocated_milli += per_gpu * len(idx)
            self.tags[node, task.tag] += 1
        self.version[node] += 1
        self._refresh(np.array([node]))

    def release(self, node: int, gpus: tuple[int, ...], task: Task) -> None:
        """Give back exactly what `place(node, gpus, task)` took: the task's milli-CPU and MiB, and
        its share on each GPU slot of `gpus`; ValueError when the node does not hold that much."""
        per_gpu = task.gpu_milli if task.kind != "cpu" else 0
        gpus = tuple(gpus) if per_gpu else ()
        if (self.cpu_free[node] + task.cpu_milli > self.cpu_cap[node]
                or self.mem_free[node] + task.memory_mib > self.mem_cap[node]
                or any(self.gpu_alloc[node, g] < per_gpu for g in gpus)
                or (gpus and self.tags[node, task.tag] < 1)):
            raise ValueError(f"task {task} is not placed on node {self.names[node]} GPUs {gpus}")
        self.cpu_free[node] += task.cpu_milli
        self.mem_free[node] += task.memory_mib
        if gpus:
            idx = list(gpus)
            self.gpu_free[node, idx] += per_gpu
            self.gpu_alloc[node, idx] -= per_gpu
            self.allocated_milli -= per_gpu * len(idx)
            self.tags[node, task.tag] -= 1
        self.version[node] += 1
        self._refresh(np.array([node]))

    def _refresh(self, nodes: np.ndarray) -> None:
        if not hasattr(self, "gpu_left"):
            self.gpu_left = np.zeros(self.num_nodes, dtype=np.int64)
            self.full_gpus = np.zeros(self.num_nodes, dtype=np.int64)
            self.max_free = np.zeros(self.num_nodes, dtype=np.int64)
        rows = self.gpu_free[nodes]
        self.gpu_left[nodes] = rows.sum(axis=1)
        self.full_gpus[nodes] = (rows == MILLI).sum(axis=1)
        self.max_free[nodes] = rows.max(axis=1)
