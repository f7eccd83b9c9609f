"""A SYNTHETIC GPU cluster: Slurm accounting (or Kubernetes pods) and DCGM exporter telemetry that
agree with each other, plus the ground truth (`plan.json`) computed from the generator's own plan.

What is written (`write_synthetic_cluster`), every file labelled SYNTHETIC:

- `sacct.txt` (scheduler `slurm`): `sacct --parsable2` output, `|`-delimited with a header, columns
  `SACCT_COLUMNS`: the fields `ddlx datasets import NAME --preset slurm` reads, plus `NodeList` (a
  Slurm hostlist, `gpu[003-004]`; `None assigned` for a job that never started) and `GresDetail`
  (one entry per node of NodeList, in its order, `;`-separated, each as `sacct --json` gives it in
  `gres_detail` and `scontrol show job -d` prints after `GRES=`: `gpu:a100:4(IDX:0-3)`, indices as
  comma-separated ranges, `gpu:a100:3(IDX:0,2-3)`). Each started job has steps `ID.batch`,
  `ID.extern` and `ID.0` (no User, Partition or GresDetail, as sacct prints steps). Times are wall
  clock in the stated zone (`tz`, sacct prints no zone), ISO `2024-03-01T08:15:02`; the file
  reflects the cluster at the window's end: jobs past it are RUNNING (End `Unknown`), jobs not
  started are PENDING (Start and End `Unknown`), jobs cancelled while pending have Start `None` and
  End the cancel time. The file carries no comment line (the importer reads the header first): its
  `Cluster` column says `synthetic`.
- `pods.csv` (scheduler `kubernetes`): `namespace,pod,node,gpus,start,end,state`, one row per pod
  (a multi-node job is one pod per node, `NAME-worker-R`), times RFC 3339 UTC, pod phases
  Pending / Running / Succeeded / Failed (failed, timed-out and cancelled jobs are Failed; jobs
  cancelled while pending are left out, as Kubernetes deletes them).
- `dcgm.om` (format `openmetrics`): OpenMetrics text in the shape `promtool tsdb dump-openmetrics`
  writes: one sample per line, `METRIC{labels sorted by name} VALUE SECONDS.mmm`, series after
  series (each series' samples in time order, series sorted by their labels within a metric), then
  `# EOF`. Each metric is preceded by `# HELP` (which says SYNTHETIC) and `# TYPE METRIC gauge`.
  Labels as dcgm-exporter sets them: `DCGM_FI_DRIVER_VERSION`, `Hostname`, `UUID`, `device`
  (`nvidiaN`), `gpu`, `modelName`; plus `hpc_job` (the Slurm job id) on samples of GPUs a job holds
  (`job_label=False` leaves it out), or `container`, `namespace`, `pod` on Kubernetes.
  `dcgm.parquet` / `dcgm.csv` (formats `parquet`, `csv`) hold the same samples as a dump: columns
  time (UTC), metric, value, Hostname, gpu, UUID, modelName, pod, namespace, container, hpc_job
  (null or empty where absent).
- `plan.json`: the cluster, the window, the sampling convention, the thresholds and, per job (per
  allocation on a node), user, account, partition and the whole fleet per hour: allocated and
  idle GPU-seconds, and mean activity, accumulated from the values as written (rounded), while they
  are generated, never by reading the files back.

Sampling convention: samples are at `t = window_start + k * step` for `k = 0 .. n-1`,
`n = days * 86400 / step`, on every GPU of the cluster, allocated or not. A sample stands for the
`step` seconds `[t, t + step)`. A sample belongs to a job (and carries its label) when the job
holds the GPU at `t`: `start <= t < end` (`end` = the window's end for a job still running).
Allocated GPU-seconds of a job = `step` x the number of its (GPU, sample) pairs; idle GPU-seconds
= `step` x those whose `gpu_util` is below `IDLE_GPU_UTIL` percent (`idle_gpu_s`), or whose
`sm_active` is below `IDLE_SM_ACTIVE` (`idle_sm_gpu_s`). `alloc_gpu_s_exact` is the accounting
figure: GPUs x the seconds of `[start, end)` within the window; it differs from `alloc_gpu_s` by
less than `step` per GPU because job times are whole seconds, not multiples of `step`.

Values: a job's GPUs are busy or idle in phases shared by all its GPUs (profiles `steady`,
`bursty`, `idle_hold`: long idle stretches, and `one_gpu`: only the first GPU works, the others
hold a CUDA context and stay idle); unallocated GPUs read 0 utilisation, 0 activity, 0 MiB used and
idle power. `gpu_util` is an integer percent, ratios have 4 decimals, memory whole MiB, power 3
decimals (W).

Size: one OpenMetrics line is about 220 bytes, so 200 GPUs x 30 days at `step` 60 with the six
fields is about 52 M lines, 11 GB of text (`estimate_bytes`); the same at 15 s is four times that.
Parquet is about 20 times smaller. The text is written GPU by GPU into one part file per metric,
then joined, so memory stays at a few arrays of one GPU's samples.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import polars as pl

from ddlx.datasets.ingest import SYNTHETIC_MARKER
from ddlx.datasets.telemetry.model import BY_NAME, FIELDS
from ddlx.errors import UsageError

#: The cluster name written in sacct's `Cluster` column (and the SYNTHETIC label of that file).
CLUSTER_NAME = "synthetic"
SYNTHETIC_NOTE = ("SYNTHETIC data generated by ddlx (ddlx datasets synth-cluster): not measured on any real "
                  "cluster")
#: The modelled GPU: DCGM `modelName`, Slurm GRES type, device memory, power limit and idle power.
GPU_MODEL = "NVIDIA A100-SXM4-80GB"
GRES_TYPE = "a100"
MEMORY_MIB = 81920
TDP_W = 400.0
DRIVER_VERSION = "535.129.03"
#: Idle thresholds of the plan: a sample is idle when its value is below these.
IDLE_GPU_UTIL = 5.0
IDLE_SM_ACTIVE = 0.05
#: Columns of sacct.txt, in order.
SACCT_COLUMNS = ("JobID", "JobName", "User", "Account", "Partition", "State", "Submit", "Start", "End",
                 "AllocTRES", "ReqTRES", "Cluster", "NodeList", "GresDetail")
POD_COLUMNS = ("namespace", "pod", "node", "gpus", "start", "end", "state")
DUMP_COLUMNS = ("time", "metric", "value", "Hostname", "gpu", "UUID", "modelName", "pod", "namespace",
                "container", "hpc_job")
FORMATS = ("openmetrics", "parquet", "csv")
SCHEDULERS = ("slurm", "kubernetes")
#: Per-metric HELP text (dcgm-exporter's wording, shortened), each prefixed with SYNTHETIC.
_HELP = {
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
    "DCGM_FI_PROF_SM_ACTIVE": "The ratio of cycles an SM has at least 1 warp assigned.",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "Ratio of cycles the tensor (HMMA) pipe is active.",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "Ratio of time the graphics engine is active.",
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_DEV_POWER_USAGE": "Power draw (in W).",
}
#: Decimals each field is written with (0: an integer).
_DECIMALS = {"gpu_util": 0, "sm_active": 4, "tensor_active": 4, "gr_engine_active": 4, "fb_used_mib": 0,
             "power_w": 3}
#: Partitions: (time limit s, median run s, share of jobs).
_PARTITIONS = {"gpu": (24 * 3600, 3 * 3600, 0.62), "dev": (8 * 3600, 5400, 0.22), "long": (72 * 3600, 10 * 3600, 0.16)}
_ACCOUNTS = ("vision", "nlp", "speech", "rl", "infra")
_NAMES = {"dev": ("jupyter", "interactive", "debug"),
          "gpu": ("train_resnet", "bert_finetune", "llm_sft", "eval_suite", "sweep", "rl_rollout"),
          "long": ("llm_pretrain", "diffusion_train", "bert_pretrain")}
_PROFILES = {"dev": (("idle_hold", 0.65), ("bursty", 0.25), ("steady", 0.10)),
             "gpu": (("steady", 0.55), ("bursty", 0.25), ("idle_hold", 0.08), ("one_gpu", 0.12)),
             "long": (("steady", 0.70), ("bursty", 0.15), ("one_gpu", 0.15))}
#: Busy and idle phase means (s) per profile.
_PHASES = {"steady": (7200, 180), "bursty": (2400, 1500), "idle_hold": (900, 5400), "one_gpu": (7200, 180)}
_OUTCOMES = (("COMPLETED", 0.72), ("FAILED", 0.10), ("CANCELLED", 0.08), ("TIMEOUT", 0.06), ("PENDING_CANCEL", 0.04))


@dataclass(frozen=True)
class ClusterSpec:
    """What to generate. Times: `start` is a date, midnight in `tz` starts the window."""

    gpus: int
    days: int
    gpus_per_node: int = 8
    step: int = 60
    seed: int = 0
    scheduler: str = "slurm"
    start: str = "2024-03-01"
    tz: str = "Europe/Berlin"
    fields: tuple[str, ...] = tuple(FIELDS)
    job_label: bool = True
    format: str = "openmetrics"

    @property
    def nodes(self) -> int:
        return self.gpus // self.gpus_per_node

    @property
    def samples(self) -> int:
        """Samples per GPU and field."""
        return self.days * 86400 // self.step


@dataclass
class Job:
    """One job of the plan; times are Unix seconds (UTC)."""

    id: int
    name: str
    user: str
    uid: int
    account: str
    partition: str
    gpus: int
    submit: int
    time_limit: int
    outcome: str
    run: int
    profile: str
    sm_ratio: float
    tensor_ratio: float
    mem_mib: int
    cancel_at: int | None = None
    start: int | None = None
    end: int | None = None  # planned end (may lie after the window)
    alloc: list[tuple[int, list[int]]] = field(default_factory=list)
    held: bool = False
    bounds: np.ndarray | None = None  # phase starts (Unix s), ascending
    levels: np.ndarray | None = None  # activity level of each phase (0 idle .. 1)


def parse_fields(text: str | None) -> tuple[str, ...]:
    """DCGM metric names from a comma-separated list of metric or short names (None: all six)."""
    if not text:
        return tuple(FIELDS)
    chosen: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        metric = item if item in FIELDS else (BY_NAME[item].metric if item in BY_NAME else None)
        if metric is None:
            raise UsageError(f"--fields: unknown field {item!r}; expected some of "
                             f"{', '.join(BY_NAME)} (or their DCGM names)")
        if metric not in chosen:
            chosen.append(metric)
    return tuple(m for m in FIELDS if m in chosen)


def check_spec(spec: ClusterSpec) -> tuple[ZoneInfo, int]:
    """`UsageError` for options out of range; returns the zone and the window start (Unix s)."""
    def bad(option: str, problem: str) -> UsageError:
        return UsageError(f"{option}: {problem}")

    if not 1 <= spec.gpus_per_node <= 64:
        raise bad("--gpus-per-node", f"{spec.gpus_per_node} is outside 1..64")
    if spec.gpus < spec.gpus_per_node or spec.gpus % spec.gpus_per_node or spec.gpus > 100_000:
        raise bad("--gpus", f"{spec.gpus} must be a multiple of --gpus-per-node ({spec.gpus_per_node}), "
                            "at least one node and at most 100000")
    if not 1 <= spec.days <= 366:
        raise bad("--days", f"{spec.days} is outside 1..366")
    if not 1 <= spec.step <= 3600 or 86400 % spec.step:
        raise bad("--step", f"{spec.step} s must divide a day (86400 s) and lie in 1..3600 (15, 30, 60, 300 ...)")
    if spec.seed < 0:
        raise bad("--seed", "must be 0 or more")
    if spec.scheduler not in SCHEDULERS:
        raise bad("--scheduler", f"{spec.scheduler!r}; expected one of {', '.join(SCHEDULERS)}")
    if spec.format not in FORMATS:
        raise bad("--format", f"{spec.format!r}; expected one of {', '.join(FORMATS)}")
    if not spec.fields or any(m not in FIELDS for m in spec.fields):
        raise bad("--fields", f"expected some of {', '.join(FIELDS)}")
    try:
        zone = ZoneInfo(spec.tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise bad("--tz", f"unknown time zone {spec.tz!r}; expected an IANA name such as Europe/Berlin") from None
    try:
        day = date.fromisoformat(spec.start)
    except ValueError:
        raise bad("--start", f"{spec.start!r} is not a date YYYY-MM-DD") from None
    if not 1980 <= day.year <= 2090:
        raise bad("--start", f"{spec.start} is outside 1980..2090")
    start = int(datetime(day.year, day.month, day.day, tzinfo=zone).timestamp())
    return zone, start


# -- the plan: users, jobs, a scheduler ------------------------------------------------------------


def _hosts(spec: ClusterSpec) -> list[str]:
    width = max(3, len(str(spec.nodes)))
    return [f"gpu{i + 1:0{width}d}" for i in range(spec.nodes)]


def _uuid(seed: int, host: str, gpu: int) -> str:
    digest = hashlib.sha256(f"ddlx-synthetic:{seed}:{host}:{gpu}".encode()).hexdigest()
    return "GPU-" + str(uuid.UUID(digest[:32]))


def hostlist(hosts: Sequence[str]) -> str:
    """A Slurm hostlist expression of hosts named PREFIX + zero-padded number: `gpu[001-003,007]`."""
    if len(hosts) == 1:
        return hosts[0]
    prefix = hosts[0].rstrip("0123456789")
    width = len(hosts[0]) - len(prefix)
    numbers = sorted(int(h[len(prefix):]) for h in hosts)
    return f"{prefix}[{_ranges(numbers, width)}]"


def _ranges(numbers: Sequence[int], width: int = 0) -> str:
    """`0-2,5` from [0, 1, 2, 5] (zero-padded to `width`)."""
    parts: list[str] = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        a, b = f"{numbers[i]:0{width}d}", f"{numbers[j]:0{width}d}"
        parts.append(a if i == j else f"{a}-{b}")
        i = j + 1
    return ",".join(parts)


def gres_detail(gpus: Sequence[int]) -> str:
    """One node's entry: `gpu:a100:4(IDX:0-3)`."""
    return f"gpu:{GRES_TYPE}:{len(gpus)}(IDX:{_ranges(sorted(gpus))})"


