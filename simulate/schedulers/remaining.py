"""srtf and srtf-predicted: shortest remaining time first, preemptive.

A job's remaining time is the policy's duration (`Policy.duration_key`: the true or the predicted run
time) minus the seconds it has run, floored at 0. Each pass hands the pool out from scratch to the
running and the waiting jobs together, by least remaining time (ties by the tie-break): a job whose
GPUs and CPU cores fit in what the jobs before it left keeps running or starts; a running job that
no longer fits is stopped (it keeps the seconds it ran and later resumes at no cost); a waiting one
that does not fit waits, and without backfilling no waiting job after it starts at this instant
(running jobs after it keep running while they fit). The pass costs O(jobs running + waiting).
"""

from __future__ import annotations

from bisect import insort
from typing import TYPE_CHECKING

import numpy as np

from ddlx.simulate.policies import Policy
from ddlx.simulate.schedulers.base import Scheduler

if TYPE_CHECKING:
    from ddlx.simulate.engine import Engine


class RemainingTime(Scheduler):
    """srtf: running jobs in a set, waiting ones in a list sorted by (remaining s, tie, job)."""

    uses_ties = True

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        super().__init__(engine, policy, rank, ties, backfill)
        duration = policy.duration_key(engine.workload)
        assert duration is not None, "srtf orders by a duration"
        self.length = duration.tolist()
        self.running: set[int] = set()
        self.waiting: list[tuple[float, int, int]] = []

    def entry(self, job: int) -> tuple[float, int, int]:
        """A waiting job's place: its remaining time by the policy's duration (s), tie, job."""
        return (max(self.length[job] - self.engine.executed[job], 0.0), self.ties[job], job)

    def admit(self, first: int, last: int, now: float) -> None:
        for job in range(first, last):
            insort(self.waiting, self.entry(job))

    def finished(self, job: int, now: float) -> None:
        self.running.discard(job)
        self.engine.finish(job, now)

    def schedule(self, now: float) -> None:
        engine, waiting, length, ties = self.engine, self.waiting, self.length, self.ties
        need, cpu_need, executed, run_since = engine.need, engine.cpu_need, engine.executed, engine.run_since
        active = sorted((max(length[j] - executed[j] - (now - run_since[j]), 0.0), ties[j], j) for j in self.running)
        room, room_cpus = engine.capacity, engine.cpu_capacity
        blocked = False
        to_stop: list[int] = []
        to_start: list[int] = []
        kept: list[tuple[float, int, int]] = []
        a = w = 0
        while a < len(active) or w < len(waiting):
            if a == len(active) and (room <= 0 or blocked):
                kept.extend(waiting[w:])
                break
            if w == len(waiting) or (a < len(active) and active[a] < waiting[w]):
                job = active[a][2]
                a += 1
                if need[job] <= room and cpu_need[job] <= room_cpus:
                    room -= need[job]
                    room_cpus -= cpu_need[job]
                else:
                    to_stop.append(job)
                continue
            entry = waiting[w]
            w += 1
            job = entry[2]
            if not blocked and need[job] <= room and cpu_need[job] <= room_cpus:
                room -= need[job]
                room_cpus -= cpu_need[job]
                to_start.append(job)
            else:
                blocked = blocked or not self.backfill
                kept.append(entry)
        for job in to_stop:
            engine.stop(job, now)
            self.running.discard(job)
        for job in to_start:
            engine.launch(job, now)
            self.running.add(job)
        self.waiting = kept
        for job in to_stop:
            insort(kept, self.entry(job))
