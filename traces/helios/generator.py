"""A synthetic SenseTime Helios trace (SC'21), in the official `data.zip` release format.

`generate(out_dir)` writes, for each of the four clusters Earth, Saturn, Uranus and Venus,
`data/<Cluster>/cluster_log.csv` (one row per Slurm job) and `data/<Cluster>/cluster_gpu_number.csv`
(GPUs per virtual cluster (VC) and day), packed as one deterministic `data.zip` (or left unpacked
with `pack=False`), so that ddlx's ingest code cannot tell the result from the real release.

Format (TRACES.md, Helios section; HeliosData README):
- `cluster_log.csv`: `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,
  end_time,duration,queue`; times `2020-06-09 18:41:01`, cluster local time (UTC+8) without a zone;
  `duration` = end - start and `queue` = start - submit, whole seconds written as integers. Job ids
  are Slurm ids: unique per cluster, increasing with submission. Users look like `uXBbc`, VCs like
  `vcJkd` (random names of that shape, not the real ones). CPU-only jobs have gpu_num 0.
- `cluster_gpu_number.csv`: `date,<vc...>,total`, one row per day 2020-04-01 .. 2020-09-28,
  GPUs per VC in whole 8-GPU nodes, `total` the row sum.

Modelling choices (documented here, constants below):
- A job cancelled while still pending is written as Slurm records it: `start_time` = `end_time` =
  the cancel time, so `duration` is 0 and `queue` the time it waited before the cancel.
- Every job ends within April-September 2020: submissions fall in the 181 days of the
  gpu_number file, and a start or end that would fall after 2020-09-30 23:59:59 is redrawn
  uniformly inside the window.
- The single SUSPENDED job of Uranus is kept at every scale (one Uranus job that started): the
  oddity is part of the format that readers must handle. Its times are those of a normal job.
- `scale` multiplies job counts (and users by sqrt(scale) below 1); the VC layout and GPU counts
  describe the clusters and do not depend on `scale` (the same seed gives the same
  cluster_gpu_number.csv at every scale).
- Jobs arrive in sessions (a user submitting a few similar jobs seconds apart), with a daily
  and weekly rhythm; a job runs in a VC that has at least as many GPUs as it asks for that day,
  chosen in proportion to the VC's size. There is no scheduler: queue times are drawn, not
  simulated, so concurrent demand may exceed a VC's GPUs.

Calibration (scale 1, helios_cluster_summary.csv): jobs and GPU/CPU split per cluster; per job
type the complete/cancel/fail shares, the median and mean run time and the mean queue time
(median 0); for GPU jobs the mean and median GPUs, the GPU time per state and the total GPU time
(through a size-duration correlation); the mean daily GPU total per cluster.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import polars as pl

from ddlx.datasets.synth_common import check_scale_and_seed, choice_from, pack_zip, stream_rng, temp_path_in
from ddlx.traces.helios.release import RELEASE

__all__ = ["generate", "CLUSTERS", "LOG_COLUMNS", "STATES"]

# --------------------------------------------------------------------------------------------
# Format constants (TRACES.md, Helios section)
# --------------------------------------------------------------------------------------------

#: Clusters, in the order of the release's folder tree.
CLUSTERS: tuple[str, ...] = ("Earth", "Saturn", "Uranus", "Venus")
#: Columns of cluster_log.csv, in file order.
LOG_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
    "submit_time", "start_time", "end_time", "duration", "queue",
)
#: Job states; codes index this tuple. TIMEOUT and NODE_FAIL count as failed.
STATES: tuple[str, ...] = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "SUSPENDED")
COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, SUSPENDED = range(6)
#: Time format of the log (local time, no zone) and date format of the gpu_number file.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DATE_FORMAT = "%Y-%m-%d"
#: Archive member names.
ARCHIVE_NAME = RELEASE.files[0].filename
LOG_FILE, GPU_NUMBER_FILE = "cluster_log.csv", "cluster_gpu_number.csv"
#: Fixed timestamp of every zip entry (modelling choice: a date after the 2021 release).
ZIP_DATE_TIME = (2021, 8, 1, 0, 0, 0)

# --------------------------------------------------------------------------------------------
# Calibration constants (scale 1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterFigures:
    """Published per-cluster figures (shared/traces/helios/helios_cluster_summary.csv).

    Times in seconds; rates are shares of the jobs of one type (complete, cancel, fail);
    `gpu_time_by_state` is the sum of gpu_num * duration over GPU jobs of each state, GPU-seconds;
    `mean_total_gpus` is the mean over days of the cluster's GPU total (the summary's gpu_num,
    which matches the real Venus and Earth cluster_gpu_number.csv files).
    """

    jobs: int
    gpu_jobs: int
    mean_total_gpus: int
    gpu_run_mean: float
    gpu_run_median: float
    cpu_run_mean: float
    cpu_run_median: float
    gpu_queue_mean: float
    cpu_queue_mean: float
    gpu_num_mean: float
    gpu_rates: tuple[float, float, float]
    cpu_rates: tuple[float, float, float]
    gpu_time_by_state: tuple[float, float, float]


#: helios_cluster_summary.csv (also TRACES.md for the job counts).
FIGURES: dict[str, ClusterFigures] = {
    "Venus": ClusterFigures(246_708, 125_303, 1022, 13040.598, 204.0, 1649.859, 21.0, 1253.288, 773.009,
                            6.736, (0.526, 0.272, 0.202), (0.86, 0.097, 0.043),
                            (6373315670.0, 4920266598.0, 1052030340.0)),
    "Earth": ClusterFigures(872_886, 427_148, 997, 5130.609, 234.0, 162.73, 1.0, 319.483, 3.281,
                            2.101, (0.735, 0.136, 0.129), (0.885, 0.005, 0.11),
                            (5713038873.0, 4793853520.0, 932310362.0)),
    "Saturn": ClusterFigures(1_753_078, 698_896, 2080, 5252.927, 124.0, 619.062, 2.0, 611.561, 16.255,
                             4.01, (0.582, 0.272, 0.145), (0.943, 0.019, 0.037),
                             (14375709962.0, 10733792235.0, 2542859066.0)),
    "Uranus": ClusterFigures(490_309, 329_117, 2119, 9163.725, 280.0, 1211.799, 32.0, 1949.182, 119.704,
                             4.038, (0.607, 0.201, 0.192), (0.791, 0.116, 0.092),
                             (13532231815.0, 10267196772.0, 2761134934.0)),
}

#: VCs per cluster: Venus and Earth as in the real cluster_gpu_number.csv files (25 each);
#: Saturn and Uranus a modelling choice.
VC_COUNTS: dict[str, int] = {"Venus": 25, "Earth": 25, "Saturn": 30, "Uranus": 28}
#: Days on which some VC changes size: Venus 10 and Earth 20 as in the real files; others modelled.
VC_CHANGE_DAYS: dict[str, int] = {"Venus": 10, "Earth": 20, "Saturn": 16, "Uranus": 14}
#: Largest GPU request per cluster (modelling choice; the largest VC is kept at least this big).
#: The real trace peaks at 2,048 GPUs (AcmeTrace data/cluster_summary.csv, Helios max_gpu); not modelled.
MAX_GPU_REQUEST: dict[str, int] = {"Venus": 256, "Earth": 256, "Saturn": 512, "Uranus": 512}
#: GPUs per node: VC sizes are whole nodes (every value of the real gpu_number files is a multiple of 8).
GPUS_PER_NODE = 8
#: Share of the largest VC in its cluster, and log-sigma of the other VCs' sizes (modelling choice).
BIG_VC_SHARE, VC_SIZE_SIGMA = 0.3, 0.9
#: VCs that open part-way through the trace / close before its end (modelling choice).
LATE_VCS, CLOSING_VCS = 3, 2
#: Size of the pool of VC names shared by the clusters (real clusters share some VC names).
VC_NAME_POOL = 64

#: Users per cluster at scale 1 (modelling choice), drawn from one pool shared by the clusters;
#: below scale 1 scaled by sqrt(scale).
USERS_AT_SCALE_1: dict[str, int] = {"Venus": 180, "Earth": 260, "Saturn": 420, "Uranus": 300}
USER_POOL_AT_SCALE_1 = 900
#: Share of users active in a second VC, and Zipf exponent of user activity in a VC (modelling).
SECOND_VC_SHARE, USER_ZIPF_EXPONENT = 0.2, 1.1
#: Name shapes: prefix + random letters/digits (HeliosData README: `uXBbc`, `vcJkd`).
USER_NAME_CHARS, VC_NAME_CHARS = 4, 3
NAME_ALPHABET = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)

#: Trace window: submissions on the 181 days of the real gpu_number files; every time ends by
#: the end of September 2020 (TRACES.md: April-September 2020).
FIRST_DAY = np.datetime64("2020-04-01", "D")
TRACE_DAYS = 181
TIMES_END_S = int(np.datetime64("2020-09-30T23:59:59", "s").astype(np.int64))

#: Relative submission rate per local hour 0..23 and weekday Monday..Sunday (modelling choice).
HOUR_WEIGHTS = np.array([
    0.50, 0.38, 0.28, 0.22, 0.18, 0.18, 0.22, 0.32, 0.55, 0.85, 1.20, 1.35,
    1.15, 1.25, 1.40, 1.50, 1.50, 1.40, 1.15, 1.20, 1.30, 1.25, 0.95, 0.70,
])
WEEKDAY_WEIGHTS = np.array([1.0, 1.03, 1.02, 1.0, 0.96, 0.70, 0.66])
#: Day-to-day volume noise (log-sigma) (modelling choice).
DAY_NOISE_SIGMA = 0.25

#: Jobs per session (geometric mean) and gap between jobs of a session, s (modelling choice).
GPU_SESSION_MEAN, CPU_SESSION_MEAN = 1.6, 3.0
GPU_SESSION_GAP_S, CPU_SESSION_GAP_S = 40.0, 6.0

#: GPUs requested by GPU jobs: candidate values; a share of single-GPU jobs, the rest spread as
#: weight * v ** -alpha, alpha solved per cluster for the mean (median 1 from the summary).
GPU_VALUES = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512])
#: Weight of requests that are not powers of two (modelling choice).
ODD_GPU_WEIGHT = 0.15
SINGLE_GPU_SHARE: dict[str, float] = {"Venus": 0.64, "Earth": 0.70, "Saturn": 0.66, "Uranus": 0.64}
#: GPU jobs spread over twice the minimum number of nodes (modelling choice).
SPREAD_SHARE = 0.08
#: CPUs per GPU of GPU jobs, and CPUs of CPU jobs: (values, shares) (modelling choice).
CPUS_PER_GPU = (np.array([1, 2, 4, 5, 6, 8]), np.array([0.30, 0.15, 0.25, 0.05, 0.10, 0.15]))
CPU_JOB_CPUS = (np.array([1, 2, 4, 8, 16, 32, 64]), np.array([0.42, 0.16, 0.15, 0.11, 0.08, 0.05, 0.03]))
#: CPU jobs on several nodes and their node counts (modelling choice).
MULTI_NODE_CPU_SHARE = 0.02
MULTI_NODE_CPU_NODES = (np.array([2, 4]), np.array([0.7, 0.3]))

#: Failed jobs split into FAILED / TIMEOUT / NODE_FAIL ("very rare", HeliosData README; shares a
#: modelling choice). A TIMEOUT job runs to its time limit, taken as its drawn run time rounded up
#: to whole minutes (below an hour) or hours, plus up to TIMEOUT_OVERSHOOT_S.
FAILED_SPLIT = np.array([0.975, 0.02, 0.005])
TIMEOUT_OVERSHOOT_S = 60
#: CPU jobs: run-time factor of cancelled and failed jobs relative to completed ones (modelling).
CPU_STATE_FACTORS = (1.0, 1.5, 0.5)

#: Queueing: share of jobs that wait at all (the rest start at submission: median queue 0),
#: log-sigma of a positive wait, and the share of waiting cancelled jobs cancelled before they
#: start (modelling choices; the mean wait is the summary's).
GPU_QUEUED_SHARE, CPU_QUEUED_SHARE = 0.30, 0.15
QUEUE_SIGMA = 2.0
PENDING_CANCEL_SHARE = 0.5
#: Longest run time, s (AcmeTrace data/cluster_summary.csv, Helios max_run_time_gpu 4,320,009 s);
#: longer draws are redrawn in [CAP / 4, CAP], and waits are capped the same way.
RUN_CAP_S = 4_320_000
QUEUE_CAP_S = 30 * 86400
#: Slurm job ids: first id range and share of ids skipped between consecutive jobs (modelling).
FIRST_JOB_ID_RANGE = (500_000, 3_000_000)
JOB_ID_GAP_SHARE = 0.03

#: Random stream ids, one per kind of draw (clusters add their index as a key).
_STREAM_NAMES, _STREAM_VCS, _STREAM_JOBS = 1, 2, 3


# --------------------------------------------------------------------------------------------
# Small numeric helpers
# --------------------------------------------------------------------------------------------

def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, elementwise (small arrays: used by the calibration solvers)."""
    return np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in np.ravel(x)]).reshape(np.shape(x))


