"""fifo and sjf: waiting jobs offered the pool in the policy's static order (`Policy.priority_rank`);
a job, once started, runs to its end.

A pass starts the first waiting job in order if it fits (its GPUs, and its CPU cores when CPUs are
modelled, in the free ones), then the next, and so on. Without backfilling the first job that does
not fit ends the pass (head-of-line blocking); with backfilling every later job that fits starts.

`HeapOrder` (the fast path, GPUs only) finds the first fitting job through `WaitingQueues` in
O(log sizes); `WalkOrder` (the plain path, GPUs and CPUs) walks the waiting jobs in order.
"""

from __future__ import annotations

from bisect import insort
from typing import TYPE_CHECKING

import numpy as np

from ddlx.simulate.policies import Policy
from ddlx.simulate.schedulers.base import Scheduler
from ddlx.simulate.schedulers.queues import EMPTY, waiting_queues

if TYPE_CHECKING:
    from ddlx.simulate.engine import Engine


class HeapOrder(Scheduler):
    """fifo and sjf on GPUs only, waiting jobs in `WaitingQueues` keyed by rank."""

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        super().__init__(engine, policy, rank, ties, backfill)
        self.queues, self.size_of, self.job_of_rank = waiting_queues(engine.need_units, rank)

    def admit(self, first: int, last: int, now: float) -> None:
        push, size_of, rank = self.queues.push, self.size_of, self.rank
        for job in range(first, last):
            push(size_of[job], rank[job])

    def schedule(self, now: float) -> None:
        engine, queues, job_of_rank = self.engine, self.queues, self.job_of_rank
        need, shift, mask = engine.need, queues.shift, queues.mask
        pick = queues.first_fitting if self.backfill else None
        while True:
            free = engine.free
            encoded = pick(free) if pick else queues.first()
            if encoded == EMPTY:
                break
            job = job_of_rank[encoded >> shift]
            if need[job] > free:
                break  # without backfilling: the first job in order waits, and so does every other
            queues.pop(encoded & mask)
            engine.launch(job, now)


class WalkOrder(Scheduler):
    """fifo and sjf, GPUs and CPUs: the waiting jobs as a list sorted by rank, walked at each pass."""

    def __init__(self, engine: Engine, policy: Policy, rank: np.ndarray, ties: np.ndarray | None,
                 backfill: bool):
        super().__init__(engine, policy, rank, ties, backfill)
        self.waiting: list[tuple[int, int]] = []  # (rank, job), sorted

    def admit(self, first: int, last: int, now: float) -> None:
        rank = self.rank
        for job in range(first, last):
            insort(self.waiting, (rank[job], job))

    def schedule(self, now: float) -> None:
        engine, waiting = self.engine, self.waiting
        need, cpu_need = engine.need, engine.cpu_need
        free, free_cpus = engine.free, engine.free_cpus
        kept: list[tuple[int, int]] = []
        for position, entry in enumerate(waiting):
            if free <= 0:
                kept.extend(waiting[position:])
                break
            job = entry[1]
            if need[job] <= free and cpu_need[job] <= free_cpus:
                engine.launch(job, now)
                free, free_cpus = engine.free, engine.free_cpus
            elif self.backfill:
                kept.append(entry)
            else:
                kept.extend(waiting[position:])
                break
        self.waiting = kept
