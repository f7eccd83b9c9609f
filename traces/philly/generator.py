"""A synthetic Microsoft Philly trace (ATC'19), in the official release format.

`generate(out_dir)` writes the five files of the public release, `cluster_job_log`,
`cluster_gpu_util`, `cluster_cpu_util`, `cluster_mem_util` and `cluster_machine_list` (no
extensions), packed by default as one gzip'd tar `trace-data.tar.gz` with members
`trace-data/<file>`, so that ddlx's real ingest code cannot tell the result from the release.

Formats (shared/TRACES.md and the release README):
- `cluster_job_log`: one JSON array, indented by 4 like the README example; per job `status`
  (Pass, Killed, Failed), `vc`, `jobid` (`application_<ResourceManager start ms>_<n>`),
  `attempts` (`start_time`, `end_time`, `detail` = [{`ip`: machine, `gpus`: ["gpu0", ...]}]),
  `submitted_time`, `user`. Times are US/Pacific wall clock `YYYY-MM-DD HH:MM:SS` without zone;
  a missing attempt start/end is the string "None"; a last attempt ending "None" is running.
- `cluster_gpu_util`: per-minute, per-machine GPU utilisation in percent,
  `2017-10-03 00:08:00 PDT,m29,60.8,99.366666667,...,` (zone PDT/PST, every data row ends with
  a comma, `NA` = offline GPU, empty columns beyond the machine's GPUs).
- `cluster_cpu_util` (`time,machine_id,cpu_util`, percent) and `cluster_mem_util`
  (`time,machine_id,mem_total,mem_free`): same times, `NA` when the machine is offline. Memory
  is labelled bytes in TRACES.md; the magnitudes follow the release README example
  (`528272672.0,2030730.6667`).
- `cluster_machine_list`: `machineId, number of GPUs, single GPU mem`, rows like `m31,8, 24GB`.
  As in the real list, the listed GPU counts differ from the GPUs the machines really have
  (the GPUs that show up in the utilisation log and that jobs use): 2,490 listed, 3,205 real.

Model: jobs are drawn with the published figures at `scale=1` (117,325 jobs, status mix, jobs
without attempts, missing attempt times, 15 VCs, run and queue times, GPUs per job), then
placed on real GPUs like a first-come first-served scheduler, so that no GPU is given to two
attempts at once (an attempt that finds the cluster full waits; this happens in small releases
only). The utilisation logs (2017-10-03 to 2017-12-15) follow the placements: busy GPUs show
the attempt's utilisation level plus noise, idle ones 0. `scale` multiplies jobs and machines;
the time window is fixed.

Determinism: every part is drawn from its own random stream derived from `seed` (the
utilisation logs per day), and the archive has fixed gzip/tar metadata.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from ddlx.datasets.synth_common import (
    check_scale_and_seed,
    choice_from,
    group_offsets,
    hex_ids,
    lognormal,
    pack_tar_gz,
    position_in_group,
    publish,
    stream_rng,
    temp_path_in,
)
from ddlx.traces.philly.release import RELEASE

__all__ = ["generate", "RELEASE_FILES", "ARCHIVE_NAME", "ARCHIVE_FOLDER"]

# --------------------------------------------------------------------------------------------
# Release layout
# --------------------------------------------------------------------------------------------

#: The five files of the release, in archive order (TRACES.md).
RELEASE_FILES = ("cluster_job_log", "cluster_gpu_util", "cluster_cpu_util", "cluster_mem_util",
                 "cluster_machine_list")
#: Archive name (the release facts) and the folder its members live in (release README).
ARCHIVE_NAME = RELEASE.files[0].filename
ARCHIVE_FOLDER = "trace-data"
#: Header lines (release README; the machine list has a space after each comma).
GPU_UTIL_HEADER = "time,machineId," + ",".join(f"gpu{k}_util" for k in range(8))
CPU_UTIL_HEADER = "time,machine_id,cpu_util"
MEM_UTIL_HEADER = "time,machine_id,mem_total,mem_free"
MACHINE_LIST_HEADER = "machineId, number of GPUs, single GPU mem"
#: Missing attempt time as written in the job log (TRACES.md).
MISSING_TIME = "None"
#: Wall-clock zone of every time in the release (US Pacific).
SOURCE_TZ = RELEASE.source_tz

# --------------------------------------------------------------------------------------------
# Calibration constants (scale 1). Figures from TRACES.md unless marked otherwise.
# --------------------------------------------------------------------------------------------

#: Jobs; jobs without attempt; attempts without start; attempts without end (TRACES.md).
JOBS_AT_SCALE_1 = 117_325
NO_ATTEMPT_JOBS_AT_SCALE_1 = 5_236
NO_START_ATTEMPTS_AT_SCALE_1 = 136
NO_END_ATTEMPTS_AT_SCALE_1 = 6_695

#: Job status names and shares by count (AcmeTrace data/cluster_summary.csv, Philly:
#: complete 0.604, cancel 0.09, fail 0.305; TRACES.md: about 60 / 9 / 30 %).
STATUSES = ("Pass", "Killed", "Failed")
PASS, KILLED, FAILED = range(3)
STATUS_SHARES = np.array([0.604, 0.090, 0.305])
#: Relative chance that a job of each status is one that never got an attempt (modelling
#: choice: jobs cancelled or failing before they start; none that passed).
NO_ATTEMPT_STATUS_WEIGHTS = np.array([0.0, 2.0, 1.0])

#: First submission day (2017-08-07 00:00 PDT) and the snapshot the log was taken at: TRACES.md
#: gives 2017-08-07 to 2017-12-22; 08:30 PST is just after the last submission in
#: philly/pollux_philly_jobs.csv (08:02:11) (modelling choice). Unix seconds.
FIRST_DAY_S = 1_502_089_200
LAST_DAY_S = 1_513_929_600  # 2017-12-22 00:00 PST
_FIRST_DAY_WALL_S = 1_502_064_000  # 2017-08-07 00:00 read as UTC (a Monday)
SNAPSHOT_S = 1_513_960_200  # 2017-12-22 08:30 PST
#: Relative submissions per week from Monday 2017-08-07: four quiet lead-in weeks (modelling
#: choice: the derived real files have no job before 2017-09-04), then the weekly counts of
#: philly/pollux_philly_jobs.csv (weeks from 2017-09-04) ...
WEEK_JOB_COUNTS = np.array([3, 3, 3, 3, 9, 11, 999, 4909, 11386, 12751, 14185, 7748, 3805, 6391,
                            5869, 3507, 3741, 4791, 771, 1374], dtype=float)
#: ... blended with an even spread over the busy weeks (from 2017-09-18), because the cluster
#: load was much flatter than the job counts: active machines stay at 270-360 of 420 every week
#: of philly/helios_philly_node_sequence.csv (blend share: modelling choice).
WEEK_FLATTEN_SHARE = 0.5
_BUSY_WEEKS = WEEK_JOB_COUNTS >= 999
WEEK_WEIGHTS = ((1 - WEEK_FLATTEN_SHARE) * WEEK_JOB_COUNTS / WEEK_JOB_COUNTS.sum()
                + WEEK_FLATTEN_SHARE * _BUSY_WEEKS / _BUSY_WEEKS.sum())
#: Relative submissions per local weekday Monday..Sunday and per local hour 0..23
#: (philly/pollux_philly_jobs.csv; the hours reflect users in several time zones).
WEEKDAY_WEIGHTS = np.array([10136, 12528, 13370, 15114, 16954, 7157, 6988], dtype=float)
HOUR_WEIGHTS = np.array([4367, 3374, 3835, 3780, 2400, 3950, 5732, 7159, 3802, 3447, 3510, 2979,
                         2567, 2415, 2185, 2224, 3021, 2289, 2744, 2496, 3483, 3142, 3885, 3461],
                        dtype=float)

#: Virtual clusters: jobs per VC (philly/pollux_philly_jobs.csv, its 15 VCs; TRACES.md: 15).
VC_JOB_COUNTS = np.array([41226, 16091, 9953, 7423, 1934, 1511, 1435, 1137, 723, 422, 374, 8, 4,
                          3, 3], dtype=float)
#: Users at scale 1 and Zipf exponent of their activity (modelling choice; not published).
USERS_AT_SCALE_1 = 320
USER_ZIPF_EXPONENT = 1.2

#: GPUs per job: (values, shares), mean ~1.93, median 1, max 128 (AcmeTrace data/cluster_summary.csv
#: Philly: avg_gpu_num 1.928, med 1, max_gpu 128; sizes as in philly/pollux_philly_jobs.csv).
GPUS_PER_JOB = (np.array([1, 2, 3, 4, 8, 12, 16, 24, 32, 64, 128]),
                np.array([0.80, 0.07, 0.004, 0.065, 0.048, 0.001, 0.009, 0.0008, 0.0025,
                          0.0006, 0.0002]))
#: Share of 2..8-GPU attempts spread over two machines (modelling choice: relaxed locality).
SPLIT_ATTEMPT_SHARE = 0.05

#: Run time = last attempt end - first attempt start, s: lognormal per status (median s),
#: common log-sigma, times GPUs ** exponent, capped at the longest published run. Tuned to the
#: AcmeTrace summary, Philly row: median 874 s, mean 18,006 s, max 4,240,676 s, GPU time shares
#: 0.321 / 0.294 / 0.386 (Pass / Killed / Failed).
RUN_MEDIAN_S = np.array([495.0, 5200.0, 1150.0])
RUN_SIGMA = 2.40
RUN_GPU_EXPONENT = 0.55
RUN_MAX_S = 4_240_676
#: Queue = first attempt start - submission, s: lognormal (AcmeTrace summary, Philly: median 189 s,
#: mean 3,760 s), at least 1 s, at most 30 days (modelling choice).
QUEUE_MEDIAN_S, QUEUE_SIGMA, QUEUE_MAX_S = 189.0, 2.47, 30 * 86400
#: Attempts per job by status, 1..5 (modelling choice; philly/marwage_jobs_subset.json has
#: 73 / 15 / 6 / 4 / 2 % for its multi-GPU jobs); failed jobs are retried most.
ATTEMPT_COUNT_SHARES = np.array([
    [0.86, 0.09, 0.030, 0.015, 0.005],
    [0.80, 0.12, 0.040, 0.025, 0.015],
    [0.55, 0.17, 0.100, 0.080, 0.100],
])
#: Pause between attempts, s: lognormal (philly/marwage_jobs_subset.json: median ~186 s,
#: 10 % under 7 s, 90 % under ~1,600 s), at most half the job's run time.
RETRY_GAP_MEDIAN_S, RETRY_GAP_SIGMA = 180.0, 2.0
#: Share of the extra missing attempt ends (logging errors) put on a job's last attempt, where
#: they read as "still running" (modelling choice).
MISSING_END_ON_LAST_SHARE = 0.85

#: ResourceManager epochs of the job ids: the derived real files show 8 start stamps in four
#: months. The first epoch starts up to 30 days before the first submission (modelling choice).
RM_RESTARTS = 8
#: Increment between consecutive job numbers of an epoch: 1 + geometric extra (the release is a
#: subset, so numbers have gaps; modelling choice).
JOB_NUMBER_GAP_P = 0.8

#: Machine classes of the real machine list: (listed GPUs, listed GB per GPU, GPUs that really
#: exist (philly/revised_machine_list.csv, derived from cluster_gpu_util), machines).
#: 552 machines, 2,490 listed GPUs, 3,205 real GPUs (TRACES.md).
MACHINE_CLASSES: tuple[tuple[int, int, int, int], ...] = (
    (2, 12, 8, 238),
    (2, 12, 4, 82),
    (2, 12, 3, 1),
    (8, 24, 8, 26),
    (8, 24, 4, 189),
    (8, 24, 2, 3),
    (8, 24, 0, 13),
)
#: mem_total per machine as written in cluster_mem_util, by listed GPU memory: 24 GB machines
#: like the README example (528272672.0); 12 GB ones half of it (modelling choice). Each
#: machine is a little below, by 4 * U(0, 5000) (modelling choice: kernel reservations).
MEM_TOTAL_BY_GPU_GB = {24: 528_272_672, 12: 264_136_336}
#: Fewest machines of a release, whatever the scale (modelling choice).
MIN_MACHINES = 4

#: Utilisation window: 2017-10-03 00:00 PDT to 2017-12-15 18:43 PST (philly/
#: helios_philly_node_sequence.csv, derived per minute from the utilisation log), Unix s.
UTIL_START_S = 1_507_014_000
UTIL_END_S = 1_513_392_180
#: Machines reporting every minute (the node sequence shows 420 of 552 most minutes); the others
#: report only in collection campaigns (all of them at once, when the sequence reaches 552)
#: and short episodes of their own. Counts, durations (median min, log-sigma): modelling choices.
CORE_MACHINE_SHARE = 420 / 552
FULL_COLLECTIONS, FULL_COLLECTION_MIN = 4, (360.0, 0.5)
OWN_EPISODES_PER_MACHINE, OWN_EPISODE_MIN = 3.0, (240.0, 1.0)
#: Partial collection dips (the sequence falls to 174 machines): in each, every machine drops out
#: with probability DIP_DROP_SHARE; and minutes where no machine reports at all (the sequence
#: has 105,644 of ~106,300 minutes). Modelling choices.
DIPS, DIP_MIN, DIP_DROP_SHARE = 3, (90.0, 0.5), 0.6
GAPS, GAP_MIN = 6, (100.0, 0.4)
#: End of DST: 2017-11-05 02:00 PDT became 01:00 PST (Unix s of the first 01:00 PST).
FALL_BACK_S = 1_509_872_400
#: First report of each machine is 0..14 minutes into the window (README example: 00:08 for m29).
FIRST_REPORT_SPREAD_MIN = 15
#: Offline episodes (values written NA): whole machine and single GPU (modelling choices).
MACHINE_OUTAGES_PER_MACHINE, MACHINE_OUTAGE_MIN = 2.0, (45.0, 1.5)
GPU_OUTAGES_PER_GPU, GPU_OUTAGE_MIN = 0.6, (180.0, 1.5)

#: GPU utilisation, percent: per attempt a level 100 * Beta(a, b) (mean 60 %, many saturated
#: GPUs as in the README example row; modelling choice), per minute plus normal noise; idle GPUs
#: read 0 except a small share of tiny readings. Values are means of 30 integer samples (k / 30,
#: as 99.366666667 in the README example).
UTIL_LEVEL_BETA = (1.2, 0.8)
UTIL_NOISE_PCT = 12.0
IDLE_NONZERO_SHARE, IDLE_MAX_PCT = 0.01, 2.0
GPU_SAMPLES_PER_MINUTE = 30
#: CPU utilisation, percent: machine base U(lo, hi) + per-busy-GPU-share load + noise, 3 decimals.
CPU_BASE_PCT, CPU_BUSY_PCT, CPU_NOISE_PCT = (1.0, 6.0), 35.0, 3.0
#: Free memory share: per machine lognormal (median, sigma) (README example: 0.4 % free),
#: per-minute noise; mem_free is a mean of 3 integer samples (2030730.6667).
MEM_FREE_SHARE, MEM_FREE_NOISE = (0.01, 1.0), 0.25

#: Minutes per chunk of the utilisation logs (fixed, so results do not depend on scale).
CHUNK_MINUTES = 1440
#: Placement: rounds per batch before an attempt waits, random candidate machines per attempt,
#: the round from which all machines are candidates, attempts per batch (by start time) and
#: the span of their starts, s.
PLACEMENT_ROUNDS = 20
PLACEMENT_CANDIDATES = 12
PLACEMENT_WIDE_AFTER = 4
PLACEMENT_BATCH = 2048
PLACEMENT_WINDOW_S = 6 * 3600
#: Blur of the best-fit choice added per round, in GPUs (later rounds spread attempts that keep
#: choosing the same machine).
PLACEMENT_JITTER = 0.5
#: Shortest wait of an attempt that found the cluster full, s, doubled at each further wait
#: (modelling choice).
WAIT_MIN_S = 300

#: Random stream ids, one per kind of draw.
_STREAM_MACHINES, _STREAM_JOBS, _STREAM_ATTEMPTS, _STREAM_PLACEMENT = 1, 2, 3, 4
_STREAM_UTIL_PLAN, _STREAM_UTIL, _STREAM_MISSING_TIMES = 5, 6, 7

#: Archive metadata, fixed so archives are byte-identical across runs (modelling choice: the
#: public release, June 2019).
TAR_MTIME = 1_559_347_200
GZIP_LEVEL = 1

# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------

_Z_GRID = np.linspace(-8.5, 8.5, 34_001)
_CDF_GRID = 0.5 * (1.0 + np.array([math.erf(z / math.sqrt(2.0)) for z in _Z_GRID]))


def _normal_quantile(u: np.ndarray) -> np.ndarray:
    """Standard normal quantile of `u` in (0, 1) (table inversion, error below 1e-6 in z)."""
    return np.interp(u, _CDF_GRID, _Z_GRID)


def _stratified_lognormal(rng: np.random.Generator, median: np.ndarray | float, sigma: float,
                          n: int) -> np.ndarray:
    """`n` lognormal draws, one per equal-probability stratum (in random order), so that even a
    small release has the calibrated median and tail."""
    u = (rng.permutation(n) + rng.random(n)) / max(n, 1)
    return np.exp(np.log(median) + sigma * _normal_quantile(u))


def _exact_labels(rng: np.random.Generator, shares: np.ndarray, n: int) -> np.ndarray:
    """`n` labels 0..k-1 with counts as close as possible to `shares * n`, shuffled."""
    shares = shares / shares.sum()
    counts = np.floor(shares * n).astype(np.int64)
    remainder = n - int(counts.sum())
    counts[np.argsort(-(shares * n - counts), kind="stable")[:remainder]] += 1
    return rng.permutation(np.repeat(np.arange(len(shares)), counts))


def _exact_count(per_scale_1: int, n_jobs: int) -> int:
    """A scale-1 count carried over to a release of `n_jobs` jobs."""
    return int(round(per_scale_1 * n_jobs / JOBS_AT_SCALE_1))


def _cumsum_in_groups(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Running sum of `values` restarting at each group of `counts` consecutive rows."""
    total = np.cumsum(values)
    before = np.zeros(len(counts), dtype=total.dtype)
    filled = counts > 0
    starts = group_offsets(counts)[filled]
    before[filled] = total[starts] - values[starts]
    return total - np.repeat(before, counts)