def _bisect(func: Callable[[float], float], low: float, high: float, iterations: int = 60) -> float:
    """A root of increasing `func` in [low, high] (a bound if there is none inside)."""
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        if func(middle) < 0:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def _capped_mean(log_median: np.ndarray, sigma: float, cap: float) -> np.ndarray:
    """Mean of a lognormal whose draws above `cap` are redrawn uniformly in [cap / 4, cap]."""
    log_cap = math.log(cap)
    below = np.exp(log_median + sigma**2 / 2) * _normal_cdf((log_cap - log_median - sigma**2) / sigma)
    above = 0.625 * cap * (1.0 - _normal_cdf((log_cap - log_median) / sigma))
    return below + above


def _capped_lognormal(rng: np.random.Generator, log_median: np.ndarray | float, sigma: float,
                      n: int, cap: float) -> np.ndarray:
    """Lognormal draws (median exp(log_median)), those above `cap` redrawn in [cap / 4, cap]."""
    values = np.exp(log_median + sigma * rng.standard_normal(n))
    over = values > cap
    values[over] = cap * rng.uniform(0.25, 1.0, int(over.sum()))
    return values


@dataclass(frozen=True)
class _RunTimeModel:
    """Run time of a started job: lognormal with median exp(log_scale) * factor, log-sigma `sigma`."""

    log_scale: float
    sigma: float


