"""A synthetic Shanghai AI Lab Acme trace (NSDI'24 "Characterization of LLM Development"), job files.

`generate(out_dir)` writes `trace_seren.csv` and `trace_kalos.csv` with a header, `\\n` line
ends and an empty field for a missing value:

- Seren: `job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time`
  (SEREN_COLUMNS); times like `2023-03-01 08:00:12+08:00`; Slurm-style integer job ids.
- Kalos: the same columns plus `mem_per_pod_GB,shared_mem_per_pod,fail_time,stop_time`; times
  like `2023-07-10 02:11:03+00:00`; ids like `dlc1t2ypl09b8qtp`. Column order (KALOS_COLUMNS) is
  the one of the official AcmeTrace README example (the extra memory columns after `cpu_num`,
  `fail_time,stop_time` after `end_time`); TRACES.md does not fix it.

Definitions (AcmeTrace README): `duration = end_time - start_time`, `queue = start_time -
submit_time` (s), `gpu_time = duration * gpu_num` (GPU-seconds). `type` is one of Pretrain, SFT,
Eval, MLLM, Debug, Other (CPU jobs mostly Other/Debug). `state` is COMPLETED, CANCELLED or FAILED;
Seren (a Slurm cluster) also has the rare TIMEOUT and NODE_FAIL, counted as failed in the paper.

Modelling choices (no real job file is available here):
- Seren runs 2023-03-01..08-31, Kalos 2023-05-01..08-31 (Shanghai days); submissions follow a
  daily and weekly rhythm in Shanghai time; rows are sorted by submission.
- Run time grows with the workload (pretraining runs are the largest and longest and are the
  jobs most often cancelled, which is why cancelled jobs hold most of the GPU time); the jobs are
  not scheduled on a modelled cluster, so concurrent demand is not capped by its capacity.
- Half of the cancelled jobs that would have queued at least a minute are cancelled while
  queued, after 20-100 % of that queue time. Seren writes them the Slurm way:
  start = end = cancel time, duration 0, gpu_time 0.0 (so duration/queue never empty, as in the
  README's integer columns). Kalos leaves start_time, end_time, duration, queue and gpu_time
  empty and records the cancel time in stop_time.
- Kalos `fail_time` = end_time for FAILED jobs, `stop_time` = end_time for CANCELLED jobs (or the
  cancel time if never started); both empty otherwise. Kalos `queue` is written as a float
  (`10.0`) and `gpu_time` as a float in both files, as in the README example.
- `node_num = ceil(gpu_num / 8)` (8-GPU nodes); CPU jobs use one node. TIMEOUT and NODE_FAIL
  are 2 % and 0.5 % of Seren's failed jobs ("very rare", README); Kalos has neither.
- Users `u` + 4 hex digits with Zipf-like activity; Seren ids are increasing Slurm numbers.

Calibration (scale 1, per cluster, from shared/traces/acmetrace/cluster_summary.csv): job counts
and the CPU/GPU split; for GPU jobs the median/mean GPUs, run time and queue time, the longest run
and largest job, the complete/cancel/fail rates and (roughly) their shares of GPU time; for CPU
jobs the median/mean run and queue time and the state rates. `scale` multiplies job counts (at
least a handful of jobs of each kind) and, by sqrt, users.

Determinism: each cluster has its own random stream of `seed`; the same (scale, seed) gives
byte-identical files. Files are written to hidden temp files in `out_dir` and renamed into place
once both are complete.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ddlx.datasets.synth_common import check_scale_and_seed, choice_from, lognormal, publish, stream_rng, temp_path_in
from ddlx.traces.acme.release import RELEASE

__all__ = ["generate", "SEREN_COLUMNS", "KALOS_COLUMNS", "FILE_NAMES", "JOB_TYPES", "STATES"]

# --------------------------------------------------------------------------------------------
# Format (TRACES.md Acme section; column order of Kalos and value styles: AcmeTrace README)
# --------------------------------------------------------------------------------------------

SEREN_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                 "start_time", "end_time", "duration", "queue", "gpu_time")
KALOS_COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB",
                 "shared_mem_per_pod", "type", "state", "submit_time", "start_time", "end_time",
                 "fail_time", "stop_time", "duration", "queue", "gpu_time")
FILE_NAMES = tuple(f.filename for f in RELEASE.files)

#: Workload types (codes index this tuple).
JOB_TYPES = ("Pretrain", "SFT", "Eval", "MLLM", "Debug", "Other")
PRETRAIN, SFT, EVAL, MLLM, DEBUG, OTHER = range(6)
#: Final states (codes index this tuple); TIMEOUT and NODE_FAIL only in Seren.
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL = range(5)

#: GPUs per node (A100 servers with 8 GPUs in both clusters; paper).
GPUS_PER_NODE = 8
#: Offset of Shanghai time from UTC, s (submission rhythm is local).
SHANGHAI_OFFSET_S = 8 * 3600
#: Relative submission rate per local hour 0..23 and per weekday Monday..Sunday (modelling choice).
HOUR_WEIGHTS = np.array([
    0.45, 0.35, 0.28, 0.22, 0.18, 0.16, 0.18, 0.25, 0.45, 0.80, 1.20, 1.35,
    1.15, 1.25, 1.45, 1.55, 1.55, 1.45, 1.20, 1.20, 1.30, 1.25, 0.95, 0.70,
])
WEEKDAY_WEIGHTS = np.array([1.0, 1.03, 1.04, 1.02, 0.98, 0.70, 0.62])

#: Least number of GPU jobs and of CPU jobs per cluster at any scale (modelling choice).
MIN_JOBS_PER_KIND = 6
#: Least number of users; Zipf exponent of per-user activity; log-sigma of the day-to-day
#: variation of the submission rate (modelling choices).
MIN_USERS = 5
USER_ZIPF_EXPONENT = 1.2
DAY_RATE_SIGMA = 0.15


@dataclass(frozen=True)
class _Workload:
    """One workload type of a cluster's GPU jobs.

    share: share of GPU jobs; gpus: (values, weights) of gpu_num; propensity: relative
    (completed, cancelled, failed) odds, rescaled so the cluster's state rates come out;
    run: (median s, log-sigma) of the run time of a completed job.
    """

    type: int
    share: float
    gpus: tuple[tuple[int, ...], tuple[float, ...]]
    propensity: tuple[float, float, float]
    run: tuple[float, float]


@dataclass(frozen=True)
class _Cluster:
    """Everything that differs between Seren and Kalos (times in s)."""

    name: str
    file: str
    columns: tuple[str, ...]
    utc_offset_s: int  # offset written in the time stamps
    slurm: bool  # Slurm conventions: integer job ids and queue, a job cancelled while queued
    #              starts and ends at the cancel; otherwise DLC ids, float queue, empty times
    first_day: str  # first Shanghai day of submissions, ISO
    days: int
    jobs: int  # at scale 1
    gpu_jobs: int
    users: int
    # GPU jobs
    workloads: tuple[_Workload, ...]
    gpu_state_rates: tuple[float, float, float]  # completed, cancelled, failed
    run_factor_cancelled: float  # run-time multiplier of cancelled / failed jobs
    run_factor_failed: float
    gpu_queue: tuple[float, float, float, float, float]  # body median, sigma, tail share, median, sigma
    cpus_per_gpu: tuple[tuple[int, ...], tuple[float, ...]]
    # CPU jobs
    cpu_types: tuple[tuple[int, ...], tuple[float, ...]]
    cpu_state_rates: tuple[float, float, float]
    cpu_run: tuple[float, float]
    cpu_queue: tuple[float, float, float, float, float]
    cpu_nums: tuple[tuple[int, ...], tuple[float, ...]]
    # both
    max_run_s: int
    cancelled_in_queue: float  # share of long-queued cancelled jobs cancelled while queued
    timeout_share_of_failed: float
    node_fail_share_of_failed: float


# --------------------------------------------------------------------------------------------
# Calibration constants. Targets from shared/traces/acmetrace/cluster_summary.csv (rows Seren and
# Kalos): job_num, gpu_job_num, *_rate_gpu, *_rate_cpu, max_run_time_gpu, max_gpu. The shapes
# (workload mix, GPUs per workload, propensities, run and queue parameters) are modelling
# choices tuned so that the medians / means of the summary come out at scale 1.
# --------------------------------------------------------------------------------------------

_POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

SEREN = _Cluster(
    name="Seren", file="trace_seren.csv", columns=SEREN_COLUMNS, utc_offset_s=8 * 3600, slurm=True,
    first_day="2023-03-01", days=184, jobs=1_031_550, gpu_jobs=663_813, users=260,
    workloads=(
        _Workload(PRETRAIN, 0.0045, ((64, 128, 256, 512, 1024), (0.25, 0.30, 0.28, 0.14, 0.03)),
                  (0.4, 1.0, 0.6), (3000.0, 1.6)),
        _Workload(SFT, 0.06, ((8, 16, 32, 64), (0.45, 0.30, 0.17, 0.08)), (1.0, 0.22, 0.8), (900.0, 1.9)),
        _Workload(MLLM, 0.04, ((1, 8, 16, 32, 64), (0.2, 0.5, 0.15, 0.1, 0.05)), (1.0, 0.2, 0.9),
                  (600.0, 1.9)),
        _Workload(EVAL, 0.28, ((1, 2, 4, 8), (0.72, 0.07, 0.08, 0.13)), (1.2, 0.05, 0.7), (180.0, 1.7)),
        _Workload(DEBUG, 0.20, ((1, 2, 4, 8, 16), (0.59, 0.06, 0.08, 0.25, 0.02)), (0.7, 0.1, 1.3),
                  (50.0, 1.9)),
        _Workload(OTHER, 0.4155, ((1, 2, 4, 8, 16, 32), (0.56, 0.06, 0.07, 0.26, 0.04, 0.01)),
                  (1.0, 0.1, 0.9), (130.0, 2.1)),
    ),
    gpu_state_rates=(0.497, 0.075, 0.429),
    run_factor_cancelled=3.2, run_factor_failed=0.6,
    gpu_queue=(1.3, 0.9, 0.06, 1800.0, 1.7),
    cpus_per_gpu=((16, 12, 8, 4), (0.7, 0.1, 0.12, 0.08)),
    cpu_types=((OTHER, DEBUG, EVAL), (0.80, 0.15, 0.05)),
    cpu_state_rates=(0.858, 0.039, 0.102),
    cpu_run=(14.0, 2.85),
    cpu_queue=(1.2, 0.7, 0.01, 120.0, 1.5),
    cpu_nums=((1, 2, 4, 8, 16, 32, 64), (0.15, 0.15, 0.2, 0.2, 0.15, 0.1, 0.05)),
    max_run_s=1_209_604, cancelled_in_queue=0.5,
    timeout_share_of_failed=0.02, node_fail_share_of_failed=0.005,
)

KALOS = _Cluster(
    name="Kalos", file="trace_kalos.csv", columns=KALOS_COLUMNS, utc_offset_s=0, slurm=False,
    first_day="2023-05-01", days=123, jobs=62_413, gpu_jobs=19_907, users=120,
    workloads=(
        _Workload(PRETRAIN, 0.05, ((64, 128, 256, 512, 1024), (0.05, 0.15, 0.30, 0.35, 0.15)),
                  (1.2, 1.0, 0.6), (1900.0, 1.8)),
        _Workload(SFT, 0.04, ((8, 16, 32, 64), (0.3, 0.3, 0.2, 0.2)), (1.0, 0.15, 0.8), (700.0, 1.8)),
        _Workload(MLLM, 0.01, ((8, 16, 32, 64), (0.3, 0.3, 0.2, 0.2)), (1.0, 0.15, 0.8), (600.0, 1.8)),
        _Workload(EVAL, 0.715, ((1, 2, 4, 8), (0.80, 0.05, 0.05, 0.10)), (1.2, 0.03, 0.6), (125.0, 1.5)),
        _Workload(DEBUG, 0.045, ((1, 8, 16, 32, 64), (0.3, 0.4, 0.1, 0.1, 0.1)), (0.6, 0.1, 1.2),
                  (60.0, 1.8)),
        _Workload(OTHER, 0.14, ((1, 8, 16, 32, 64), (0.35, 0.3, 0.1, 0.1, 0.15)), (1.0, 0.1, 0.8),
                  (120.0, 1.9)),
    ),
    gpu_state_rates=(0.541, 0.062, 0.397),
    run_factor_cancelled=2.6, run_factor_failed=0.7,
    gpu_queue=(17.0, 1.0, 0.05, 2400.0, 1.1),
    cpus_per_gpu=((15, 12, 16, 8), (0.6, 0.2, 0.1, 0.1)),
    cpu_types=((OTHER, DEBUG, EVAL), (0.75, 0.20, 0.05)),
    cpu_state_rates=(0.86, 0.001, 0.14),
    cpu_run=(22.0, 1.8),
    cpu_queue=(9.0, 1.0, 0.025, 1800.0, 1.0),
    cpu_nums=((1, 2, 4, 8, 16, 32, 64), (0.1, 0.15, 0.2, 0.25, 0.15, 0.1, 0.05)),
    max_run_s=625_740, cancelled_in_queue=0.5,
    timeout_share_of_failed=0.0, node_fail_share_of_failed=0.0,
)
CLUSTERS = (SEREN, KALOS)

#: Seren job ids: Slurm ids from the README example's neighbourhood, increasing with submission
#: with gaps (other partitions share the counter; modelling choice).
SEREN_FIRST_JOB_ID = 5_778_000
SEREN_JOB_ID_GAP_MEAN = 1.6
#: Kalos job ids: "dlc" + 13 lowercase base-36 characters (README example).
KALOS_ID_PREFIX, KALOS_ID_CHARS = "dlc", 13
#: Kalos pod memory, GB, by GPUs per pod (1-8) or for CPU pods: (values, weights); shared memory
#: per pod, GB, as a share of pod memory (README example: 1000 GB / 100.0 for an 8-GPU pod).
KALOS_POD_MEMORY_8_GPU = ((1000, 800, 500), (0.75, 0.15, 0.10))
KALOS_POD_MEMORY_PER_GPU = ((120, 100, 60), (0.6, 0.25, 0.15))
KALOS_POD_MEMORY_CPU = ((8, 16, 32, 64, 128), (0.2, 0.3, 0.25, 0.15, 0.1))
KALOS_SHARED_MEMORY_SHARE = 0.1
#: Cancelled jobs whose queue time would have been at least CANCEL_IN_QUEUE_MIN_S may be
#: cancelled while queued (share per cluster: `cancelled_in_queue`), after this fraction of that
#: queue time (uniform range) (modelling choice).
CANCEL_IN_QUEUE_MIN_S = 60
CANCEL_AT_QUEUE_FRACTION = (0.2, 1.0)
#: Longest queue time, s (modelling choice: 20 days).
MAX_QUEUE_S = 20 * 86400

_STREAM = {"Seren": 1, "Kalos": 2}

# --------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------


def _choice(rng: np.random.Generator, spec: tuple[tuple[int, ...], tuple[float, ...]], n: int) -> np.ndarray:
    """`n` draws from a (values, weights) table given as tuples."""
    return choice_from(rng, (np.asarray(spec[0]), np.asarray(spec[1], dtype=float)), n)


def _state_odds(workloads: tuple[_Workload, ...], rates: tuple[float, float, float]) -> np.ndarray:
    """Per workload (completed, cancelled, failed) probabilities: the propensities rescaled per
    state (iterative proportional fitting) so that the mix over workloads gives `rates`."""
    share = np.array([w.share for w in workloads])
    share = share / share.sum()
    target = np.asarray(rates) / sum(rates)
    odds = np.array([w.propensity for w in workloads], dtype=float)
    for _ in range(200):
        probs = odds / odds.sum(axis=1, keepdims=True)
        odds *= target / (share @ probs)
    return odds / odds.sum(axis=1, keepdims=True)


def _failure_kinds(rng: np.random.Generator, state: np.ndarray, cluster: _Cluster) -> np.ndarray:
    """Split FAILED into FAILED / TIMEOUT / NODE_FAIL with the cluster's small shares."""
    failed = state == FAILED
    u = rng.random(len(state))
    state = state.copy()
    state[failed & (u < cluster.timeout_share_of_failed)] = TIMEOUT
    state[failed & (u >= cluster.timeout_share_of_failed)
          & (u < cluster.timeout_share_of_failed + cluster.node_fail_share_of_failed)] = NODE_FAIL
    return state


