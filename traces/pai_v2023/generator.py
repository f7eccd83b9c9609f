"""A synthetic Alibaba GPU cluster trace v2023 (ATC'23 "Beware of Fragmentation"), `openb` format.

`generate(out_dir)` writes, as the real release does (headers included, `\\n` line
ends, an empty field for a missing value, nothing quoted):

- `openb_node_list_all_node.csv`: `sn,cpu_milli,memory_mib,gpu,model` (empty model = CPU node);
- `openb_node_list_gpu_node.csv`: the rows of all_node with `gpu > 0`, in the same order and with
  the same resources, *renumbered* `openb-node-0000...` like the real file (whose GPU rows equal
  all_node's GPU rows except for `sn`);
- `openb_pod_list_default.csv`: the workload,
  `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`,
  sorted by creation time; an empty `scheduled_time` = never scheduled (the Pending pods);
- four of the owners' resampled variants, built from the default list the way the real ones are:
  `openb_pod_list_gpushare40.csv` (CPU pods unchanged, GPU pods resampled so that GPU-sharing pods
  carry 40 % of the requested GPU), `openb_pod_list_multigpu50.csv` (default pods plus resampled
  multi-GPU pods until they carry 50 % of the requested GPU; first five columns only),
  `openb_pod_list_gpuspec25.csv` (default pods, 25 % of GPU pods constrained by a `gpu_spec` of one
  or more `|`-separated models, duplicates included as in the real files) and
  `openb_pod_list_cpu050.csv` (default GPU pods plus resampled CPU-only pods making 5 % of pods).

Units as in the real trace: `cpu_milli` thousandths of a core, `memory_mib` MiB, `gpu_milli`
thousandths of one GPU (for `num_gpu == 1`; 1000 for whole GPUs, 0 for CPU pods); times integer
seconds from the trace start (the first pod's creation is 0). "Requested GPU" of a pod is
`num_gpu * gpu_milli`. A GPU-sharing pod has `num_gpu == 1` and `gpu_milli < 1000`.

At `scale=1` sizes match the real release (1,523 nodes, 1,213 GPU nodes, 8,152 default pods);
`scale` multiplies nodes and pods, keeping at least one node of every GPU model and of the CPU
nodes and at least one pod of each kind (CPU-only, sharing, one whole GPU, multi-GPU). Every pod
fits at least one node (GPUs, CPU and memory), also within its `gpu_spec`.

Determinism: nodes, pods and each variant come from their own random stream of `seed`, so the same
(scale, seed) gives byte-identical files. Files are written to hidden temp files in `out_dir` and
renamed into place only once all of them are complete.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ddlx.datasets.synth_common import (
    check_scale_and_seed,
    choice_from,
    gather_names,
    lognormal,
    publish,
    stream_rng,
    temp_path_in,
)

__all__ = ["generate", "FILE_NAMES", "NODE_COLUMNS", "POD_COLUMNS", "MULTIGPU_COLUMNS"]

# --------------------------------------------------------------------------------------------
# Format (TRACES.md, v2023 section; checked against the real files)
# --------------------------------------------------------------------------------------------

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
               "pod_phase", "creation_time", "deletion_time", "scheduled_time")
#: The multigpu* variants carry only the first five pod columns (as the real files do).
MULTIGPU_COLUMNS = POD_COLUMNS[:5]

ALL_NODE_FILE = "openb_node_list_all_node.csv"
GPU_NODE_FILE = "openb_node_list_gpu_node.csv"
DEFAULT_POD_FILE = "openb_pod_list_default.csv"
GPUSHARE_FILE = "openb_pod_list_gpushare40.csv"
MULTIGPU_FILE = "openb_pod_list_multigpu50.csv"
GPUSPEC_FILE = "openb_pod_list_gpuspec25.csv"
CPU_FILE = "openb_pod_list_cpu050.csv"
#: Files written, in the order returned.
FILE_NAMES = (ALL_NODE_FILE, GPU_NODE_FILE, DEFAULT_POD_FILE, GPUSHARE_FILE, MULTIGPU_FILE,
              GPUSPEC_FILE, CPU_FILE)

# --------------------------------------------------------------------------------------------
# Calibration constants (scale 1), computed from the real openb_* files unless marked otherwise
# --------------------------------------------------------------------------------------------

#: Node configurations (model, GPUs, cpu_milli, memory_mib, count); model "" = CPU-only node.
#: Computed from the real openb_node_list_all_node.csv (1,523 nodes, 1,213 with GPUs).
NODE_CONFIGS: tuple[tuple[str, int, int, int, int], ...] = (
    ("", 0, 32000, 65536, 10),
    ("", 0, 32000, 131072, 23),
    ("", 0, 32000, 262144, 129),
    ("", 0, 64000, 131072, 4),
    ("", 0, 64000, 262144, 8),
    ("", 0, 64000, 524288, 22),
    ("", 0, 96000, 393216, 30),
    ("", 0, 96000, 524288, 59),
    ("", 0, 96000, 786432, 1),
    ("", 0, 104000, 196608, 1),
    ("", 0, 104000, 524288, 20),
    ("", 0, 104000, 786432, 3),
    ("A10", 1, 128000, 1048576, 2),
    ("G2", 8, 96000, 393216, 549),
    ("G3", 8, 128000, 786432, 39),
    ("P100", 1, 8000, 61440, 3),
    ("P100", 2, 8000, 61440, 2),
    ("P100", 2, 16000, 122880, 107),
    ("P100", 2, 64000, 262144, 22),
    ("T4", 2, 104000, 524288, 387),
    ("T4", 4, 96000, 393216, 17),
    ("V100M16", 1, 8000, 32768, 19),
    ("V100M16", 4, 32000, 131072, 28),
    ("V100M16", 8, 64000, 262144, 7),
    ("V100M16", 8, 82000, 344064, 1),
    ("V100M32", 4, 48000, 376832, 9),
    ("V100M32", 8, 96000, 786432, 21),
)
#: Share of CPU-only nodes listed first (206 of the 310 CPU nodes lie in the first 230 rows of the
#: real all_node file); the other nodes follow in random order (modelling choice).
CPU_NODES_AT_HEAD_SHARE = 206 / 310

#: Pods in the default list at scale 1 (real: 8,152).
PODS_AT_SCALE_1 = 8152
#: Fewest pods / pods per kind at any scale (modelling choice: a usable tiny release).
MIN_PODS = 8

#: Pod kinds (codes index this tuple) and their counts in the real default list.
POD_KINDS = ("cpu_only", "sharing", "whole_gpu", "multi_gpu")
CPU_ONLY, SHARING, WHOLE_GPU, MULTI_GPU = range(4)
POD_KIND_COUNTS = np.array([1088, 3078, 3911, 75])

#: Request profiles per kind with their pod counts in the real default list (the top ones, which
#: cover 97-100 % of each kind). CPU-only pods: (cpu_milli, memory_mib, count).
CPU_ONLY_PROFILES = np.array([
    (12500, 57344, 364), (32000, 49152, 284), (8000, 30517, 163), (15400, 51200, 120),
    (16500, 51200, 95), (8000, 15625, 11), (11400, 57344, 11), (16000, 31250, 8),
    (8000, 31250, 5), (12000, 24576, 4),
])
#: GPU-sharing pods: (cpu_milli, memory_mib, gpu_milli, count).
SHARING_PROFILES = np.array([
    (3152, 5600, 810, 1047), (11908, 47104, 470, 388), (8000, 30517, 470, 360),
    (11908, 47104, 650, 237), (4000, 22888, 320, 111), (4000, 30517, 230, 84),
    (4000, 15258, 320, 78), (3152, 5600, 590, 75), (4152, 10600, 550, 72), (8000, 30517, 320, 72),
    (4000, 15258, 160, 53), (6000, 6144, 460, 51), (4152, 10600, 370, 45), (4000, 30517, 320, 43),
    (4152, 10600, 810, 31), (6000, 12288, 460, 29), (4000, 22888, 230, 26), (4000, 15258, 220, 24),
    (1000, 2048, 320, 22), (6000, 22888, 160, 20), (8000, 30517, 220, 19), (4000, 22888, 480, 18),
    (6000, 18432, 460, 18), (8000, 30517, 230, 18), (4000, 15258, 230, 12), (8000, 30517, 650, 12),
    (4000, 22888, 220, 11), (4000, 22888, 110, 9), (6000, 8192, 460, 9), (4000, 15258, 110, 8),
])
#: Pods with one whole GPU: (cpu_milli, memory_mib, count).
WHOLE_GPU_PROFILES = np.array([
    (11300, 49152, 857), (11400, 48128, 534), (3152, 5600, 470), (18708, 64512, 255),
    (9810, 41560, 195), (12000, 24576, 158), (15700, 58368, 158), (11908, 47104, 153),
    (16000, 32768, 108), (4000, 24576, 104), (8000, 16384, 104), (12000, 16384, 99),
    (14200, 58368, 93), (24200, 93184, 84), (11400, 77824, 65), (8000, 32768, 55),
    (11900, 77824, 51), (12000, 15360, 44), (8200, 33792, 41), (4000, 31250, 40),
    (15200, 80896, 36), (16000, 65536, 33), (16400, 125952, 27), (11300, 37888, 16),
    (1000, 6144, 15), (7000, 30000, 11), (15400, 90112, 9), (4000, 16384, 8), (12000, 32768, 8),
    (12000, 47104, 8),
])
#: Multi-GPU pods (all of them): (num_gpu, cpu_milli, memory_mib, count).
MULTI_GPU_PROFILES = np.array([
    (8, 64200, 263168, 18), (8, 88000, 327680, 18), (4, 32200, 132096, 9), (2, 16200, 66560, 7),
    (2, 6000, 65536, 3), (2, 30200, 160768, 3), (4, 32000, 131072, 3), (4, 60200, 320512, 3),
    (8, 64000, 262144, 3), (8, 120000, 737280, 3), (2, 17400, 43008, 2), (8, 120200, 640000, 2),
    (2, 14000, 60000, 1),
])

#: QoS classes (codes index this tuple) and counts per pod kind (rows: POD_KINDS order).
QOS_NAMES = ("LS", "BE", "Burstable", "Guaranteed")
QOS_COUNTS_BY_KIND = np.array([
    [636, 450, 1, 1],
    [759, 2319, 0, 0],
    [3200, 629, 76, 6],
    [52, 0, 23, 0],
])
#: Pod phases (codes index this tuple) and counts per pod kind (rows: POD_KINDS order).
PHASE_NAMES = ("Running", "Failed", "Pending", "Succeeded")
RUNNING, FAILED, PENDING, SUCCEEDED = range(4)
PHASE_COUNTS_BY_KIND = np.array([
    [1044, 1, 36, 7],
    [1412, 1161, 505, 0],
    [2726, 652, 355, 178],
    [11, 56, 1, 7],
])

#: Time line, s from the trace start. The real list has 26 "early" long-lived pods created
#: before the bulk of the workload (first one at 0); the bulk is created from BULK_START_S to
#: BULK_END_S; the last deletion (TRACE_END_S) caps pods still alive at the end.
TRACE_END_S = 12_902_960
BULK_START_S = 9_924_220
BULK_END_S = 12_901_761
EARLY_POD_SHARE = 26 / 8152
#: Share of early pods still alive at the trace end (17 of 26); the others are deleted at a
#: uniform time during the bulk window (modelling choice for the spread).
EARLY_ALIVE_AT_END_SHARE = 17 / 26
#: Bulk creations per hour of the day (hour = creation_time mod 86400 // 3600).
CREATION_HOUR_COUNTS = np.array([
    511, 454, 362, 435, 425, 317, 290, 331, 242, 146, 222, 204,
    152, 149, 136, 270, 299, 424, 549, 465, 350, 430, 426, 537,
])
#: Day-to-day variation of the creation rate, log-sigma (real daily counts range 46-741 around
#: ~235; modelling choice).
CREATION_DAY_SIGMA = 0.45

#: Scheduling wait (scheduled - creation, s) per phase: (share of 0, median and log-sigma of the
#: positive waits); Pending pods are never scheduled. From the real default list.
WAIT_BY_PHASE = {
    RUNNING: (0.142, 6.0, 1.93),
    FAILED: (0.617, 2.0, 2.32),
    SUCCEEDED: (0.749, 1.0, 1.72),
}
#: Longest wait, s (real maximum 14,330).
WAIT_MAX_S = 14_330
#: Run time (deletion - scheduled, s) per phase: (median, log-sigma); Pending pods: lifetime
#: (deletion - creation). From the real default list.
RUN_BY_PHASE = {
    RUNNING: (835.0, 1.81),
    FAILED: (219.0, 1.54),
    SUCCEEDED: (3796.0, 1.76),
    PENDING: (94.0, 1.28),
}

#: Variant targets (the number in each real file name, checked against the real files).
GPUSHARE_TARGET = 0.40  # share of requested GPU carried by sharing pods
MULTIGPU_TARGET = 0.50  # share of requested GPU carried by multi-GPU pods
GPUSPEC_TARGET = 0.25  # share of GPU pods with a gpu_spec
CPU_ONLY_TARGET = 0.05  # share of pods without GPU

#: gpu_spec values and counts in the real openb_pod_list_gpuspec25.csv, separately for sharing
#: pods and whole-GPU pods (models sorted, `|`-separated, duplicates kept as in the real file).
SHARING_SPECS: tuple[tuple[str, int], ...] = (
    ("T4", 425), ("P100", 213), ("G2|P100|T4|V100M16|V100M32", 14),
)
WHOLE_GPU_SPECS: tuple[tuple[str, int], ...] = (
    ("T4", 481), ("G2", 248), ("V100M16|V100M32", 126), ("P100|V100M16|V100M32", 74), ("G3", 59),
    ("G2|P100|T4|V100M16|V100M32", 23), ("V100M16|V100M32|V100M32", 23),
    ("P100|T4|V100M16|V100M32", 22), ("A10|G2|T4|V100M16|V100M32", 17), ("P100|V100M16", 11),
    ("V100M32", 11), ("V100M16", 4), ("A10|T4", 3), ("A10|G2|P100|T4|V100M16|V100M32|V100M32", 3),
    ("P100", 2),
)

#: Random stream ids.
_STREAM_NODES, _STREAM_PODS, _STREAM_GPUSHARE, _STREAM_MULTIGPU = 1, 2, 3, 4
_STREAM_GPUSPEC, _STREAM_CPU = 5, 6

# --------------------------------------------------------------------------------------------
# Nodes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Nodes:
    """The node list, in file order: model ("" for CPU nodes), GPUs, cpu_milli, memory_mib."""

    model: np.ndarray
    gpu: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray


def _node_counts(scale: float) -> np.ndarray:
    """Nodes per NODE_CONFIGS row at `scale`, keeping at least one node per model (and CPU)."""
    counts = np.array([int(round(c[4] * scale)) for c in NODE_CONFIGS])
    for model in dict.fromkeys(c[0] for c in NODE_CONFIGS):
        rows = [i for i, c in enumerate(NODE_CONFIGS) if c[0] == model]
        if counts[rows].sum() == 0:
            counts[max(rows, key=lambda i: NODE_CONFIGS[i][4])] = 1
    return counts


def _build_nodes(seed: int, scale: float) -> _Nodes:
    """Nodes at `scale`: most CPU nodes first, then the rest shuffled."""
    rng = stream_rng(seed, _STREAM_NODES)
    rows = np.repeat(np.arange(len(NODE_CONFIGS)), _node_counts(scale))
    is_cpu = np.array([c[1] == 0 for c in NODE_CONFIGS])[rows]
    cpu_rows = rng.permutation(rows[is_cpu])
    n_head = int(round(CPU_NODES_AT_HEAD_SHARE * len(cpu_rows)))
    rest = rng.permutation(np.concatenate([cpu_rows[n_head:], rows[~is_cpu]]))
    rows = np.concatenate([cpu_rows[:n_head], rest])
    config = np.array([c[1:4] for c in NODE_CONFIGS], dtype=np.int64)
    return _Nodes(model=np.array([c[0] for c in NODE_CONFIGS])[rows], gpu=config[rows, 0],
                  cpu_milli=config[rows, 1], memory_mib=config[rows, 2])


def _numbered(prefix: str, n: int) -> pl.Series:
    """`prefix0000`, `prefix0001`, ... (at least four digits, as in the real files)."""
    return pl.select(pl.format(prefix + "{}", pl.int_range(n, dtype=pl.Int64).cast(pl.String)
                               .str.zfill(4))).to_series()


def _node_frame(nodes: _Nodes, keep: np.ndarray) -> pl.DataFrame:
    """Rows of a node list holding the nodes `keep` (boolean mask), numbered from 0."""
    n = int(keep.sum())
    return pl.DataFrame([
        _numbered("openb-node-", n).alias("sn"),
        pl.Series("cpu_milli", nodes.cpu_milli[keep], dtype=pl.Int64),
        pl.Series("memory_mib", nodes.memory_mib[keep], dtype=pl.Int64),
        pl.Series("gpu", nodes.gpu[keep], dtype=pl.Int64),
        _string_or_empty("model", nodes.model[keep]),
    ])


def _int_or_empty(name: str, values: np.ndarray) -> pl.Series:
    """Int64 column with negative values written as an empty field."""
    series = pl.Series(name, values, dtype=pl.Int64)
    return pl.select(pl.when(series >= 0).then(series).alias(name)).to_series()


def _string_or_empty(name: str, values: np.ndarray) -> pl.Series:
    """String column with "" written as an empty field (as a null)."""
    series = pl.Series(name, values, dtype=pl.String)
    return pl.select(pl.when(series != "").then(series).alias(name)).to_series()


def _fitting_models(nodes: _Nodes, num_gpu: np.ndarray, cpu_milli: np.ndarray,
                    memory_mib: np.ndarray) -> tuple[list[str], np.ndarray]:
    """GPU models, and per pod whether a node of each model can host it (GPUs, CPU, memory)."""
    models = sorted(set(nodes.model[nodes.gpu > 0]))
    fits = np.zeros((len(num_gpu), len(models)), dtype=bool)
    configs = np.unique(np.stack([nodes.gpu, nodes.cpu_milli, nodes.memory_mib,
                                  np.searchsorted(models, nodes.model)], axis=1)[nodes.gpu > 0], axis=0)
    for gpu, cpu, mem, model in configs:
        fits[:, model] |= (num_gpu <= gpu) & (cpu_milli <= cpu) & (memory_mib <= mem)
    return models, fits


# --------------------------------------------------------------------------------------------
# Default pod list
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pods:
    """The default pod list, sorted by creation; times in s, scheduled -1 = never scheduled."""

    kind: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    qos: np.ndarray
    phase: np.ndarray
    creation: np.ndarray
    deletion: np.ndarray
    scheduled: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def gpu_request(self) -> np.ndarray:
        """Requested GPU per pod, thousandths of a GPU (num_gpu * gpu_milli)."""
        return self.num_gpu * self.gpu_milli


def _draw_kinds(rng: np.random.Generator, n: int) -> np.ndarray:
    """Pod kind codes with the real shares, with every kind present at least once."""
    kinds = _draw_rows(rng, POD_KIND_COUNTS, n)
    for kind in range(len(POD_KINDS)):
        if not (kinds == kind).any():
            counts = np.bincount(kinds, minlength=len(POD_KINDS))
            donors = np.flatnonzero(counts[kinds] > 1)
            kinds[rng.choice(donors)] = kind
    return kinds


def _draw_rows(rng: np.random.Generator, counts: np.ndarray, n: int) -> np.ndarray:
    """`n` row indices of a table, drawn in proportion to `counts`."""
    return choice_from(rng, (np.arange(len(counts)), counts.astype(float)), n)


def _draw_resources(rng: np.random.Generator, kinds: np.ndarray) -> tuple[np.ndarray, ...]:
    """cpu_milli, memory_mib, num_gpu, gpu_milli per pod from its kind's profiles."""
    n = len(kinds)
    cpu, mem = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    num_gpu, gpu_milli = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for kind, table in ((CPU_ONLY, CPU_ONLY_PROFILES), (SHARING, SHARING_PROFILES),
                        (WHOLE_GPU, WHOLE_GPU_PROFILES), (MULTI_GPU, MULTI_GPU_PROFILES)):
        mask = kinds == kind
        row = table[_draw_rows(rng, table[:, -1], int(mask.sum()))]
        if kind == MULTI_GPU:
            num_gpu[mask], cpu[mask], mem[mask], gpu_milli[mask] = row[:, 0], row[:, 1], row[:, 2], 1000
            continue
        cpu[mask], mem[mask] = row[:, 0], row[:, 1]
        if kind == SHARING:
            num_gpu[mask], gpu_milli[mask] = 1, row[:, 2]
        elif kind == WHOLE_GPU:
            num_gpu[mask], gpu_milli[mask] = 1, 1000
    return cpu, mem, num_gpu, gpu_milli