def _fit_run_time(weights: np.ndarray, factors: np.ndarray, zero_share: float, median: float,
                  mean: float) -> _RunTimeModel:
    """Scale and sigma so that the run time has the given median and mean, s.

    A job has run time 0 with probability `zero_share` (cancelled while pending); otherwise it
    belongs to component k with probability `weights[k]` and runs a capped lognormal time with
    median scale * factors[k]. The median is matched before rounding to whole seconds (rounding
    keeps an integer median), the mean includes the cap.
    """
    weights = weights / weights.sum()
    log_factors = np.log(factors)
    log_median = math.log(median)

    def scale_for(sigma: float) -> float:
        def excess(log_scale: float) -> float:
            below = _normal_cdf((log_median - log_scale - log_factors) / sigma)
            return 0.5 - (zero_share + (1.0 - zero_share) * float(weights @ below))
        return _bisect(excess, log_median - 40.0, log_median + 40.0)

    def mean_excess(sigma: float) -> float:
        log_scale = scale_for(sigma)
        return (1.0 - zero_share) * float(weights @ _capped_mean(log_scale + log_factors, sigma, RUN_CAP_S)) - mean

    sigma = _bisect(mean_excess, 0.2, 4.5, iterations=40)
    return _RunTimeModel(scale_for(sigma), sigma)