def _queue_times(rng: np.random.Generator, spec: tuple[float, float, float, float, float],
                 n: int) -> np.ndarray:
    """Queue times, integer s: a lognormal body with a heavy lognormal tail."""
    body_median, body_sigma, tail_share, tail_median, tail_sigma = spec
    body = lognormal(rng, body_median, body_sigma, n)
    tail = lognormal(rng, tail_median, tail_sigma, n)
    queue = np.where(rng.random(n) < tail_share, tail, body)
    return np.floor(np.minimum(queue, MAX_QUEUE_S)).astype(np.int64)


def _submission_times(rng: np.random.Generator, cluster: _Cluster, n: int) -> np.ndarray:
    """`n` sorted submission times, Unix s, with a daily and weekly rhythm in Shanghai time."""
    first = int(np.datetime64(cluster.first_day, "s").astype(np.int64)) - SHANGHAI_OFFSET_S
    hour_starts = first + 3600 * np.arange(cluster.days * 24, dtype=np.int64)
    local = hour_starts + SHANGHAI_OFFSET_S
    weekday = (local // 86400 + 3) % 7  # 1970-01-01 was a Thursday
    day_noise = np.repeat(rng.lognormal(0.0, DAY_RATE_SIGMA, cluster.days), 24)
    weight = HOUR_WEIGHTS[(local // 3600) % 24] * WEEKDAY_WEIGHTS[weekday] * day_noise
    cumulative = np.cumsum(weight / weight.sum())
    bins = np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), len(weight) - 1)
    return np.sort(hour_starts[bins] + rng.integers(0, 3600, n))


@dataclass
class _Jobs:
    """Job arrays of one cluster, sorted by submission; times Unix s, -1 = missing."""

    gpu_num: np.ndarray
    cpu_num: np.ndarray
    type: np.ndarray
    state: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    stop: np.ndarray  # cancel time of cancelled jobs, -1 otherwise
    user: np.ndarray  # index into the cluster's users
    n_users: int


def _gpu_jobs(rng: np.random.Generator, cluster: _Cluster, n: int) -> tuple[np.ndarray, ...]:
    """gpu_num, type, state and run time (s, before cancellation-in-queue) of `n` GPU jobs."""
    shares = np.array([w.share for w in cluster.workloads])
    workload = choice_from(rng, (np.arange(len(shares)), shares), n)
    odds = _state_odds(cluster.workloads, cluster.gpu_state_rates)
    gpu_num = np.zeros(n, dtype=np.int64)
    state = np.zeros(n, dtype=np.int64)
    run = np.zeros(n)
    for index, w in enumerate(cluster.workloads):
        mask = workload == index
        k = int(mask.sum())
        gpu_num[mask] = _choice(rng, w.gpus, k)
        state[mask] = choice_from(rng, (np.arange(3), odds[index]), k)
        run[mask] = lognormal(rng, w.run[0], w.run[1], k)
    run *= np.select([state == CANCELLED, state == FAILED],
                     [cluster.run_factor_cancelled, cluster.run_factor_failed], 1.0)
    types = np.array([w.type for w in cluster.workloads])[workload]
    return gpu_num, types, state, run


def _build_jobs(seed: int, cluster: _Cluster, scale: float) -> _Jobs:
    """All jobs of one cluster at `scale` (one random stream)."""
    rng = stream_rng(seed, _STREAM[cluster.name])
    n_gpu = max(MIN_JOBS_PER_KIND, int(round(cluster.gpu_jobs * scale)))
    n_cpu = max(MIN_JOBS_PER_KIND, int(round((cluster.jobs - cluster.gpu_jobs) * scale)))
    gpu_num, gpu_type, gpu_state, gpu_run = _gpu_jobs(rng, cluster, n_gpu)
    cpu_type = _choice(rng, cluster.cpu_types, n_cpu)
    cpu_state = choice_from(rng, (np.arange(3), np.asarray(cluster.cpu_state_rates)), n_cpu)
    cpu_run = lognormal(rng, cluster.cpu_run[0], cluster.cpu_run[1], n_cpu)
    is_gpu = np.concatenate([np.ones(n_gpu, dtype=bool), np.zeros(n_cpu, dtype=bool)])
    gpu_num = np.concatenate([gpu_num, np.zeros(n_cpu, dtype=np.int64)])
    state = _failure_kinds(rng, np.concatenate([gpu_state, cpu_state]), cluster)
    run = np.floor(np.clip(np.concatenate([gpu_run, cpu_run]), 1, cluster.max_run_s)).astype(np.int64)
    queue = np.where(is_gpu, _queue_times(rng, cluster.gpu_queue, len(is_gpu)),
                     _queue_times(rng, cluster.cpu_queue, len(is_gpu)))
    cpu_num = np.where(is_gpu, gpu_num * _choice(rng, cluster.cpus_per_gpu, len(is_gpu)),
                       _choice(rng, cluster.cpu_nums, len(is_gpu)))
    types = np.concatenate([gpu_type, cpu_type])
    # Jobs are i.i.d. so far: shuffle GPU and CPU jobs together, then order by submission.
    order = rng.permutation(len(is_gpu))
    submit = _submission_times(rng, cluster, len(is_gpu))
    gpu_num, cpu_num, types, state, run, queue = (
        a[order] for a in (gpu_num, cpu_num, types, state, run, queue))
    start = submit + queue
    end = start + run
    stop = np.full(len(submit), -1, dtype=np.int64)
    cancelled = state == CANCELLED
    stop[cancelled] = end[cancelled]
    # Some cancelled jobs that would have queued long are cancelled while still queued.
    in_queue = (cancelled & (queue >= CANCEL_IN_QUEUE_MIN_S)
                & (rng.random(len(submit)) < cluster.cancelled_in_queue))
    fraction = rng.uniform(*CANCEL_AT_QUEUE_FRACTION, len(submit))
    cancel_at = submit + np.floor(queue * fraction).astype(np.int64)
    stop[in_queue] = cancel_at[in_queue]
    if cluster.slurm:  # a job cancelled while pending starts and ends at the cancel
        start[in_queue] = end[in_queue] = cancel_at[in_queue]
    else:
        start[in_queue] = end[in_queue] = -1
    n_users = max(MIN_USERS, int(round(cluster.users * math.sqrt(min(1.0, scale)))))
    weights = 1.0 / np.arange(1, n_users + 1) ** USER_ZIPF_EXPONENT
    user = rng.permutation(n_users)[choice_from(rng, (np.arange(n_users), weights), len(submit))]
    return _Jobs(gpu_num=gpu_num, cpu_num=cpu_num, type=types, state=state, submit=submit,
                 start=start, end=end, stop=stop, user=user, n_users=n_users)


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------

_BASE36 = np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _base36_ids(rng: np.random.Generator, n: int, n_chars: int, prefix: str) -> pl.Series:
    """`n` ids `prefix` + `n_chars` random lowercase base-36 characters."""
    text = np.ascontiguousarray(_BASE36[rng.integers(0, 36, size=n * n_chars)])
    arrow = pa.FixedSizeBinaryArray.from_buffers(pa.binary(n_chars), n, [None, pa.py_buffer(text)])
    body = pl.from_arrow(arrow).cast(pl.Binary).cast(pl.String)  # type: ignore[union-attr]
    return pl.select(pl.lit(prefix) + body).to_series()


def _job_ids(rng: np.random.Generator, cluster: _Cluster, n: int) -> pl.Series:
    """Seren: increasing Slurm integers with gaps; Kalos: `dlc` + 13 base-36 characters."""
    if cluster.slurm:
        gaps = rng.geometric(1.0 / SEREN_JOB_ID_GAP_MEAN, n)
        return pl.Series("job_id", SEREN_FIRST_JOB_ID + np.cumsum(gaps), dtype=pl.Int64)
    return _base36_ids(rng, n, KALOS_ID_CHARS, KALOS_ID_PREFIX).alias("job_id")


def _user_names(rng: np.random.Generator, n_users: int) -> pl.Series:
    """Distinct hashed user names `u` + 4 lowercase hex digits (README examples u5907, uf794)."""
    codes = rng.choice(16**4, size=n_users, replace=False)
    return pl.Series([f"u{code:04x}" for code in codes], dtype=pl.String)


def _times(name: str, seconds: np.ndarray, offset_s: int) -> pl.Series:
    """Time stamps `YYYY-MM-DD HH:MM:SS+HH:MM` at UTC offset `offset_s`; -1 is written empty."""
    sign = "+" if offset_s >= 0 else "-"
    suffix = f"{sign}{abs(offset_s) // 3600:02d}:{abs(offset_s) % 3600 // 60:02d}"
    local = pl.Series(name, seconds + offset_s, dtype=pl.Int64)
    text = pl.from_epoch(local, time_unit="s").dt.strftime("%Y-%m-%d %H:%M:%S") + suffix
    return pl.select(pl.when(pl.Series(seconds) >= 0).then(text).alias(name)).to_series()


def _optional(name: str, values: np.ndarray, present: np.ndarray, dtype: pl.DataType) -> pl.Series:
    """Column of `values` where `present`, empty elsewhere."""
    series = pl.Series(name, values).cast(dtype)
    return pl.select(pl.when(pl.Series(present)).then(series).alias(name)).to_series()


def _kalos_memory(rng: np.random.Generator, gpu_num: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mem_per_pod_GB (int) and shared_mem_per_pod (GB, float) per job (modelling choice)."""
    n = len(gpu_num)
    gpus_per_pod = np.minimum(gpu_num, GPUS_PER_NODE)
    memory = np.where(gpus_per_pod == GPUS_PER_NODE, _choice(rng, KALOS_POD_MEMORY_8_GPU, n),
                      gpus_per_pod * _choice(rng, KALOS_POD_MEMORY_PER_GPU, n))
    memory = np.where(gpu_num == 0, _choice(rng, KALOS_POD_MEMORY_CPU, n), memory)
    return memory, np.round(memory * KALOS_SHARED_MEMORY_SHARE, 1)


_TYPE_SERIES = pl.Series(list(JOB_TYPES), dtype=pl.String)
_STATE_SERIES = pl.Series(list(STATES), dtype=pl.String)


def _job_frame(seed: int, cluster: _Cluster, jobs: _Jobs) -> pl.DataFrame:
    """The rows of one cluster's trace file, in its column order."""
    rng = stream_rng(seed, _STREAM[cluster.name], 1)
    n = len(jobs.submit)
    started = jobs.start >= 0
    duration = np.where(started, jobs.end - jobs.start, 0)
    queue = np.where(started, jobs.start - jobs.submit, 0)
    offset = cluster.utc_offset_s
    users = _user_names(rng, jobs.n_users)
    columns: dict[str, pl.Series] = {
        "job_id": _job_ids(rng, cluster, n),
        "user": users.gather(jobs.user).alias("user"),
        "node_num": pl.Series("node_num", np.maximum(1, -(-jobs.gpu_num // GPUS_PER_NODE)), dtype=pl.Int64),
        "gpu_num": pl.Series("gpu_num", jobs.gpu_num, dtype=pl.Int64),
        "cpu_num": pl.Series("cpu_num", jobs.cpu_num, dtype=pl.Int64),
        "type": _TYPE_SERIES.gather(jobs.type).alias("type"),
        "state": _STATE_SERIES.gather(jobs.state).alias("state"),
        "submit_time": _times("submit_time", jobs.submit, offset),
        "start_time": _times("start_time", jobs.start, offset),
        "end_time": _times("end_time", jobs.end, offset),
        "duration": _optional("duration", duration, started, pl.Int64),
        "queue": _optional("queue", queue, started,
                           pl.Int64 if cluster.slurm else pl.Float64),
        "gpu_time": _optional("gpu_time", duration * jobs.gpu_num, started, pl.Float64),
    }
    if "mem_per_pod_GB" in cluster.columns:
        memory, shared = _kalos_memory(rng, jobs.gpu_num)
        failed = np.isin(jobs.state, (FAILED, TIMEOUT, NODE_FAIL))
        columns["mem_per_pod_GB"] = pl.Series("mem_per_pod_GB", memory, dtype=pl.Int64)
        columns["shared_mem_per_pod"] = pl.Series("shared_mem_per_pod", shared, dtype=pl.Float64)
        columns["fail_time"] = _times("fail_time", np.where(failed, jobs.end, -1), offset)
        columns["stop_time"] = _times("stop_time", jobs.stop, offset)
    return pl.DataFrame([columns[name] for name in cluster.columns])


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------



def generate(out_dir: Path, scale: float = 1.0, seed: int = 0,
                  progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write synthetic `trace_seren.csv` and `trace_kalos.csv` into `out_dir`; return their paths.

    `scale` multiplies job counts (1.0 ~ the real trace: 1,031,550 Seren and 62,413 Kalos jobs);
    `seed` (a non-negative int) fixes every byte; `progress` receives one message per file.
    """
    seed = check_scale_and_seed(scale, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    temps: dict[str, Path] = {}
    try:
        for cluster in CLUSTERS:
            frame = _job_frame(seed, cluster, _build_jobs(seed, cluster, scale))
            temps[cluster.file] = temp_path_in(out_dir, cluster.file)
            frame.write_csv(temps[cluster.file], include_header=True, separator=",",
                            line_terminator="\n", null_value="", quote_style="necessary")
            if progress is not None:
                progress(f"{cluster.file}: {frame.height:,} rows, "
                         f"{temps[cluster.file].stat().st_size:,} bytes")
        publish(temps, out_dir)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
    return [out_dir / name for name in FILE_NAMES]
