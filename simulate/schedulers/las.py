"""las: least attained service in multi-level queues (Tiresias), preemptive.

Queue k holds the jobs whose attained service (GPUs x seconds run) lies in [T(k-1), T(k)) of the
policy's thresholds; a lower queue always goes first. `Policy.las_demotion`, `las_queue_order`,
`las_preemption` and `las_stale_ends` choose the rules (`ddlx.simulate.policies`).

`LasHeap` (the fast path) runs the default settings (demotion `instant`, queue order `submission`,
preemption `lowest-first`): waiting jobs in `WaitingQueues` keyed by queue then rank, running ones in
a heap by the same key, lowest priority on top; each demotion is a timer of the engine. A waiting job
of queue k may take the GPUs of running jobs of queues above k: when the free GPUs plus theirs cover
its request, running jobs are stopped from the lowest priority up (highest queue, latest in order
first) until it fits; a job whose GPUs turn out not to be needed is spared, and one that a later job
of the same pass starts again was never stopped (`Engine.start`).

`LasRounds` (the plain path) runs every setting by walking every queue's jobs at each instant:
O(jobs running + waiting) per instant. Its `lowest-first` is the rule above; `refill` hands the pool
out anew in order, running and waiting jobs alike, as Tiresias' `dlas_sim_jobs` does. With the
default settings both give the same schedule (tests/test_simulate_las.py checks it).
"""

from __future__ import annotations

from bisect import insort
from heapq import heappop, heappush
from math import inf
from typing import TYPE_CHECKING

import numpy as np

from ddlx.datasets.canonical import MILLI
from ddlx.simulate.policies import Policy
from ddlx.simulate.schedulers.base import TIMER, Scheduler
from ddlx.simulate.schedulers.queues import EMPTY, waiting_queues

if TYPE_CHECKING:
    from ddlx.simulate.engine import Engine


class LasHeap(Scheduler):
    """las with the default settings in O(log n) per event. A waiting job's key is
    `queue x jobs + rank`, so a lower queue always sorts first."""

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        super().__init__(engine, policy, rank, ties, backfill)
        self.queues, self.size_of, self.job_of_rank = waiting_queues(engine.need_units, rank)
        self.stride = engine.jobs
        # Thresholds in GPU units x seconds: a job of g units crosses threshold T after T / g seconds of running.
        self.threshold_units = [t * MILLI for t in policy.thresholds_gpu_s]
        self.top_queue = len(self.threshold_units)
        self.queue_of = [0] * engine.jobs
        self.running_units = [0] * (self.top_queue + 1)  # GPU units held by running jobs, per queue
        self.victims: list[tuple[int, int, int]] = []  # (-key, job, version): lowest priority on top

    def key(self, job: int) -> int:
        return self.queue_of[job] * self.stride + self.rank[job]

    def plan(self, job: int, now: float) -> None:
        """The next event of a job running since `now`: its demotion timer, or its end."""
        engine = self.engine
        queue = self.queue_of[job]
        if queue < self.top_queue:
            boundary = self.threshold_units[queue] / engine.need[job]
            if boundary < engine.run_s[job]:
                heappush(engine.events, (now + max(0.0, boundary - engine.executed[job]), TIMER, job,
                                         engine.version[job]))
                return
        engine.plan_end(job, now)

    def admit(self, first: int, last: int, now: float) -> None:
        push, size_of, rank = self.queues.push, self.size_of, self.rank
        for job in range(first, last):
            push(size_of[job], rank[job])  # queue 0: the key is the rank

    def finished(self, job: int, now: float) -> None:
        self.running_units[self.queue_of[job]] -= self.engine.need[job]
        self.engine.finish(job, now)

    def timer(self, job: int, now: float) -> None:
        """The job's attained service reached its queue's threshold: it moves to the next queue."""
        engine = self.engine
        engine.checkpoint(job, now)
        queue = self.queue_of[job]
        self.queue_of[job] = queue + 1
        self.running_units[queue] -= engine.need[job]
        self.running_units[queue + 1] += engine.need[job]
        heappush(self.victims, (-self.key(job), job, engine.version[job]))
        self.plan(job, now)

    def start(self, job: int, now: float) -> None:
        engine = self.engine
        engine.start(job, now)
        self.running_units[self.queue_of[job]] += engine.need[job]
        heappush(self.victims, (-self.key(job), job, engine.version[job]))
        self.plan(job, engine.run_since[job])  # a job started again in its pass resumes its run

    def make_room(self, units: int, now: float) -> None:
        """Stop running jobs of lower-priority queues, lowest first, until `units` are free."""
        engine, victims = self.engine, self.victims
        need, running, version = engine.need, engine.running, engine.version
        chosen: list[int] = []
        freed = engine.free
        while freed < units:
            negative_key, job, job_version = heappop(victims)
            if not running[job] or job_version != version[job] or -negative_key != self.key(job):
                continue  # stale entry
            chosen.append(job)
            freed += need[job]
        spare = freed - units
        for job in reversed(chosen[:-1]):  # higher priority first; the last one chosen is needed
            if need[job] <= spare:
                spare -= need[job]
                heappush(victims, (-self.key(job), job, version[job]))
                chosen.remove(job)
        for job in chosen:
            engine.stop(job, now)
            self.running_units[self.queue_of[job]] -= need[job]
            self.queues.push(self.size_of[job], self.key(job))

    def schedule(self, now: float) -> None:
        engine, queues, running_units = self.engine, self.queues, self.running_units
        need, stride, shift = engine.need, self.stride, queues.shift
        level = 0
        while True:
            if self.backfill:
                encoded = queues.first_fitting(engine.free + sum(running_units[level + 1:]))
            else:
                encoded = queues.first()
            if encoded == EMPTY:
                break
            key = encoded >> shift
            queue = key // stride
            if self.backfill and queue > level:
                level = queue  # nothing of the queues before fits: look at this queue's jobs
                continue
            job = self.job_of_rank[key - queue * stride]
            if need[job] > engine.free + sum(running_units[queue + 1:]):
                break  # without backfilling: the first job in order waits, and so does every other
            queues.pop(encoded & queues.mask)
            if need[job] > engine.free:
                self.make_room(need[job], now)
            self.start(job, now)