# --------------------------------------------------------------------------------------------
# Per-cluster model: GPU request distribution and run-time parameters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ClusterModel:
    """Solved parameters of one cluster (independent of scale and seed)."""

    gpu_values: np.ndarray
    gpu_shares: np.ndarray
    size_exponent: float  # run-time median grows as gpu_num ** size_exponent
    gpu_state_factors: np.ndarray  # run-time factor per state (complete, cancel, fail)
    gpu_run: _RunTimeModel
    cpu_run: _RunTimeModel
    gpu_rates: np.ndarray
    cpu_rates: np.ndarray
    gpu_queue_log_median: float
    cpu_queue_log_median: float


def _gpu_shares(values: np.ndarray, single_share: float, alpha: float) -> np.ndarray:
    """Shares of GPU requests: `single_share` at 1, the rest as weight * v ** -alpha."""
    weight = np.where((values & (values - 1)) == 0, 1.0, ODD_GPU_WEIGHT) * values.astype(float) ** -alpha
    weight[0] = 0.0
    return np.where(values == 1, single_share, (1.0 - single_share) * weight / weight.sum())


def _started_shares(queued_share: float) -> np.ndarray:
    """Share of complete / cancelled / failed jobs that start (some waiting cancelled ones never do)."""
    return np.array([1.0, 1.0 - queued_share * PENDING_CANCEL_SHARE, 1.0])


def _fit_gpu_run_time(fig: ClusterFigures, values: np.ndarray, shares: np.ndarray,
                      rates: np.ndarray) -> tuple[float, np.ndarray, _RunTimeModel]:
    """Size exponent beta, per-state factors and run-time law of GPU jobs.

    The run-time median of a started GPU job is scale * state_factor * gpu_num ** beta. The state
    factors reproduce the summary's GPU time per job of each state; beta reproduces
    E[gpu_num * duration] / (E[gpu_num] E[duration]) from the summary's total GPU time (without the
    cap this ratio depends on beta alone; a few rounds correct it for the cap); scale and sigma
    give the median and mean run time.
    """
    started = _started_shares(GPU_QUEUED_SHARE)
    per_job = np.array(fig.gpu_time_by_state) / np.array(fig.gpu_rates)
    state_factors = per_job / started / per_job[0]  # started cancelled jobs make up for the pending ones
    pending = rates[1] * GPU_QUEUED_SHARE * PENDING_CANCEL_SHARE

    gpus = values.astype(float)
    mean_gpus = float(shares @ gpus)
    target_ratio = sum(fig.gpu_time_by_state) / fig.gpu_jobs / (fig.gpu_num_mean * fig.gpu_run_mean)

    def uncapped_ratio(beta: float) -> float:
        return float(shares @ gpus ** (1 + beta)) / (mean_gpus * float(shares @ gpus**beta))

    weights = ((rates * started)[:, None] * shares[None, :]).ravel()  # (state, gpu_num) components
    component_gpus = np.tile(gpus, len(rates))
    wanted = target_ratio
    for _ in range(4):
        beta = _bisect(lambda b: uncapped_ratio(b) - wanted, 0.0, 2.0)
        factors = np.repeat(state_factors, len(gpus)) * component_gpus**beta
        run = _fit_run_time(weights, factors, pending, fig.gpu_run_median, fig.gpu_run_mean)
        means = weights * _capped_mean(run.log_scale + np.log(factors), run.sigma, RUN_CAP_S)
        capped_ratio = float(means @ component_gpus) / (float(means.sum()) * mean_gpus)
        wanted *= target_ratio / capped_ratio
    return beta, state_factors, run


def _queue_log_median(mean: float, queued_share: float) -> float:
    """Log-median of a positive wait so that the mean wait over all jobs is `mean`, s."""
    return math.log(mean / queued_share) - QUEUE_SIGMA**2 / 2


def _build_model(cluster: str) -> _ClusterModel:
    """Solve the GPU-request shares, size-duration exponent and run-time laws of `cluster`."""
    fig = FIGURES[cluster]
    values = GPU_VALUES[GPU_VALUES <= MAX_GPU_REQUEST[cluster]]
    single = SINGLE_GPU_SHARE[cluster]
    alpha = _bisect(lambda a: fig.gpu_num_mean - float(values @ _gpu_shares(values, single, a)), -2.0, 6.0)
    shares = _gpu_shares(values, single, alpha)
    gpu_rates = np.array(fig.gpu_rates) / sum(fig.gpu_rates)
    cpu_rates = np.array(fig.cpu_rates) / sum(fig.cpu_rates)
    beta, gpu_factors, gpu_run = _fit_gpu_run_time(fig, values, shares, gpu_rates)
    cpu_run = _fit_run_time(cpu_rates * _started_shares(CPU_QUEUED_SHARE), np.array(CPU_STATE_FACTORS),
                            cpu_rates[1] * CPU_QUEUED_SHARE * PENDING_CANCEL_SHARE,
                            fig.cpu_run_median, fig.cpu_run_mean)
    return _ClusterModel(values, shares, beta, gpu_factors, gpu_run, cpu_run, gpu_rates, cpu_rates,
                         _queue_log_median(fig.gpu_queue_mean, GPU_QUEUED_SHARE),
                         _queue_log_median(fig.cpu_queue_mean, CPU_QUEUED_SHARE))