def _local(seconds: np.ndarray) -> pl.Series:
    """Unix seconds as US/Pacific datetimes."""
    utc = pl.from_epoch(pl.Series("t", seconds, dtype=pl.Int64), time_unit="s")
    return utc.dt.replace_time_zone("UTC").dt.convert_time_zone(SOURCE_TZ)


def _wall_clock(seconds: np.ndarray, written: np.ndarray | None = None) -> pl.Series:
    """Unix seconds as `YYYY-MM-DD HH:MM:SS` Pacific wall clock, "None" where not `written`."""
    text = _local(seconds).dt.strftime("%Y-%m-%d %H:%M:%S")
    if written is None:
        return text
    return pl.select(pl.when(pl.Series(written)).then(text).otherwise(pl.lit(MISSING_TIME))).to_series()


def _unique_hex(rng: np.random.Generator, n: int, n_chars: int) -> pl.Series:
    """`n` distinct random hex strings (drawn with spares; duplicates dropped in draw order)."""
    names = hex_ids(rng, 2 * n + 16, n_chars).unique(maintain_order=True)
    return names.head(n)


def _intervals_mask(n_rows: int, n_cols: int, offset: int, cols: np.ndarray, starts: np.ndarray,
                    ends: np.ndarray) -> np.ndarray:
    """(n_rows, n_cols) mask of cells covered by intervals [start, end) of rows (shifted by
    `offset`) in column `cols`."""
    keep = (starts < offset + n_rows) & (ends > offset) & (ends > starts)
    a = np.clip(starts[keep] - offset, 0, n_rows)
    b = np.clip(ends[keep] - offset, 0, n_rows)
    diff = np.zeros((n_rows + 1, n_cols), dtype=np.int32)
    np.add.at(diff, (a, cols[keep]), 1)
    np.add.at(diff, (b, cols[keep]), -1)
    return np.cumsum(diff[:-1], axis=0) > 0