class LasRounds(Scheduler):
    """las, every setting: at each instant, ends, then demotions (`policy.las_demotion`), then
    submissions, then one pass over the queues in the order of `policy.las_queue_order`, preempting as
    `policy.las_preemption` says."""

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        super().__init__(engine, policy, rank, ties, backfill)
        jobs = engine.jobs
        self.thresholds = policy.thresholds_gpu_s
        self.threshold_units = [t * MILLI for t in self.thresholds]
        self.top_queue = len(self.thresholds)
        self.by_entry = policy.las_queue_order == "queue-entry"
        self.at_events = policy.las_demotion == "next-event"
        self.refill = policy.las_preemption == "refill"
        self.stale_ends = policy.las_stale_ends
        self.attached: dict[float, list[int]] = {}  # stale_ends: submission instant -> the jobs whose end was due then
        self.queue_of = [0] * jobs
        self.end_at = [inf] * jobs  # while running: when the job ends
        self.reach_at = [inf] * jobs  # while running: when its attained service reaches its queue's threshold
        self.wake_at = [inf] * jobs  # next-event: while running, the wake-up planned for it at the last instant
        # Each queue's jobs, running and waiting: in entry order (queue-entry) or in rank order (submission).
        self.members: list[list[int]] = [[] for _ in range(self.top_queue + 1)]
        self.running_units = [0] * (self.top_queue + 1)  # GPU units held by running jobs, per queue
        self.active: list[int] = []  # running jobs, in rank order
        self.next_end = inf  # the earliest end among the running jobs, as `next_time` found it

    def enter(self, job: int, queue: int) -> None:
        self.queue_of[job] = queue
        if self.by_entry:
            self.members[queue].append(job)
        else:
            insort(self.members[queue], job, key=self.rank.__getitem__)

    def in_order(self, queue: int) -> list[int]:
        """The queue's jobs in pass order: list order (queue-entry), or running then waiting by rank (submission)."""
        listed, running = self.members[queue], self.engine.running
        if self.by_entry:
            return list(listed)
        return [j for j in listed if running[j]] + [j for j in listed if not running[j]]

    def plan(self, job: int, now: float) -> None:
        """The end and the threshold instant of a job running since `now` in its queue."""
        engine = self.engine
        self.end_at[job] = now + (engine.run_s[job] - engine.executed[job])
        queue = self.queue_of[job]
        self.reach_at[job] = inf
        if queue < self.top_queue:
            boundary = self.threshold_units[queue] / engine.need[job]  # seconds of running to the threshold
            if boundary < engine.run_s[job]:
                self.reach_at[job] = now + max(0.0, boundary - engine.executed[job])

    def demote(self, job: int, now: float) -> None:
        need = self.engine.need[job]
        self.engine.checkpoint(job, now)
        self.running_units[self.queue_of[job]] -= need
        self.members[self.queue_of[job]].remove(job)
        self.enter(job, self.queue_of[job] + 1)
        self.running_units[self.queue_of[job]] += need
        self.plan(job, now)

    def wake_up(self, job: int, now: float) -> float:
        """Tiresias' next check of a running job: floor((T - seconds run) / GPUs) seconds after `now`
        (never at or before `now`: then the instant the threshold is reached, or `now` when it was)."""
        engine = self.engine
        seconds = engine.executed[job] + (now - engine.run_since[job])
        planned = now + (self.thresholds[self.queue_of[job]] - seconds) // (engine.need[job] / MILLI)
        return planned if planned > now else max(self.reach_at[job], now)

    def start(self, job: int, now: float) -> None:
        engine = self.engine
        engine.start(job, now)
        self.running_units[self.queue_of[job]] += engine.need[job]
        self.plan(job, engine.run_since[job])  # a job started again in its pass resumes its run

    def stop(self, job: int, now: float) -> None:
        self.engine.stop(job, now)
        self.running_units[self.queue_of[job]] -= self.engine.need[job]
        self.end_at[job] = self.reach_at[job] = self.wake_at[job] = inf

    def next_time(self) -> float:
        active, end_at = self.active, self.end_at
        if self.stale_ends:
            self.next_end = min((end_at[j] for j in active), default=inf)
        watched = self.wake_at if self.at_events else self.reach_at
        return min((min(end_at[j], watched[j]) for j in active), default=inf)

    def due(self, now: float, next_arrival: float) -> None:
        """Ends (with `stale_ends`, Tiresias' kept end lists too), then demotions."""
        engine, end_at, active = self.engine, self.end_at, self.active
        running = engine.running
        ending = [j for j in active if end_at[j] <= now]
        if self.stale_ends:  # Tiresias' end list kept on the submission event (LAS_STALE_ENDS)
            next_end = self.next_end
            if next_end == next_arrival < inf:
                self.attached[next_arrival] = [j for j in active if end_at[j] == next_end]
            if now == next_arrival:
                kept = self.attached.pop(now, [])
                if next_end > now:  # jobs of the kept list not ended yet end now, done or not
                    stale = [j for j in kept if end_at[j] > now]
                    self.ended_early += len(stale)
                    ending += stale
        for job in ending:
            if running[job]:
                self.running_units[self.queue_of[job]] -= engine.need[job]
            engine.finish(job, now)
            end_at[job] = now  # an ended job's end_at is in the past: no list ends it again
            self.members[self.queue_of[job]].remove(job)
        self.active = active = [j for j in active if running[j]]
        reach_at = self.reach_at
        for job in active:
            if self.at_events:
                if reach_at[job] <= now:
                    self.demote(job, now)  # one queue per instant
            else:
                while reach_at[job] <= now:
                    self.demote(job, now)

    def admit(self, first: int, last: int, now: float) -> None:
        for job in sorted(range(first, last), key=self.rank.__getitem__):
            self.enter(job, 0)

    def pass_refill(self, now: float) -> None:
        """The pool handed out anew in pass order, running and waiting jobs alike (Tiresias)."""
        need, running, by_entry, backfill = self.engine.need, self.engine.running, self.by_entry, self.backfill
        room = self.engine.capacity
        blocked = False  # without backfilling: a waiting job did not fit, so no later one starts
        for queue in range(self.top_queue + 1):
            ordered = self.in_order(queue)
            if not by_entry:  # a job stopped here waits at its rank among the queue's waiting jobs
                ordered = [j for j in ordered if running[j]]
            for job in ordered:
                if running[job] and need[job] <= room:
                    room -= need[job]
                elif running[job]:
                    self.stop(job, now)
                    blocked = blocked or (by_entry and not backfill)
                elif not blocked and need[job] <= room:
                    room -= need[job]
                    self.start(job, now)
                else:
                    blocked = blocked or not backfill
            if not by_entry:
                for job in [j for j in self.members[queue] if not running[j]]:
                    if not blocked and need[job] <= room:
                        room -= need[job]
                        self.start(job, now)
                    else:
                        blocked = blocked or not backfill

    def pass_lowest_first(self, now: float) -> None:
        """Waiting jobs in pass order; each that fits in the free GPUs plus those of running jobs of
        lower queues starts, stopping those jobs from the lowest priority up (sparing any not needed)."""
        need, running, running_units, top_queue = (self.engine.need, self.engine.running, self.running_units,
                                                   self.top_queue)
        free = self.engine.capacity - sum(running_units)
        for queue in range(top_queue + 1):
            for job in [j for j in self.in_order(queue) if not running[j]]:
                if need[job] > free + sum(running_units[queue + 1:]):
                    if self.backfill:
                        continue
                    return
                if need[job] > free:
                    lowest_first = (j for lower in range(top_queue, queue, -1) for j in reversed(self.in_order(lower))
                                    if running[j])
                    chosen: list[int] = []
                    freed = free
                    while freed < need[job]:
                        victim = next(lowest_first)
                        chosen.append(victim)
                        freed += need[victim]
                    spare = freed - need[job]
                    for victim in reversed(chosen[:-1]):  # higher priority first; the last one chosen is needed
                        if need[victim] <= spare:
                            spare -= need[victim]
                            chosen.remove(victim)
                    for victim in chosen:
                        self.stop(victim, now)
                        free += need[victim]
                free -= need[job]
                self.start(job, now)

    def schedule(self, now: float) -> None:
        if self.refill:
            self.pass_refill(now)
        else:
            self.pass_lowest_first(now)
        running = self.engine.running
        if self.by_entry:
            for queue in self.members:
                queue[:] = [j for j in queue if running[j]] + [j for j in queue if not running[j]]
        self.active = sorted((j for queue in self.members for j in queue if running[j]), key=self.rank.__getitem__)
        if self.at_events:
            for job in self.active:
                self.wake_at[job] = self.wake_up(job, now) if self.queue_of[job] < self.top_queue else inf