# --------------------------------------------------------------------------------------------
# Names, VCs and users
# --------------------------------------------------------------------------------------------

def _random_names(rng: np.random.Generator, n: int, prefix: str, n_chars: int) -> list[str]:
    """`n` distinct names `prefix` + `n_chars` random letters/digits (draw order kept)."""
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        codes = NAME_ALPHABET[rng.integers(0, len(NAME_ALPHABET), size=(2 * n + 8, n_chars))]
        for raw in codes.view(f"S{n_chars}").ravel():
            name = prefix + raw.decode("ascii")
            if name not in seen:
                seen.add(name)
                names.append(name)
                if len(names) == n:
                    break
    return names


@dataclass(frozen=True)
class _NamePools:
    """VC and user names shared by the clusters (so some names recur across clusters)."""

    vcs: list[str]
    users: list[str]


def _user_count(cluster: str, scale: float) -> int:
    """Users of `cluster` at `scale` (sqrt scaling below 1 keeps small releases multi-user)."""
    return max(3, int(round(USERS_AT_SCALE_1[cluster] * min(1.0, scale) ** 0.5)))


def _name_pools(seed: int, scale: float) -> _NamePools:
    """The shared pools of VC and user names at `scale`."""
    rng = stream_rng(seed, _STREAM_NAMES)
    vcs = _random_names(rng, VC_NAME_POOL, "vc", VC_NAME_CHARS)
    pool = max(max(_user_count(c, scale) for c in CLUSTERS),
               int(round(USER_POOL_AT_SCALE_1 * min(1.0, scale) ** 0.5)))
    return _NamePools(vcs, _random_names(rng, pool, "u", USER_NAME_CHARS))


@dataclass(frozen=True)
class _VirtualClusters:
    """A cluster's VCs: names (file column order) and GPUs per day (days x VCs)."""

    names: list[str]
    gpus: np.ndarray  # int64, shape (TRACE_DAYS, n_vc), multiples of GPUS_PER_NODE


def _build_vcs(seed: int, cluster: str, pools: _NamePools) -> _VirtualClusters:
    """VC sizes per day: a few large VCs and many small ones, changing on a few days.

    One VC holds BIG_VC_SHARE of the nodes and never drops below the largest request; a few VCs
    open late or close early; on each change day one to three VCs gain or lose a few nodes. The
    largest VC is finally shifted so that the mean daily total is the published one.
    """
    index = CLUSTERS.index(cluster)
    rng = stream_rng(seed, _STREAM_VCS, index)
    n_vc = VC_COUNTS[cluster]
    target_nodes = FIGURES[cluster].mean_total_gpus / GPUS_PER_NODE
    min_big_nodes = MAX_GPU_REQUEST[cluster] // GPUS_PER_NODE
    others = rng.lognormal(0.0, VC_SIZE_SIGMA, n_vc - 1)
    shares = np.concatenate([[BIG_VC_SHARE], (1.0 - BIG_VC_SHARE) * others / others.sum()])
    start_nodes = np.maximum(1, np.rint(shares * target_nodes)).astype(np.int64)

    change_days = np.sort(rng.choice(np.arange(1, TRACE_DAYS), size=VC_CHANGE_DAYS[cluster], replace=False))
    small = rng.permutation(np.arange(1, n_vc))
    late, closing = small[:LATE_VCS], small[LATE_VCS:LATE_VCS + CLOSING_VCS]
    open_day = np.zeros(n_vc, dtype=np.int64)
    open_day[late] = rng.choice(change_days, size=len(late))
    close_day = np.full(n_vc, TRACE_DAYS, dtype=np.int64)
    close_day[closing] = rng.choice(change_days, size=len(closing))

    nodes = np.empty((TRACE_DAYS, n_vc), dtype=np.int64)
    current = start_nodes.copy()
    previous_day = 0
    for day in [*change_days, TRACE_DAYS]:
        nodes[previous_day:day] = current
        if day == TRACE_DAYS:
            break
        changed = rng.choice(n_vc, size=rng.integers(1, 4), replace=False)
        delta = rng.integers(1, 5, size=len(changed)) * rng.choice([-1, 1], size=len(changed))
        current = current.copy()
        current[changed] = np.maximum(0, current[changed] + delta)
        previous_day = day
    days = np.arange(TRACE_DAYS)[:, None]
    nodes = np.where((days >= open_day[None, :]) & (days < close_day[None, :]), nodes, 0)
    nodes[:, 0] = np.maximum(nodes[:, 0], min_big_nodes)
    for _ in range(3):  # the floor of the big VC may undo part of a downward shift
        shift = int(round(target_nodes - nodes.sum(axis=1).mean()))
        nodes[:, 0] = np.maximum(nodes[:, 0] + shift, min_big_nodes)

    order = rng.permutation(n_vc)  # file column order; the big VC lands anywhere
    names = list(np.array(pools.vcs)[rng.choice(len(pools.vcs), size=n_vc, replace=False)])
    return _VirtualClusters(names=[str(n) for n in names], gpus=nodes[:, order] * GPUS_PER_NODE)