# --------------------------------------------------------------------------------------------
# Machines
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Machines:
    """Machine i is named `m<i>`; listed vs real GPUs, listed GB per GPU, written mem_total."""

    listed_gpus: np.ndarray
    memory_gb: np.ndarray
    true_gpus: np.ndarray
    mem_total: np.ndarray  # int, written as "<n>.0"

    def __len__(self) -> int:
        return len(self.true_gpus)

    @property
    def names(self) -> pl.Series:
        """Machine ids `m0`, `m1`, ..."""
        return pl.Series("machine", [f"m{i}" for i in range(len(self))], dtype=pl.String)


def _machine_counts(scale: float) -> np.ndarray:
    """Machines per MACHINE_CLASSES row at `scale`: the scaled total (at least MIN_MACHINES)
    shared out by largest remainder, so small releases keep the mix of the big classes (and the
    listed GPUs keep under-counting the real ones)."""
    real = np.array([count for *_, count in MACHINE_CLASSES], dtype=float)
    total = max(MIN_MACHINES, int(round(real.sum() * scale)))
    quota = real / real.sum() * total
    counts = np.floor(quota).astype(np.int64)
    counts[np.argsort(-(quota - counts), kind="stable")[:total - int(counts.sum())]] += 1
    return counts


def _build_machines(seed: int, scale: float) -> _Machines:
    """The machines at `scale`, classes assigned to names m0.. in random order."""
    rng = stream_rng(seed, _STREAM_MACHINES)
    rows = rng.permutation(np.repeat(np.arange(len(MACHINE_CLASSES)), _machine_counts(scale)))
    table = np.array([c[:3] for c in MACHINE_CLASSES], dtype=np.int64)
    memory_gb = table[rows, 1]
    base = np.array([MEM_TOTAL_BY_GPU_GB[int(gb)] for gb in memory_gb], dtype=np.int64)
    return _Machines(listed_gpus=table[rows, 0], memory_gb=memory_gb, true_gpus=table[rows, 2],
                     mem_total=base - 4 * rng.integers(0, 5000, len(rows)))


def _machine_list_text(machines: _Machines) -> str:
    """cluster_machine_list: listed 2-GPU machines first, then 8-GPU ones, names sorted as text."""
    frame = pl.DataFrame({"name": machines.names, "gpus": machines.listed_gpus,
                          "gb": machines.memory_gb}).sort("gpus", "name")
    lines = frame.select(pl.format("{},{}, {}GB", "name", "gpus", "gb")).to_series()
    return MACHINE_LIST_HEADER + "\n" + "\n".join(lines.to_list()) + "\n"


# --------------------------------------------------------------------------------------------
# Jobs and attempts
# --------------------------------------------------------------------------------------------


@dataclass
class _Jobs:
    """Job-level arrays, in submission order; times in Unix seconds."""

    submit: np.ndarray
    status: np.ndarray  # code into STATUSES
    gpus: np.ndarray  # GPUs of every attempt
    vc: pl.Series
    user: pl.Series
    jobid: pl.Series

    def __len__(self) -> int:
        return len(self.submit)


@dataclass
class _Attempts:
    """Attempt rows grouped by job in order; true times (Unix s) and what the log writes."""

    job: np.ndarray
    start: np.ndarray
    end: np.ndarray  # true end; after SNAPSHOT_S when still running
    start_written: np.ndarray  # False -> "None"
    end_written: np.ndarray
    level: np.ndarray  # mean GPU utilisation while running, percent

    def __len__(self) -> int:
        return len(self.job)

    @property
    def busy_end(self) -> np.ndarray:
        """End of the attempt's hold on its GPUs (the snapshot for running attempts), s."""
        return np.minimum(self.end, SNAPSHOT_S)


