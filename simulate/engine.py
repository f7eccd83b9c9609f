"""The discrete-event engine of the pool simulator: one GPU pool, jobs arriving at their submission
times, and one event loop whose decisions (order, preemption) a scheduler of
`ddlx.simulate.schedulers` makes, one per policy.

Cluster model: a single pool of `capacity` GPUs, counted in thousandths of a GPU (`MILLI`); a job
runs when its whole request fits in the free GPUs (no nodes, no placement, no fragmentation), and,
when CPUs are modelled, its CPU cores (in thousandths of a core) in the free cores too. A job runs
for exactly its run time (its oracle duration); a preempted job resumes later where it stopped, with
no restart overhead.

Events happen at instants: submissions, ends, and the scheduler's own events (LAS: a job's attained
service reaching its queue's threshold, Tiresias' wake-ups). At each instant the engine (`Engine.run`)
adds the busy GPUs times the time since the last instant to the busy GPU-seconds, then lets the
scheduler end the jobs that finish and handle its own events (`due`: for LAS, moving running jobs
whose attained service crossed a threshold to the next queue), then admits the submissions
(`admit`), then runs one scheduling pass (`schedule`):

- without backfilling, the waiting job first in the policy's order starts if it fits, then the
  next, and so on; the first job that does not fit blocks every job behind it (head-of-line
  blocking);
- with backfilling (greedy, no reservation), when that job does not fit, the next jobs in order
  that fit in the free GPUs start. This can delay the blocked job: GPUs freed later may be taken
  by jobs behind it.

Preemptive schedulers (las, srtf) also stop running jobs in their pass (`Engine.stop`); a job stopped
and started again in the same pass was never stopped (`Engine.start` puts its state back and counts
no preemption). Each scheduler's rules are in its module: `schedulers.in_order` (fifo, sjf),
`schedulers.remaining` (srtf), `schedulers.las` (las, every setting).

`simulate_policy(..., fast=True)` (the default) lets a policy run on its fast path where it has one:
fifo and sjf on GPUs only (`HeapOrder`) and las with the default settings (`LasHeap`), O(log n) per
event; `fast=False` runs every policy on its plain path, which walks the waiting (and running) jobs
at each instant, O(jobs running + waiting) per instant. The two give the same schedule to the bit
(tests/test_simulate_schedulers.py, tests/test_simulate_las.py). LAS with CPUs modelled is not offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappush
from math import inf

import numpy as np

from ddlx.datasets.canonical import MILLI
from ddlx.simulate.policies import DEFAULT_TIE_BREAK, Policy, tie_rank
from ddlx.simulate.schedulers import END, Scheduler, scheduler_class
from ddlx.simulate.workload import SimulationError, Workload


@dataclass
class Schedule:
    """What one policy did to one workload.

    `first_start_s` and `end_s`: per job, seconds from the first submission (the workload's
    origin); `busy_gpu_s`: GPU-seconds the pool was busy, integrated over time (sum over the
    intervals between events of busy GPUs x length); `preemptions`: times a running job was
    stopped; `preempted_jobs`: jobs stopped at least once; `ended_early`: jobs ended before their
    run time was done (LAS with Tiresias' stale ends).
    """

    policy: str
    backfill: bool
    first_start_s: np.ndarray
    end_s: np.ndarray
    busy_gpu_s: float
    preemptions: int
    preempted_jobs: int
    ended_early: int = 0


class Engine:
    """The pool and every job's progress, shared by the schedulers, and the event loop (`run`).

    GPUs in thousandths (`need`, `capacity`, `free`, `busy_units`), CPU cores in thousandths
    (`cpu_need`, `cpu_capacity`, `free_cpus`; zeros when CPUs are not modelled), times in seconds from
    the first submission. Per job: `first_start` (-1 until it starts), `end`, `executed` (seconds run
    before the current run), `run_since` (start of the current run), `running`, `preempted`, and
    `version`, bumped when the job is stopped: events planned for it before are stale. `events`: a
    heap of `(time, kind, job, version)` (`END`, or a scheduler's `TIMER`)."""

    def __init__(self, workload: Workload, need_units: np.ndarray, capacity: int):
        self.workload = workload
        self.submit = workload.submit_s.tolist()
        self.run_s = workload.run_s.tolist()
        self.need_units = need_units
        self.need = need_units.tolist()
        self.cpu_need = workload.cpu_units().tolist()
        self.capacity = capacity
        self.cpu_capacity = workload.cpu_capacity_units()
        jobs = self.jobs = len(self.submit)
        self.first_start = [-1.0] * jobs
        self.end = [0.0] * jobs
        self.executed = [0.0] * jobs
        self.run_since = [0.0] * jobs
        self.version = [0] * jobs
        self.running = [False] * jobs
        self.preempted = [False] * jobs
        self.events: list[tuple[float, int, int, int]] = []
        # Jobs stopped in the current scheduling pass: (executed, run_since, preempted before).
        self.stopped: dict[int, tuple[float, float, bool]] = {}
        self.free, self.free_cpus, self.busy_units = capacity, self.cpu_capacity, 0
        self.preemptions = self.ended = 0
        self.busy_integral = 0.0  # GPU units x seconds

    def start(self, job: int, now: float) -> None:
        """The job takes its GPUs and cores and runs from `now`; one stopped earlier in this pass
        resumes the run it had (its state is put back and no preemption is counted)."""
        need = self.need[job]
        self.free -= need
        self.free_cpus -= self.cpu_need[job]
        self.busy_units += need
        self.running[job] = True
        if job in self.stopped:
            self.executed[job], self.run_since[job], self.preempted[job] = self.stopped.pop(job)
            self.preemptions -= 1
            return
        if self.first_start[job] < 0:
            self.first_start[job] = now
        self.run_since[job] = now

    def plan_end(self, job: int, now: float) -> None:
        """Plan the end of a job running since `now`: after the rest of its run time."""
        heappush(self.events, (now + (self.run_s[job] - self.executed[job]), END, job, self.version[job]))

    def launch(self, job: int, now: float) -> None:
        """`start` the job and plan its end."""
        self.start(job, now)
        self.plan_end(job, self.run_since[job])

    def checkpoint(self, job: int, now: float) -> None:
        """Count the seconds a running job has run up to `now` into `executed`; its run goes on from `now`."""
        self.executed[job] += now - self.run_since[job]
        self.run_since[job] = now

    def stop(self, job: int, now: float) -> None:
        """Preempt a running job at `now`: it keeps the seconds it ran and gives back its GPUs and cores."""
        self.stopped[job] = (self.executed[job], self.run_since[job], self.preempted[job])
        self.executed[job] += now - self.run_since[job]
        self.version[job] += 1
        self.running[job] = False
        self.preempted[job] = True
        self.preemptions += 1
        self._release(job)

    def finish(self, job: int, now: float) -> None:
        """The job ends at `now` (a job not running, ended by Tiresias' stale ends, holds nothing)."""
        if self.running[job]:
            self.running[job] = False
            self._release(job)
        self.executed[job] = self.run_s[job]
        self.end[job] = now
        self.ended += 1

    def _release(self, job: int) -> None:
        need = self.need[job]
        self.free += need
        self.free_cpus += self.cpu_need[job]
        self.busy_units -= need

    def run(self, scheduler: Scheduler) -> None:
        """The event loop: from the first submission to the last end, every instant in time order."""
        submit, jobs, stopped = self.submit, self.jobs, self.stopped
        next_time, due, admit, schedule = scheduler.next_time, scheduler.due, scheduler.admit, scheduler.schedule
        arrived = 0
        busy_integral, last_time = 0.0, 0.0
        while True:
            next_arrival = submit[arrived] if arrived < jobs else inf
            soonest = next_time()
            if soonest == inf and arrived == jobs:
                break
            now = soonest if soonest < next_arrival else next_arrival
            busy_integral += self.busy_units * (now - last_time)
            last_time = now
            due(now, next_arrival)
            first = arrived
            while arrived < jobs and submit[arrived] <= now:
                arrived += 1
            if arrived > first:
                admit(first, arrived, now)
            if stopped:
                stopped.clear()
            schedule(now)
        self.busy_integral = busy_integral
        if self.ended < jobs:
            raise RuntimeError("simulation ended with jobs still waiting")


def simulate_policy(workload: Workload, policy: Policy, backfill: bool = True,
                    tie_break: str = DEFAULT_TIE_BREAK, fast: bool = True) -> Schedule:
    """Run `policy` on `workload` (with greedy backfilling when `backfill`, ties between equal keys
    broken by `tie_break`, one of `TIE_BREAKS`): a `Schedule`. `fast=False` runs the policy on its
    plain path (`ddlx.simulate.schedulers`) rather than its fast one; the schedule is the same."""
    capacity = workload.capacity_units()
    need = workload.gpu_units()
    if capacity < 1:
        raise SimulationError(f"cluster size must be at least 1/{MILLI} GPU")
    if int(need.max()) > capacity:
        raise SimulationError("a job asks for more GPUs than the cluster has (the workload should have left it out)")
    if workload.models_cpus:
        if policy.thresholds_gpu_s:
            raise SimulationError(f"{policy.name} does not model CPUs; run it without a CPU capacity (--cpus)")
        if int(workload.cpu_units().max()) > workload.cpu_capacity_units():
            raise SimulationError("a job asks for more CPU cores than the cluster has (the workload should have "
                                  "left it out)")
    rank = policy.priority_rank(workload, tie_break)
    engine = Engine(workload, need, capacity)
    chosen = scheduler_class(policy, workload.models_cpus, fast)
    ties = tie_rank(workload, tie_break) if chosen.uses_ties else None
    scheduler = chosen(engine, policy, rank, ties, backfill)
    engine.run(scheduler)
    return Schedule(policy.name, backfill, np.array(engine.first_start), np.array(engine.end),
                    engine.busy_integral / MILLI, engine.preemptions, sum(engine.preempted), scheduler.ended_early)