def _gpu_number_frame(vcs: _VirtualClusters) -> pl.DataFrame:
    """Rows of cluster_gpu_number.csv: date, GPUs per VC, total."""
    dates = pl.Series("date", np.arange(TRACE_DAYS) + FIRST_DAY, dtype=pl.Date)
    columns = [pl.Series(name, vcs.gpus[:, k], dtype=pl.Int64) for k, name in enumerate(vcs.names)]
    return pl.DataFrame([dates, *columns, pl.Series("total", vcs.gpus.sum(axis=1), dtype=pl.Int64)])


@dataclass(frozen=True)
class _Users:
    """Users of one cluster: names, and per VC the users who submit there (by activity rank)."""

    names: list[str]
    by_vc: list[np.ndarray]


def _assign_users(rng: np.random.Generator, cluster: str, scale: float, pools: _NamePools,
                  vcs: _VirtualClusters) -> _Users:
    """Pick the cluster's users and give each a home VC (weighted by sqrt of the VC's size)."""
    n_users = _user_count(cluster, scale)
    names = [pools.users[i] for i in rng.choice(len(pools.users), size=n_users, replace=False)]
    n_vc = len(vcs.names)
    size = vcs.gpus.mean(axis=0)
    weight = np.sqrt(size) / np.sqrt(size).sum()
    home = rng.choice(n_vc, size=n_users, p=weight)
    second = np.where(rng.random(n_users) < SECOND_VC_SHARE, rng.choice(n_vc, size=n_users, p=weight), -1)
    by_vc = []
    for vc in range(n_vc):
        members = np.flatnonzero((home == vc) | (second == vc))
        if len(members) == 0:
            members = rng.choice(n_users, size=1)
        by_vc.append(rng.permutation(members))
    return _Users(names, by_vc)


# --------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------


def _day_start_seconds() -> np.ndarray:
    """Local midnight of each trace day as naive epoch seconds."""
    return (np.arange(TRACE_DAYS) + FIRST_DAY).astype("datetime64[s]").astype(np.int64)


def _session_sizes(rng: np.random.Generator, n_jobs: int, mean_size: float) -> np.ndarray:
    """Geometric session sizes summing exactly to `n_jobs`."""
    if n_jobs == 0:
        return np.zeros(0, dtype=np.int64)
    sizes = rng.geometric(1.0 / mean_size, size=int(n_jobs / mean_size * 1.3) + 16)
    while sizes.sum() < n_jobs:
        sizes = np.concatenate([sizes, rng.geometric(1.0 / mean_size, size=len(sizes))])
    count = int(np.searchsorted(np.cumsum(sizes), n_jobs)) + 1
    sizes = sizes[:count].astype(np.int64)
    sizes[-1] -= int(sizes.sum()) - n_jobs
    return sizes