def _choice(rng: np.random.Generator, options: Sequence[tuple[str, float]]) -> str:
    weights = np.array([w for _, w in options])
    return options[int(rng.choice(len(options), p=weights / weights.sum()))][0]


def _sizes(spec: ClusterSpec) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts a job asks for, and their weights: 1, 2, 4 ... up to a node, then whole nodes."""
    gpn = spec.gpus_per_node
    small = sorted({min(2 ** k, gpn) for k in range(7)})
    big = [gpn * k for k in (2, 4) if gpn * k <= spec.gpus // 2]
    sizes = np.array(small + big)
    weights = np.array([0.35 / (1.6 ** i) for i in range(len(small))] + [0.06, 0.025][:len(big)])
    return sizes, weights / weights.sum()


def _draw_job(rng: np.random.Generator, spec: ClusterSpec, users: list[dict], job_id: int, submit: int) -> Job:
    user = users[int(rng.choice(len(users), p=np.array([u["weight"] for u in users])))]
    partition = user["partition"] if rng.random() < 0.8 else _choice(
        rng, [(p, v[2]) for p, v in _PARTITIONS.items()])
    limit, median, _ = _PARTITIONS[partition]
    sizes, weights = _sizes(spec)
    gpus = int(rng.choice(sizes, p=weights)) if partition != "dev" else int(rng.choice([1, min(2, spec.gpus_per_node)]))
    planned = int(min(limit, max(300, rng.lognormal(math.log(median), 0.9))))
    outcome = _choice(rng, _OUTCOMES)
    run = planned
    if outcome == "FAILED":
        run = max(60, int(planned * rng.uniform(0.01, 0.6)))
    elif outcome == "CANCELLED":
        run = max(60, int(planned * rng.uniform(0.05, 0.9)))
    elif outcome == "TIMEOUT":
        run = limit
    profile = _choice(rng, _PROFILES[partition])
    if profile == "one_gpu" and gpus == 1:
        profile = "steady"
    name = str(rng.choice(_NAMES[partition]))
    job = Job(id=job_id, name=name, user=user["name"], uid=user["uid"], account=user["account"],
              partition=partition, gpus=gpus, submit=submit, time_limit=limit, outcome=outcome, run=run,
              profile=profile, sm_ratio=float(rng.uniform(0.55, 0.95)), tensor_ratio=float(rng.uniform(0.05, 0.65)),
              mem_mib=int(rng.uniform(0.1, 0.95) * MEMORY_MIB))
    if outcome == "PENDING_CANCEL":
        job.cancel_at = submit + int(rng.uniform(300, 4 * 3600))
    return job


def _phases(rng: np.random.Generator, job: Job) -> None:
    """The job's activity phases over [start, start + run): a short low-activity start, then busy
    and idle phases with the profile's mean lengths."""
    assert job.start is not None
    busy_mean, idle_mean = _PHASES[job.profile]
    t = job.start
    end = job.start + job.run
    bounds = [t]
    levels = [float(rng.uniform(0.02, 0.15))]
    t += int(rng.uniform(60, 600))
    busy = job.profile != "idle_hold"
    while t < end:
        bounds.append(t)
        if busy:
            levels.append(float(rng.uniform(0.55, 0.98)))
            t += max(60, int(rng.exponential(busy_mean)))
        else:
            levels.append(0.0)
            t += max(60, int(rng.exponential(idle_mean)))
        busy = not busy
    job.bounds = np.array(bounds, dtype=np.int64)
    job.levels = np.array(levels)


