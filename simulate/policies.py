"""Scheduling policies: the order in which waiting jobs are offered GPUs, and whether running jobs
can be preempted.

Every policy orders jobs by a key and breaks ties between equal keys by the chosen tie-break
(`TIE_BREAKS`), so schedules are deterministic:

- `submit` (the default): submission order, that is submission time, then job id as text
  (jobs without an id last), then the trace's row order;
- `job-id`: the job id, compared as whole numbers when every simulated job's id is a decimal
  number (so "9" comes before "10") and as text otherwise, jobs without an id last; equal ids
  then in submission order. This is the order of the release simulator of Alibaba's GPU trace (Alibaba
  clusterdata, `cluster-trace-gpu-v2020/simulator/`), which sorts its pending jobs by
  `(duration, job_id)` for SJF and `(submit_time, job_id)` for FIFO, its loader having turned
  every all-digit field into an integer.

The policies:

- `fifo`: submission time. Non-preemptive.
- `sjf-oracle`: shortest true run time (`run_s`) first. Non-preemptive.
- `sjf-predicted`: shortest predicted run time first (the workload's `estimate_s`). Non-preemptive.
- `las`: least attained service, discretised as in Tiresias: a job's attained service is GPUs x
  seconds it has run; queue k holds jobs whose attained service lies in [T(k-1), T(k)) of the
  thresholds (`LAS_THRESHOLDS_GPU_S` by default); a lower queue always goes first. Preemptive: a
  waiting job may take the GPUs of running jobs of lower-priority queues (see `engine`). Its
  settings (`las_policy`): when a running job moves to the next queue (`LAS_DEMOTIONS`), how a
  queue orders its jobs (`LAS_QUEUE_ORDERS`), how a scheduling pass preempts (`LAS_PREEMPTIONS`),
  and `stale_ends`, which reproduces a defect of Tiresias' simulator (`LAS_STALE_ENDS`).
  `TIRESIAS_LAS` are those of Tiresias' simulator (`SymbioticLab/Tiresias`,
  `simulator/run_sim.py`, `dlas_sim_jobs` under the schedule `dlas-gpu`).
- `srtf`: shortest remaining time first, preemptive: the remaining time of a job is its true run
  time (`run_s`, the duration `sjf-oracle` orders by) minus the seconds it has run so far; at every
  submission and every end, the jobs with the least remaining time run first and may preempt
  running ones (see `engine`). No preemption cost: a preempted job later resumes where it stopped.
- `srtf-predicted`: as `srtf`, with the predicted run time (`estimate_s`, the duration
  `sjf-predicted` orders by) minus the seconds run, floored at 0 (a job that outran its estimate
  has 0 s left by the estimate; its true run time still decides when it ends).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ddlx.errors import UsageError
from ddlx.simulate.workload import SimulationError, Workload, check_estimates

#: Default LAS queue thresholds, attained GPU-seconds: 1 GPU-hour and 10 GPU-hours (three queues).
LAS_THRESHOLDS_GPU_S: tuple[float, ...] = (3_600.0, 36_000.0)

#: When a running LAS job moves to the next queue; the first is the default.
LAS_DEMOTIONS: dict[str, str] = {
    "instant": "the instant its attained GPU-seconds reach the threshold of its queue",
    "next-event": "at the first scheduling event at which its attained GPU-seconds have reached the threshold, "
                  "one queue per event; the events are submissions, ends, and for each running job a wake-up "
                  "planned at every event floor((T - s) / g) seconds later (T the threshold, s the seconds the job "
                  "has run, g its GPUs), as Tiresias' dlas-gpu does",
}

#: How a LAS queue orders its jobs; the first is the default.
LAS_QUEUE_ORDERS: dict[str, str] = {
    "submission": "running jobs first, then waiting ones, each in submission order (tie-break): jobs of one queue "
                  "never preempt each other",
    "queue-entry": "the order the jobs entered the queue (submission into queue 0, demotion into the others; "
                   "entries of one instant in submission order), running jobs moved ahead of waiting ones after "
                   "every scheduling pass, as Tiresias' dlas-gpu does: a job just demoted waits behind its new "
                   "queue's waiting jobs, which preempt it if they fit",
}

#: How a LAS scheduling pass preempts; the first is the default.
LAS_PREEMPTIONS: dict[str, str] = {
    "lowest-first": "each waiting job in order that fits in the free GPUs plus those of running jobs of lower queues "
                    "starts, stopping those jobs from the lowest priority up (the last queue first, within a queue "
                    "the last in its order) and sparing any whose GPUs turn out not to be needed",
    "refill": "at every event the pool is handed out anew in order, running and waiting jobs alike: a job keeps "
              "running or starts when its GPUs fit in what the jobs before it left, and a running job that does not "
              "fit is stopped, as Tiresias' dlas-gpu does",
}

DEFAULT_LAS_DEMOTION = "instant"
DEFAULT_LAS_QUEUE_ORDER = "submission"
DEFAULT_LAS_PREEMPTION = "lowest-first"

#: Tiresias' queue thresholds, GPU-seconds: `jobs.py` `_TFJobs` has three queues (`num_queue = 3`) and
#: `queue_limit = [3250, 7200, 18000]`, of which the last queue leaves the third unused.
TIRESIAS_LAS_THRESHOLDS_GPU_S: tuple[float, ...] = (3_250.0, 7_200.0)

#: The `las_policy` settings that give Tiresias' `dlas-gpu` schedule (with backfilling, the default).
#: `stale_ends` reproduces a defect of that simulator (see `las_policy`).
TIRESIAS_LAS: dict[str, Any] = {
    "thresholds_gpu_s": TIRESIAS_LAS_THRESHOLDS_GPU_S, "demotion": "next-event", "queue_order": "queue-entry",
    "preemption": "refill", "stale_ends": True,
}

#: What `stale_ends` reproduces.
LAS_STALE_ENDS = ("a defect of Tiresias' dlas_sim_jobs: when the earliest end of the running jobs falls on the next "
                  "submission instant, that list of jobs is attached to the submission before a wake-up that comes "
                  "first is handled; if it is, the list stays, and at the submission instant (when no job's end falls "
                  "on it any more) those jobs are ended whether or not they finished: a job stopped at the wake-up "
                  "loses the work it had left")

#: How ties between equal keys are broken; the first is the default.
TIE_BREAKS: dict[str, str] = {
    "submit": "submission order (submission time, then job id as text, jobs without an id last)",
    "job-id": "job id, as whole numbers when every id is a decimal number, else as text (jobs without an id "
              "last), then submission order",
}

DEFAULT_TIE_BREAK = "submit"


class UnknownTieBreakError(SimulationError, UsageError):
    """A tie-break that is not one of `TIE_BREAKS` (a command-line mistake: exit code 2)."""


class UnknownLasSettingError(SimulationError, UsageError):
    """A LAS setting that is not one of `LAS_DEMOTIONS`, `LAS_QUEUE_ORDERS` or `LAS_PREEMPTIONS` (exit code 2)."""


def check_tie_break(tie_break: str) -> str:
    """`tie_break` when it is one of `TIE_BREAKS`, else `UnknownTieBreakError`."""
    if tie_break not in TIE_BREAKS:
        raise UnknownTieBreakError(f"unknown tie-break '{tie_break}'; expected one of {', '.join(TIE_BREAKS)}")
    return tie_break


def tie_rank(workload: Workload, tie_break: str = DEFAULT_TIE_BREAK) -> np.ndarray:
    """Each job's position in the tie-break order (0 = first), int64. The workload is in
    submission order, so `submit` is the identity."""
    check_tie_break(tie_break)
    jobs = workload.jobs
    submission_order = np.arange(jobs, dtype=np.int64)
    if tie_break == "submit":
        return submission_order
    ids = workload.job_ids
    present = [i for i in ids if i is not None]
    numeric = bool(present) and all(i.isascii() and i.isdigit() for i in present)
    position = {value: place for place, value in
                enumerate(sorted(set(present), key=(lambda i: int(i)) if numeric else None))}
    missing = len(position)
    id_place = np.array([position[i] if i is not None else missing for i in ids], dtype=np.int64)
    order = np.lexsort((submission_order, id_place))
    rank = np.empty(jobs, dtype=np.int64)
    rank[order] = submission_order
    return rank


@dataclass(frozen=True)
class Policy:
    """A scheduling policy: `name`, whether it preempts, its queue thresholds and settings (LAS
    only: `las_demotion` of `LAS_DEMOTIONS`, `las_queue_order` of `LAS_QUEUE_ORDERS`,
    `las_preemption` of `LAS_PREEMPTIONS`, `las_stale_ends`: `LAS_STALE_ENDS`), and whether it
    orders by remaining time (`remaining_time`: srtf, a key that changes as jobs run)."""

    name: str
    description: str
    preemptive: bool = False
    needs_estimates: bool = False
    thresholds_gpu_s: tuple[float, ...] = ()
    remaining_time: bool = False
    las_demotion: str = DEFAULT_LAS_DEMOTION
    las_queue_order: str = DEFAULT_LAS_QUEUE_ORDER
    las_preemption: str = DEFAULT_LAS_PREEMPTION
    las_stale_ends: bool = False

    def las_settings(self) -> dict[str, Any] | None:
        """The LAS settings as `las_policy` takes them (thresholds as a list); None for other policies."""
        if not self.thresholds_gpu_s:
            return None
        return {"thresholds_gpu_s": list(self.thresholds_gpu_s), "demotion": self.las_demotion,
                "queue_order": self.las_queue_order, "preemption": self.las_preemption,
                "stale_ends": self.las_stale_ends}

    def duration_key(self, workload: Workload) -> np.ndarray | None:
        """The run time (seconds) the policy orders by: true or predicted; None for fifo and las."""
        if self.name in ("fifo", "las"):
            return None
        if self.name in ("sjf-oracle", "srtf"):
            return workload.run_s
        if workload.estimate_s is None:
            raise SimulationError(f"{self.name} needs run-time estimates (a predictor, or an estimates column)")
        check_estimates(workload.estimate_s, workload.jobs)
        return workload.estimate_s

    def priority_rank(self, workload: Workload, tie_break: str = DEFAULT_TIE_BREAK) -> np.ndarray:
        """Each job's position in the policy's static order (0 = first), int64: the policy's key
        (submission time, or the whole run time for sjf and srtf), ties broken by `tie_break`."""
        jobs = workload.jobs
        ties = tie_rank(workload, tie_break)
        duration = self.duration_key(workload)
        key = workload.submit_s if duration is None else duration
        order = np.lexsort((ties, key))
        rank = np.empty(jobs, dtype=np.int64)
        rank[order] = np.arange(jobs, dtype=np.int64)
        return rank


def check_las_settings(demotion: str = DEFAULT_LAS_DEMOTION, queue_order: str = DEFAULT_LAS_QUEUE_ORDER,
                       preemption: str = DEFAULT_LAS_PREEMPTION) -> None:
    """`UnknownLasSettingError` unless each setting is one of its kind (`LAS_DEMOTIONS`, `LAS_QUEUE_ORDERS`,
    `LAS_PREEMPTIONS`)."""
    for kind, value, known in (("demotion", demotion, LAS_DEMOTIONS), ("queue order", queue_order, LAS_QUEUE_ORDERS),
                               ("preemption", preemption, LAS_PREEMPTIONS)):
        if value not in known:
            raise UnknownLasSettingError(f"unknown LAS {kind} '{value}'; expected one of {', '.join(known)}")


def las_policy(thresholds_gpu_s: tuple[float, ...] = LAS_THRESHOLDS_GPU_S, demotion: str = DEFAULT_LAS_DEMOTION,
               queue_order: str = DEFAULT_LAS_QUEUE_ORDER, preemption: str = DEFAULT_LAS_PREEMPTION,
               stale_ends: bool = False) -> Policy:
    """LAS with the given queue thresholds (attained GPU-seconds, strictly increasing, above 0),
    demotion (`LAS_DEMOTIONS`), queue order (`LAS_QUEUE_ORDERS`) and preemption (`LAS_PREEMPTIONS`).
    `stale_ends` reproduces `LAS_STALE_ENDS`, a defect of Tiresias' simulator that ends jobs before
    their run time is done (off by default). `las_policy(**TIRESIAS_LAS)` is Tiresias' dlas-gpu."""
    values = tuple(float(t) for t in thresholds_gpu_s)
    if any(not np.isfinite(t) or t <= 0 for t in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise SimulationError(f"LAS thresholds must be increasing GPU-seconds above 0, got {list(values)}")
    check_las_settings(demotion, queue_order, preemption)
    chosen = (demotion, queue_order, preemption, bool(stale_ends))
    settings = "" if chosen == (DEFAULT_LAS_DEMOTION, DEFAULT_LAS_QUEUE_ORDER, DEFAULT_LAS_PREEMPTION, False) else (
        f"; demotion {demotion}, queue order {queue_order}, preemption {preemption}"
        + (", Tiresias' stale ends" if stale_ends else ""))
    return Policy("las", "least attained service: queues by attained GPU-seconds "
                  f"(thresholds {', '.join(f'{t:g}' for t in values)}{settings}), preemptive",
                  preemptive=True, thresholds_gpu_s=values, las_demotion=demotion, las_queue_order=queue_order,
                  las_preemption=preemption, las_stale_ends=bool(stale_ends))


POLICIES: dict[str, Policy] = {
    "fifo": Policy("fifo", "first in, first out: submission order"),
    "sjf-oracle": Policy("sjf-oracle", "shortest job first by the true run time, non-preemptive"),
    "sjf-predicted": Policy("sjf-predicted", "shortest job first by the predicted run time, non-preemptive",
                            needs_estimates=True),
    "las": las_policy(),
    "srtf": Policy("srtf", "shortest remaining time first by the true run time minus the time run, preemptive "
                   "(no preemption cost)", preemptive=True, remaining_time=True),
    "srtf-predicted": Policy("srtf-predicted", "shortest remaining time first by the predicted run time minus the "
                             "time run (at least 0), preemptive (no preemption cost)", preemptive=True,
                             needs_estimates=True, remaining_time=True),
}


class UnknownPolicyError(SimulationError, UsageError):
    """A policy name that is not one of `POLICIES` (a command-line mistake: exit code 2)."""


def resolve_policies(names: list[str], las_thresholds_gpu_s: tuple[float, ...] | None = None,
                     las_demotion: str | None = None, las_queue_order: str | None = None,
                     las_preemption: str | None = None, las_stale_ends: bool = False) -> list[Policy]:
    """The policies named (duplicates dropped, order kept), `las` with the LAS settings given (None:
    the default); `SimulationError` for an unknown name or setting."""
    settings = {"demotion": las_demotion or DEFAULT_LAS_DEMOTION,
                "queue_order": las_queue_order or DEFAULT_LAS_QUEUE_ORDER,
                "preemption": las_preemption or DEFAULT_LAS_PREEMPTION}
    check_las_settings(**settings)
    settings["stale_ends"] = bool(las_stale_ends)
    chosen: list[Policy] = []
    for name in names:
        key = name.strip().lower()
        if key not in POLICIES:
            raise UnknownPolicyError(f"unknown policy '{name}'; expected one of {', '.join(POLICIES)}")
        policy = POLICIES[key]
        if key == "las" and (las_thresholds_gpu_s or las_demotion or las_queue_order or las_preemption
                             or las_stale_ends):
            policy = las_policy(las_thresholds_gpu_s or LAS_THRESHOLDS_GPU_S, **settings)
        if policy.name not in {p.name for p in chosen}:
            chosen.append(policy)
    if not chosen:
        raise UnknownPolicyError(f"no policy given; expected one or more of {', '.join(POLICIES)}")
    return chosen