def _session_starts(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Start second (naive local epoch) and day index of `n` sessions, with day/week rhythm."""
    day_starts = _day_start_seconds()
    weekday = ((day_starts // 86400) + 3) % 7  # 1970-01-01 was a Thursday
    day_weight = WEEKDAY_WEIGHTS[weekday] * rng.lognormal(0.0, DAY_NOISE_SIGMA, TRACE_DAYS)
    weight = (day_weight[:, None] * HOUR_WEIGHTS[None, :]).ravel()
    cumulative = np.cumsum(weight / weight.sum())
    hour = np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), len(weight) - 1)
    return day_starts[hour // 24] + (hour % 24) * 3600 + rng.integers(0, 3600, n), hour // 24


def _pick_vcs(rng: np.random.Generator, day: np.ndarray, need: np.ndarray,
              capacity: np.ndarray) -> np.ndarray:
    """VC per session: among VCs with at least `need` GPUs that day, in proportion to size."""
    out = np.empty(len(day), dtype=np.int64)
    for lo in range(0, len(day), 100_000):
        hi = min(len(day), lo + 100_000)
        cap = capacity[day[lo:hi]].astype(float)
        weight = np.where(cap >= need[lo:hi, None], cap, 0.0)
        cumulative = np.cumsum(weight, axis=1)
        target = rng.random(hi - lo) * cumulative[:, -1]
        out[lo:hi] = (cumulative <= target[:, None]).sum(axis=1)
    return out


@dataclass
class _Jobs:
    """Job columns of one cluster (one row per job, unsorted); times naive local epoch seconds."""

    user: np.ndarray
    vc: np.ndarray
    gpu_num: np.ndarray
    cpu_num: np.ndarray
    node_num: np.ndarray
    state: np.ndarray
    submit: np.ndarray
    queue: np.ndarray
    duration: np.ndarray


def _draw_sessions(rng: np.random.Generator, n_jobs: int, gpu: bool, model: _ClusterModel,
                   vcs: _VirtualClusters, users: _Users) -> _Jobs:
    """Jobs of one type (GPU or CPU-only) in sessions sharing user, VC, request and rhythm."""
    sizes = _session_sizes(rng, n_jobs, GPU_SESSION_MEAN if gpu else CPU_SESSION_MEAN)
    n_sessions = len(sizes)
    start, day = _session_starts(rng, n_sessions)
    capacity = vcs.gpus
    if gpu:
        gpus = choice_from(rng, (model.gpu_values, model.gpu_shares), n_sessions).astype(np.int64)
        largest = capacity[day].max(axis=1)
        allowed = model.gpu_values[np.maximum(np.searchsorted(model.gpu_values, largest, side="right") - 1, 0)]
        gpus = np.minimum(gpus, allowed)
        spread = (gpus >= 2) & (rng.random(n_sessions) < SPREAD_SHARE)
        nodes = np.minimum(gpus, -(-gpus // GPUS_PER_NODE) * np.where(spread, 2, 1))
        cpus = gpus * choice_from(rng, CPUS_PER_GPU, n_sessions)
    else:
        gpus = np.zeros(n_sessions, dtype=np.int64)
        nodes = np.where(rng.random(n_sessions) < MULTI_NODE_CPU_SHARE,
                         choice_from(rng, MULTI_NODE_CPU_NODES, n_sessions), 1)
        cpus = choice_from(rng, CPU_JOB_CPUS, n_sessions) * nodes
    vc = _pick_vcs(rng, day, np.maximum(gpus, 1), capacity)
    user = np.empty(n_sessions, dtype=np.int64)
    for k, members in enumerate(users.by_vc):
        rows = np.flatnonzero(vc == k)
        if len(rows):
            weight = 1.0 / np.arange(1, len(members) + 1) ** USER_ZIPF_EXPONENT
            user[rows] = members[rng.choice(len(members), size=len(rows), p=weight / weight.sum())]

    session = np.repeat(np.arange(n_sessions), sizes)
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)
    gap_mean = GPU_SESSION_GAP_S if gpu else CPU_SESSION_GAP_S
    gaps = np.rint(rng.exponential(gap_mean, len(session))).astype(np.int64)
    gaps[first == np.arange(len(session))] = 0
    elapsed = np.cumsum(gaps)
    offset = elapsed - elapsed[first]
    submit = np.minimum(start[session] + offset, _day_start_seconds()[-1] + 86399)

    state, queue, duration = _draw_outcomes(rng, len(session), gpu, model, gpus[session])
    return _Jobs(user=user[session], vc=vc[session], gpu_num=gpus[session], cpu_num=cpus[session],
                 node_num=nodes[session], state=state, submit=submit, queue=queue, duration=duration)


def _draw_outcomes(rng: np.random.Generator, n: int, gpu: bool, model: _ClusterModel,
                   gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State code, queue and duration (whole seconds, before the window clip) of `n` jobs."""
    rates = model.gpu_rates if gpu else model.cpu_rates
    outcome = rng.choice(3, size=n, p=rates)  # complete, cancel, fail
    failed_kind = rng.choice(3, size=n, p=FAILED_SPLIT)
    state = np.select([outcome == 0, outcome == 1], [COMPLETED, CANCELLED],
                      np.array([FAILED, TIMEOUT, NODE_FAIL])[failed_kind]).astype(np.int8)

    queued = rng.random(n) < (GPU_QUEUED_SHARE if gpu else CPU_QUEUED_SHARE)
    log_queue = model.gpu_queue_log_median if gpu else model.cpu_queue_log_median
    queue = np.where(queued, np.rint(_capped_lognormal(rng, log_queue, QUEUE_SIGMA, n, QUEUE_CAP_S)), 0)

    run = model.gpu_run if gpu else model.cpu_run
    factors = model.gpu_state_factors if gpu else np.array(CPU_STATE_FACTORS)
    log_median = run.log_scale + np.log(factors[outcome])
    if gpu:
        log_median = log_median + model.size_exponent * np.log(gpus.astype(float))
    duration = np.rint(_capped_lognormal(rng, log_median, run.sigma, n, RUN_CAP_S))
    timeout = state == TIMEOUT
    drawn = duration[timeout]
    limit = np.where(drawn < 3600, np.maximum(60, np.ceil(drawn / 60) * 60), np.ceil(drawn / 3600) * 3600)
    duration[timeout] = limit + rng.integers(0, TIMEOUT_OVERSHOOT_S + 1, len(drawn))
    pending_cancel = queued & (state == CANCELLED) & (rng.random(n) < PENDING_CANCEL_SHARE)
    duration[pending_cancel] = 0
    return state, queue.astype(np.int64), duration.astype(np.int64)


def _job_count(cluster: str, scale: float) -> tuple[int, int]:
    """(all jobs, GPU jobs) of `cluster` at `scale`."""
    fig = FIGURES[cluster]
    jobs = max(1, int(round(fig.jobs * scale)))
    return jobs, int(round(jobs * fig.gpu_jobs / fig.jobs))


def _build_log(seed: int, cluster: str, scale: float, model: _ClusterModel, vcs: _VirtualClusters,
               pools: _NamePools) -> pl.DataFrame:
    """Rows of cluster_log.csv for one cluster, in submission (= job id) order."""
    rng = stream_rng(seed, _STREAM_JOBS, CLUSTERS.index(cluster))
    users = _assign_users(rng, cluster, scale, pools, vcs)
    n_jobs, n_gpu = _job_count(cluster, scale)
    parts = [_draw_sessions(rng, n_gpu, True, model, vcs, users),
             _draw_sessions(rng, n_jobs - n_gpu, False, model, vcs, users)]
    jobs = _Jobs(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(_Jobs)})

    # Keep every time inside the window: redraw a too-late start or end uniformly before its end.
    late_start = jobs.submit + jobs.queue > TIMES_END_S
    jobs.queue[late_start] = np.floor(rng.random(int(late_start.sum()))
                                      * (TIMES_END_S - jobs.submit[late_start])).astype(np.int64)
    start = jobs.submit + jobs.queue
    late_end = start + jobs.duration > TIMES_END_S
    jobs.duration[late_end] = np.floor(rng.random(int(late_end.sum()))
                                       * (TIMES_END_S - start[late_end])).astype(np.int64)

    if cluster == "Uranus":  # the one SUSPENDED job of the real trace, kept at every scale
        started = np.flatnonzero(jobs.duration > 0)
        if len(started):
            jobs.state[rng.choice(started)] = SUSPENDED

    order = np.lexsort((rng.random(n_jobs), jobs.submit))
    steps = 1 + np.where(rng.random(n_jobs) < JOB_ID_GAP_SHARE, rng.geometric(0.3, n_jobs), 0)
    job_id = int(rng.integers(*FIRST_JOB_ID_RANGE)) + np.cumsum(steps) - steps[0]
    submit = jobs.submit[order]
    queue = jobs.queue[order]
    duration = jobs.duration[order]
    start = submit + queue
    user_names = pl.Series(users.names, dtype=pl.String)
    vc_names = pl.Series(vcs.names, dtype=pl.String)
    state_names = pl.Series(STATES, dtype=pl.String)
    return pl.DataFrame([
        pl.Series("job_id", job_id, dtype=pl.Int64),
        user_names.gather(jobs.user[order]).alias("user"),
        vc_names.gather(jobs.vc[order]).alias("vc"),
        pl.Series("gpu_num", jobs.gpu_num[order], dtype=pl.Int64),
        pl.Series("cpu_num", jobs.cpu_num[order], dtype=pl.Int64),
        pl.Series("node_num", jobs.node_num[order], dtype=pl.Int64),
        state_names.gather(jobs.state[order]).alias("state"),
        _datetime_series("submit_time", submit),
        _datetime_series("start_time", start),
        _datetime_series("end_time", start + duration),
        pl.Series("duration", duration, dtype=pl.Int64),
        pl.Series("queue", queue, dtype=pl.Int64),
    ])


