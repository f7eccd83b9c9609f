"""A synthetic Alibaba PAI cluster-trace-gpu-v2020 release, in the official distribution format.

`generate(out_dir)` writes the seven tables of `schema.TABLES` as `<table>.tar.gz`, each a
gzip'd tar holding one headerless `<table>.csv` (columns in `schema.COLUMNS` order, `\\n`
line ends, an empty field for a missing value), so that ddlx's real ingest code cannot tell the
result from the real release. Formats follow the official files: job/task/instance times are
floats (`4550879.0`), machine-metric times integers (`6150435`), hashed ids lowercase hex.

At `scale=1` the row counts and the figures published for the real trace (shared/TRACES.md) are
matched: 1,897 machines, ~1.26 M jobs, ~1.35 M tasks, ~7.5 M instance rows, ~3 M sensor and
machine-metric rows, ~1 M group-tag rows. `scale` multiplies row counts and machines.

Determinism: every table is drawn from its own random stream derived from `seed` (instances,
sensors and machine metrics per fixed-size chunk of tasks), and archives carry fixed gzip/tar
metadata, so the same seed gives the same bytes, also when only some `tables` are asked for.

Units (as in the real trace): times in seconds (read as Unix time in Asia/Shanghai they keep the
time of day and weekday); plan_cpu/cpu_usage percent of a core; plan_gpu/gpu_wrk_util percent of
one GPU (per instance); memory in GB; read/write in bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from ddlx.datasets.synth_common import (
    check_scale_and_seed,
    choice_from,
    float_series,
    gather_names,
    hex_ids,
    lognormal,
    pack_tar_gz,
    position_in_group,
    stream_rng,
    temp_path_in,
)
from ddlx.traces.pai import schema

__all__ = ["generate"]

# --------------------------------------------------------------------------------------------
# Calibration constants (scale 1). Figures from TRACES.md unless marked as a modelling choice.
# --------------------------------------------------------------------------------------------

#: Jobs at scale 1 (~1.26 M in the real job table).
JOBS_AT_SCALE_1 = 1_260_000
#: Users at scale 1 (the trace has "over 1,300"); scaled by sqrt(scale) for small releases.
USERS_AT_SCALE_1 = 1_450
#: Zipf exponent of per-user activity (modelling choice).
USER_ZIPF_EXPONENT = 1.1

#: First submission second: a midnight in Asia/Shanghai (1970-01-14 00:00 +08:00, a Wednesday).
TRACE_START_S = 1_094_400
#: Days of submissions (~two months).
TRACE_DAYS = 62
#: Offset of Asia/Shanghai from UTC, seconds.
UTC_OFFSET_S = 8 * 3600

#: Relative submission rate per local hour 0..23: quiet nights, busy 10:00-22:00.
HOUR_WEIGHTS = np.array([
    0.55, 0.40, 0.30, 0.25, 0.20, 0.20, 0.25, 0.35, 0.60, 0.90, 1.25, 1.40,
    1.20, 1.30, 1.45, 1.50, 1.50, 1.40, 1.15, 1.25, 1.35, 1.25, 0.95, 0.75,
])
#: Relative submission rate per local weekday, Monday=0 .. Sunday=6: lighter weekends.
WEEKDAY_WEIGHTS = np.array([1.0, 1.02, 1.03, 1.01, 0.97, 0.62, 0.58])

#: Machines of the real release: (gpu_type, cap_cpu cores, cap_mem GB, cap_gpu GPUs, count).
MACHINE_CONFIGS: tuple[tuple[str, int, int, int, int], ...] = (
    ("CPU", 96, 512, 0, 83),
    ("T4", 96, 512, 2, 497),
    ("MISC", 96, 512, 8, 280),
    ("P100", 64, 512, 2, 798),
    ("V100", 96, 384, 8, 45),
    ("V100", 96, 512, 8, 59),
    ("V100M32", 96, 384, 8, 135),
)
#: GPUs per type at scale 1 (6,742 in all); GPU tasks pick a type in proportion to these.
GPU_CAPACITY: dict[str, int] = {"MISC": 2240, "P100": 1596, "T4": 994, "V100": 832, "V100M32": 1080}
#: Device memory assumed for MISC (K40m/K80/M60 generations), GB; the others come from the schema.
MISC_GPU_MEMORY_GB = 12.0

#: Task names; codes index this tuple.
TASK_NAMES: tuple[str, ...] = (
    "tensorflow", "PyTorchWorker", "worker", "ps", "evaluator", "xComputeWorker", "OpenmpiTracker",
)
_TF, _PYTORCH, _WORKER, _PS, _EVALUATOR, _XCOMPUTE, _MPI_TRACKER = range(7)

#: Job layouts: single task, worker+ps, worker+ps+evaluator (shares of jobs).
JOB_LAYOUT_SHARES = np.array([0.94, 0.05, 0.01])
#: Share of single-task jobs that are CPU-only, chosen so ~18 % of all tasks have no plan_gpu.
SINGLE_TASK_CPU_SHARE = 0.141
#: Names of single GPU / single CPU tasks: (codes, shares).
SINGLE_GPU_NAMES = (np.array([_TF, _PYTORCH, _WORKER]), np.array([0.58, 0.27, 0.15]))
SINGLE_CPU_NAMES = (np.array([_XCOMPUTE, _WORKER, _TF, _MPI_TRACKER]), np.array([0.45, 0.25, 0.15, 0.15]))

#: Job status shares (Terminated, Failed, Running, Waiting); in a failed multi-task job some
#: helper tasks still terminate, which gives ~70/20/9/0.3 % over tasks.
JOB_STATUS_SHARES = np.array([0.697, 0.210, 0.090, 0.003])
#: Status codes used internally (ordered so that code >= RUNNING means "not finished").
_STATUS_ORDER = ("Terminated", "Failed", "Running", "Waiting")
TERMINATED, FAILED, RUNNING, WAITING = range(4)
if set(_STATUS_ORDER) != set(schema.STATUSES):  # pragma: no cover - guards a schema change
    raise ImportError("ddlx.traces.pai.schema.STATUSES changed; update the generator's status codes")

#: inst_num distributions: (values, shares).
INST_NUM_SINGLE_GPU = (np.array([1, 2, 4, 8, 16, 32]),
                       np.array([0.96, 0.025, 0.009, 0.0045, 0.001, 0.0005]))
INST_NUM_WORKER = (np.array([1, 2, 4, 8, 16, 32, 64, 128]),
                   np.array([0.30, 0.35, 0.20, 0.10, 0.039, 0.008, 0.002, 0.001]))
INST_NUM_PS = (np.array([1, 2, 4, 8, 16]), np.array([0.45, 0.25, 0.15, 0.10, 0.05]))
#: CPU tasks: share with one instance, else lognormal (median, sigma) clipped to [2, max].
CPU_SINGLE_INSTANCE_SHARE = 0.40
CPU_INST_MEDIAN, CPU_INST_SIGMA, CPU_INST_MAX = 20.0, 1.45, 1500

#: plan_gpu (percent of a GPU, per instance) of GPU tasks: (values, shares).
PLAN_GPU_SINGLE = (np.array([100, 50, 25, 10, 200, 800, 20, 30, 40, 60, 75, 5, 400, 600]),
                   np.array([0.18, 0.32, 0.22, 0.14, 0.015, 0.0015, 0.04, 0.03, 0.015, 0.01,
                             0.01, 0.008, 0.002, 0.001]))
PLAN_GPU_WORKER = (np.array([100, 50, 25, 200]), np.array([0.30, 0.35, 0.32, 0.03]))
#: plan_cpu (percent of a core) of GPU and CPU tasks.
PLAN_CPU_GPU_TASK = (np.array([600, 400, 800, 1200, 200, 100, 1600, 3200, 500, 1000]),
                     np.array([0.40, 0.12, 0.10, 0.10, 0.06, 0.04, 0.06, 0.04, 0.04, 0.04]))
PLAN_CPU_CPU_TASK = (np.array([100, 200, 400, 600, 800, 1200, 1600, 3200]),
                     np.array([0.15, 0.15, 0.20, 0.20, 0.10, 0.10, 0.05, 0.05]))
#: plan_mem in MB (written in GB = MB / 1024, e.g. 30000 -> 29.296875).
PLAN_MEM_MB = np.array([1000, 2000, 4000, 5000, 8000, 10000, 15000, 20000, 30000, 40000,
                        50000, 60000, 80000, 100000])
PLAN_MEM_GPU_SHARES = np.array([0.02, 0.04, 0.06, 0.05, 0.08, 0.12, 0.12, 0.14, 0.15, 0.08,
                                0.05, 0.04, 0.03, 0.02])
PLAN_MEM_CPU_SHARES = np.array([0.10, 0.15, 0.15, 0.08, 0.12, 0.12, 0.08, 0.07, 0.05, 0.03,
                                0.02, 0.01, 0.01, 0.01])

#: Delay from submission to the first task's start, s: share with none, else lognormal median.
LAUNCH_IMMEDIATE_SHARE, LAUNCH_MEDIAN_S = 0.6, 3.0
#: Wait from task start to first instance start, s: a lognormal body plus a slow tail.
WAIT_BODY_MEDIAN_S, WAIT_BODY_SIGMA = 8.5, 1.0
WAIT_TAIL_SHARE, WAIT_TAIL_MEDIAN_S, WAIT_TAIL_SIGMA = 0.05, 2500.0, 1.5
WAIT_MAX_S = 5 * 86400
#: Task runtime from first instance start, s: lognormal, failed tasks run shorter.
RUNTIME_MEDIAN_S, RUNTIME_SIGMA, RUNTIME_MAX_S = 470.0, 2.17, 30 * 86400
#: How the log-runtime's variance (RUNTIME_SIGMA**2) splits (modelling choice): a part shared by
#: all jobs of a user, a part shared by the jobs of a recurring group (a job that does not recur
#: draws its own), and the rest per task. Recurring jobs thus run about as long as their group's
#: earlier runs (the PAI paper's observation that lets history predict them), while the
#: distribution over all tasks stays lognormal(RUNTIME_MEDIAN_S, RUNTIME_SIGMA).
RUNTIME_USER_SIGMA, RUNTIME_TASK_SIGMA = 0.9, 0.7
RUNTIME_GROUP_SIGMA = float(np.sqrt(RUNTIME_SIGMA**2 - RUNTIME_USER_SIGMA**2 - RUNTIME_TASK_SIGMA**2))
FAILED_RUNTIME_FACTOR = (0.2, 1.0)

#: Instance rows: share of instances that also have an earlier Failed attempt row.
RETRY_SHARE = 0.03
#: Share of Running instances without a machine (Waiting ones never have one).
RUNNING_UNPLACED_SHARE = 0.10
#: Share of CPU-task instances placed on CPU machines (the rest land on any machine).
CPU_TASK_ON_CPU_MACHINE = 0.4
#: Instances observed by the sensor and machine-metric tables (~3 M rows each at scale 1).
SENSOR_SHARE = 0.43
METRIC_SHARE = 0.46

#: Group tags: share of jobs tagged, share of tagged jobs that recur, workload tags.
TAGGED_JOB_SHARE = 0.80
RECURRING_SHARE = 0.655
GROUP_SIZE_MEDIAN_EXTRA, GROUP_SIZE_SIGMA = 2.5, 1.2
WORKLOAD_SHARE = 0.09
WORKLOADS = ("bert", "ctr", "graphlearn", "nmt", "resnet", "inception", "vgg", "xlnet")
WORKLOAD_WEIGHTS = np.array([0.25, 0.22, 0.15, 0.10, 0.10, 0.07, 0.05, 0.06])
GPU_TYPE_SPEC_SHARE = 0.12

#: Sensors: per-task GPU utilisation as a fraction of plan_gpu, a mixture of mostly idle tasks
#: (lognormal median, sigma), busy ones (Beta a, b) and ~2 % using more than they asked for.
GPU_UTIL_IDLE_MEDIAN, GPU_UTIL_IDLE_SIGMA = 0.023, 1.2
GPU_UTIL_BUSY_SHARE, GPU_UTIL_BUSY_BETA = 0.21, (2.0, 1.7)
GPU_UTIL_OVER_SHARE, GPU_UTIL_OVER_RANGE = 0.02, (1.0, 2.5)
#: Share of GPU instances whose peak GPU memory exceeds the device capacity (a real oddity).
GPU_MEM_OVERFLOW_SHARE = 0.005

#: Tasks per instance-generation chunk (fixed, so results do not depend on scale or subsets).
CHUNK_TASKS = 100_000

#: Random stream ids, one per kind of draw.
_STREAM_MACHINES, _STREAM_JOBS, _STREAM_GROUPS, _STREAM_INSTANCES = 1, 2, 3, 4
_STREAM_SENSORS, _STREAM_METRICS, _STREAM_GROUP_KEYS = 5, 6, 7

#: Archive metadata: fixed so archives are byte-identical across runs.
TAR_MTIME = 1_618_451_733  # the release date of the real archives, 2021-04-15
GZIP_LEVEL = 1
COMPRESS_WORKERS = 2

# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------

def _time_series(name: str, seconds: np.ndarray, zero_when_missing: np.ndarray) -> pl.Series:
    """Float time column, s: NaN is missing and is written as 0.0 or empty per `zero_when_missing`."""
    values = np.where(np.isnan(seconds) & zero_when_missing, 0.0, seconds)
    return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)


def _local_hour_and_weekday(seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local hour (0..23) and weekday (Monday=0) of Unix seconds read in Asia/Shanghai."""
    local = seconds.astype(np.int64) + UTC_OFFSET_S
    days = local // 86400
    return (local // 3600) % 24, (days + 3) % 7  # 1970-01-01 was a Thursday


# --------------------------------------------------------------------------------------------
# Machines
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Machines:
    """The machine spec: hex names, gpu type names and capacities (cores, GB, GPUs)."""

    name: pl.Series
    gpu_type: np.ndarray  # str per machine
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    cap_gpu: np.ndarray

    def of_type(self, gpu_type: str) -> np.ndarray:
        """Indices of the machines of one gpu_type."""
        return np.flatnonzero(self.gpu_type == gpu_type)


def _machine_counts(scale: float) -> list[int]:
    """Machines per row of MACHINE_CONFIGS at `scale`, keeping at least one per gpu_type."""
    counts = [int(round(c[4] * scale)) for c in MACHINE_CONFIGS]
    for gpu_type in dict.fromkeys(c[0] for c in MACHINE_CONFIGS):
        rows = [i for i, c in enumerate(MACHINE_CONFIGS) if c[0] == gpu_type]
        if sum(counts[i] for i in rows) == 0:
            counts[max(rows, key=lambda i: MACHINE_CONFIGS[i][4])] = 1
    return counts


def _build_machines(seed: int, scale: float) -> _Machines:
    """The machine spec at `scale`, grouped by type like the real file (V100 variants mixed)."""
    rng = stream_rng(seed, _STREAM_MACHINES)
    counts = _machine_counts(scale)
    rows = np.repeat(np.arange(len(MACHINE_CONFIGS)), counts)
    type_order = {t: i for i, t in enumerate(dict.fromkeys(c[0] for c in MACHINE_CONFIGS))}
    type_rank = np.array([type_order[MACHINE_CONFIGS[r][0]] for r in range(len(MACHINE_CONFIGS))])
    order = np.lexsort((rng.random(len(rows)), type_rank[rows]))
    rows = rows[order]
    config = np.array([c[1:4] for c in MACHINE_CONFIGS], dtype=np.int64)
    return _Machines(
        name=hex_ids(rng, len(rows), 24),
        gpu_type=np.array([c[0] for c in MACHINE_CONFIGS], dtype=object)[rows].astype(str),
        cap_cpu=config[rows, 0],
        cap_mem=config[rows, 1],
        cap_gpu=config[rows, 2],
    )


def _machine_frame(machines: _Machines) -> pl.DataFrame:
    """Rows of pai_machine_spec (integer capacities)."""
    return pl.DataFrame([
        machines.name.alias("machine"),
        pl.Series("gpu_type", machines.gpu_type, dtype=pl.String),
        pl.Series("cap_cpu", machines.cap_cpu, dtype=pl.Int64),
        pl.Series("cap_mem", machines.cap_mem, dtype=pl.Int64),
        pl.Series("cap_gpu", machines.cap_gpu, dtype=pl.Int64),
    ])


# --------------------------------------------------------------------------------------------
# Jobs and tasks
# --------------------------------------------------------------------------------------------


@dataclass
class _Jobs:
    """Job-level arrays; times in seconds, NaN = missing."""

    name: pl.Series
    inst_id: pl.Series
    user: np.ndarray  # index into user_names
    user_names: pl.Series
    status: np.ndarray  # code into _STATUS_ORDER
    submit: np.ndarray  # float seconds
    end: np.ndarray
    end_zero: np.ndarray  # write a missing end as 0.0 (else empty)
    groups: _GroupKeys


@dataclass
class _Tasks:
    """Task-level arrays (one row per task, grouped by job); times in seconds, NaN = missing."""

    job: np.ndarray
    name: np.ndarray  # code into TASK_NAMES
    inst_num: np.ndarray
    status: np.ndarray
    start: np.ndarray
    first_start: np.ndarray  # first instance start
    end: np.ndarray
    zero_missing: np.ndarray
    plan_cpu: np.ndarray  # percent of a core
    plan_mem: np.ndarray  # GB
    plan_gpu: np.ndarray  # percent of a GPU, NaN for CPU tasks
    gpu_type: np.ndarray  # index into schema.GPU_TYPES, -1 for CPU tasks

    def __len__(self) -> int:
        return len(self.job)


def _submission_times(rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` sorted submission times, integer seconds, with daily and weekly rhythm (UTC+8)."""
    hour_starts = TRACE_START_S + 3600 * np.arange(TRACE_DAYS * 24, dtype=np.int64)
    hour, weekday = _local_hour_and_weekday(hour_starts)
    day_noise = rng.lognormal(0.0, 0.12, TRACE_DAYS)
    weight = HOUR_WEIGHTS[hour] * WEEKDAY_WEIGHTS[weekday] * np.repeat(day_noise, 24)
    cumulative = np.cumsum(weight / weight.sum())
    bins = np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), len(weight) - 1)
    return np.sort(hour_starts[bins] + rng.integers(0, 3600, n))


def _user_count(scale: float) -> int:
    """Users at `scale` (sqrt scaling keeps small releases multi-user but not too sparse)."""
    return max(5, int(round(USERS_AT_SCALE_1 * min(1.0, scale) ** 0.5 * max(1.0, scale))))


def _draw_users(rng: np.random.Generator, n_jobs: int, n_users: int) -> np.ndarray:
    """User index per job, Zipf-like activity (ranks shuffled so hashes carry no order)."""
    weights = 1.0 / np.arange(1, n_users + 1) ** USER_ZIPF_EXPONENT
    by_rank = rng.choice(n_users, size=n_jobs, p=weights / weights.sum())
    return rng.permutation(n_users)[by_rank]


def _task_layout(rng: np.random.Generator, n_jobs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task: job index, task name code, CPU-only flag."""
    layout = rng.choice(3, size=n_jobs, p=JOB_LAYOUT_SHARES)
    n_tasks = layout + 1
    job = np.repeat(np.arange(n_jobs), n_tasks)
    position = position_in_group(n_tasks)
    single = np.repeat(layout == 0, n_tasks)
    cpu = np.where(single, rng.random(len(job)) < SINGLE_TASK_CPU_SHARE, position == 1)
    multi_names = np.array([_WORKER, _PS, _EVALUATOR])[np.minimum(position, 2)]
    name = np.where(
        single,
        np.where(cpu, choice_from(rng, SINGLE_CPU_NAMES, len(job)), choice_from(rng, SINGLE_GPU_NAMES, len(job))),
        multi_names,
    )
    return job, name.astype(np.int8), cpu


def _task_status(rng: np.random.Generator, job_status: np.ndarray, job: np.ndarray,
                 name: np.ndarray) -> np.ndarray:
    """Task status: the job's, except helper tasks of failed multi-task jobs may terminate."""
    status = job_status[job].copy()
    helper = (name == _PS) | (name == _EVALUATOR)
    terminate = helper & (status == FAILED) & (rng.random(len(job)) < 0.5)
    status[terminate] = TERMINATED
    return status


def _inst_nums(rng: np.random.Generator, name: np.ndarray, cpu: np.ndarray,
               single: np.ndarray) -> np.ndarray:
    """Instances per task: mostly 1 for GPU tasks, heavy-tailed for CPU tasks."""
    n = len(name)
    cpu_many = np.clip(np.rint(lognormal(rng, CPU_INST_MEDIAN, CPU_INST_SIGMA, n)), 2, CPU_INST_MAX)
    cpu_inst = np.where(rng.random(n) < CPU_SINGLE_INSTANCE_SHARE, 1, cpu_many)
    inst = choice_from(rng, INST_NUM_SINGLE_GPU, n)
    inst = np.where((name == _WORKER) & ~single, choice_from(rng, INST_NUM_WORKER, n), inst)
    inst = np.where(name == _EVALUATOR, 1, inst)
    inst = np.where(name == _PS, choice_from(rng, INST_NUM_PS, n), inst)
    inst = np.where(cpu & single, cpu_inst, inst)
    return inst.astype(np.int64)


def _gpu_types(rng: np.random.Generator, plan_gpu: np.ndarray) -> np.ndarray:
    """GPU type code per task weighted by type capacity; >2 GPUs per instance need 8-GPU types."""
    codes = np.arange(len(schema.GPU_TYPES))
    capacity = np.array([GPU_CAPACITY[t] for t in schema.GPU_TYPES], dtype=float)
    big = np.array([t in ("MISC", "V100", "V100M32") for t in schema.GPU_TYPES])
    any_type = rng.choice(codes, size=len(plan_gpu), p=capacity / capacity.sum())
    big_type = rng.choice(codes[big], size=len(plan_gpu), p=capacity[big] / capacity[big].sum())
    gpu_type = np.where(plan_gpu > 200, big_type, any_type)
    return np.where(np.isnan(plan_gpu), -1, gpu_type).astype(np.int8)


def _task_resources(rng: np.random.Generator, name: np.ndarray, cpu: np.ndarray,
                    single: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """plan_cpu (% core), plan_mem (GB), plan_gpu (% GPU, NaN for CPU tasks), gpu_type code."""
    n = len(name)
    plan_gpu = np.where((name == _WORKER) & ~single, choice_from(rng, PLAN_GPU_WORKER, n),
                        choice_from(rng, PLAN_GPU_SINGLE, n)).astype(float)
    plan_gpu[cpu] = np.nan
    plan_cpu = np.where(cpu, choice_from(rng, PLAN_CPU_CPU_TASK, n), choice_from(rng, PLAN_CPU_GPU_TASK, n))
    mem_mb = np.where(cpu, choice_from(rng, (PLAN_MEM_MB, PLAN_MEM_CPU_SHARES), n),
                      choice_from(rng, (PLAN_MEM_MB, PLAN_MEM_GPU_SHARES), n))
    return plan_cpu.astype(float), mem_mb / 1024.0, plan_gpu, _gpu_types(rng, plan_gpu)


def _job_log_runtime_offsets(rng: np.random.Generator, user: np.ndarray, n_users: int,
                             groups: _GroupKeys) -> np.ndarray:
    """Per job, the part of its tasks' log runtime shared with the user's other jobs and with its
    recurring group (see RUNTIME_GROUP_SIGMA); mean 0."""
    user_part = rng.normal(0.0, RUNTIME_USER_SIGMA, n_users)[user]
    job_key = np.arange(len(user), dtype=np.int64) + np.int64(groups.untagged_key_base)
    job_key[groups.tagged] = groups.keys
    unique, inverse = np.unique(job_key, return_inverse=True)
    return user_part + rng.normal(0.0, RUNTIME_GROUP_SIGMA, len(unique))[inverse]


def _task_times(rng: np.random.Generator, submit: np.ndarray, job: np.ndarray,
                status: np.ndarray, position: np.ndarray,
                job_log_offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Task start, first-instance start and end, s (NaN where missing for the status).

    A task's runtime is RUNTIME_MEDIAN_S * exp(its job's `job_log_offset` + a per-task normal
    draw of sigma RUNTIME_TASK_SIGMA)."""
    n, n_jobs = len(job), len(submit)
    launch = np.where(rng.random(n_jobs) < LAUNCH_IMMEDIATE_SHARE, 0.0,
                      np.floor(lognormal(rng, LAUNCH_MEDIAN_S, 1.0, n_jobs)))
    start = submit[job] + launch[job] + np.where(position > 0, rng.integers(0, 6, n), 0)
    wait = np.where(rng.random(n) < WAIT_TAIL_SHARE,
                    lognormal(rng, WAIT_TAIL_MEDIAN_S, WAIT_TAIL_SIGMA, n),
                    lognormal(rng, WAIT_BODY_MEDIAN_S, WAIT_BODY_SIGMA, n))
    first_start = start + np.floor(np.minimum(wait, WAIT_MAX_S))
    runtime = RUNTIME_MEDIAN_S * np.exp(job_log_offset[job] + rng.normal(0.0, RUNTIME_TASK_SIGMA, n))
    runtime = np.minimum(runtime, RUNTIME_MAX_S)
    runtime *= np.where(status == FAILED, rng.uniform(*FAILED_RUNTIME_FACTOR, n), 1.0)
    end = first_start + np.maximum(1.0, np.floor(runtime))
    end[status >= RUNNING] = np.nan
    start[status == WAITING] = np.nan
    first_start[status == WAITING] = np.nan
    return start, first_start, end


def _job_ends(job: np.ndarray, task_end: np.ndarray, job_status: np.ndarray) -> np.ndarray:
    """Job end = latest task end for finished jobs, NaN for Running/Waiting ones, s."""
    end = np.full(len(job_status), -np.inf)
    np.maximum.at(end, job, np.nan_to_num(task_end, nan=-np.inf))
    end[(job_status >= RUNNING) | ~np.isfinite(end)] = np.nan
    return end


def _build_jobs_and_tasks(seed: int, scale: float) -> tuple[_Jobs, _Tasks]:
    """The job and task tables at `scale` (one random stream)."""
    rng = stream_rng(seed, _STREAM_JOBS)
    n_jobs = max(1, int(round(JOBS_AT_SCALE_1 * scale)))
    n_users = _user_count(scale)
    submit = _submission_times(rng, n_jobs).astype(float)
    user = _draw_users(rng, n_jobs, n_users)
    job_status = rng.choice(4, size=n_jobs, p=JOB_STATUS_SHARES).astype(np.int8)
    job, name, cpu = _task_layout(rng, n_jobs)
    counts = np.bincount(job, minlength=n_jobs)
    single = np.repeat(counts == 1, counts)
    status = _task_status(rng, job_status, job, name)
    inst_num = _inst_nums(rng, name, cpu, single)
    plan_cpu, plan_mem, plan_gpu, gpu_type = _task_resources(rng, name, cpu, single)
    groups = _group_keys(seed, user, n_users)
    job_log_offset = _job_log_runtime_offsets(rng, user, n_users, groups)
    start, first_start, end = _task_times(rng, submit, job, status, position_in_group(counts),
                                          job_log_offset)
    tasks = _Tasks(job=job, name=name, inst_num=inst_num, status=status, start=start,
                   first_start=first_start, end=end, zero_missing=rng.random(len(job)) < 0.5,
                   plan_cpu=plan_cpu, plan_mem=plan_mem, plan_gpu=plan_gpu, gpu_type=gpu_type)
    jobs = _Jobs(name=hex_ids(rng, n_jobs, 24), inst_id=hex_ids(rng, n_jobs, 60), user=user,
                 user_names=hex_ids(rng, n_users, 12), status=job_status, submit=submit,
                 end=_job_ends(job, end, job_status), end_zero=rng.random(n_jobs) < 0.5,
                 groups=groups)
    return jobs, tasks


_STATUS_NAMES = pl.Series(list(_STATUS_ORDER), dtype=pl.String)
_TASK_NAME_SERIES = pl.Series(list(TASK_NAMES), dtype=pl.String)
_GPU_TYPE_SERIES = pl.Series(list(schema.GPU_TYPES), dtype=pl.String)


def _job_frame(jobs: _Jobs) -> pl.DataFrame:
    """Rows of pai_job_table: start = submission, end missing unless finished."""
    return pl.DataFrame([
        jobs.name.alias("job_name"),
        jobs.inst_id.alias("inst_id"),
        jobs.user_names.gather(jobs.user).alias("user"),
        _STATUS_NAMES.gather(jobs.status).alias("status"),
        pl.Series("start_time", jobs.submit, dtype=pl.Float64),
        _time_series("end_time", jobs.end, jobs.end_zero),
    ])


def _task_frame(jobs: _Jobs, tasks: _Tasks) -> pl.DataFrame:
    """Rows of pai_task_table (plan_gpu and gpu_type empty for CPU tasks)."""
    return pl.DataFrame([
        jobs.name.gather(tasks.job).alias("job_name"),
        _TASK_NAME_SERIES.gather(tasks.name).alias("task_name"),
        pl.Series("inst_num", tasks.inst_num, dtype=pl.Float64),
        _STATUS_NAMES.gather(tasks.status).alias("status"),
        _time_series("start_time", tasks.start, tasks.zero_missing),
        _time_series("end_time", tasks.end, tasks.zero_missing),
        pl.Series("plan_cpu", tasks.plan_cpu, dtype=pl.Float64),
        pl.Series("plan_mem", tasks.plan_mem, dtype=pl.Float64),
        float_series("plan_gpu", tasks.plan_gpu),
        gather_names(_GPU_TYPE_SERIES, tasks.gpu_type.astype(np.int64), "gpu_type"),
    ])


# --------------------------------------------------------------------------------------------
# Group tags
# --------------------------------------------------------------------------------------------


def _recurring_groups(rng: np.random.Generator, users: np.ndarray, n_users: int) -> np.ndarray:
    """Group key per recurring job: runs of 2+ jobs of the same user (sizes heavy-tailed)."""
    n = len(users)
    order = np.lexsort((rng.random(n), users))
    sizes = 2 + np.floor(lognormal(rng, GROUP_SIZE_MEDIAN_EXTRA, GROUP_SIZE_SIGMA, max(n, 1)))
    segment = np.searchsorted(np.cumsum(sizes), np.arange(n), side="right")
    keys = np.empty(n, dtype=np.int64)
    keys[order] = segment * n_users + users[order]
    return keys


@dataclass
class _GroupKeys:
    """Which jobs carry a group tag (`tagged`: job indices) and their group keys (equal keys =
    one recurring group; a one-off job's key is its own). Untagged jobs may take one key each
    from `untagged_key_base` on, above every key in `keys`."""

    tagged: np.ndarray
    keys: np.ndarray
    untagged_key_base: int


def _group_keys(seed: int, user: np.ndarray, n_users: int) -> _GroupKeys:
    """The group of every tagged job (own random stream, drawn before the runtimes that depend
    on it)."""
    rng = stream_rng(seed, _STREAM_GROUP_KEYS)
    n_jobs = len(user)
    tagged = np.flatnonzero(rng.random(n_jobs) < TAGGED_JOB_SHARE)
    recurring = rng.random(len(tagged)) < RECURRING_SHARE
    one_off_base = (n_jobs + 1) * n_users
    keys = np.arange(len(tagged), dtype=np.int64) + one_off_base
    keys[recurring] = _recurring_groups(rng, user[tagged][recurring], n_users)
    return _GroupKeys(tagged=tagged, keys=keys, untagged_key_base=one_off_base + n_jobs)


def _group_tag_frame(seed: int, jobs: _Jobs, tasks: _Tasks) -> pl.DataFrame:
    """Rows of pai_group_tag_table: one per inst_id for ~80 % of jobs, in job order."""
    rng = stream_rng(seed, _STREAM_GROUPS)
    n_jobs = len(jobs.user)
    tagged = jobs.groups.tagged
    users = jobs.user[tagged]
    unique, group = np.unique(jobs.groups.keys, return_inverse=True)
    group_names = hex_ids(rng, len(unique), 32)
    workload = np.where(rng.random(len(unique)) < WORKLOAD_SHARE,
                        rng.choice(len(WORKLOADS), size=len(unique), p=WORKLOAD_WEIGHTS), -1)
    spec = _gpu_type_specs(rng, tasks, n_jobs)[tagged]
    return pl.DataFrame([
        jobs.inst_id.gather(tagged).alias("inst_id"),
        jobs.user_names.gather(users).alias("user"),
        gather_names(_GPU_TYPE_SERIES, spec, "gpu_type_spec"),
        group_names.gather(group).alias("group"),
        gather_names(pl.Series(list(WORKLOADS)), workload[group], "workload"),
    ])


def _gpu_type_specs(rng: np.random.Generator, tasks: _Tasks, n_jobs: int) -> np.ndarray:
    """Per job: GPU type code asked for explicitly (its first GPU task's type) or -1."""
    spec = np.full(n_jobs, -1, dtype=np.int64)
    gpu_tasks = np.flatnonzero(tasks.gpu_type >= 0)
    jobs_with_gpu, first = np.unique(tasks.job[gpu_tasks], return_index=True)
    pick = rng.random(len(jobs_with_gpu)) < GPU_TYPE_SPEC_SHARE
    spec[jobs_with_gpu[pick]] = tasks.gpu_type[gpu_tasks[first[pick]]]
    return spec


# --------------------------------------------------------------------------------------------
# Instances, sensors, machine metrics (per chunk of tasks)
# --------------------------------------------------------------------------------------------


@dataclass
class _InstanceChunk:
    """Instance rows of one chunk of tasks, in output order, plus what sensors/metrics need."""

    task: np.ndarray  # global task index per row
    status: np.ndarray
    start: np.ndarray  # s, NaN = missing
    end: np.ndarray
    zero_missing: np.ndarray
    machine: np.ndarray  # machine index, -1 = none
    inst_name: pl.Series
    worker_name: pl.Series
    observed: np.ndarray  # uniform draw deciding sensor/metric coverage; NaN on attempt rows


def _place(rng: np.random.Generator, machines: _Machines, gpu_type: np.ndarray) -> np.ndarray:
    """Machine index per instance: same gpu_type for GPU tasks, CPU or any machine otherwise."""
    placed = rng.integers(0, len(machines.gpu_type), len(gpu_type))
    cpu_machines = machines.of_type("CPU")
    on_cpu = (gpu_type < 0) & (rng.random(len(gpu_type)) < CPU_TASK_ON_CPU_MACHINE)
    placed[on_cpu] = cpu_machines[rng.integers(0, len(cpu_machines), int(on_cpu.sum()))]
    for code, type_name in enumerate(schema.GPU_TYPES):
        rows = np.flatnonzero(gpu_type == code)
        candidates = machines.of_type(type_name)
        placed[rows] = candidates[rng.integers(0, len(candidates), len(rows))]
    return placed


def _instance_times(rng: np.random.Generator, tasks: _Tasks, task: np.ndarray,
                    position: np.ndarray, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Instance start/end, s: the first instance spans the task, others start a bit later."""
    n = len(task)
    later = position > 0
    start = tasks.first_start[task] + np.where(later, np.floor(lognormal(rng, 2.0, 1.0, n)), 0.0)
    task_end = tasks.end[task]
    start = np.where(np.isnan(task_end), start, np.minimum(start, task_end))
    shorten = np.where(later, np.floor(rng.random(n) * 0.2 * (task_end - start)), 0.0)
    end = task_end - shorten
    end[status >= RUNNING] = np.nan
    start[status == WAITING] = np.nan
    return start, end


def _instance_status(rng: np.random.Generator, task_status: np.ndarray,
                     position: np.ndarray) -> np.ndarray:
    """Instance status from its task's: in a failed task the first and ~half the others fail."""
    status = task_status.copy()
    survive = (task_status == FAILED) & (position > 0) & (rng.random(len(status)) < 0.5)
    status[survive] = TERMINATED
    return status


def _add_retries(rng: np.random.Generator, chunk: _InstanceChunk, machines: _Machines,
                 gpu_type: np.ndarray) -> _InstanceChunk:
    """Give ~3 % of placed instances an earlier Failed attempt row (same worker_name)."""
    n = len(chunk.task)
    eligible = (chunk.machine >= 0) & ~np.isnan(chunk.start)
    picked = np.flatnonzero(eligible & (rng.random(n) < RETRY_SHARE))
    first_start = chunk.start[picked]
    end = chunk.end[picked]
    finished = ~np.isnan(end)
    span = np.where(finished, end - first_start, 0.0)
    attempt_end = first_start + np.where(
        finished, np.floor(rng.uniform(0.05, 0.5, len(picked)) * span),
        np.floor(lognormal(rng, 60.0, 1.0, len(picked))))
    restart = attempt_end + rng.integers(1, 30, len(picked))
    new_start = chunk.start.copy()
    new_start[picked] = np.where(finished, np.minimum(restart, end), restart)
    order = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * picked]), kind="stable")

    def merged(main: np.ndarray, attempt: np.ndarray) -> np.ndarray:
        return np.concatenate([main, attempt])[order]

    rows = np.concatenate([np.arange(n), picked])[order]
    attempt_machine = _place(rng, machines, gpu_type[picked])
    return _InstanceChunk(
        task=chunk.task[rows],
        status=merged(chunk.status, np.full(len(picked), FAILED, dtype=chunk.status.dtype)),
        start=merged(new_start, first_start),
        end=merged(chunk.end, attempt_end),
        zero_missing=chunk.zero_missing[rows],
        machine=merged(chunk.machine, attempt_machine),
        inst_name=chunk.inst_name.gather(rows),
        worker_name=chunk.worker_name.gather(rows),
        observed=merged(chunk.observed, np.full(len(picked), np.nan)),
    )


def _task_range(index: int, n_tasks: int) -> tuple[int, int]:
    """Global task indices [lo, hi) of chunk `index`."""
    return index * CHUNK_TASKS, min(n_tasks, (index + 1) * CHUNK_TASKS)


def _build_instances(seed: int, index: int, tasks: _Tasks, machines: _Machines) -> _InstanceChunk:
    """Instance rows of the tasks of chunk `index` (own random stream)."""
    rng = stream_rng(seed, _STREAM_INSTANCES, index)
    lo, hi = _task_range(index, len(tasks))
    counts = tasks.inst_num[lo:hi]
    task = np.repeat(np.arange(lo, hi), counts)
    n = len(task)
    position = position_in_group(counts)
    status = _instance_status(rng, tasks.status[task], position)
    start, end = _instance_times(rng, tasks, task, position, status)
    gpu_type = tasks.gpu_type[task]
    machine = _place(rng, machines, gpu_type)
    unplaced = (status == WAITING) | ((status == RUNNING) & (rng.random(n) < RUNNING_UNPLACED_SHARE))
    machine[unplaced] = -1
    chunk = _InstanceChunk(task=task, status=status, start=start, end=end,
                           zero_missing=rng.random(n) < 0.5, machine=machine,
                           inst_name=hex_ids(rng, n, 60), worker_name=hex_ids(rng, n, 60),
                           observed=rng.random(n))
    return _add_retries(rng, chunk, machines, gpu_type)


def _instance_frame(chunk: _InstanceChunk, jobs: _Jobs, tasks: _Tasks,
                    machines: _Machines) -> pl.DataFrame:
    """Rows of pai_instance_table for one chunk."""
    job = tasks.job[chunk.task]
    return pl.DataFrame([
        jobs.name.gather(job).alias("job_name"),
        _TASK_NAME_SERIES.gather(tasks.name[chunk.task]).alias("task_name"),
        chunk.inst_name.alias("inst_name"),
        chunk.worker_name.alias("worker_name"),
        jobs.inst_id.gather(job).alias("inst_id"),
        _STATUS_NAMES.gather(chunk.status).alias("status"),
        _time_series("start_time", chunk.start, chunk.zero_missing),
        _time_series("end_time", chunk.end, chunk.zero_missing),
        gather_names(machines.name, chunk.machine, "machine"),
    ])


def _gpu_memory_gb(gpu_type: np.ndarray) -> np.ndarray:
    """Device memory per GPU, GB, by gpu_type code (NaN for CPU tasks)."""
    per_type = np.array([schema.GPU_MEMORY_GB.get(t, MISC_GPU_MEMORY_GB) for t in schema.GPU_TYPES])
    return np.where(gpu_type >= 0, per_type[np.maximum(gpu_type, 0)], np.nan)


def _gpu_util_fractions(rng: np.random.Generator, n: int) -> np.ndarray:
    """GPU utilisation per task as a fraction of its plan_gpu: mostly idle, some busy, few over."""
    kind = rng.random(n)
    idle = np.minimum(lognormal(rng, GPU_UTIL_IDLE_MEDIAN, GPU_UTIL_IDLE_SIGMA, n), 0.95)
    busy = rng.beta(*GPU_UTIL_BUSY_BETA, n) * 0.99
    over = rng.uniform(*GPU_UTIL_OVER_RANGE, n)
    return np.where(kind < GPU_UTIL_OVER_SHARE, over,
                    np.where(kind < GPU_UTIL_OVER_SHARE + GPU_UTIL_BUSY_SHARE, busy, idle))


def _sensor_values(rng: np.random.Generator, plan_cpu: np.ndarray, plan_mem: np.ndarray,
                   plan_gpu: np.ndarray, util_fraction: np.ndarray,
                   gpu_type: np.ndarray) -> dict[str, np.ndarray]:
    """Per-instance usage: cpu % core, GPU util % GPU, memory GB, network bytes and counts."""
    n = len(plan_cpu)
    cpu_usage = np.round(plan_cpu * lognormal(rng, 0.35, 0.9, n), 2)
    jittered = util_fraction * lognormal(rng, 1.0, 0.2, n)
    gpu_util = np.round(plan_gpu * np.where(util_fraction < 1.0, np.minimum(jittered, 0.99), jittered), 2)
    avg_mem = np.round(plan_mem * np.minimum(lognormal(rng, 0.25, 0.9, n), 3.0), 6)
    max_mem = np.round(avg_mem * (1.0 + lognormal(rng, 0.3, 0.8, n)), 6)
    device_gb = _gpu_memory_gb(gpu_type) * np.maximum(1.0, np.ceil(plan_gpu / 100.0))
    peak = device_gb * rng.beta(1.2, 3.0, n)
    overflow = rng.random(n) < GPU_MEM_OVERFLOW_SHARE
    peak[overflow] = device_gb[overflow] * rng.uniform(1.0, 1.4, int(overflow.sum()))
    read = np.round(lognormal(rng, 2e8, 2.3, n))
    write = np.round(lognormal(rng, 5e7, 2.5, n))
    return {
        "cpu_usage": cpu_usage,
        "gpu_wrk_util": gpu_util,
        "avg_mem": avg_mem,
        "max_mem": max_mem,
        "avg_gpu_wrk_mem": np.round(peak * rng.uniform(0.4, 1.0, n), 6),
        "max_gpu_wrk_mem": np.round(peak, 6),
        "read": np.minimum(read, 1e15),
        "write": np.minimum(write, 1e15),
        "read_count": np.maximum(1.0, np.round(read / lognormal(rng, 65536, 1.0, n))),
        "write_count": np.maximum(1.0, np.round(write / lognormal(rng, 65536, 1.0, n))),
    }


def _sensor_frame(seed: int, index: int, chunk: _InstanceChunk, jobs: _Jobs, tasks: _Tasks,
                  machines: _Machines) -> pl.DataFrame:
    """Rows of pai_sensor_table for one chunk: one per observed, placed, started worker."""
    rng = stream_rng(seed, _STREAM_SENSORS, index)
    lo, hi = _task_range(index, len(tasks))
    util_fraction = _gpu_util_fractions(rng, hi - lo)
    rows = np.flatnonzero((chunk.observed < SENSOR_SHARE) & (chunk.machine >= 0)
                          & ~np.isnan(chunk.start))
    task = chunk.task[rows]
    machine = chunk.machine[rows]
    gpu_type = tasks.gpu_type[task].astype(np.int64)
    device = np.where(gpu_type >= 0,
                      rng.integers(0, np.maximum(machines.cap_gpu[machine], 1)), -1)
    values = _sensor_values(rng, tasks.plan_cpu[task], tasks.plan_mem[task], tasks.plan_gpu[task],
                            util_fraction[task - lo], gpu_type)
    device_names = pl.Series([f"/dev/nvidia{k}" for k in range(8)], dtype=pl.String)
    job = tasks.job[task]
    return pl.DataFrame([
        jobs.name.gather(job).alias("job_name"),
        _TASK_NAME_SERIES.gather(tasks.name[task]).alias("task_name"),
        chunk.worker_name.gather(rows).alias("worker_name"),
        jobs.inst_id.gather(job).alias("inst_id"),
        machines.name.gather(machine).alias("machine"),
        gather_names(device_names, device, "gpu_name"),
        *[float_series(name, column) for name, column in values.items()],
    ])


def _metric_frame(seed: int, index: int, chunk: _InstanceChunk, machines: _Machines) -> pl.DataFrame:
    """Rows of pai_machine_metric for one chunk: per finished observed worker, integer times."""
    rng = stream_rng(seed, _STREAM_METRICS, index)
    rows = np.flatnonzero((chunk.observed < METRIC_SHARE) & (chunk.machine >= 0)
                          & ~np.isnan(chunk.start) & ~np.isnan(chunk.end))
    n = len(rows)
    machine = chunk.machine[rows]
    iowait = np.round(lognormal(rng, 0.15, 1.2, n), 4)
    kernel = np.round(lognormal(rng, 3.0, 0.7, n), 4)
    usr = np.round(np.minimum(lognormal(rng, 18.0, 0.8, n), 95.0), 4)
    gpu = np.round(np.minimum(lognormal(rng, 20.0, 1.1, n), 110.0), 4)
    gpu[machines.cap_gpu[machine] == 0] = np.nan
    return pl.DataFrame([
        chunk.worker_name.gather(rows).alias("worker_name"),
        machines.name.gather(machine).alias("machine"),
        pl.Series("start_time", chunk.start[rows].astype(np.int64), dtype=pl.Int64),
        pl.Series("end_time", chunk.end[rows].astype(np.int64), dtype=pl.Int64),
        float_series("machine_cpu_iowait", iowait),
        float_series("machine_cpu_kernel", kernel),
        float_series("machine_cpu_usr", usr),
        float_series("machine_gpu", gpu),
        float_series("machine_load_1", np.round(lognormal(rng, 25.0, 0.7, n), 4)),
        float_series("machine_net_receive", np.round(lognormal(rng, 5e6, 1.5, n), 2)),
        float_series("machine_num_worker", np.round(1.0 + lognormal(rng, 3.0, 0.8, n), 4)),
        float_series("machine_cpu", np.round(iowait + kernel + usr, 4)),
    ])


# --------------------------------------------------------------------------------------------
# Writing: headerless CSV to a temp file, then a deterministic gzip'd tar, atomically
# --------------------------------------------------------------------------------------------


def _within_ranges(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """`frame` with every float column held to its accepted range (`schema.RANGES`), as real data
    are: the long tails drawn here reach past it only at large scales (10 and more). Values that
    mean "missing" stay as they are."""
    clipped = []
    for column, ranged in schema.RANGES[table].items():
        name = ranged.field or column
        if name in frame.columns and frame.schema[name] == pl.Float64 and isinstance(ranged.high, (int, float)):
            value = pl.col(name)
            held = value.clip(float(ranged.low), float(ranged.high))
            clipped.append((pl.when(value.is_in(list(ranged.missing))).then(value).otherwise(held)
                            if ranged.missing else held).alias(name))
    return frame.with_columns(clipped) if clipped else frame


def _write_csv(frame: pl.DataFrame, handle: BinaryIO, table: str) -> int:
    """Append `frame` as headerless CSV rows in the official column order, every value within its
    accepted range; return rows written."""
    ordered = _within_ranges(frame, table).select(list(schema.COLUMNS[table]))
    ordered.write_csv(handle, include_header=False, separator=",", line_terminator="\n",
                      null_value="", quote_style="necessary")
    return ordered.height


def _pack(csv_path: Path, member: str, archive: Path) -> None:
    """Write `csv_path` as the only member `member` of gzip'd tar `archive`; the CSV is removed."""
    try:
        pack_tar_gz([(csv_path, member)], archive, TAR_MTIME, GZIP_LEVEL)
    finally:
        csv_path.unlink(missing_ok=True)


class _Packer:
    """Compresses finished CSVs into archives in worker threads (zlib releases the GIL)."""

    def __init__(self, out_dir: Path, progress: Callable[[str], None] | None):
        self.out_dir = out_dir
        self.progress = progress
        self.pool = ThreadPoolExecutor(max_workers=COMPRESS_WORKERS)
        self.pending: dict[str, tuple[Future[None], int]] = {}
        self.done: dict[str, Path] = {}
        self.temps: list[Path] = []

    def csv_path(self, table: str) -> Path:
        """A temp CSV path in out_dir for `table`, removed on success or failure."""
        path = temp_path_in(self.out_dir, f"{table}.csv")
        self.temps.append(path)
        return path

    def submit(self, table: str, csv_path: Path, rows: int) -> None:
        """Start packing `csv_path` into `<table>.tar.gz`."""
        archive = self.out_dir / f"{table}.tar.gz"
        self.pending[table] = (self.pool.submit(_pack, csv_path, f"{table}.csv", archive), rows)
        self.poll()

    def poll(self, wait: bool = False) -> None:
        """Collect finished archives (all of them if `wait`) and report progress per table."""
        for table, (future, rows) in list(self.pending.items()):
            if not wait and not future.done():
                continue
            future.result()
            del self.pending[table]
            path = self.out_dir / f"{table}.tar.gz"
            self.done[table] = path
            if self.progress is not None:
                self.progress(f"{table}: {rows:,} rows, {path.stat().st_size:,} bytes")

    def close(self) -> None:
        """Stop the workers and remove leftover temp files."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        for path in self.temps:
            path.unlink(missing_ok=True)


def _write_table(packer: _Packer, table: str, frame: pl.DataFrame) -> None:
    """Write a whole in-memory table and queue it for packing."""
    path = packer.csv_path(table)
    with open(path, "wb") as handle:
        rows = _write_csv(frame, handle, table)
    packer.submit(table, path, rows)


def _write_instance_tables(packer: _Packer, wanted: list[str], seed: int, jobs: _Jobs,
                           tasks: _Tasks, machines: _Machines) -> None:
    """Stream the instance, sensor and machine-metric tables chunk by chunk."""
    names = [t for t in ("pai_instance_table", "pai_sensor_table", "pai_machine_metric") if t in wanted]
    paths = {t: packer.csv_path(t) for t in names}
    rows = dict.fromkeys(names, 0)
    with contextlib.ExitStack() as stack:
        handles = {t: stack.enter_context(open(paths[t], "wb")) for t in names}
        for index in range((len(tasks) + CHUNK_TASKS - 1) // CHUNK_TASKS):
            chunk = _build_instances(seed, index, tasks, machines)
            if "pai_instance_table" in handles:
                rows["pai_instance_table"] += _write_csv(
                    _instance_frame(chunk, jobs, tasks, machines),
                    handles["pai_instance_table"], "pai_instance_table")
            if "pai_sensor_table" in handles:
                rows["pai_sensor_table"] += _write_csv(
                    _sensor_frame(seed, index, chunk, jobs, tasks, machines),
                    handles["pai_sensor_table"], "pai_sensor_table")
            if "pai_machine_metric" in handles:
                rows["pai_machine_metric"] += _write_csv(
                    _metric_frame(seed, index, chunk, machines),
                    handles["pai_machine_metric"], "pai_machine_metric")
            packer.poll()
    for table in names:
        packer.submit(table, paths[table], rows[table])


def _requested_tables(tables: Sequence[str] | None) -> list[str]:
    """The requested tables in official order; ValueError for an unknown name."""
    if tables is None:
        return list(schema.TABLES)
    if isinstance(tables, str):
        tables = [tables]
    unknown = sorted(set(tables) - set(schema.TABLES))
    if unknown:
        raise ValueError(f"unknown PAI table(s) {unknown}; expected some of {list(schema.TABLES)}")
    return [t for t in schema.TABLES if t in set(tables)]


def generate(out_dir: Path, scale: float = 1.0, seed: int = 0,
                 tables: Sequence[str] | None = None,
                 progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Write a synthetic PAI v2020 release into `out_dir`; return table -> `<table>.tar.gz` path.

    `scale` multiplies row counts and machines (1.0 ~ the real release, ~4 GB of CSV);
    `seed` (a non-negative int) fixes every byte; `tables` restricts the output to some tables
    (the others are still modelled where needed, so the rows are the same as in a full run);
    `progress` receives one short message per finished table.
    """
    seed = check_scale_and_seed(scale, seed)
    wanted = _requested_tables(tables)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    packer = _Packer(out_dir, progress)
    try:
        machines = _build_machines(seed, scale)
        if "pai_machine_spec" in wanted:
            _write_table(packer, "pai_machine_spec", _machine_frame(machines))
        if set(wanted) - {"pai_machine_spec"}:
            _write_model_tables(packer, wanted, seed, scale, machines)
        packer.poll(wait=True)
    finally:
        packer.close()
    return {table: packer.done[table] for table in wanted}


def _write_model_tables(packer: _Packer, wanted: list[str], seed: int, scale: float,
                        machines: _Machines) -> None:
    """Write the job-derived tables in `wanted` (jobs, tasks, group tags, instances...)."""
    jobs, tasks = _build_jobs_and_tasks(seed, scale)
    if "pai_job_table" in wanted:
        _write_table(packer, "pai_job_table", _job_frame(jobs))
    if "pai_task_table" in wanted:
        _write_table(packer, "pai_task_table", _task_frame(jobs, tasks))
    if "pai_group_tag_table" in wanted:
        _write_table(packer, "pai_group_tag_table", _group_tag_frame(seed, jobs, tasks))
    if set(wanted) & {"pai_instance_table", "pai_sensor_table", "pai_machine_metric"}:
        _write_instance_tables(packer, wanted, seed, jobs, tasks, machines)