def _submission_times(rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` sorted submission times (Unix s) with the weekly, daily and hourly rhythm, the first
    on 2017-08-07 and the last on 2017-12-22 before the snapshot."""
    hour_starts = np.arange(FIRST_DAY_S, SNAPSHOT_S, 3600, dtype=np.int64)
    local = _local(hour_starts)
    wall_s = local.dt.replace_time_zone(None).dt.epoch("s").to_numpy()
    week = np.clip((wall_s - _FIRST_DAY_WALL_S) // (7 * 86400), 0, len(WEEK_WEIGHTS) - 1)
    weight = (WEEK_WEIGHTS[week] * WEEKDAY_WEIGHTS[local.dt.weekday().to_numpy() - 1]
              * HOUR_WEIGHTS[local.dt.hour().to_numpy()])
    cumulative = np.cumsum(weight / weight.sum())
    bins = np.minimum(np.searchsorted(cumulative, rng.random(n), side="right"), len(weight) - 1)
    times = np.minimum(hour_starts[bins] + rng.integers(0, 3600, n), SNAPSHOT_S - 1)
    times[0] = FIRST_DAY_S + rng.integers(0, 86400)
    if n > 1:
        times[-1] = rng.integers(LAST_DAY_S, SNAPSHOT_S)
    return np.sort(times)


def _job_ids(rng: np.random.Generator, submit: np.ndarray) -> pl.Series:
    """`application_<RM start ms>_<n>`: epoch = last ResourceManager start before submission,
    n counts up (with gaps) from a small number within each epoch. `submit` is sorted."""
    first = FIRST_DAY_S - rng.integers(86400, 30 * 86400)
    restarts = np.sort(rng.integers(FIRST_DAY_S + 14 * 86400, LAST_DAY_S, RM_RESTARTS))
    epoch_s = np.concatenate([[first], restarts])
    epoch_ms = epoch_s * 1000 + rng.integers(0, 1000, len(epoch_s))
    epoch = np.searchsorted(epoch_s, submit, side="right") - 1
    counts = np.bincount(epoch, minlength=len(epoch_s))
    step = rng.geometric(JOB_NUMBER_GAP_P, len(submit))
    first_number = rng.integers(1, 60, len(epoch_s))
    number = _cumsum_in_groups(step, counts) + first_number[epoch] - 1
    return pl.DataFrame({"ms": epoch_ms[epoch], "n": number}).select(
        pl.format("application_{}_{}", "ms", "n")).to_series().alias("jobid")


def _vcs_and_users(rng: np.random.Generator, n_jobs: int, scale: float) -> tuple[pl.Series, pl.Series]:
    """VC and user name per job: every VC used at least once, users Zipf-like within their VC."""
    n_vcs = len(VC_JOB_COUNTS)
    vc_names = _unique_hex(rng, n_vcs, 6)
    vc = rng.choice(n_vcs, size=n_jobs, p=VC_JOB_COUNTS / VC_JOB_COUNTS.sum())
    missing = np.setdiff1d(np.arange(n_vcs), vc)
    if len(missing) and n_jobs >= n_vcs:
        # Give each unused VC one job, taken from the most used VCs (keeps all 15 at any scale).
        donors = rng.permutation(np.flatnonzero(np.isin(vc, np.argsort(-VC_JOB_COUNTS)[:2])))
        vc[donors[:len(missing)]] = missing
    n_users = max(n_vcs, int(round(USERS_AT_SCALE_1 * min(1.0, scale) ** 0.5 * max(1.0, scale))))
    # Users per VC grow with the square root of its jobs, at least one each.
    per_vc = np.sqrt(VC_JOB_COUNTS)
    users_per_vc = np.maximum(1, np.floor(per_vc / per_vc.sum() * (n_users - n_vcs)).astype(np.int64) + 1)
    first_user = group_offsets(users_per_vc)
    user_names = _unique_hex(rng, int(users_per_vc.sum()), 6)
    user = np.empty(n_jobs, dtype=np.int64)
    for v in range(n_vcs):  # one draw per VC (15)
        rows = np.flatnonzero(vc == v)
        weights = 1.0 / np.arange(1, users_per_vc[v] + 1) ** USER_ZIPF_EXPONENT
        user[rows] = first_user[v] + rng.choice(users_per_vc[v], size=len(rows), p=weights / weights.sum())
    return vc_names.gather(vc).alias("vc"), user_names.gather(user).alias("user")


def _max_job_gpus(machines: _Machines) -> int:
    """Largest job a release draws: 8 GPUs on each of half its 8-GPU machines (so that in a
    small release one job cannot hold the whole cluster; 1,056 at scale 1)."""
    return max(1, 8 * max(1, int((machines.true_gpus == 8).sum()) // 2))


def _build_jobs(seed: int, scale: float, machines: _Machines) -> tuple[_Jobs, _Attempts]:
    """Jobs and their attempts, with all published counts carried over to the release size."""
    rng = stream_rng(seed, _STREAM_JOBS)
    n = max(1, int(round(JOBS_AT_SCALE_1 * scale)))
    submit = _submission_times(rng, n)
    status = _exact_labels(rng, STATUS_SHARES, n)
    values, shares = GPUS_PER_JOB
    fits = values <= _max_job_gpus(machines)
    gpus = choice_from(rng, (values[fits], shares[fits]), n)
    vc, user = _vcs_and_users(rng, n, scale)
    jobs = _Jobs(submit=submit, status=status, gpus=gpus, vc=vc, user=user,
                 jobid=_job_ids(rng, submit))
    return jobs, _build_attempts(seed, jobs)


def _job_timing(rng: np.random.Generator, jobs: _Jobs) -> tuple[np.ndarray, np.ndarray]:
    """Per job: queue (s) and run time (s), stratified per status."""
    n = len(jobs)
    queue = np.clip(np.floor(_stratified_lognormal(rng, QUEUE_MEDIAN_S, QUEUE_SIGMA, n)), 1, QUEUE_MAX_S)
    run = np.empty(n)
    for code in range(len(STATUSES)):  # one stratified draw per status (3)
        rows = np.flatnonzero(jobs.status == code)
        run[rows] = _stratified_lognormal(rng, RUN_MEDIAN_S[code], RUN_SIGMA, len(rows))
    run = np.minimum(np.floor(run * jobs.gpus ** RUN_GPU_EXPONENT), RUN_MAX_S)
    return queue.astype(np.int64), run.astype(np.int64)


def _no_attempt_jobs(rng: np.random.Generator, jobs: _Jobs, first_start: np.ndarray) -> np.ndarray:
    """Jobs without attempts: those still queued at the snapshot, plus Killed/Failed jobs drawn
    so that the total matches the published share."""
    none = first_start >= SNAPSHOT_S
    wanted = _exact_count(NO_ATTEMPT_JOBS_AT_SCALE_1, len(jobs)) - int(none.sum())
    weights = NO_ATTEMPT_STATUS_WEIGHTS[jobs.status] * ~none
    candidates = np.flatnonzero(weights > 0)
    if wanted > 0 and len(candidates):
        take = min(wanted, len(candidates))
        p = weights[candidates] / weights[candidates].sum()
        none[rng.choice(candidates, size=take, replace=False, p=p)] = True
    return none


def _build_attempts(seed: int, jobs: _Jobs) -> _Attempts:
    """Attempts: first start after the queue, the run time split into attempts and retry gaps,
    cut at the snapshot (all times known; `_drop_times` removes some once they are placed)."""
    rng = stream_rng(seed, _STREAM_ATTEMPTS)
    queue, run = _job_timing(rng, jobs)
    first_start = jobs.submit + queue
    none = _no_attempt_jobs(rng, jobs, first_start)
    n_attempts = np.zeros(len(jobs), dtype=np.int64)
    for code in range(len(STATUSES)):  # one draw per status (3)
        rows = np.flatnonzero(jobs.status == code)
        n_attempts[rows] = 1 + rng.choice(5, size=len(rows), p=ATTEMPT_COUNT_SHARES[code])
    n_attempts[none] = 0
    job = np.repeat(np.arange(len(jobs)), n_attempts)
    position = position_in_group(n_attempts)
    # Gaps before attempts 2.., at most half the run time in all; the rest is split at random.
    gap = np.where(position > 0, np.floor(lognormal(rng, RETRY_GAP_MEDIAN_S, RETRY_GAP_SIGMA, len(job))), 0)
    gap_total = np.bincount(job, weights=gap, minlength=len(jobs))
    shrink = np.where(gap_total > 0, np.minimum(1.0, 0.5 * run / np.maximum(gap_total, 1)), 1.0)
    gap = np.floor(gap * shrink[job])
    busy_total = run - np.bincount(job, weights=gap, minlength=len(jobs))
    share = rng.exponential(1.0, len(job))
    share /= np.bincount(job, weights=share, minlength=len(jobs))[job]
    duration = np.floor(share * busy_total[job])
    # The last attempt takes the rounding rest so that the span is exactly the run time.
    last = position == n_attempts[job] - 1
    duration[last] += busy_total[job[last]] - np.bincount(job, weights=duration, minlength=len(jobs))[job[last]]
    offset = _cumsum_in_groups(gap + duration, n_attempts) - duration  # from the first start
    start = (first_start[job] + offset).astype(np.int64)
    end = (start + duration).astype(np.int64)
    started = start < SNAPSHOT_S  # attempts after the snapshot never happened
    job, start, end, position = job[started], start[started], end[started], position[started]
    return _Attempts(job=job, start=start, end=end, start_written=np.ones(len(job), bool),
                     end_written=end <= SNAPSHOT_S, level=100.0 * rng.beta(*UTIL_LEVEL_BETA, len(job)))


def _drop_times(rng: np.random.Generator, attempts: _Attempts, n_jobs: int) -> None:
    """Write "None" for the published numbers of missing ends (running attempts count) and starts."""
    counts = np.bincount(attempts.job, minlength=n_jobs)
    is_last = np.zeros(len(attempts), dtype=bool)
    is_last[group_offsets(counts)[counts > 0] + counts[counts > 0] - 1] = True
    extra = _exact_count(NO_END_ATTEMPTS_AT_SCALE_1, n_jobs) - int((~attempts.end_written).sum())
    if extra > 0:
        on_last = int(round(extra * MISSING_END_ON_LAST_SHARE))
        for pool, k in ((is_last & attempts.end_written, on_last),
                        (~is_last & attempts.end_written, extra - on_last)):
            rows = np.flatnonzero(pool)
            attempts.end_written[rng.choice(rows, size=min(k, len(rows)), replace=False)] = False
    rows = np.flatnonzero(attempts.end_written)
    k = min(_exact_count(NO_START_ATTEMPTS_AT_SCALE_1, n_jobs), len(rows))
    attempts.start_written[rng.choice(rows, size=k, replace=False)] = False


# --------------------------------------------------------------------------------------------
# Placement: attempts -> machines and GPUs, no GPU held by two attempts at once
# --------------------------------------------------------------------------------------------


@dataclass
class _Placement:
    """One row per GPU held by an attempt: detail = index of the machine in the attempt."""

    attempt: np.ndarray
    detail: np.ndarray
    machine: np.ndarray
    gpu: np.ndarray

    def sorted(self) -> _Placement:
        """Rows ordered by attempt, detail, GPU."""
        order = np.lexsort((self.gpu, self.detail, self.attempt))
        return _Placement(self.attempt[order], self.detail[order], self.machine[order], self.gpu[order])


def _chunks(rng: np.random.Generator, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split each attempt's GPUs over machines: 8 per machine above 8, sometimes 2 machines for
    2..8. Returns per chunk (index of the attempt in `gpus`, GPUs), larger chunks first."""
    big = gpus > 8
    split = ~big & (gpus >= 2) & (rng.random(len(gpus)) < SPLIT_ATTEMPT_SHARE)
    n_chunks = np.where(big, gpus // 8 + (gpus % 8 > 0), np.where(split, 2, 1))
    owner = np.repeat(np.arange(len(gpus)), n_chunks)
    position = position_in_group(n_chunks)
    g = gpus[owner]
    size = np.where(big[owner], np.where(position < g // 8, 8, g % 8),
                    np.where(split[owner], np.where(position == 0, (g + 1) // 2, g // 2), g))
    return owner, size


_TIME_ORIGIN = FIRST_DAY_S - 40 * 86400  # times are stored relative to this, s
_SLOT_SPAN = np.int64(1) << 26  # > any relative time (~180 days), so slot * span + time sorts


class _Holds:
    """GPU holds that may still overlap attempts to place, to answer "is GPU slot
    (machine * 8 + gpu) free in [s, e)?" exactly. Holds ending before every attempt still to
    place are pruned, so the index stays about as large as the number of busy GPUs."""

    def __init__(self, n_slots: int):
        self.n_slots = n_slots
        self.slot = self.start = self.end = np.zeros(0, dtype=np.int64)
        self._index()

    def _index(self) -> None:
        base = self.slot * _SLOT_SPAN
        self.starts = np.sort(base + (self.start - _TIME_ORIGIN))
        self.ends = np.sort(base + (self.end - _TIME_ORIGIN))
        bounds = np.arange(self.n_slots + 1, dtype=np.int64) * _SLOT_SPAN
        self.first_start = np.searchsorted(self.starts, bounds)
        self.first_end = np.searchsorted(self.ends, bounds)

    def add(self, slot: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        """New holds."""
        self.slot = np.concatenate([self.slot, slot])
        self.start = np.concatenate([self.start, start])
        self.end = np.concatenate([self.end, end])
        self._index()

    def prune(self, before: int) -> None:
        """Forget holds that end by `before` (no attempt still to place starts earlier)."""
        keep = self.end > before
        self.slot, self.start, self.end = self.slot[keep], self.start[keep], self.end[keep]
        self._index()

    def free(self, slot: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """True where no hold on `slot` overlaps [start, end)."""
        base = slot * _SLOT_SPAN
        begun = np.searchsorted(self.starts, base + (end - _TIME_ORIGIN)) - self.first_start[slot]
        ended = np.searchsorted(self.ends, base + (start - _TIME_ORIGIN), side="right") - self.first_end[slot]
        return begun <= ended

    def busy_until(self, now: int) -> np.ndarray:
        """Per slot, the latest end of the holds begun by `now` (Unix s; very small if none)."""
        until = np.full(self.n_slots, np.iinfo(np.int64).min)
        begun = self.start <= now
        np.maximum.at(until, self.slot[begun], self.end[begun])
        return until


def _candidates(rng: np.random.Generator, true: np.ndarray, largest: np.ndarray, k: int,
                wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """Candidate machines per attempt, (n, k) indices and a mask of the usable ones: machines
    that can hold the attempt's largest chunk, drawn weighted by real GPUs (repeats unusable),
    or all of them in random order when `wide`."""
    candidates = np.zeros((len(largest), k), dtype=np.int64)
    usable = np.zeros((len(largest), k), dtype=bool)
    for size in np.unique(largest):  # chunk sizes 1..8
        rows = np.flatnonzero(largest == size)
        pool = np.flatnonzero(true >= size)
        if wide:
            take = min(k, len(pool))
            picks = pool[np.argsort(rng.random((len(rows), len(pool))), axis=1)[:, :take]]
            candidates[rows, :take], usable[rows, :take] = picks, True
            continue
        cumulative = np.cumsum(true[pool])
        picks = pool[np.searchsorted(cumulative, rng.random((len(rows), k)) * cumulative[-1], side="right")]
        order = np.argsort(picks, axis=1, kind="stable")
        in_order = np.take_along_axis(picks, order, axis=1)
        repeat = np.zeros_like(in_order, dtype=bool)
        repeat[:, 1:] = in_order[:, 1:] == in_order[:, :-1]
        first_seen = np.empty_like(repeat)
        np.put_along_axis(first_seen, order, ~repeat, axis=1)
        candidates[rows], usable[rows] = picks, first_seen
    return candidates, usable


def _place_batch(rng: np.random.Generator, machines: _Machines, holds: _Holds,
                 att: np.ndarray, gpus: np.ndarray, start: np.ndarray, end: np.ndarray,
                 jitter: float, wide: bool) -> tuple[_Placement, np.ndarray]:
    """Place attempts `att` on GPUs free of `holds`, each chunk on its own candidate machine;
    returns the rows and a mask of the attempts placed."""
    owner, size = _chunks(rng, gpus)
    n_att, true = len(att), machines.true_gpus
    n_chunks = np.bincount(owner, minlength=n_att)
    position = position_in_group(n_chunks)
    largest = np.zeros(n_att, dtype=np.int64)
    np.maximum.at(largest, owner, size)
    k = len(true) if wide else PLACEMENT_CANDIDATES + 2 * int(n_chunks.max())
    candidates, usable = _candidates(rng, true, largest, k, wide)
    gpu_ids = np.arange(8)
    exists = (gpu_ids[None, None, :] < true[candidates][:, :, None]) & usable[:, :, None]
    cells = np.nonzero(exists)
    free = np.zeros_like(exists)
    free[cells] = holds.free(candidates[cells[0], cells[1]] * 8 + cells[2], start[cells[0]], end[cells[0]])
    free_count = free.sum(axis=2)
    used = np.zeros((n_att, k), dtype=bool)
    chosen = np.full(len(owner), -1, dtype=np.int64)
    for p in range(int(n_chunks.max())):  # chunk positions (at most 16)
        rows = np.flatnonzero(position == p)
        a, r = owner[rows], np.arange(len(rows))
        ok = (free_count[a] >= size[rows][:, None]) & ~used[a]
        # Best fit: the candidate with the fewest free GPUs that still holds the chunk (keeps
        # whole machines free for large jobs), blurred more in each round so that attempts
        # competing for the same GPUs spread out.
        fit = free_count[a] + (jitter + 0.1) * rng.random(ok.shape)
        pick = np.argmin(np.where(ok, fit, np.inf), axis=1)
        found = ok[r, pick]
        chosen[rows] = np.where(found, pick, -1)
        used[a[found], pick[found]] = True
    placed = np.ones(n_att, dtype=bool)
    np.logical_and.at(placed, owner, chosen >= 0)
    # GPUs inside each chosen machine: `size` of its free ones, at random.
    rows = np.flatnonzero(placed[owner])
    a, c = owner[rows], chosen[rows]
    order_key = np.where(free[a, c], rng.random((len(rows), 8)), 2.0)
    rank = np.argsort(np.argsort(order_key, axis=1), axis=1)
    chunk_row, gpu = np.nonzero(rank < size[rows][:, None])
    placement = _Placement(attempt=att[a[chunk_row]], detail=position[rows][chunk_row],
                           machine=candidates[a, c][chunk_row], gpu=gpu)
    return placement, placed


def _collisions(placement: _Placement, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Attempts holding a GPU that an attempt started earlier still holds (the later ones)."""
    holding = end[placement.attempt] > start[placement.attempt]  # zero-length holds hold nothing
    slot = placement.machine[holding].astype(np.int64) * 8 + placement.gpu[holding]
    attempt = placement.attempt[holding]
    s, e = start[attempt], end[attempt]
    order = np.lexsort((attempt, s, slot))
    key = slot[order] * _SLOT_SPAN + (e[order] - _TIME_ORIGIN)
    running = np.maximum.accumulate(key)
    previous = np.concatenate([[-1], running[:-1]])
    same_slot = previous // _SLOT_SPAN == slot[order]
    clash = same_slot & (previous - slot[order] * _SLOT_SPAN > s[order] - _TIME_ORIGIN)
    return np.unique(attempt[order][clash])


def _place_attempts(seed: int, machines: _Machines, jobs: _Jobs,
                    attempts: _Attempts) -> tuple[_Placement, _Attempts]:
    """Place every attempt on GPUs no other attempt holds at the time, like a first-come
    first-served scheduler; returns the rows and the attempts (some delayed, some dropped).

    Attempts go in batches by start time (an attempt only once the job's previous one is
    placed), each placed against the holds of earlier batches. Within a batch, rounds: unplaced
    attempts pick free GPUs among candidate machines (a few random ones, then all); an attempt
    clashing with an earlier-started one of the same round is tried again. An attempt still
    unplaced after PLACEMENT_ROUNDS finds the cluster full: it waits until enough GPUs are free,
    and the job's later attempts move with it; an attempt pushed past the snapshot never starts.
    """
    rng = stream_rng(seed, _STREAM_PLACEMENT)
    n = len(attempts)
    start, end = attempts.start.copy(), attempts.end.copy()
    gpus = jobs.gpus[attempts.job]
    counts = np.bincount(attempts.job, minlength=len(jobs))
    first_of_job = group_offsets(counts)[attempts.job]
    last_of_job = first_of_job + counts[attempts.job] - 1
    previous = np.where(np.arange(n) > first_of_job, np.arange(n) - 1, -1)
    processed = np.zeros(n, dtype=bool)
    dropped = np.zeros(n, dtype=bool)
    waits = np.zeros(n, dtype=np.int64)
    holds = _Holds(8 * len(machines))
    done: list[_Placement] = []
    while not processed.all():  # one batch per pass
        todo = np.flatnonzero(~processed)
        holds.prune(int(start[todo].min()))
        ready = todo[(previous[todo] < 0) | processed[np.maximum(previous[todo], 0)]]
        late = ready[start[ready] >= SNAPSHOT_S]
        if len(late):  # delayed past the snapshot: the attempt and the job's later ones vanish
            gone = _ranges(late, last_of_job[late] + 1)
            processed[gone] = dropped[gone] = True
            continue
        # The earliest ready attempts, within a window so that no hold lies far in their future.
        ready = ready[start[ready] < start[ready].min() + PLACEMENT_WINDOW_S]
        pending = ready[np.argsort(start[ready], kind="stable")[:PLACEMENT_BATCH]]
        hold_end = np.maximum(np.minimum(end, SNAPSHOT_S), start)
        for round_index in range(PLACEMENT_ROUNDS):
            if len(pending) == 0:
                break
            new, placed = _place_batch(rng, machines, holds, pending, gpus[pending], start[pending],
                                       hold_end[pending], PLACEMENT_JITTER * round_index,
                                       round_index >= PLACEMENT_WIDE_AFTER)
            clashing = _collisions(new, start, hold_end)
            keep = ~np.isin(new.attempt, clashing)
            kept = _Placement(new.attempt[keep], new.detail[keep], new.machine[keep], new.gpu[keep])
            holds.add(kept.machine * 8 + kept.gpu, start[kept.attempt], hold_end[kept.attempt])
            done.append(kept)
            settled = np.setdiff1d(pending[placed], clashing)
            processed[settled] = True
            pending = np.setdiff1d(pending, settled)
        if len(pending):
            # Wait until GPUs should be free, and at least twice as long as the previous time.
            delay = np.maximum(_wait_for_gpus(holds, machines, gpus[pending], start[pending]),
                               WAIT_MIN_S << np.minimum(waits[pending], 12))
            waits[pending] += 1
            shift = np.zeros(n + 1, dtype=np.int64)
            np.add.at(shift, pending, delay)
            np.add.at(shift, last_of_job[pending] + 1, -delay)
            shift = np.cumsum(shift[:-1])
            start += shift
            end += shift
    placement = _concat_placements(done).sorted() if done else _Placement(
        *(np.zeros(0, dtype=np.int64) for _ in range(4)))
    kept = ~dropped
    renumber = np.cumsum(kept) - 1
    placement.attempt = renumber[placement.attempt]
    moved = _Attempts(job=attempts.job[kept], start=start[kept], end=end[kept],
                      start_written=np.ones(int(kept.sum()), dtype=bool),
                      end_written=end[kept] <= SNAPSHOT_S, level=attempts.level[kept])
    return placement, moved


def _ranges(first: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """All indices of the ranges [first, stop)."""
    lengths = stop - first
    return np.repeat(first - group_offsets(lengths), lengths) + np.arange(int(lengths.sum()))


def _wait_for_gpus(holds: _Holds, machines: _Machines, gpus: np.ndarray,
                   start: np.ndarray) -> np.ndarray:
    """Delay (s) until enough GPUs are free for each attempt: `gpus` on one machine, or whole
    8-GPU machines for larger attempts. Only holds begun by the earliest start are looked at, so
    the wait may be too short (the attempt then waits again), never too long."""
    true = machines.true_gpus
    busy_until = holds.busy_until(int(start.min())).reshape(len(true), 8).astype(float)
    busy_until[np.arange(8)[None, :] >= true[:, None]] = np.inf  # GPUs that do not exist
    ready = np.sort(busy_until, axis=1)  # ready[m, g - 1]: time g GPUs of m are free
    free_at = np.empty(len(gpus))
    for g in np.unique(gpus):  # GPU counts (a dozen values)
        rows = gpus == g
        if g <= 8:
            free_at[rows] = ready[:, g - 1].min()
        else:
            whole = np.sort(ready[true == 8, 7])
            free_at[rows] = whole[min(len(whole), -(-g // 8)) - 1]
    return np.maximum(0, np.ceil(free_at - start)).astype(np.int64)


def _concat_placements(parts: list[_Placement]) -> _Placement:
    """Rows of several placements together."""
    return _Placement(*(np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)
                        for f in ("attempt", "detail", "machine", "gpu")))


def _build_trace(seed: int, scale: float, machines: _Machines) -> tuple[_Jobs, _Attempts, _Placement]:
    """Jobs, their attempts as placed (with the published numbers of missing times) and the GPUs
    each attempt holds."""
    jobs, attempts = _build_jobs(seed, scale, machines)
    placement, attempts = _place_attempts(seed, machines, jobs, attempts)
    _drop_times(stream_rng(seed, _STREAM_MISSING_TIMES), attempts, len(jobs))
    return jobs, attempts, placement


# --------------------------------------------------------------------------------------------
# cluster_job_log: JSON built per job with polars string operations (json.dumps indent=4 layout)
# --------------------------------------------------------------------------------------------


def _indent(level: int) -> str:
    return " " * (4 * level)


def _job_log_text(jobs: _Jobs, attempts: _Attempts, placement: _Placement,
                  machines: _Machines) -> str:
    """The whole cluster_job_log, laid out exactly like `json.dumps(jobs, indent=4)`."""
    gpu_rows = pl.DataFrame({
        "attempt": placement.attempt, "detail": placement.detail,
        "machine": machines.names.gather(placement.machine), "gpu": placement.gpu,
    })
    details = (gpu_rows
               .with_columns(pl.format(_indent(7) + '"gpu{}"', "gpu").alias("line"))
               .group_by("attempt", "detail", maintain_order=True)
               .agg(pl.col("machine").first(), pl.col("line").str.join(",\n"))
               .select("attempt", pl.concat_str([
                   pl.lit(_indent(5) + "{\n" + _indent(6) + '"ip": "'), pl.col("machine"),
                   pl.lit('",\n' + _indent(6) + '"gpus": [\n'), pl.col("line"),
                   pl.lit("\n" + _indent(6) + "]\n" + _indent(5) + "}")]).alias("text"))
               .group_by("attempt", maintain_order=True)
               .agg(pl.col("text").str.join(",\n")))
    attempt_rows = pl.DataFrame({
        "attempt": np.arange(len(attempts)), "job": attempts.job,
        "start": _wall_clock(attempts.start, attempts.start_written),
        "end": _wall_clock(attempts.end, attempts.end_written),
    }).join(details, on="attempt", how="left", maintain_order="left")
    attempt_text = (attempt_rows
                    .select("job", pl.concat_str([
                        pl.lit(_indent(3) + "{\n" + _indent(4) + '"start_time": "'), pl.col("start"),
                        pl.lit('",\n' + _indent(4) + '"end_time": "'), pl.col("end"),
                        pl.lit('",\n' + _indent(4) + '"detail": [\n'), pl.col("text"),
                        pl.lit("\n" + _indent(4) + "]\n" + _indent(3) + "}")]).alias("text"))
                    .group_by("job", maintain_order=True)
                    .agg(pl.col("text").str.join(",\n")))
    job_rows = pl.DataFrame({
        "job": np.arange(len(jobs)),
        "status": pl.Series(STATUSES).gather(jobs.status),
        "vc": jobs.vc, "jobid": jobs.jobid, "user": jobs.user,
        "submitted": _wall_clock(jobs.submit),
    }).join(attempt_text, on="job", how="left", maintain_order="left")
    attempts_json = (pl.when(pl.col("text").is_null()).then(pl.lit("[]"))
                     .otherwise(pl.concat_str([pl.lit("[\n"), pl.col("text"),
                                               pl.lit("\n" + _indent(2) + "]")])))
    text = job_rows.select(pl.concat_str([
        pl.lit(_indent(1) + "{\n" + _indent(2) + '"status": "'), pl.col("status"),
        pl.lit('",\n' + _indent(2) + '"vc": "'), pl.col("vc"),
        pl.lit('",\n' + _indent(2) + '"jobid": "'), pl.col("jobid"),
        pl.lit('",\n' + _indent(2) + '"attempts": '), attempts_json,
        pl.lit(",\n" + _indent(2) + '"submitted_time": "'), pl.col("submitted"),
        pl.lit('",\n' + _indent(2) + '"user": "'), pl.col("user"),
        pl.lit('"\n' + _indent(1) + "}")]).str.join(",\n")).item()
    return "[\n" + text + "\n]"


# --------------------------------------------------------------------------------------------
# Utilisation logs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Intervals:
    """Intervals [start, end) in minutes from UTIL_START_S, each on one column (machine/slot)."""

    col: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def mask(self, n_rows: int, n_cols: int, offset: int) -> np.ndarray:
        """(n_rows, n_cols) coverage of minutes offset.. by these intervals."""
        return _intervals_mask(n_rows, n_cols, offset, self.col, self.start, self.end)


@dataclass(frozen=True)
class _UtilPlan:
    """Who reports when (rows), and who is offline (NA values), over the utilisation window."""

    n_minutes: int
    reporting: _Intervals  # rows exist (per machine)
    dropped: _Intervals  # rows missing in collection dips (per machine)
    gaps: _Intervals  # minutes without any row (col 0)
    offline: _Intervals  # whole machine NA
    gpu_offline: _Intervals  # one GPU NA (col = machine * 8 + gpu)
    cpu_base: np.ndarray  # per machine, percent
    free_share: np.ndarray  # per machine, typical share of memory free


def _episodes(rng: np.random.Generator, owners: np.ndarray, per_owner: float,
              duration: tuple[float, float], n_minutes: int) -> _Intervals:
    """Poisson(per_owner) episodes per owner at uniform times, lognormal durations (minutes)."""
    counts = rng.poisson(per_owner, len(owners))
    col = np.repeat(owners, counts)
    start = rng.integers(0, n_minutes, len(col))
    length = np.maximum(1, np.rint(lognormal(rng, duration[0], duration[1], len(col)))).astype(np.int64)
    return _Intervals(col=col, start=start, end=np.minimum(start + length, n_minutes))


def _fixed_episodes(rng: np.random.Generator, count: int, duration: tuple[float, float],
                    n_minutes: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` cluster-wide periods (start, end) in minutes."""
    start = rng.integers(0, n_minutes, count)
    length = np.maximum(1, np.rint(lognormal(rng, duration[0], duration[1], count))).astype(np.int64)
    return start, np.minimum(start + length, n_minutes)


def _build_util_plan(seed: int, machines: _Machines) -> _UtilPlan:
    """Reporting machines, collection dips and gaps, and offline episodes."""
    rng = stream_rng(seed, _STREAM_UTIL_PLAN)
    n_minutes = (UTIL_END_S - UTIL_START_S) // 60
    m = len(machines)
    ids = np.arange(m)
    core = np.zeros(m, dtype=bool)
    core[rng.permutation(m)[:max(1, int(round(CORE_MACHINE_SHARE * m)))]] = True
    first = rng.integers(0, FIRST_REPORT_SPREAD_MIN, m)
    others = ids[~core]
    full_start, full_end = _fixed_episodes(rng, FULL_COLLECTIONS, FULL_COLLECTION_MIN, n_minutes)
    own = _episodes(rng, others, OWN_EPISODES_PER_MACHINE, OWN_EPISODE_MIN, n_minutes)
    reporting = _Intervals(
        col=np.concatenate([ids[core], np.repeat(others, FULL_COLLECTIONS), own.col]),
        start=np.concatenate([first[core], np.tile(full_start, len(others)), own.start]),
        end=np.concatenate([np.full(int(core.sum()), n_minutes), np.tile(full_end, len(others)), own.end]),
    )
    dip_start, dip_end = _fixed_episodes(rng, DIPS, DIP_MIN, n_minutes)
    drop = rng.random((DIPS, m)) < DIP_DROP_SHARE
    dip, machine = np.nonzero(drop)
    dropped = _Intervals(col=machine, start=dip_start[dip], end=dip_end[dip])
    gap_start, gap_end = _fixed_episodes(rng, GAPS, GAP_MIN, n_minutes)
    # No gap on the night DST ends, so that its repeated hour is always in the logs.
    night = ((FALL_BACK_S - UTIL_START_S) // 60 - 180, (FALL_BACK_S - UTIL_START_S) // 60 + 180)
    moved = (gap_start < night[1]) & (gap_end > night[0])
    gap_start, gap_end = gap_start + 1440 * moved, np.minimum(gap_end + 1440 * moved, n_minutes)
    gaps = _Intervals(col=np.zeros(GAPS, dtype=np.int64), start=gap_start, end=gap_end)
    offline = _episodes(rng, ids, MACHINE_OUTAGES_PER_MACHINE, MACHINE_OUTAGE_MIN, n_minutes)
    slots = (ids[:, None] * 8 + np.arange(8)[None, :])[np.arange(8)[None, :] < machines.true_gpus[:, None]]
    gpu_offline = _episodes(rng, slots, GPU_OUTAGES_PER_GPU, GPU_OUTAGE_MIN, n_minutes)
    return _UtilPlan(n_minutes=n_minutes, reporting=reporting, dropped=dropped, gaps=gaps,
                     offline=offline, gpu_offline=gpu_offline,
                     cpu_base=rng.uniform(*CPU_BASE_PCT, m),
                     free_share=lognormal(rng, MEM_FREE_SHARE[0], MEM_FREE_SHARE[1], m))


@dataclass(frozen=True)
class _Busy:
    """GPU holds in minutes from UTIL_START_S: slot = machine * 8 + gpu, attempt level (%)."""

    slot: np.ndarray
    start: np.ndarray
    end: np.ndarray
    level: np.ndarray


def _busy_intervals(attempts: _Attempts, placement: _Placement) -> _Busy:
    """Every placed GPU's hold as minutes of the utilisation window (a minute is busy when the
    hold overlaps it)."""
    a = placement.attempt
    start = np.floor((attempts.start[a] - UTIL_START_S) / 60).astype(np.int64)
    end = np.ceil((attempts.busy_end[a] - UTIL_START_S) / 60).astype(np.int64)
    return _Busy(slot=placement.machine * 8 + placement.gpu, start=start, end=end,
                 level=attempts.level[a])


_GPU_NA, _GPU_EMPTY = GPU_SAMPLES_PER_MINUTE * 100 + 1, GPU_SAMPLES_PER_MINUTE * 100 + 2
#: Written GPU values: k / 30 for k = 0..3000 (Python float repr of the value rounded to 9
#: decimals, e.g. 99.366666667), then "NA", then empty.
_GPU_TEXT = pl.Series([repr(round(k / GPU_SAMPLES_PER_MINUTE, 9)) for k in range(_GPU_NA)]
                      + ["NA", None], dtype=pl.String)
_CPU_NA = 100_001
_CPU_TEXT = pl.Series([repr(round(k / 1000, 3)) for k in range(_CPU_NA)] + ["NA"], dtype=pl.String)
_THIRDS = pl.Series([".0", ".3333", ".6667"], dtype=pl.String)


def _mem_total_text(machines: _Machines) -> pl.Series:
    """mem_total as written per machine (`528272672.0`)."""
    return pl.Series([f"{total}.0" for total in machines.mem_total.tolist()], dtype=pl.String)


def _minute_labels(first: int, count: int) -> pl.Series:
    """`YYYY-MM-DD HH:MM:SS PDT|PST` for minutes first.. of the window."""
    seconds = UTIL_START_S + 60 * np.arange(first, first + count, dtype=np.int64)
    return _local(seconds).dt.strftime("%Y-%m-%d %H:%M:%S %Z")


def _util_chunk(seed: int, index: int, plan: _UtilPlan, machines: _Machines,
                busy: _Busy) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Rows of the GPU, CPU and memory logs for minutes of chunk `index` (time-major)."""
    rng = stream_rng(seed, _STREAM_UTIL, index)
    m0 = index * CHUNK_MINUTES
    t = min(CHUNK_MINUTES, plan.n_minutes - m0)
    m = len(machines)
    present = plan.reporting.mask(t, m, m0) & ~plan.dropped.mask(t, m, m0)
    present &= ~plan.gaps.mask(t, 1, m0)
    t_idx, m_idx = np.nonzero(present)
    offline = plan.offline.mask(t, m, m0)[t_idx, m_idx]
    gpu_off = plan.gpu_offline.mask(t, m * 8, m0).reshape(t, m, 8)[t_idx, m_idx]
    # Busy level per GPU slot and minute from the holds overlapping the chunk.
    sel = (busy.start < m0 + t) & (busy.end > m0)
    a = np.clip(busy.start[sel] - m0, 0, t)
    b = np.clip(busy.end[sel] - m0, 0, t)
    level = np.zeros((t + 1, m * 8), dtype=np.float32)
    count = np.zeros((t + 1, m * 8), dtype=np.int16)
    np.add.at(level, (a, busy.slot[sel]), busy.level[sel])
    np.add.at(level, (b, busy.slot[sel]), -busy.level[sel])
    np.add.at(count, (a, busy.slot[sel]), 1)
    np.add.at(count, (b, busy.slot[sel]), -1)
    level = np.cumsum(level[:-1], axis=0).reshape(t, m, 8)[t_idx, m_idx]
    held = np.cumsum(count[:-1], axis=0).reshape(t, m, 8)[t_idx, m_idx] > 0
    rows = len(t_idx)
    noisy = np.clip(level + rng.normal(0.0, UTIL_NOISE_PCT, (rows, 8)), 0.0, 100.0)
    idle = np.where(rng.random((rows, 8)) < IDLE_NONZERO_SHARE, rng.uniform(0, IDLE_MAX_PCT, (rows, 8)), 0.0)
    value = np.where(held, noisy, idle)
    code = np.rint(value * GPU_SAMPLES_PER_MINUTE).astype(np.int64)
    true = machines.true_gpus[m_idx]
    exists = np.arange(8)[None, :] < true[:, None]
    code = np.where(gpu_off | offline[:, None], _GPU_NA, code)
    code = np.where(exists, code, np.where((true == 0)[:, None], _GPU_NA, _GPU_EMPTY))
    time = _minute_labels(m0, t).gather(t_idx).alias("time")
    machine = machines.names.gather(m_idx)
    gpu = pl.DataFrame([time, machine.alias("machineId"),
                        *[_GPU_TEXT.gather(code[:, k]).alias(f"gpu{k}_util") for k in range(8)],
                        pl.repeat(None, rows, dtype=pl.String, eager=True).alias("trailing")])
    # CPU: base + load of busy GPUs + noise, 3 decimals.
    busy_share = (held & exists).sum(axis=1) / np.maximum(true, 1)
    cpu = plan.cpu_base[m_idx] + CPU_BUSY_PCT * busy_share * rng.uniform(0.5, 1.5, rows) \
        + rng.normal(0.0, CPU_NOISE_PCT, rows)
    cpu_code = np.where(offline, _CPU_NA, np.rint(np.clip(cpu, 0.0, 100.0) * 1000).astype(np.int64))
    cpu_frame = pl.DataFrame([time, machine.alias("machine_id"), _CPU_TEXT.gather(cpu_code).alias("cpu_util")])
    # Memory: per-machine free share, busier machines have less free; mean of 3 integer samples.
    free_share = np.clip(plan.free_share[m_idx] * np.exp(rng.normal(0.0, MEM_FREE_NOISE, rows))
                         * (1.0 - 0.5 * busy_share), 0.0005, 0.98)
    thirds = np.rint(free_share * machines.mem_total[m_idx] * 3).astype(np.int64)
    free_text = pl.Series(thirds // 3).cast(pl.String) + _THIRDS.gather(thirds % 3)
    total_text = _mem_total_text(machines).gather(m_idx)
    off = pl.Series(offline)
    mem_frame = pl.DataFrame([time, machine.alias("machine_id")]).with_columns(
        pl.when(off).then(pl.lit("NA")).otherwise(total_text).alias("mem_total"),
        pl.when(off).then(pl.lit("NA")).otherwise(free_text).alias("mem_free"),
    )
    return gpu, cpu_frame, mem_frame


def _write_rows(frame: pl.DataFrame, handle: BinaryIO) -> None:
    """Append `frame` as CSV rows without header or quotes (empty field for null)."""
    frame.write_csv(handle, include_header=False, separator=",", line_terminator="\n",
                    null_value="", quote_style="never")


def _write_util_logs(seed: int, machines: _Machines, attempts: _Attempts, placement: _Placement,
                     paths: dict[str, Path]) -> dict[str, int]:
    """Stream the three utilisation logs chunk by chunk; returns rows per file.

    A writer thread formats and writes one chunk while the next is computed (polars and numpy
    release the GIL), so both cores work; at most two chunks are held at a time.
    """
    plan = _build_util_plan(seed, machines)
    busy = _busy_intervals(attempts, placement)
    names = ("cluster_gpu_util", "cluster_cpu_util", "cluster_mem_util")
    headers = (GPU_UTIL_HEADER, CPU_UTIL_HEADER, MEM_UTIL_HEADER)
    rows = dict.fromkeys(names, 0)

    def write(frames: tuple[pl.DataFrame, ...]) -> None:
        for name, handle, frame in zip(names, handles, frames):
            _write_rows(frame, handle)
            rows[name] += frame.height

    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(paths[name], "wb")) for name in names]
        for handle, header in zip(handles, headers):
            handle.write((header + "\n").encode())
        writer = stack.enter_context(ThreadPoolExecutor(max_workers=1))
        pending: Future[None] | None = None
        for index in range((plan.n_minutes + CHUNK_MINUTES - 1) // CHUNK_MINUTES):
            frames = _util_chunk(seed, index, plan, machines, busy)
            if pending is not None:
                pending.result()
            pending = writer.submit(write, frames)
        if pending is not None:
            pending.result()
    return rows


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------



def generate(out_dir: Path, scale: float = 1.0, seed: int = 0,
                    progress: Callable[[str], None] | None = None, pack: bool = True) -> list[Path]:
    """Write a synthetic Philly release into `out_dir`; return the paths written.

    `scale` multiplies jobs and machines (1.0 ~ the real release: 117,325 jobs, 552 machines,
    ~6.6 GB unpacked); the time window is fixed. `seed` (a non-negative int) fixes every byte.
    With `pack` the five files become `trace-data.tar.gz` (members `trace-data/<file>`) and only
    the archive is returned; otherwise the five loose files are. `progress` receives one short
    message per finished file.
    """
    seed = check_scale_and_seed(scale, seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda message: None)
    temps = {name: temp_path_in(out_dir, name) for name in RELEASE_FILES}
    try:
        machines = _build_machines(seed, scale)
        temps["cluster_machine_list"].write_text(_machine_list_text(machines))
        say(f"cluster_machine_list: {len(machines):,} machines")
        jobs, attempts, placement = _build_trace(seed, scale, machines)
        temps["cluster_job_log"].write_bytes(_job_log_text(jobs, attempts, placement, machines).encode())
        say(f"cluster_job_log: {len(jobs):,} jobs, {len(attempts):,} attempts")
        rows = _write_util_logs(seed, machines, attempts, placement, temps)
        for name, count in rows.items():
            say(f"{name}: {count:,} rows")
        if pack:
            archive = out_dir / ARCHIVE_NAME
            pack_tar_gz([(temps[name], f"{ARCHIVE_FOLDER}/{name}") for name in RELEASE_FILES],
                        archive, TAR_MTIME, GZIP_LEVEL)
            say(f"{ARCHIVE_NAME}: {archive.stat().st_size:,} bytes")
            return [archive]
        return publish({name: temps[name] for name in RELEASE_FILES}, out_dir)
    finally:
        for path in temps.values():
            path.unlink(missing_ok=True)