def plan_jobs(spec: ClusterSpec, window_start: int) -> list[Job]:
    """The jobs of the accounting: drawn, scheduled first-fit (best-fitting node, lowest free
    indices; multi-node jobs on whole free nodes; a queue scanned in submission order with
    backfill), from two days before the window to its end. Returns the jobs sacct lists for the
    window (running at or after its start, or submitted in it), with their state at its end."""
    rng = np.random.default_rng([spec.seed, 1])
    w0, w1 = window_start, window_start + spec.samples * spec.step
    n_users = max(6, min(60, spec.gpus // 10))
    raw = rng.zipf(1.6, n_users).astype(float)
    users = [{"name": f"user{i + 1:02d}", "uid": 1001 + i, "account": _ACCOUNTS[i % len(_ACCOUNTS)],
              "partition": _choice(rng, [(p, v[2]) for p, v in _PARTITIONS.items()]),
              "weight": 1.0 / (1 + i) ** 0.7 + raw[i] * 0.01} for i in range(n_users)]
    total = sum(u["weight"] for u in users)
    for u in users:
        u["weight"] /= total
    # the arrival rate for a target offered load of 0.85 of the GPUs
    probe = [_draw_job(np.random.default_rng([spec.seed, 2, i]), spec, users, 0, 0) for i in range(400)]
    mean_work = float(np.mean([j.gpus * j.run for j in probe]))
    rate = 0.85 * spec.gpus / mean_work  # jobs per second
    sim_start = w0 - 2 * 86400
    jobs: list[Job] = []
    t = float(sim_start)
    next_id = 100001
    # submissions follow the local day: the rate is scaled by 0.55 + 0.45 sin^2(pi (hour - 6) / 12)
    # (mean 0.775, highest at noon), drawn by thinning a Poisson process
    while True:
        t += rng.exponential(0.775 / rate)
        if t >= w1:
            break
        hour = (t - w0) / 3600.0 % 24.0
        if rng.random() > 0.55 + 0.45 * math.sin(math.pi * (hour - 6) / 12) ** 2:
            continue
        jobs.append(_draw_job(rng, spec, users, next_id, int(t)))
        next_id += 1
    # a few jobs held by their users: submitted in the window, never eligible
    for _ in range(max(2, spec.gpus // 100)):
        submit = int(rng.uniform(w0, w1))
        held = _draw_job(rng, spec, users, 0, submit)
        held.held, held.outcome, held.cancel_at = True, "PENDING", None
        jobs.append(held)
    jobs.sort(key=lambda j: (j.submit, j.held))
    for i, job in enumerate(jobs):
        job.id = 100001 + i
    _schedule(spec, jobs, w1)
    for job in jobs:
        if job.start is not None:
            _phases(np.random.default_rng([spec.seed, 3, job.id]), job)
    return [j for j in jobs if _listed(j, w0)]


def _listed(job: Job, w0: int) -> bool:
    if job.start is not None:
        return job.end is not None and job.end > w0
    if job.cancel_at is not None:
        return job.cancel_at > w0
    return True


def _schedule(spec: ClusterSpec, jobs: list[Job], w1: int) -> None:
    gpn = spec.gpus_per_node
    free = np.ones((spec.nodes, gpn), dtype=bool)
    running: list[tuple[int, int, Job]] = []
    queue: list[Job] = []
    # held jobs and jobs their users cancel while pending never enter the queue
    arrivals = [j for j in jobs if not j.held and j.outcome != "PENDING_CANCEL"]
    ai = 0
    while True:
        candidates = [arrivals[ai].submit] if ai < len(arrivals) else []
        if running:
            candidates.append(running[0][0])
        if not candidates:
            break
        now = min(candidates)
        if now >= w1:
            break
        while running and running[0][0] <= now:
            _, _, done = heapq.heappop(running)
            for node, idx in done.alloc:
                free[node, idx] = True
        while ai < len(arrivals) and arrivals[ai].submit <= now:
            queue.append(arrivals[ai])
            ai += 1
        started = []
        for job in queue[:64]:
            alloc = _place(free, job.gpus, gpn)
            if alloc is None:
                continue
            for node, idx in alloc:
                free[node, idx] = False
            job.alloc, job.start, job.end = alloc, now, now + job.run
            heapq.heappush(running, (job.end, job.id, job))
            started.append(job)
        if started:
            queue = [j for j in queue if j.start is None]


def _place(free: np.ndarray, gpus: int, gpn: int) -> list[tuple[int, list[int]]] | None:
    counts = free.sum(axis=1)
    if gpus <= gpn:
        fits = np.flatnonzero(counts >= gpus)
        if not fits.size:
            return None
        node = int(fits[np.argmin(counts[fits])])
        return [(node, [int(i) for i in np.flatnonzero(free[node])[:gpus]])]
    whole = np.flatnonzero(counts == gpn)
    need = gpus // gpn
    if whole.size < need:
        return None
    return [(int(n), list(range(gpn))) for n in whole[:need]]


def state_at_end(job: Job, w1: int) -> tuple[str, int | None, int | None, int | None]:
    """(sacct State, Start, End, cancel time) as the accounting shows them at the window's end `w1`."""
    if job.start is None:
        if job.cancel_at is not None and job.cancel_at <= w1:
            return f"CANCELLED by {job.uid}", None, job.cancel_at, job.cancel_at
        return "PENDING", None, None, None
    assert job.end is not None
    if job.end > w1:
        return "RUNNING", job.start, None, None
    word = {"CANCELLED": f"CANCELLED by {job.uid}"}.get(job.outcome, job.outcome)
    return word, job.start, job.end, None


# -- telemetry values -------------------------------------------------------------------------------


@dataclass
class _Segment:
    job: Job
    rank: int  # position of the node in the job's allocation
    host: str
    i0: int
    i1: int


def _gpu_values(spec: ClusterSpec, gpu_key: int, times: np.ndarray, segments: list[_Segment]) -> dict[str, np.ndarray]:
    """The six fields' values of one GPU at `times`, rounded as written."""
    n = times.size
    rng = np.random.default_rng([spec.seed, 4, gpu_key])
    level = np.zeros(n)
    alloc = np.zeros(n, dtype=bool)
    sm_ratio = np.zeros(n)
    tensor_ratio = np.zeros(n)
    mem = np.zeros(n)
    for seg in segments:
        job = seg.job
        sl = slice(seg.i0, seg.i1)
        alloc[sl] = True
        first_gpu = seg.rank == 0 and gpu_key % spec.gpus_per_node == job.alloc[0][1][0]
        used = job.profile != "one_gpu" or first_gpu
        if used:
            assert job.bounds is not None and job.levels is not None
            phase = np.searchsorted(job.bounds, times[sl], side="right") - 1
            level[sl] = job.levels[np.clip(phase, 0, None)]
            mem[sl] = job.mem_mib
        else:
            mem[sl] = 420 + (job.id % 7) * 12  # a CUDA context on a GPU the code never uses
        sm_ratio[sl] = job.sm_ratio
        tensor_ratio[sl] = job.tensor_ratio
    noise = rng.normal(0.0, 1.0, size=(5, n))
    util = np.clip(np.rint(100.0 * level * (1.0 + 0.06 * noise[0])), 0, 100)
    blips = alloc & (level == 0) & (rng.random(n) < 0.03)  # a monitoring poll wakes an idle GPU
    util = np.where(blips, rng.integers(1, 4, n), util)
    util = np.where(alloc, util, 0.0)
    frac = util / 100.0
    sm = np.round(np.clip(frac * sm_ratio * (1.0 + 0.05 * noise[1]), 0.0, 1.0), 4)
    tensor = np.round(np.clip(sm * tensor_ratio * (1.0 + 0.08 * noise[2]), 0.0, 1.0), 4)
    gr = np.round(np.clip(np.maximum(sm, frac * (0.97 + 0.03 * np.abs(noise[3]) / 3)), 0.0, 1.0), 4)
    fb = np.where(alloc, np.clip(np.rint(mem * (1.0 + 0.004 * noise[4])), 0, MEMORY_MIB), 0.0)
    idle_w = 52.0 + (gpu_key * 7919 % 11)
    power = idle_w + np.where(alloc, 4.0 + (TDP_W - idle_w - 4.0) * (0.25 * frac + 0.75 * sm), 0.0)
    power = np.round(power * (1.0 + 0.01 * noise[0]), 3)
    return {"gpu_util": util.astype(float), "sm_active": sm, "tensor_active": tensor, "gr_engine_active": gr,
            "fb_used_mib": fb.astype(float), "power_w": power}


# -- writing ---------------------------------------------------------------------------------------


def _iso_utc(t: int | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def _local(t: int | None, zone: ZoneInfo, missing: str = "Unknown") -> str:
    return missing if t is None else datetime.fromtimestamp(t, zone).strftime("%Y-%m-%dT%H:%M:%S")


def _tres(job: Job, gpus_per_node: int) -> str:
    """The job's TRES string (8 cores and 64 GiB per GPU; nodes = GPUs / GPUs per node, rounded up)."""
    cpus = job.gpus * 8
    return (f"billing={cpus},cpu={cpus},gres/gpu:{GRES_TYPE}={job.gpus},gres/gpu={job.gpus},"
            f"mem={job.gpus * 64}G,node={-(-job.gpus // gpus_per_node)}")


def _sacct_rows(jobs: list[Job], hosts: list[str], zone: ZoneInfo, w1: int, gpn: int) -> list[str]:
    rows = ["|".join(SACCT_COLUMNS)]
    for job in jobs:
        state, start, end, _ = state_at_end(job, w1)
        started = start is not None
        nodes = [hosts[n] for n, _ in job.alloc]
        node_list = hostlist(nodes) if started else "None assigned"
        detail = ";".join(gres_detail(idx) for _, idx in job.alloc) if started else ""
        tres = _tres(job, gpn)
        submit = _local(job.submit, zone)
        start_text = _local(start, zone, "None" if end is not None else "Unknown")
        rows.append("|".join([str(job.id), job.name, job.user, job.account, job.partition, state, submit,
                              start_text, _local(end, zone), tres if started else "", tres, CLUSTER_NAME,
                              node_list, detail]))
        if not started:
            continue
        step_state = {"TIMEOUT": "CANCELLED", "FAILED": "FAILED"}.get(state, state.split()[0])
        batch_state = "CANCELLED" if state.startswith("CANCELLED") else step_state
        cpus = job.gpus * 8
        first = nodes[0]
        for suffix, name, st, step_tres, nl in (
                ("batch", "batch", batch_state, f"cpu={cpus // len(nodes)},mem={job.gpus * 64 // len(nodes)}G,node=1",
                 first),
                ("extern", "extern", "COMPLETED" if state != "RUNNING" else "RUNNING", tres, node_list),
                ("0", "python", step_state, tres, node_list)):
            rows.append("|".join([f"{job.id}.{suffix}", name, "", job.account, "", st, _local(start, zone),
                                  _local(start, zone), _local(end, zone), step_tres, "", CLUSTER_NAME, nl, ""]))
    return rows


def _pod_names(job: Job) -> list[str]:
    base = f"{job.name.replace('_', '-')}-{job.id}"
    if len(job.alloc) <= 1:
        return [base]
    return [f"{base}-worker-{r}" for r in range(len(job.alloc))]


def _pod_rows(jobs: list[Job], hosts: list[str], w1: int) -> pl.DataFrame:
    rows = []
    for job in jobs:
        state, start, end, cancel = state_at_end(job, w1)
        if cancel is not None:
            continue  # deleted while pending
        phase = {"RUNNING": "Running", "PENDING": "Pending", "COMPLETED": "Succeeded"}.get(state, "Failed")
        if start is None:
            rows.append((job.account, _pod_names(job)[0], None, job.gpus, None, None, phase))
            continue
        for (node, idx), pod in zip(job.alloc, _pod_names(job)):
            rows.append((job.account, pod, hosts[node], len(idx), _iso_utc(start), _iso_utc(end), phase))
    return pl.DataFrame(rows, schema={"namespace": pl.String, "pod": pl.String, "node": pl.String,
                                      "gpus": pl.Int64, "start": pl.String, "end": pl.String, "state": pl.String},
                        orient="row")


def _container(job: Job) -> str:
    return "notebook" if job.partition == "dev" else "trainer"


def _labels(base: dict[str, str], extra: dict[str, str]) -> str:
    labels = {**base, **extra}
    return "{" + ",".join(f'{k}="{labels[k]}"' for k in sorted(labels)) + "}"


def estimate_bytes(spec: ClusterSpec) -> int:
    """About how many bytes the telemetry file will take (OpenMetrics: ~200 bytes a line)."""
    per = {"openmetrics": 220, "csv": 150, "parquet": 10}[spec.format]
    return spec.gpus * spec.samples * len(spec.fields) * per


class _Accumulator:
    """Per (job, node) sums of the plan, and the fleet's hourly sums (in samples)."""

    def __init__(self, hours: int):
        self.by_alloc: dict[tuple[int, int], dict[str, float]] = {}
        self.hour_alloc = np.zeros(hours, dtype=np.int64)
        self.hour_idle = np.zeros(hours, dtype=np.int64)
        self.hour_idle_sm = np.zeros(hours, dtype=np.int64)

    def add(self, seg: _Segment, values: dict[str, np.ndarray], hour: np.ndarray) -> None:
        sl = slice(seg.i0, seg.i1)
        util, sm = values["gpu_util"][sl], values["sm_active"][sl]
        sums = self.by_alloc.setdefault((seg.job.id, seg.rank), dict.fromkeys(
            ("samples", "idle", "idle_sm", "sm", "tensor", "fb", "util"), 0.0))
        sums["samples"] += util.size
        sums["idle"] += int(np.count_nonzero(util < IDLE_GPU_UTIL))
        sums["idle_sm"] += int(np.count_nonzero(sm < IDLE_SM_ACTIVE))
        sums["sm"] += float(sm.sum())
        sums["tensor"] += float(values["tensor_active"][sl].sum())
        sums["fb"] += float(values["fb_used_mib"][sl].sum())
        sums["util"] += float(util.sum())
        h = hour[sl]
        self.hour_alloc += np.bincount(h, minlength=self.hour_alloc.size)
        self.hour_idle += np.bincount(h[util < IDLE_GPU_UTIL], minlength=self.hour_alloc.size)
        self.hour_idle_sm += np.bincount(h[sm < IDLE_SM_ACTIVE], minlength=self.hour_alloc.size)


def write_synthetic_cluster(spec: ClusterSpec, out: Path,
                            progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Write the SYNTHETIC cluster of `spec` into the folder `out` (created if missing; only the
    files named here are replaced, each through a temporary file renamed when all are done).
    Returns the written files by name."""
    say = progress or (lambda message: None)
    zone, w0 = check_spec(spec)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    need = estimate_bytes(spec)
    free_bytes = shutil.disk_usage(out).free
    if need * 1.1 > free_bytes:
        raise UsageError(f"--out: the telemetry would take about {need / 1e9:.1f} GB but {out} has "
                         f"{free_bytes / 1e9:.1f} GB free; use a larger --step, fewer --fields, fewer --days or "
                         "--format parquet")
    n, step = spec.samples, spec.step
    say(f"SYNTHETIC cluster: {spec.gpus} GPUs on {spec.nodes} nodes, {spec.days} days from "
        f"{_iso_utc(w0)}, a sample every {step} s: {spec.gpus * n * len(spec.fields):,} samples "
        f"(about {need / 1e9:.2f} GB as {spec.format})")
    hosts = _hosts(spec)
    jobs = plan_jobs(spec, w0)
    say(f"planned {len(jobs):,} jobs")
    staging = out / f".synth-cluster.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        written = _write_all(spec, zone, w0, hosts, jobs, staging, say)
        final: dict[str, Path] = {}
        for name, path in written.items():
            target = out / name
            os.replace(path, target)
            final[name] = target
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_all(spec: ClusterSpec, zone: ZoneInfo, w0: int, hosts: list[str], jobs: list[Job], staging: Path,
               say: Callable[[str], None]) -> dict[str, Path]:
    n, step, gpn = spec.samples, spec.step, spec.gpus_per_node
    w1 = w0 + n * step
    kube = spec.scheduler == "kubernetes"
    written: dict[str, Path] = {}
    if kube:
        path = staging / "pods.csv"
        _pod_rows(jobs, hosts, w1).write_csv(path)
        written["pods.csv"] = path
    else:
        path = staging / "sacct.txt"
        path.write_text("\n".join(_sacct_rows(jobs, hosts, zone, w1, gpn)) + "\n", encoding="utf-8")
        written["sacct.txt"] = path
    # the segments of every GPU: [i0, i1) sample indices where start <= t < end
    per_gpu: dict[int, list[_Segment]] = {}
    for job in jobs:
        if job.start is None:
            continue
        end = min(job.end if job.end is not None else w1, w1)
        i0 = min(n, max(0, -((w0 - job.start) // step)))
        i1 = min(n, max(0, -((w0 - end) // step)))
        for rank, (node, idx) in enumerate(job.alloc):
            for g in idx:
                per_gpu.setdefault(node * gpn + g, []).append(_Segment(job, rank, hosts[node], i0, i1))
    times = w0 + step * np.arange(n, dtype=np.int64)
    hour = ((times - w0) // 3600).astype(np.int64)
    acc = _Accumulator(int(hour[-1]) + 1)
    gpus = [(hosts[k // gpn], _uuid(spec.seed, hosts[k // gpn], k % gpn), k) for k in range(spec.gpus)]
    gpus.sort()  # promtool's series order: by Hostname, then UUID
    metrics = list(spec.fields)
    writer = _TelemetryWriter(spec, staging, metrics, times)
    try:
        for number, (host, gpu_uuid, key) in enumerate(gpus):
            segments = [s for s in sorted(per_gpu.get(key, []), key=lambda s: s.i0) if s.i1 > s.i0]
            values = _gpu_values(spec, key, times, segments)
            for seg in segments:
                acc.add(seg, values, hour)
            writer.add_gpu(host, key % gpn, gpu_uuid, segments, values)
            if number % 50 == 49:
                say(f"  {number + 1}/{spec.gpus} GPUs written")
        written.update(writer.finish())
    finally:
        writer.close()
    plan = _plan(spec, zone, w0, hosts, jobs, acc)
    (staging / "plan.json").write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
    written["plan.json"] = staging / "plan.json"
    (staging / "SYNTHETIC.txt").write_text(_readme(spec, written), encoding="utf-8")
    written["SYNTHETIC.txt"] = staging / "SYNTHETIC.txt"
    # The marker ingest and import read beside their input: what is read from this folder is SYNTHETIC.
    (staging / SYNTHETIC_MARKER).write_text(json.dumps(synthetic_marker(spec), indent=2) + "\n", encoding="utf-8")
    written[SYNTHETIC_MARKER] = staging / SYNTHETIC_MARKER
    return written


def synthetic_marker(spec: ClusterSpec) -> dict[str, object]:
    """The content of the SYNTHETIC marker the generator writes beside its files."""
    from ddlx import __version__

    return {"synthetic": True, "generator": f"{__name__} (ddlx {__version__})", "trace_format": "slurm+dcgm",
            "gpus": spec.gpus, "days": spec.days, "step_s": spec.step, "seed": spec.seed,
            "note": "Generated by ddlx: a SYNTHETIC cluster's accounting and GPU telemetry, not real cluster data."}


class _TelemetryWriter:
    """Streams the samples GPU by GPU: OpenMetrics into one part file per metric (joined at the
    end, so each metric is one block as the format requires), or a CSV/Parquet dump."""

    def __init__(self, spec: ClusterSpec, staging: Path, metrics: list[str], times: np.ndarray):
        self.spec, self.staging, self.metrics = spec, staging, metrics
        self.kube = spec.scheduler == "kubernetes"
        self.ts_text = pl.Series(times).cast(pl.String) + ".000"
        self.times = pl.Series("time", times * 1_000_000).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        self.parts: dict[str, object] = {}
        self.parquet = None
        self.csv_handle = None
        if spec.format == "openmetrics":
            self.parts = {m: open(staging / f"part-{m}.om", "wb") for m in metrics}
        elif spec.format == "parquet":
            import pyarrow.parquet as pq

            self.parquet_path = staging / "dcgm.parquet"
            self.parquet = pq.ParquetWriter(self.parquet_path, self._arrow_schema(), compression="zstd")
        else:
            self.csv_path = staging / "dcgm.csv"
            self.csv_handle = open(self.csv_path, "wb")
            self.csv_header = True

    def _arrow_schema(self):
        import pyarrow as pa

        fields = [pa.field("time", pa.timestamp("us", tz="UTC")), pa.field("metric", pa.string()),
                  pa.field("value", pa.float64())] + [pa.field(c, pa.string()) for c in DUMP_COLUMNS[3:]]
        return pa.schema(fields, metadata={b"ddlx.synthetic": SYNTHETIC_NOTE.encode()})

    def _set_labels(self, seg: _Segment | None) -> dict[str, str]:
        if seg is None:
            return {}
        if self.kube:
            pods = _pod_names(seg.job)
            return {"pod": pods[seg.rank], "namespace": seg.job.account, "container": _container(seg.job)}
        return {"hpc_job": str(seg.job.id)} if self.spec.job_label else {}

    def add_gpu(self, host: str, index: int, gpu_uuid: str, segments: list[_Segment],
                values: dict[str, np.ndarray]) -> None:
        n = self.times.len()
        set_id = np.zeros(n, dtype=np.int64)
        extras: list[dict[str, str]] = [{}]
        for k, seg in enumerate(segments, start=1):
            set_id[seg.i0:seg.i1] = k
            extras.append(self._set_labels(seg))
        if self.spec.format == "openmetrics":
            self._om(host, index, gpu_uuid, set_id, extras, values)
        else:
            self._dump(host, index, gpu_uuid, set_id, extras, values)

    def _om(self, host: str, index: int, gpu_uuid: str, set_id: np.ndarray, extras: list[dict[str, str]],
            values: dict[str, np.ndarray]) -> None:
        base = {"DCGM_FI_DRIVER_VERSION": DRIVER_VERSION, "Hostname": host, "UUID": gpu_uuid,
                "device": f"nvidia{index}", "gpu": str(index), "modelName": GPU_MODEL}
        bodies = [_labels(base, extra) for extra in extras]
        distinct = sorted(set(bodies))
        rank = np.array([distinct.index(b) for b in bodies], dtype=np.int64)[set_id]
        order = np.argsort(rank, kind="stable")
        body_col = pl.Series(distinct).gather(pl.Series(rank[order]))
        ts = self.ts_text.gather(pl.Series(order))
        for metric in self.metrics:
            name = FIELDS[metric].name
            column = pl.Series(values[name][order])
            text = column.cast(pl.Int64).cast(pl.String) if _DECIMALS[name] == 0 else \
                column.cast(pl.String).str.strip_suffix(".0")
            frame = pl.DataFrame({"b": body_col, "v": text, "t": ts}).select(
                pl.concat_str([pl.lit(metric), pl.col("b"), pl.lit(" "), pl.col("v"), pl.lit(" "), pl.col("t")]))
            frame.write_csv(self.parts[metric], include_header=False, quote_style="never")  # type: ignore[arg-type]

    def _dump(self, host: str, index: int, gpu_uuid: str, set_id: np.ndarray, extras: list[dict[str, str]],
              values: dict[str, np.ndarray]) -> None:
        n = set_id.size
        labels = {c: pl.Series(c, [e.get(c) for e in extras], pl.String).gather(pl.Series(set_id))
                  for c in ("pod", "namespace", "container", "hpc_job")}
        frames = []
        for metric in self.metrics:
            frames.append(pl.DataFrame({
                "time": self.times, "metric": pl.repeat(metric, n, eager=True, dtype=pl.String),
                "value": values[FIELDS[metric].name], "Hostname": pl.repeat(host, n, eager=True, dtype=pl.String),
                "gpu": pl.repeat(str(index), n, eager=True, dtype=pl.String),
                "UUID": pl.repeat(gpu_uuid, n, eager=True, dtype=pl.String),
                "modelName": pl.repeat(GPU_MODEL, n, eager=True, dtype=pl.String), **labels}))
        frame = pl.concat(frames)
        if self.parquet is not None:
            self.parquet.write_table(frame.to_arrow().cast(self._arrow_schema()))
        else:
            frame.write_csv(self.csv_handle, include_header=self.csv_header)  # type: ignore[arg-type]
            self.csv_header = False

    def finish(self) -> dict[str, Path]:
        if self.spec.format == "openmetrics":
            for handle in self.parts.values():
                handle.close()  # type: ignore[attr-defined]
            path = self.staging / "dcgm.om"
            with open(path, "wb") as target:
                for metric in self.metrics:
                    target.write(f"# HELP {metric} {SYNTHETIC_NOTE}. {_HELP[metric]}\n"
                                 f"# TYPE {metric} gauge\n".encode())
                    with open(self.staging / f"part-{metric}.om", "rb") as part:
                        shutil.copyfileobj(part, target, 8 << 20)
                    os.unlink(self.staging / f"part-{metric}.om")
                target.write(b"# EOF\n")
            self.parts = {}
            return {"dcgm.om": path}
        if self.parquet is not None:
            self.parquet.close()
            self.parquet = None
            return {"dcgm.parquet": self.parquet_path}
        assert self.csv_handle is not None
        self.csv_handle.close()
        self.csv_handle = None
        return {"dcgm.csv": self.csv_path}

    def close(self) -> None:
        for handle in self.parts.values():
            handle.close()  # type: ignore[attr-defined]
        if self.parquet is not None:
            self.parquet.close()
        if self.csv_handle is not None:
            self.csv_handle.close()


# -- the plan ---------------------------------------------------------------------------------------


def _plan(spec: ClusterSpec, zone: ZoneInfo, w0: int, hosts: list[str], jobs: list[Job], acc: _Accumulator) -> dict:
    n, step = spec.samples, spec.step
    w1 = w0 + n * step
    kube = spec.scheduler == "kubernetes"
    job_rows = []
    groups: dict[str, dict[str, dict[str, float]]] = {"by_user": {}, "by_account": {}, "by_partition": {}}
    for job in jobs:
        state, start, end, _ = state_at_end(job, w1)
        allocations = []
        totals = dict.fromkeys(("samples", "idle", "idle_sm", "sm", "tensor", "fb", "util"), 0.0)
        pods = _pod_names(job)
        for rank, (node, idx) in enumerate(job.alloc):
            sums = acc.by_alloc.get((job.id, rank), dict.fromkeys(totals, 0.0))
            for key in totals:
                totals[key] += sums[key]
            entry = {"host": hosts[node], "gpus": idx, "alloc_gpu_s": int(sums["samples"]) * step,
                     "idle_gpu_s": int(sums["idle"]) * step, "idle_sm_gpu_s": int(sums["idle_sm"]) * step}
            if kube:
                entry.update({"pod": pods[rank], "namespace": job.account, "container": _container(job)})
            allocations.append(entry)
        exact = 0
        if start is not None:
            lo, hi = max(start, w0), min(end if end is not None else w1, w1)
            exact = max(0, hi - lo) * job.gpus
        samples = totals["samples"]
        row = {
            "job_id": str(job.id), "name": job.name, "user": job.user, "account": job.account,
            "partition": job.partition, "state": state, "profile": job.profile, "gpus": job.gpus,
            "submit": _iso_utc(job.submit), "start": _iso_utc(start), "end": _iso_utc(end),
            "submit_local": _local(job.submit, zone), "allocations": allocations,
            "alloc_gpu_s": int(samples) * step, "alloc_gpu_s_exact": exact,
            "idle_gpu_s": int(totals["idle"]) * step, "idle_sm_gpu_s": int(totals["idle_sm"]) * step,
            "mean_gpu_util": totals["util"] / samples if samples else None,
            "mean_sm_active": totals["sm"] / samples if samples else None,
            "mean_tensor_active": totals["tensor"] / samples if samples else None,
            "mean_fb_used_mib": totals["fb"] / samples if samples else None,
        }
        if kube:
            row["pods"] = [a["pod"] for a in allocations] or [pods[0]]
            row["namespace"] = job.account
        job_rows.append(row)
        for group, key in (("by_user", job.user), ("by_account", job.account), ("by_partition", job.partition)):
            g = groups[group].setdefault(key, {"jobs": 0, "alloc_gpu_s": 0, "idle_gpu_s": 0, "idle_sm_gpu_s": 0})
            g["jobs"] += 1
            for k in ("alloc_gpu_s", "idle_gpu_s", "idle_sm_gpu_s"):
                g[k] += row[k]
    hourly = [{"hour": _iso_utc(w0 + h * 3600), "alloc_gpu_s": int(acc.hour_alloc[h]) * step,
               "idle_alloc_gpu_s": int(acc.hour_idle[h]) * step, "idle_sm_alloc_gpu_s": int(acc.hour_idle_sm[h]) * step}
              for h in range(acc.hour_alloc.size)]
    return {
        "synthetic": True,
        "note": SYNTHETIC_NOTE,
        "options": {"gpus": spec.gpus, "days": spec.days, "gpus_per_node": spec.gpus_per_node, "step": spec.step,
                    "seed": spec.seed, "scheduler": spec.scheduler, "start": spec.start, "tz": spec.tz,
                    "fields": list(spec.fields), "job_label": spec.job_label, "format": spec.format},
        "cluster": {"name": CLUSTER_NAME, "gpus": spec.gpus, "gpus_per_node": spec.gpus_per_node, "hosts": hosts,
                    "gpu_model": GPU_MODEL, "gres_type": GRES_TYPE, "memory_mib": MEMORY_MIB,
                    "driver_version": DRIVER_VERSION, "tz": spec.tz,
                    "uuids": {f"{hosts[k // spec.gpus_per_node]}/{k % spec.gpus_per_node}":
                              _uuid(spec.seed, hosts[k // spec.gpus_per_node], k % spec.gpus_per_node)
                              for k in range(spec.gpus)}},
        "window": {"start": _iso_utc(w0), "end": _iso_utc(w1), "start_local": _local(w0, zone), "step_s": step,
                   "samples_per_gpu": n},
        "sampling": ("samples at t = window.start + k * step_s, k = 0 .. samples_per_gpu - 1, on every GPU; a sample "
                     "stands for the step_s seconds [t, t + step_s); it is a job's (and carries its label) when "
                     "start <= t < end, end being the window's end for a running job; alloc_gpu_s = step_s x the "
                     "job's (GPU, sample) pairs; alloc_gpu_s_exact = GPUs x seconds of [start, end) in the window"),
        "thresholds": {"idle_gpu_s": {"field": "gpu_util", "metric": "DCGM_FI_DEV_GPU_UTIL", "below": IDLE_GPU_UTIL,
                                      "unit": "percent"},
                       "idle_sm_gpu_s": {"field": "sm_active", "metric": "DCGM_FI_PROF_SM_ACTIVE",
                                         "below": IDLE_SM_ACTIVE, "unit": "ratio 0-1"}},
        "definitions": {
            "alloc_gpu_s": "step_s x number of samples of the job's GPUs taken while it held them, in the window",
            "idle_gpu_s": "step_s x those samples whose gpu_util is below the threshold",
            "idle_sm_gpu_s": "step_s x those samples whose sm_active is below the threshold",
            "mean_*": "mean of the field over the job's samples (values as written)",
            "hourly": "hours counted from window.start; sums over all jobs' samples in the hour",
            "state": "the sacct State at the window's end",
        },
        "jobs": job_rows,
        **groups,
        "fleet": {"total_gpu_s": spec.gpus * n * step, "alloc_gpu_s": int(acc.hour_alloc.sum()) * step,
                  "idle_alloc_gpu_s": int(acc.hour_idle.sum()) * step,
                  "idle_sm_alloc_gpu_s": int(acc.hour_idle_sm.sum()) * step, "hourly": hourly},
    }


def _readme(spec: ClusterSpec, written: dict[str, Path]) -> str:
    names = ", ".join(sorted(written))
    return (f"{SYNTHETIC_NOTE}.\n\n"
            f"Files: {names}, SYNTHETIC.txt.\n"
            f"Options: --gpus {spec.gpus} --days {spec.days} --gpus-per-node {spec.gpus_per_node} --step {spec.step} "
            f"--seed {spec.seed} --scheduler {spec.scheduler} --start {spec.start} --tz {spec.tz} "
            f"--format {spec.format}\n"
            "plan.json holds the ground truth (jobs, GPUs, allocated and idle GPU-seconds) and the sampling "
            "convention. sacct.txt times are wall clock in the zone above; import it with\n"
            f"  ddlx datasets import NAME --from sacct.txt --preset slurm --tz {spec.tz}\n")