def _draw_by_kind(rng: np.random.Generator, kinds: np.ndarray, counts_by_kind: np.ndarray) -> np.ndarray:
    """A categorical code per pod drawn from its kind's row of `counts_by_kind`."""
    codes = np.zeros(len(kinds), dtype=np.int64)
    for kind in range(len(POD_KINDS)):
        mask = kinds == kind
        codes[mask] = _draw_rows(rng, counts_by_kind[kind], int(mask.sum()))
    return codes


def _creation_times(rng: np.random.Generator, n_bulk: int, n_early: int) -> np.ndarray:
    """Sorted creation times, s: early pods from 0 (the first at 0), the bulk with a daily rhythm."""
    hour_starts = np.arange(BULK_START_S - BULK_START_S % 3600, BULK_END_S, 3600, dtype=np.int64)
    day = (hour_starts - hour_starts[0]) // 86400
    weight = (CREATION_HOUR_COUNTS[(hour_starts % 86400) // 3600]
              * rng.lognormal(0.0, CREATION_DAY_SIGMA, int(day[-1]) + 1)[day])
    cumulative = np.cumsum(weight / weight.sum())
    bins = np.minimum(np.searchsorted(cumulative, rng.random(n_bulk), side="right"), len(weight) - 1)
    bulk = np.clip(hour_starts[bins] + rng.integers(0, 3600, n_bulk), BULK_START_S, BULK_END_S)
    early = rng.integers(1, BULK_START_S, n_early)
    early[0] = 0
    return np.sort(np.concatenate([early, bulk]))


def _lifecycle(rng: np.random.Generator, phase: np.ndarray, creation: np.ndarray,
               early: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scheduled time (-1 = never) and deletion time, s, by phase; capped at the trace end."""
    n = len(phase)
    wait = np.zeros(n, dtype=np.int64)
    run = np.zeros(n, dtype=np.int64)
    for code, (zero_share, median, sigma) in WAIT_BY_PHASE.items():
        mask = phase == code
        k = int(mask.sum())
        positive = np.ceil(np.minimum(lognormal(rng, median, sigma, k), WAIT_MAX_S)).astype(np.int64)
        wait[mask] = np.where(rng.random(k) < zero_share, 0, np.maximum(positive, 1))
    for code, (median, sigma) in RUN_BY_PHASE.items():
        mask = phase == code
        run[mask] = np.floor(lognormal(rng, median, sigma, int(mask.sum()))).astype(np.int64)
    scheduled = np.where(phase == PENDING, -1, np.minimum(creation + wait, TRACE_END_S))
    deletion = np.where(phase == PENDING, creation, scheduled) + np.maximum(run, 1)
    # Early pods are long-lived: most outlive the trace, the others end during the bulk window.
    k = int(early.sum())
    alive = rng.random(k) < EARLY_ALIVE_AT_END_SHARE
    deletion[early] = np.where(alive, TRACE_END_S, rng.integers(BULK_START_S, TRACE_END_S, k))
    return scheduled, np.minimum(deletion, TRACE_END_S)


def _build_pods(seed: int, scale: float) -> _Pods:
    """The default pod list at `scale` (one random stream)."""
    rng = stream_rng(seed, _STREAM_PODS)
    n = max(MIN_PODS, int(round(PODS_AT_SCALE_1 * scale)))
    n_early = max(1, int(round(EARLY_POD_SHARE * n)))
    kinds = _draw_kinds(rng, n)
    cpu, mem, num_gpu, gpu_milli = _draw_resources(rng, kinds)
    qos = _draw_by_kind(rng, kinds, QOS_COUNTS_BY_KIND)
    phase = _draw_by_kind(rng, kinds, PHASE_COUNTS_BY_KIND)
    creation = _creation_times(rng, n - n_early, n_early)
    # Pods are i.i.d., so the first n_early rows (after sorting by creation) are the early ones.
    early = np.zeros(n, dtype=bool)
    early[:n_early] = True
    phase[early] = RUNNING  # the real early pods are long-running latency-sensitive services
    qos[early] = QOS_NAMES.index("LS")
    scheduled, deletion = _lifecycle(rng, phase, creation, early)
    return _Pods(kind=kinds, cpu_milli=cpu, memory_mib=mem, num_gpu=num_gpu, gpu_milli=gpu_milli,
                 qos=qos, phase=phase, creation=creation, deletion=deletion, scheduled=scheduled)


_QOS_SERIES = pl.Series(list(QOS_NAMES), dtype=pl.String)
_PHASE_SERIES = pl.Series(list(PHASE_NAMES), dtype=pl.String)


def _pod_frame(pods: _Pods, rows: np.ndarray, gpu_spec: pl.Series | None = None,
               columns: tuple[str, ...] = POD_COLUMNS) -> pl.DataFrame:
    """A pod list of the default pods `rows` (in that order, renumbered), with `columns`."""
    n = len(rows)
    scheduled = pods.scheduled[rows]
    frame = pl.DataFrame([
        _numbered("openb-pod-", n).alias("name"),
        pl.Series("cpu_milli", pods.cpu_milli[rows], dtype=pl.Int64),
        pl.Series("memory_mib", pods.memory_mib[rows], dtype=pl.Int64),
        pl.Series("num_gpu", pods.num_gpu[rows], dtype=pl.Int64),
        pl.Series("gpu_milli", pods.gpu_milli[rows], dtype=pl.Int64),
        gpu_spec.alias("gpu_spec") if gpu_spec is not None
        else pl.Series("gpu_spec", [None] * n, dtype=pl.String),
        _QOS_SERIES.gather(pods.qos[rows]).alias("qos"),
        _PHASE_SERIES.gather(pods.phase[rows]).alias("pod_phase"),
        pl.Series("creation_time", pods.creation[rows], dtype=pl.Int64),
        pl.Series("deletion_time", pods.deletion[rows], dtype=pl.Int64),
        _int_or_empty("scheduled_time", scheduled),
    ])
    return frame.select(list(columns))


# --------------------------------------------------------------------------------------------
# Variants (resampled from the default list, as the owners did)
# --------------------------------------------------------------------------------------------


def _gpushare_rows(seed: int, pods: _Pods) -> np.ndarray:
    """CPU pods as in default, then resampled sharing and non-sharing GPU pods (same GPU-pod
    count) with the sharing pods' share of requested GPU as close to GPUSHARE_TARGET as possible."""
    rng = stream_rng(seed, _STREAM_GPUSHARE)
    sharing = np.flatnonzero(pods.kind == SHARING)
    other_gpu = np.flatnonzero((pods.kind == WHOLE_GPU) | (pods.kind == MULTI_GPU))
    n_gpu = len(sharing) + len(other_gpu)
    drawn_sharing = rng.choice(sharing, size=n_gpu)
    drawn_other = rng.choice(other_gpu, size=n_gpu)
    sharing_sum = np.concatenate([[0], np.cumsum(pods.gpu_request[drawn_sharing])])
    other_sum = np.concatenate([[0], np.cumsum(pods.gpu_request[drawn_other])])
    k = np.arange(n_gpu + 1)
    share = sharing_sum[k] / np.maximum(sharing_sum[k] + other_sum[n_gpu - k], 1)
    n_sharing = int(np.argmin(np.abs(share - GPUSHARE_TARGET)))
    return np.concatenate([np.flatnonzero(pods.kind == CPU_ONLY), drawn_sharing[:n_sharing],
                           drawn_other[:n_gpu - n_sharing]])


def _multigpu_rows(seed: int, pods: _Pods) -> np.ndarray:
    """All default pods, then resampled multi-GPU pods until they carry MULTIGPU_TARGET of the
    requested GPU."""
    rng = stream_rng(seed, _STREAM_MULTIGPU)
    multi = np.flatnonzero(pods.kind == MULTI_GPU)
    total = float(pods.gpu_request.sum())
    multi_sum = float(pods.gpu_request[multi].sum())
    smallest = float(pods.gpu_request[multi].min())
    bound = max(0, math.ceil((MULTIGPU_TARGET * total - multi_sum) / ((1 - MULTIGPU_TARGET) * smallest))) + 1
    drawn = rng.choice(multi, size=bound)
    added = np.concatenate([[0.0], np.cumsum(pods.gpu_request[drawn])])
    share = (multi_sum + added) / (total + added)
    n_added = int(np.argmin(np.abs(share - MULTIGPU_TARGET)))
    return np.concatenate([np.arange(len(pods)), drawn[:n_added]])


def _gpuspec_column(seed: int, pods: _Pods, nodes: _Nodes) -> pl.Series:
    """gpu_spec of the default pods: GPUSPEC_TARGET of GPU pods get a spec (sharing or whole-GPU
    catalogue) among those naming a model with a node that can host the pod; others empty."""
    rng = stream_rng(seed, _STREAM_GPUSPEC)
    gpu_pods = np.flatnonzero(pods.num_gpu > 0)
    chosen = np.sort(rng.choice(gpu_pods, size=int(round(GPUSPEC_TARGET * len(gpu_pods))), replace=False))
    models, fits = _fitting_models(nodes, pods.num_gpu[chosen], pods.cpu_milli[chosen],
                                   pods.memory_mib[chosen])
    specs = [s for s, _ in SHARING_SPECS] + [s for s, _ in WHOLE_GPU_SPECS]
    weights = np.array([w for _, w in SHARING_SPECS] + [0] * len(WHOLE_GPU_SPECS), dtype=float)
    whole_weights = np.array([0] * len(SHARING_SPECS) + [w for _, w in WHOLE_GPU_SPECS], dtype=float)
    member = np.array([[m in s.split("|") for m in models] for s in specs])  # spec x model
    feasible = (fits.astype(np.int64) @ member.T.astype(np.int64)) > 0  # pod x spec
    sharing = pods.kind[chosen] == SHARING
    w = np.where(sharing[:, None], weights[None, :], whole_weights[None, :]) * feasible
    # A pod no catalogue spec can host gets the single model of a node that can host it.
    fallback = w.sum(axis=1) == 0
    cumulative = np.cumsum(w, axis=1)
    threshold = (1.0 - rng.random(len(chosen)))[:, None] * cumulative[:, -1:]  # in (0, total]
    pick = (cumulative < threshold).sum(axis=1)
    value = np.minimum(pick, len(specs) - 1)
    value[fallback] = len(specs) + np.argmax(fits[fallback], axis=1)  # index into models
    codes = np.full(len(pods), -1, dtype=np.int64)
    codes[chosen] = value
    return gather_names(pl.Series(specs + models, dtype=pl.String), codes, "gpu_spec")


def _cpu_rows(seed: int, pods: _Pods) -> np.ndarray:
    """Resampled CPU-only pods making CPU_ONLY_TARGET of the pods, then the default GPU pods."""
    rng = stream_rng(seed, _STREAM_CPU)
    gpu_pods = np.flatnonzero(pods.num_gpu > 0)
    n_cpu = max(1, int(round(CPU_ONLY_TARGET * len(gpu_pods) / (1 - CPU_ONLY_TARGET))))
    return np.concatenate([rng.choice(np.flatnonzero(pods.kind == CPU_ONLY), size=n_cpu), gpu_pods])


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _write_csv(frame: pl.DataFrame, path: Path) -> None:
    """CSV with header, `\\n` line ends, empty field for null, nothing quoted (as the real files)."""
    frame.write_csv(path, include_header=True, separator=",", line_terminator="\n",
                    null_value="", quote_style="necessary")



def generate(out_dir: Path, scale: float = 1.0, seed: int = 0,
                       progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write a synthetic v2023 `openb` release into `out_dir`; return the paths of FILE_NAMES.

    `scale` multiplies nodes and pods (1.0 ~ the real release: 1,523 nodes, 8,152 default pods);
    `seed` (a non-negative int) fixes every byte; `progress` receives one message per file.
    """
    seed = check_scale_and_seed(scale, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    nodes = _build_nodes(seed, scale)
    pods = _build_pods(seed, scale)
    models, fits = _fitting_models(nodes, pods.num_gpu, pods.cpu_milli, pods.memory_mib)
    gpu_pod_fits = fits.any(axis=1) | (pods.num_gpu == 0)
    if not gpu_pod_fits.all():  # pragma: no cover - guards a change of NODE_CONFIGS or profiles
        raise RuntimeError("the Alibaba v2023 generator: a pod profile fits no node; check the constants")
    frames: dict[str, Callable[[], pl.DataFrame]] = {
        ALL_NODE_FILE: lambda: _node_frame(nodes, np.ones(len(nodes.gpu), dtype=bool)),
        GPU_NODE_FILE: lambda: _node_frame(nodes, nodes.gpu > 0),
        DEFAULT_POD_FILE: lambda: _pod_frame(pods, np.arange(len(pods))),
        GPUSHARE_FILE: lambda: _pod_frame(pods, _gpushare_rows(seed, pods)),
        MULTIGPU_FILE: lambda: _pod_frame(pods, _multigpu_rows(seed, pods), columns=MULTIGPU_COLUMNS),
        GPUSPEC_FILE: lambda: _pod_frame(pods, np.arange(len(pods)), _gpuspec_column(seed, pods, nodes)),
        CPU_FILE: lambda: _pod_frame(pods, _cpu_rows(seed, pods)),
    }
    temps: dict[str, Path] = {}
    try:
        for name, build in frames.items():
            frame = build()
            temps[name] = temp_path_in(out_dir, name)
            _write_csv(frame, temps[name])
            if progress is not None:
                progress(f"{name}: {frame.height:,} rows, {temps[name].stat().st_size:,} bytes")
        publish(temps, out_dir)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    return [out_dir / name for name in FILE_NAMES]
