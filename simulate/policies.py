"""Scheduling policies: the order in which waiting jobs are offered GPUs, and whether running jobs
can be preempted.

Every policy ranks jobs by a static key and breaks ties by submission order (submission time,
then job id), so schedules are deterministic:

- `fifo`: submission order. Non-preemptive.
- `sjf-oracle`: shortest true run time (`run_s`) first. Non-preemptive.
- `sjf-predicted`: shortest predicted run time first (the workload's `estimate_s`). Non-preemptive.
- `las`: least attained service, discretised as in Tiresias: a job's attained service is GPUs x
  seconds it has run; queue k holds jobs whose attained service lies in [T(k-1), T(k)) of the
  thresholds (`LAS_THRESHOLDS_GPU_S` by default); a lower queue always goes first, FIFO
  (submission order) within a queue. Preemptive: a waiting job may take the GPUs of running jobs
  of strictly lower-priority queues (see `engine`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ddlx.errors import UsageError
from ddlx.simulate.workload import SimulationError, Workload, check_estimates

#: Default LAS queue thresholds, attained GPU-seconds: 1 GPU-hour and 10 GPU-hours (three queues).
LAS_THRESHOLDS_GPU_S: tuple[float, ...] = (3_600.0, 36_000.0)


@dataclass(frozen=True)
class Policy:
    """A scheduling policy: `name`, whether it preempts, and its queue thresholds (LAS only)."""

    name: str
    description: str
    preemptive: bool = False
    needs_estimates: bool = False
    thresholds_gpu_s: tuple[float, ...] = ()

    def priority_rank(self, workload: Workload) -> np.ndarray:
        """Each job's position in the policy's static order (0 = first), int64."""
        jobs = workload.jobs
        submission_order = np.arange(jobs, dtype=np.int64)
        if self.name in ("fifo", "las"):
            return submission_order
        if self.name == "sjf-oracle":
            key = workload.run_s
        else:
            if workload.estimate_s is None:
                raise SimulationError("sjf-predicted needs run-time estimates (a predictor, or an estimates column)")
            check_estimates(workload.estimate_s, jobs)
            key = workload.estimate_s
        order = np.lexsort((submission_order, key))
        rank = np.empty(jobs, dtype=np.int64)
        rank[order] = submission_order
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
