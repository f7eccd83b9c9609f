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
  thresholds (`LAS_THRESHOLDS_GPU_S` by default); a lower queue always goes first, then
  submission time (FIFO within a queue). Preemptive: a waiting job may take the GPUs of running
  jobs of strictly lower-priority queues (see `engine`).
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

import numpy as np

from ddlx.errors import UsageError
from ddlx.simulate.workload import SimulationError, Workload, check_estimates

#: Default LAS queue thresholds, attained GPU-seconds: 1 GPU-hour and 10 GPU-hours (three queues).
LAS_THRESHOLDS_GPU_S: tuple[float, ...] = (3_600.0, 36_000.0)

#: How ties between equal keys are broken; the first is the default.
TIE_BREAKS: dict[str, str] = {
    "submit": "submission order (submission time, then job id as text, jobs without an id last)",
    "job-id": "job id, as whole numbers when every id is a decimal number, else as text (jobs without an id "
              "last), then submission order",
}

DEFAULT_TIE_BREAK = "submit"


class UnknownTieBreakError(SimulationError, UsageError):
    """A tie-break that is not one of `TIE_BREAKS` (a command-line mistake: exit code 2)."""


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
    """A scheduling policy: `name`, whether it preempts, its queue thresholds (LAS only), and
    whether it orders by remaining time (`remaining_time`: srtf, a key that changes as jobs run)."""

    name: str
    description: str
    preemptive: bool = False
    needs_estimates: bool = False
    thresholds_gpu_s: tuple[float, ...] = ()
    remaining_time: bool = False

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


def las_policy(thresholds_gpu_s: tuple[float, ...] = LAS_THRESHOLDS_GPU_S) -> Policy:
    """LAS with the given queue thresholds (attained GPU-seconds, strictly increasing, above 0)."""
    values = tuple(float(t) for t in thresholds_gpu_s)
    if any(not np.isfinite(t) or t <= 0 for t in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise SimulationError(f"LAS thresholds must be increasing GPU-seconds above 0, got {list(values)}")
    return Policy("las", "least attained service: queues by attained GPU-seconds "
                  f"(thresholds {', '.join(f'{t:g}' for t in values)}), preemptive",
                  preemptive=True, thresholds_gpu_s=values)


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


def resolve_policies(names: list[str], las_thresholds_gpu_s: tuple[float, ...] | None = None) -> list[Policy]:
    """The policies named (duplicates dropped, order kept); `SimulationError` for an unknown name."""
    chosen: list[Policy] = []
    for name in names:
        key = name.strip().lower()
        if key not in POLICIES:
            raise UnknownPolicyError(f"unknown policy '{name}'; expected one of {', '.join(POLICIES)}")
        policy = las_policy(las_thresholds_gpu_s) if key == "las" and las_thresholds_gpu_s else POLICIES[key]
        if policy.name not in {p.name for p in chosen}:
            chosen.append(policy)
    if not chosen:
        raise UnknownPolicyError(f"no policy given; expected one or more of {', '.join(POLICIES)}")
    return chosen