def _datetime_series(name: str, seconds: np.ndarray) -> pl.Series:
    """Naive datetimes (cluster local time) from naive epoch seconds."""
    return pl.Series(name, seconds * 1000, dtype=pl.Int64).cast(pl.Datetime("ms"))


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

def _write_csv(frame: pl.DataFrame, path: Path) -> None:
    """Write `frame` with a header, `\\n` line ends and the release's time format."""
    frame.write_csv(path, include_header=True, separator=",", line_terminator="\n",
                    datetime_format=TIME_FORMAT, date_format=DATE_FORMAT, quote_style="necessary")



def generate(out_dir: Path, scale: float = 1.0, seed: int = 0,
                    progress: Callable[[str], None] | None = None, pack: bool = True) -> list[Path]:
    """Write a synthetic Helios release into `out_dir`; return the paths written.

    With `pack` (default) the result is one archive `out_dir/data.zip` holding
    `data/<Cluster>/cluster_log.csv` and `data/<Cluster>/cluster_gpu_number.csv` for each cluster
    (fixed zip metadata, no loose files); without it the same files are written unpacked under
    `out_dir/data/<Cluster>/`. `scale` multiplies job counts (1.0 ~ the real 3.36 M jobs, 343 MB
    of CSV); `seed` (a non-negative int) fixes every byte; `progress` gets one message per cluster.
    Files are written to temp names and renamed at the end, so an interrupted run leaves no
    file under a final name.
    """
    seed = check_scale_and_seed(scale, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pools = _name_pools(seed, scale)
    temps: list[tuple[Path, str]] = []  # (temp file, member name data/<Cluster>/<file>)
    try:
        for cluster in CLUSTERS:
            folder = out_dir if pack else out_dir / "data" / cluster
            folder.mkdir(parents=True, exist_ok=True)
            model = _build_model(cluster)
            vcs = _build_vcs(seed, cluster, pools)
            log = _build_log(seed, cluster, scale, model, vcs, pools)
            for name, frame in ((GPU_NUMBER_FILE, _gpu_number_frame(vcs)), (LOG_FILE, log)):
                path = temp_path_in(folder, f"{cluster}_{name}")
                temps.append((path, f"data/{cluster}/{name}"))
                _write_csv(frame, path)
            if progress is not None:
                n_gpu = int((log["gpu_num"] > 0).sum())
                progress(f"{cluster}: {log.height:,} jobs ({n_gpu:,} GPU), {len(vcs.names)} VCs")
        return _finish(out_dir, temps, pack)
    finally:
        for path, _ in temps:
            path.unlink(missing_ok=True)


def _finish(out_dir: Path, temps: Sequence[tuple[Path, str]], pack: bool) -> list[Path]:
    """Pack the temp files into data.zip, or rename them to their places under data/."""
    if pack:
        archive = out_dir / ARCHIVE_NAME
        pack_zip(temps, archive, ZIP_DATE_TIME)
        return [archive]
    written = []
    for path, member in temps:
        final = out_dir / member
        os.chmod(path, 0o644)
        os.replace(path, final)
        written.append(final)
    return written
